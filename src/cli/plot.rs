//! `prism animate`'s plot (as Ganestam and Doggett's Figures 5 and 8): frame
//! times over the path (target, measured, corrected prediction, model alone,
//! and the fixed-settings run) above the mean AO rays chosen per frame (the
//! whole count plus the fractional share).

use super::animate::Row;
use crate::CliError;
use plotters::prelude::*;
use std::path::Path;

/// One line of the time chart: its rows, the value read from each, colour, label.
type Line<'a> = (&'a [Row], fn(&Row) -> f64, RGBColor, &'a str);

pub(crate) fn plot(path: &Path, title: &str, tuned: &[Row], fixed: &[Row]) -> Result<(), CliError> {
    let err = |e: String| prism::Error::Io {
        path: path.display().to_string(),
        message: e,
    };
    draw(path, title, tuned, fixed).map_err(|e| CliError::Prism(err(e.to_string())))
}

fn draw(
    path: &Path,
    title: &str,
    tuned: &[Row],
    fixed: &[Row],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1000, 720)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(460);
    let frames = tuned.len().max(fixed.len()).max(2) as u32;
    let all = tuned.iter().chain(fixed);
    let y_max = all
        .clone()
        .flat_map(|r| [r.measured_ms, r.corrected_ms, r.model_ms, r.target_ms])
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&top)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0u32..frames, 0.0..y_max.max(1e-3))?;
    chart
        .configure_mesh()
        .x_desc("frame")
        .y_desc("frame time (ms)")
        .draw()?;
    let series = |rows: &[Row], f: fn(&Row) -> f64| -> Vec<(u32, f64)> {
        rows.iter().map(|r| (r.frame, f(r))).collect()
    };
    let lines: [Line; 5] = [
        (tuned, |r| r.target_ms, BLACK, "target"),
        (
            tuned,
            |r| r.measured_ms,
            RGBColor(200, 30, 30),
            "measured (tuned)",
        ),
        (
            tuned,
            |r| r.corrected_ms,
            RGBColor(30, 90, 200),
            "corrected prediction",
        ),
        (
            tuned,
            |r| r.model_ms,
            RGBColor(120, 170, 230),
            "model alone",
        ),
        (
            fixed,
            |r| r.measured_ms,
            RGBColor(150, 150, 150),
            "measured (fixed settings)",
        ),
    ];
    // Without the baseline (`--no-baseline`) its line is left out.
    for (rows, f, color, label) in lines.into_iter().filter(|l| !l.0.is_empty()) {
        chart
            .draw_series(LineSeries::new(series(rows, f), color.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;

    let mean_ao = |r: &Row| r.knobs().mean_ao();
    let rays_max = tuned.iter().map(mean_ao).fold(1.0f64, f64::max) * 1.15;
    let mut chart = ChartBuilder::on(&bottom)
        .margin(12)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0u32..frames, 0.0..rays_max)?;
    chart
        .configure_mesh()
        .x_desc("frame")
        .y_desc("mean AO rays (tuned)")
        .draw()?;
    let green = RGBColor(40, 140, 60);
    chart
        .draw_series(LineSeries::new(
            tuned.iter().map(|r| (r.frame, mean_ao(r))),
            green.stroke_width(2),
        ))?
        .label("mean AO rays")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], green.stroke_width(2)));
    chart
        .draw_series(
            tuned
                .iter()
                .filter(|r| r.shadows)
                .map(|r| Circle::new((r.frame, mean_ao(r)), 3, green.filled())),
        )?
        .label("shadows on")
        .legend(move |(x, y)| Circle::new((x + 9, y), 3, green.filled()));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}

//! The wide traversal's render rays walk a uniform grid where core's cost model
//! gives the scene one (rtiow); the frames are the binary BVH's (which never
//! uses one), pixel for pixel.

mod common;

use common::pixels_wide_and_binary_differ;
use common::scenes::{cornell, rtiow, whitted19};
// ok: `common::scenes` names `crate::Error` and `crate::procedural`.
use common::procedural;
use prism_core::Error;
use prism_core::{Backend, Integrator, RenderSettings};
use prism_cpu::CpuBackend;

#[test]
fn closest_hits_from_the_cell_grid_are_the_trees() {
    let preset = rtiow();
    let mut cpu = CpuBackend::with_threads(2).expect("cpu");
    cpu.set_scene(&preset.scene).expect("scene");
    let grid = cpu.cell_grid().expect("rtiow gets a cell grid");
    // The ground and the three big spheres are kept out of the cells.
    assert_eq!(grid.large.len(), 4);
    // Every ray of an rtiow frame starts within the scene's bounds (the
    // ground sphere's box reaches 2,000 units down) or at the camera: the
    // walk's rounding stays within the padding for all of them.
    let accel = prism_core::Accel::build(&preset.scene).expect("accel");
    let b = accel.bounds();
    let bound = b.min.abs().max(b.max.abs()).max_element() * 1.01;
    assert!(grid.walkable_from(bound), "pad {}, bound {bound}", grid.pad);
    for (integrator, spp) in [
        (Integrator::Path, 2),
        (Integrator::Whitted, 1),
        (Integrator::Ao, 2),
    ] {
        let settings = RenderSettings {
            integrator,
            spp,
            ao_shadows: true,
            ..preset.settings
        };
        let differ = pixels_wide_and_binary_differ(&mut cpu, &preset, &settings, (160, 90));
        assert_eq!(differ, 0, "{integrator:?}: {differ} pixels differ");
    }
}

#[test]
fn scenes_the_cost_model_turns_down_walk_the_tree() {
    let mut cpu = CpuBackend::with_threads(2).expect("cpu");
    for preset in [whitted19(), cornell()] {
        cpu.set_scene(&preset.scene).expect("scene");
        assert!(cpu.cell_grid().is_none(), "{} got a cell grid", preset.name);
    }
}

//! Height-map scenes: the `city` of `shared/scenes/heightfield` (512 x 512 unit
//! columns, heights 0 to 125, under a spherical sun) and any other height map
//! seen the same way.
//!
//! The columns are one [`Heightfield`] primitive, walked cell by cell; the
//! `city-triangles` variant writes the same columns as triangles (the faces
//! that can be seen, two triangles a face), so that the walk and the triangle
//! path can be timed on the same rays.
//!
//! | name        | what                                                   | default                   |
//! |-------------|--------------------------------------------------------|---------------------------|
//! | `city`      | the 512x512 voxel city height map under a sun ([`city`]; reads `shared/scenes/heightfield/city512.png`, or `$PRISM_CITY_MAP`) | 500x500, 64 spp, depth 50, path |
//! | `city-triangles` | the same columns as triangles, to time the walk against | as `city` |

use crate::Error;
use crate::height_map::HeightMap;
use crate::scenes::Preset;
use glam::Vec3;
use prism_core::heightfield::FaceSet;
use prism_core::{Camera, Heightfield, Integrator, Material, RenderSettings, Scene, Sky, Sun};
use std::path::PathBuf;

/// The height map of `city`, inside the shared scenes directory.
pub const CITY_MAP: &str = "heightfield/city512.png";

/// How a height map's columns are put into the scene.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Columns {
    /// One heightfield primitive: a walk over its cells.
    Heightfield,
    /// The faces that can be seen from outside, as triangles (two a face): the
    /// triangle path's answer for the same shape.
    Triangles,
}

/// Where `city` reads its height map: `$PRISM_CITY_MAP` when set and not
/// empty, else [`CITY_MAP`] in the shared scenes directory
/// ([`crate::conformance::default_scenes_dir`]).
pub fn city_map_path() -> PathBuf {
    std::env::var_os("PRISM_CITY_MAP")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::conformance::default_scenes_dir().join(CITY_MAP))
}

/// The city: [`city_map_path`]'s height map as [`height_map_preset`] sees it.
/// A missing or unusable map is [`Error::HeightMap`] naming the file.
pub fn city(columns: Columns) -> Result<Preset, Error> {
    let map = crate::height_map::load_png(city_map_path())?;
    let name = match columns {
        Columns::Heightfield => "city",
        Columns::Triangles => "city-triangles",
    };
    height_map_preset(name, &map, columns)
}

/// A height map as a scene: unit cells and unit heights (the column at `(x,
/// z)` is full from `y = 0` to its height), grey Lambertian columns under a
/// sun and a pale sky, path traced 64 spp to depth 50 at 500 x 500.
///
/// For the 512 x 512 city this is the scene of the voxel renderer the map comes
/// from: camera at (500, 500, 500) looking at (256, 0, 256), vfov 20; a sun
/// of radius 200 at (700, 1400, 1400), radiance 50. Other maps are seen the
/// same way, the camera's and sun's offsets from the map's centre scaled by
/// its larger side over 512.
///
/// ```
/// use prism::height_map::HeightMap;
/// use prism::city::{height_map_preset, Columns};
///
/// let map = HeightMap { width: 2, depth: 2, heights: vec![0, 3, 1, 2], bits: 8 };
/// let walk = height_map_preset("tiny", &map, Columns::Heightfield)?;
/// assert_eq!(walk.settings.max_depth, 50);
/// let tris = height_map_preset("tiny", &map, Columns::Triangles)?;
/// assert!(tris.scene.sun.is_some());
/// # Ok::<(), prism::Error>(())
/// ```
pub fn height_map_preset(
    name: &'static str,
    map: &HeightMap,
    columns: Columns,
) -> Result<Preset, Error> {
    let hf = Heightfield::from_u16(map.width, map.depth, 1.0, &map.heights, 1.0)?;
    let mut s = Scene::new();
    s.sky = Sky {
        horizon: Vec3::new(0.55, 0.65, 0.8),
        zenith: Vec3::new(0.25, 0.4, 0.75),
    };
    let grey = s.add_material(Material::lambertian(Vec3::splat(0.7)));
    match columns {
        Columns::Heightfield => {
            s.add_heightfield(hf, grey);
        }
        Columns::Triangles => {
            // Visible faces without bottoms: a fair triangle version of the map.
            let mesh = hf.column_mesh(FaceSet::Visible, false);
            s.add_mesh(&mesh.positions, &mesh.triangles, grey)?;
        }
    }
    let scale = map.width.max(map.depth) as f32 / 512.0;
    let centre = Vec3::new(map.width as f32 * 0.5, 0.0, map.depth as f32 * 0.5);
    let seed_centre = Vec3::new(256.0, 0.0, 256.0);
    s.sun = Some(Sun::new(
        centre + (Vec3::new(700.0, 1400.0, 1400.0) - seed_centre) * scale,
        200.0 * scale,
        Vec3::ONE,
        50.0,
    ));
    let camera = Camera::look_at(
        centre + (Vec3::splat(500.0) - seed_centre) * scale,
        centre,
        Vec3::Y,
        20.0,
    );
    let settings = RenderSettings {
        integrator: Integrator::Path,
        spp: 64,
        max_depth: 50,
        ..Default::default()
    };
    Ok(Preset {
        name,
        scene: s,
        camera,
        settings,
        width: 500,
        height: 500,
    })
}

/// Names of the height-map scenes.
pub const NAMES: &str = "city, city-triangles";

/// A height-map scene by name (ASCII case and surrounding spaces ignored), or
/// `None` for a name that is not one.
pub fn by_name(name: &str) -> Option<Result<Preset, Error>> {
    match name.trim().to_ascii_lowercase().as_str() {
        "city" => Some(city(Columns::Heightfield)),
        "city-triangles" => Some(city(Columns::Triangles)),
        _ => None,
    }
}

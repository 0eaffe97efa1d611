//! The thin-lens camera of *Ray Tracing in One Weekend*.

use crate::error::Error;
use crate::gpu::GpuCamera;
use crate::ray::Ray;
use crate::sampling::unit_disk;
use glam::Vec3;

/// Largest distance from the lens to a corner of the focus rectangle (plus the
/// lens radius) that [`Camera::frame`] accepts: the squared length of every
/// camera ray's direction then stays finite (1e36, against `f32::MAX` of 3.4e38),
/// so every ray normalises.
pub const MAX_CAMERA_REACH: f32 = 1e18;

/// A thin-lens camera. `aperture = 0` gives a pinhole.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// Eye position.
    pub look_from: Vec3,
    /// Point looked at.
    pub look_at: Vec3,
    /// Up direction (need not be orthogonal to the view direction).
    pub up: Vec3,
    /// Vertical field of view in degrees, in `(0, 180)`.
    pub vfov_degrees: f32,
    /// Lens diameter (0 = pinhole).
    pub aperture: f32,
    /// Distance to the plane in focus, `> 0` (with the field of view and the
    /// aperture, within [`MAX_CAMERA_REACH`]).
    pub focus_distance: f32,
}

impl Camera {
    /// A pinhole camera focused at the point it looks at.
    pub fn look_at(look_from: Vec3, look_at: Vec3, up: Vec3, vfov_degrees: f32) -> Self {
        let focus_distance = (look_at - look_from).length();
        Self {
            look_from,
            look_at,
            up,
            vfov_degrees,
            aperture: 0.0,
            focus_distance,
        }
    }

    /// The camera frame for an image of `width x height` pixels.
    ///
    /// Fails with [`Error::Camera`] (naming the field) for a degenerate camera and
    /// [`Error::ImageSize`] for an empty image:
    ///
    /// ```
    /// use prism_core::camera::camera_ray;
    /// use prism_core::glam::Vec3;
    /// use prism_core::{Camera, Error};
    ///
    /// let camera = Camera::look_at(Vec3::new(0.0, 0.0, 4.0), Vec3::ZERO, Vec3::Y, 40.0);
    /// let frame = camera.frame(640, 360)?;
    /// // The ray through the image centre looks at `look_at`.
    /// let ray = camera_ray(&frame, 0.5, 0.5, 0.0, 0.0);
    /// assert!((ray.dir.normalize() - Vec3::NEG_Z).length() < 1e-6);
    ///
    /// let stuck = Camera::look_at(Vec3::ONE, Vec3::ONE, Vec3::Y, 40.0);
    /// assert!(matches!(stuck.frame(640, 360), Err(Error::Camera { .. })));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn frame(&self, width: u32, height: u32) -> Result<GpuCamera, Error> {
        let finite = self.look_from.is_finite() && self.look_at.is_finite() && self.up.is_finite();
        if !finite {
            return Err(Error::Camera {
                reason: "look_from, look_at and up must be finite",
            });
        }
        if !(self.vfov_degrees > 0.0 && self.vfov_degrees < 180.0) {
            return Err(Error::Camera {
                reason: "vfov_degrees must be in (0, 180)",
            });
        }
        if !(self.aperture >= 0.0 && self.aperture.is_finite()) {
            return Err(Error::Camera {
                reason: "aperture must be finite and >= 0",
            });
        }
        if !(self.focus_distance > 0.0 && self.focus_distance.is_finite()) {
            return Err(Error::Camera {
                reason: "focus_distance must be finite and > 0",
            });
        }
        if width == 0 || height == 0 {
            return Err(Error::ImageSize {
                width,
                height,
                reason: "width and height must be at least 1",
            });
        }
        let aspect = width as f32 / height as f32;
        let half_h = libm::tanf(self.vfov_degrees.to_radians() * 0.5);
        let half_w = aspect * half_h;
        // A camera ray's unnormalised direction (focus-plane point minus lens
        // point) is at most this long; its squared length must stay finite for
        // `camera_ray` to normalise it.
        let reach = self.focus_distance * (1.0 + half_w + half_h) + 0.5 * self.aperture;
        if reach.is_nan() || reach > MAX_CAMERA_REACH {
            return Err(Error::Camera {
                reason: "focus_distance, aperture and vfov_degrees reach too far: camera ray lengths would overflow f32",
            });
        }
        let w = (self.look_from - self.look_at)
            .try_normalize()
            .ok_or(Error::Camera {
                reason: if self.look_from == self.look_at {
                    "look_from equals look_at"
                } else {
                    // Finite and distinct, so the length overflowed f32.
                    "look_from and look_at are too far apart (their distance overflows f32)"
                },
            })?;
        let u = self.up.cross(w).try_normalize().ok_or(Error::Camera {
            reason: "up is zero, parallel to the view direction, or too long to normalize",
        })?;
        let v = w.cross(u);
        let f = self.focus_distance;
        let lower_left = self.look_from - half_w * f * u - half_h * f * v - f * w;
        Ok(GpuCamera {
            origin_lens: self.look_from.extend(self.aperture * 0.5).to_array(),
            lower_left: lower_left.extend(0.0).to_array(),
            horizontal: (2.0 * half_w * f * u).extend(0.0).to_array(),
            vertical: (2.0 * half_h * f * v).extend(0.0).to_array(),
            u: u.extend(0.0).to_array(),
            v: v.extend(0.0).to_array(),
        })
    }
}

/// The primary ray through image coordinates `(s, t)` in `[0, 1]^2` (`t = 1` at
/// the top row), with lens sample `(l1, l2)` in `[0, 1)^2`.
#[inline(always)]
pub fn camera_ray(cam: &GpuCamera, s: f32, t: f32, l1: f32, l2: f32) -> Ray {
    let v3 = |a: [f32; 4]| Vec3::new(a[0], a[1], a[2]);
    let origin = v3(cam.origin_lens);
    let lens = unit_disk(l1, l2) * cam.origin_lens[3];
    let offset = v3(cam.u) * lens.x + v3(cam.v) * lens.y;
    let target = v3(cam.lower_left) + s * v3(cam.horizontal) + t * v3(cam.vertical);
    // A pinhole (lens radius 0) starts every ray at the origin itself: adding
    // its (+-0, +-0, +-0) offset would turn a -0 coordinate into +0 for some
    // lens samples and not others, and the GPU kernels skip the lens there.
    let from = if cam.origin_lens[3] != 0.0 {
        origin + offset
    } else {
        origin
    };
    // The fallback (a direction too short or too long to normalize, which
    // `frame`'s bounds leave to focus distances near zero) is the view
    // direction, -w = v x u.
    Ray::new(
        from,
        (target - from).normalize_or(v3(cam.v).cross(v3(cam.u))),
    )
}

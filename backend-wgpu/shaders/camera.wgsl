// The thin-lens camera; mirrors prism_core::camera.

// mirrors prism_core::camera::camera_ray
fn camera_ray(cam: GpuCamera, s: f32, t: f32, l1: f32, l2: f32) -> Ray {
    let origin = cam.origin_lens.xyz;
    let lens = unit_disk(l1, l2) * cam.origin_lens.w;
    let offset = cam.u.xyz * lens.x + cam.v.xyz * lens.y;
    let target_point = cam.lower_left.xyz + s * cam.horizontal.xyz + t * cam.vertical.xyz;
    // A pinhole starts every ray at the origin itself (core's branch).
    let from_point = select(origin, origin + offset, cam.origin_lens.w != 0.0);
    return ray_new(from_point, vec3_normalize_or(target_point - from_point, cross(cam.v.xyz, cam.u.xyz)));
}

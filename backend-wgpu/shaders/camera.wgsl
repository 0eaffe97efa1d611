// The thin-lens camera; mirrors prism_core::camera.

// mirrors prism_core::camera::camera_ray
fn camera_ray(cam: GpuCamera, s: f32, t: f32, l1: f32, l2: f32) -> Ray {
    let origin = cam.origin_lens.xyz;
    let target_point = cam.lower_left.xyz + s * cam.horizontal.xyz + t * cam.vertical.xyz;
    // A pinhole starts every ray at the origin itself (core's branch), and
    // skips the lens sample's sine, cosine and square root (the camera is
    // the same for every invocation, so the branch never splits a subgroup).
    var from_point = origin;
    if cam.origin_lens.w != 0.0 {
        let lens = unit_disk(l1, l2) * cam.origin_lens.w;
        from_point = origin + (cam.u.xyz * lens.x + cam.v.xyz * lens.y);
    }
    return ray_new(from_point, vec3_normalize_or(target_point - from_point, cross(cam.v.xyz, cam.u.xyz)));
}

/* A C program using Prism through its C API: open a backend (by name, or
 * "auto"), build a two-level scene (a mesh geometry placed twice, a sphere
 * geometry, a ground), trace a batch of rays, move an instance, render a
 * frame into an RGBA buffer, trace and render a heightfield under a sun, and
 * see a bad input refused with a message.
 *
 * Build (from the repository root, after `cargo build --release -p prism-rt-c`):
 *   cc -O2 -Wall -Wextra -Icapi/include capi/examples/basic.c \
 *      target/release/libprism_c.a -lpthread -ldl -lm -o basic
 *   ./basic cpu
 * It exits 0 when every check holds, 1 otherwise. */

#include "prism.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

/* Report a failed call with the library's message and count it. */
static int ok(PrismStatus status, const char *what) {
  if (status != PRISM_STATUS_OK) {
    fprintf(stderr, "%s failed (status %d): %s\n", what, (int)status, prism_last_error());
    failures++;
    return 0;
  }
  return 1;
}

static void check(int condition, const char *what) {
  if (!condition) {
    fprintf(stderr, "check failed: %s\n", what);
    failures++;
  }
}

/* A translation by (x, y, z) as a row-major 3x4 matrix. */
static void translation(float m[12], float x, float y, float z) {
  const float t[12] = {1, 0, 0, x, 0, 1, 0, y, 0, 0, 1, z};
  memcpy(m, t, sizeof t);
}

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "auto";
  PrismBackend *backend = NULL;
  if (!ok(prism_backend_open(name, &backend), "prism_backend_open")) return 1;
  printf("backend: %s\n", prism_backend_name(backend));

  PrismScene *scene = NULL;
  if (!ok(prism_scene_new(&scene), "prism_scene_new")) return 1;
  PrismMaterial grey = {PRISM_MATERIAL_LAMBERTIAN, {0.6f, 0.6f, 0.6f}, 0.0f, 1.0f};
  PrismMaterial red = {PRISM_MATERIAL_LAMBERTIAN, {0.8f, 0.1f, 0.1f}, 0.0f, 1.0f};
  uint32_t grey_id = 0, red_id = 0;
  ok(prism_scene_add_material(scene, &grey, &grey_id), "add grey");
  ok(prism_scene_add_material(scene, &red, &red_id), "add red");

  /* A unit cube as an indexed mesh: 8 vertices, 12 triangles. */
  const float cube_v[8 * 3] = {-1, -1, -1, 1, -1, -1, -1, 1, -1, 1, 1, -1,
                               -1, -1, 1,  1, -1, 1,  -1, 1, 1,  1, 1, 1};
  const uint32_t cube_t[12 * 3] = {0, 2, 3, 0, 3, 1, 4, 5, 7, 4, 7, 6, 0, 1, 5, 0, 5, 4,
                                   2, 6, 7, 2, 7, 3, 0, 4, 6, 0, 6, 2, 1, 3, 7, 1, 7, 5};
  uint32_t cube = 0, balls = 0, ground = 0;
  ok(prism_scene_add_mesh_geometry(scene, cube_v, 8, cube_t, 12, grey_id, &cube), "cube geometry");
  const float ball[4] = {0.0f, 0.0f, 0.0f, 1.0f};
  ok(prism_scene_add_sphere_geometry(scene, ball, 1, grey_id, &balls), "sphere geometry");
  const float floor_v[4 * 3] = {-50, -1, -50, 50, -1, -50, 50, -1, 50, -50, -1, 50};
  const uint32_t floor_t[2 * 3] = {0, 2, 1, 0, 3, 2};
  ok(prism_scene_add_mesh_geometry(scene, floor_v, 4, floor_t, 2, grey_id, &ground), "ground");

  float m[12];
  uint32_t left = 0, right = 0, sphere = 0, floor_instance = 0;
  translation(m, -3.0f, 0.0f, -10.0f);
  ok(prism_scene_add_instance(scene, cube, m, 0x01, 100, UINT32_MAX, &left), "left cube");
  translation(m, 3.0f, 0.0f, -10.0f);
  ok(prism_scene_add_instance(scene, cube, m, 0x02, 101, red_id, &right), "right cube");
  translation(m, 0.0f, 0.0f, -20.0f);
  ok(prism_scene_add_instance(scene, balls, m, 0x01, 102, UINT32_MAX, &sphere), "sphere");
  translation(m, 0.0f, -1.0f, 0.0f);
  ok(prism_scene_add_instance(scene, ground, m, 0x04, 103, UINT32_MAX, &floor_instance), "ground");
  if (!ok(prism_backend_set_scene(backend, scene), "prism_backend_set_scene")) return 1;

  /* Rays at the left cube, the right cube (seen only through mask bit 1),
   * the sphere, and into the sky. */
  PrismRay rays[4];
  memset(rays, 0, sizeof rays);
  const float targets[4][3] = {{-3, 0, -10}, {3, 0, -10}, {0, 0, -20}, {0, 10, -1}};
  for (int i = 0; i < 4; i++) {
    rays[i].dir[0] = targets[i][0];
    rays[i].dir[1] = targets[i][1];
    rays[i].dir[2] = targets[i][2];
    rays[i].tmax = INFINITY;
    rays[i].mask = UINT32_MAX;
  }
  PrismHit hits[4];
  if (ok(prism_intersect(backend, rays, hits, 4), "prism_intersect")) {
    check(hits[0].instance == left && fabsf(hits[0].t - 0.9f) < 1e-3f, "left cube hit at t = 0.9");
    check(hits[1].instance == right, "right cube hit");
    check(hits[2].instance == sphere && fabsf(hits[2].t - 0.95f) < 1e-3f, "sphere hit at t = 0.95");
    check(hits[3].prim == UINT32_MAX && hits[3].instance == UINT32_MAX, "sky ray misses");
  }
  /* A mask that leaves out the right cube: the ray goes on to the ground. */
  rays[1].mask = 0x01;
  uint8_t blocked[4] = {0};
  if (ok(prism_occluded(backend, rays, blocked, 4), "prism_occluded")) {
    check(blocked[0] && !blocked[1] && blocked[2] && !blocked[3], "occlusion with masks");
  }

  /* Move the left cube away: its ray now reaches the ground far behind. */
  const uint32_t moved[1] = {left};
  translation(m, -3.0f, 40.0f, -10.0f);
  if (ok(prism_backend_move_instances(backend, moved, m, 1), "move")) {
    rays[0].mask = UINT32_MAX;
    ok(prism_intersect(backend, rays, hits, 1), "intersect after the move");
    check(hits[0].instance != left, "the moved cube is no longer hit");
  }

  /* Render a small frame. */
  PrismCamera camera = {{0, 2, 4}, {0, 0, -10}, {0, 1, 0}, 50.0f, 0.0f, 1.0f};
  PrismRenderSettings settings = prism_render_settings_default();
  settings.integrator = PRISM_INTEGRATOR_AO;
  settings.spp = 2;
  settings.ao_extra = 0.5f; /* half the image traces one AO ray more */
  const uint32_t w = 64, h = 48;
  uint8_t *rgba = malloc((size_t)w * h * 4);
  if (rgba && ok(prism_render_rgba8(backend, &camera, &settings, w, h, rgba, (size_t)w * h * 4), "render")) {
    unsigned long sum = 0;
    for (size_t i = 0; i < (size_t)w * h * 4; i++) sum += rgba[i];
    check(sum > 0, "the frame is not black");
    /* A share outside [0, 1) is refused, naming the field. */
    settings.ao_extra = 1.5f;
    check(prism_render_rgba8(backend, &camera, &settings, w, h, rgba, (size_t)w * h * 4) ==
              PRISM_STATUS_INVALID_INPUT,
          "an AO share of 1.5 is refused");
    check(strstr(prism_last_error(), "ao_extra") != NULL, "the message names ao_extra");
  }

  /* A terrain: a 4 x 3 heightfield under a sun. A ray straight down onto
   * column (2, 1) meets its top; one along -x at height 0.5 meets the +x
   * side of the tallest column in its row. */
  PrismScene *terrain = NULL;
  if (ok(prism_scene_new(&terrain), "terrain scene")) {
    const float heights[4 * 3] = {1, 1, 1, 1, 1, 2, 3, 1, 0.25f, 1, 1, 1};
    uint32_t terrain_grey = 0;
    ok(prism_scene_add_material(terrain, &grey, &terrain_grey), "terrain material");
    ok(prism_scene_add_heightfield(terrain, 4, 3, 1.0f, heights, 12, terrain_grey, NULL), "heightfield");
    const PrismVec3 sun_at = {40, 80, 30}, sun_color = {1, 0.95f, 0.9f};
    ok(prism_scene_set_sun(terrain, sun_at, 4.0f, sun_color, 50.0f), "sun");
    const PrismVec3 nowhere = {0, 0, 0};
    check(prism_scene_set_sun(terrain, nowhere, -1.0f, sun_color, 1.0f) == PRISM_STATUS_INVALID_INPUT,
          "a sun of negative radius is refused");
    const float ragged[2] = {1, 2};
    check(prism_scene_add_heightfield(terrain, 4, 3, 1.0f, ragged, 2, terrain_grey, NULL) ==
              PRISM_STATUS_INVALID_INPUT,
          "heights that do not fill the grid are refused");
    if (ok(prism_backend_set_scene(backend, terrain), "set the terrain")) {
      PrismRay down[2];
      memset(down, 0, sizeof down);
      const float from[2][3] = {{2.5f, 10, 1.5f}, {10, 0.5f, 1.5f}};
      const float dir[2][3] = {{0, -1, 0}, {-1, 0, 0}};
      for (int i = 0; i < 2; i++) {
        memcpy(down[i].origin, from[i], sizeof from[i]);
        memcpy(down[i].dir, dir[i], sizeof dir[i]);
        down[i].tmax = INFINITY;
        down[i].mask = UINT32_MAX;
      }
      PrismHit terrain_hits[2];
      if (ok(prism_intersect(backend, down, terrain_hits, 2), "intersect the terrain")) {
        check(terrain_hits[0].cell == 1 * 4 + 2 && terrain_hits[0].face == 0 && fabsf(terrain_hits[0].t - 7.0f) < 1e-4f,
              "the top of column (2, 1) at t = 7");
        check(terrain_hits[1].cell == 1 * 4 + 3 && terrain_hits[1].face == 3 && fabsf(terrain_hits[1].t - 6.0f) < 1e-4f,
              "the +x side of column (3, 1) at t = 6");
      }
      PrismCamera above = {{2, 6, 8}, {2, 0, 1.5f}, {0, 1, 0}, 45.0f, 0.0f, 1.0f};
      PrismRenderSettings sunny = prism_render_settings_default();
      sunny.spp = 2;
      sunny.sun_nee = 1;
      if (rgba && ok(prism_render_rgba8(backend, &above, &sunny, w, h, rgba, (size_t)w * h * 4), "render the terrain")) {
        unsigned long sum = 0;
        for (size_t i = 0; i < (size_t)w * h * 4; i++) sum += rgba[i];
        check(sum > 0, "the terrain frame is not black");
      }
    }
    prism_scene_free(terrain);
    ok(prism_backend_set_scene(backend, scene), "back to the first scene");
  }

  /* Bad input is refused with a message naming it, and the backend stays usable. */
  const float singular[12] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0};
  PrismStatus s = prism_backend_move_instances(backend, moved, singular, 1);
  check(s == PRISM_STATUS_INVALID_INPUT, "a singular transform is refused");
  check(strstr(prism_last_error(), "singular") != NULL, "the message says why");
  printf("refused as expected: %s\n", prism_last_error());
  PrismBackend *other = NULL;
  check(prism_backend_open("warp-drive", &other) == PRISM_STATUS_INVALID_ARGUMENT && other == NULL,
        "an unknown backend name is refused");
  check(prism_intersect(backend, NULL, hits, 1) == PRISM_STATUS_INVALID_ARGUMENT, "null rays refused");
  check(prism_intersect(backend, rays, hits, 1) == PRISM_STATUS_OK, "still usable");

  free(rgba);
  prism_scene_free(scene);
  prism_backend_free(backend);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}

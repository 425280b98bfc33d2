/* SPDX-License-Identifier: MIT */
/* The CPU driver's plans (backend-cpu/cpu/cpu_driver.c, "plans"): a recorded
 * one-cube launch's grid is checked once, when it is recorded or updated,
 * and replayed as it is. What the grid carries from the device must reach
 * the replayed kernel as it reaches a launch: the device's plane size
 * (cubert_cpu_options_t.plane_dim). */
#include "test.h"

#include <string.h>

#include "counting_allocator.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cubert/record.h"

#define UNITS 32u

/* out[u] = PLANE_DIM * 100 + UNIT_POS_PLANE for each unit u of one cube. */
CUBERT_KERNEL(cpu_plan_plane_probe) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_PHASE {
    if (UNIT_POS < CUBERT_LEN(out)) CUBERT_STORE(out, UNIT_POS, PLANE_DIM * 100u + UNIT_POS_PLANE);
  }
}
CUBERT_KERNEL_DESCRIPTOR(k_plane_probe, cpu_plan_plane_probe, 1, 0, 0, UNITS, 1, 1);

/* Replays (and a launch between them) on devices of plane size 4, 8 and 32
 * see that size; so do replays after the recording's buffer was updated (a
 * new grid planned by the update). */
TEST(cpu_plan_replay_sees_the_device_plane_dim) {
  static const uint32_t planes[] = {4, 8, 32};
  size_t p;
  for (p = 0; p < sizeof planes / sizeof planes[0]; p++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_options_t o;
    cubert_client_t *client = NULL;
    cubert_recording_t *rec = NULL;
    cubert_handle_t h[2];
    cubert_launch_arguments_t args;
    cubert_cube_count_t one = cubert_cube_count_new_single();
    uint32_t out[UNITS], u, round;
    cubert_cpu_options_initialize(&o);
    o.ignore_environment = 1;
    o.plane_dim = planes[p];
    CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
    memset(out, 0, sizeof out);
    CHECK_OK(cubert_client_create_from_slice(client, out, sizeof out, &h[0], NULL));
    CHECK_OK(cubert_client_create_from_slice(client, out, sizeof out, &h[1], NULL));
    cubert_launch_arguments_initialize(&args);
    CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &h[0]));
    CHECK_OK(cubert_client_record_begin(client, NULL));
    CHECK_OK(cubert_client_launch(client, &k_plane_probe, &one, &args, NULL));
    CHECK_OK(cubert_client_record_end(client, &rec, NULL));
    for (round = 0; round < 4; round++) {
      const cubert_handle_t *target = round == 2 ? &h[1] : &h[0];
      if (round == 2) CHECK_OK(cubert_recording_set_buffer(rec, 0, &h[1], NULL));
      if (round == 3) CHECK_OK(cubert_recording_set_buffer(rec, 0, &h[0], NULL));
      if (round == 1) /* a launch, not a replay, in between: the same words */
        CHECK_OK(cubert_client_launch(client, &k_plane_probe, &one, &args, NULL));
      else
        CHECK_OK(cubert_client_replay(client, rec, NULL));
      CHECK_OK(cubert_client_read_one(client, target, out, sizeof out, NULL));
      for (u = 0; u < UNITS; u++)
        CHECK_MSG(out[u] == planes[p] * 100u + u % planes[p], "plane %u round %u unit %u: %u",
                  (unsigned)planes[p], (unsigned)round, (unsigned)u, (unsigned)out[u]);
      memset(out, 0, sizeof out);
      CHECK_OK(cubert_client_write(client, target, out, sizeof out, NULL));
    }
    cubert_recording_destroy(rec);
    CHECK_OK(cubert_client_handle_release(client, &h[0], NULL));
    CHECK_OK(cubert_client_handle_release(client, &h[1], NULL));
    cubert_client_release(client);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
  }
}

/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_sim_schedule.c: the deterministic CPU server driven by fuzzer
 * bytes (cubert_cpu_options_t.choice_bytes: one byte per scheduling choice).
 *
 * Input: the bytes are the schedule. A race-free program over three streams
 * (cross-stream bindings, a GC reclamation, reads) must give the host
 * model's results, no race report and no deadlock for every schedule, and
 * running the same bytes twice must give the same trace hash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "cubert/kernel.h"
#include "cubert_kernels.h"
#include "fuzz.h"

#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "fuzz_sim_schedule: %s:%d: check failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                                    \
      abort();                                                                           \
    }                                                                                    \
  } while (0)

#define N 32u

/* Kernels of the kernel library (examples/kernels/cubert_kernels.h). */
CUBERT_KERNEL_DESCRIPTOR(fz_add_kernel, ck_add_scalar_u32, 1, 1, 0, N, 1, 1);
CUBERT_KERNEL_DESCRIPTOR_RO(fz_mix_kernel, ck_mix_u32, 2, 0, 0, N, 1, 1, 0x1u);

static void launch(cubert_client_t *c, const cubert_kernel_t *k, const cubert_handle_t *b,
                   uint32_t nb, uint64_t scalar) {
  cubert_launch_arguments_t a;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_launch_arguments_initialize(&a);
  a.buffers = b;
  a.buffer_count = nb;
  a.scalars = &scalar;
  a.scalar_count = k->scalar_count;
  FUZZ_CHECK(cubert_client_launch(c, k, &count, &a, NULL) == CUBERT_STATUS_OK);
}

static uint64_t run(const uint8_t *data, size_t size) {
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL, *s[3];
  cubert_handle_t x, y, z, pair[2];
  uint32_t init[N], out[2][N], i;
  cubert_cpu_sim_info_t info;
  cubert_race_counters_t rc;
  int k;
  cubert_cpu_options_initialize(&o);
  o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  o.choice_bytes = size ? data : NULL;
  o.choice_bytes_count = size;
  o.device.race_check = 1;
  o.device.max_streams = 4;
  o.device.max_handles = 256;
  o.device.memory_size = 1u << 16;
  o.log_capacity = 256;
  FUZZ_CHECK(cubert_cpu_client_create(cubert_allocator_libc(), &o, &client, NULL) ==
             CUBERT_STATUS_OK);
  for (k = 0; k < 3; k++) {
    FUZZ_CHECK(cubert_client_clone(client, &s[k], NULL) == CUBERT_STATUS_OK);
    cubert_client_set_stream(s[k], (uint64_t)k + 1);
  }
  for (i = 0; i < N; i++) init[i] = i;
  FUZZ_CHECK(cubert_client_create_from_slice(s[0], init, sizeof init, &x,
                                             NULL) == CUBERT_STATUS_OK);
  FUZZ_CHECK(cubert_client_create_from_slice(s[1], init, sizeof init, &y,
                                             NULL) == CUBERT_STATUS_OK);
  FUZZ_CHECK(cubert_client_create_from_slice(s[2], init, sizeof init, &z,
                                             NULL) == CUBERT_STATUS_OK);
  launch(s[0], &fz_add_kernel, &x, 1, 5);
  launch(s[2], &fz_add_kernel, &z, 1, 7);
  pair[0] = x;
  pair[1] = y;
  launch(s[1], &fz_mix_kernel, pair, 2, 0); /* B waits for A */
  pair[0] = y;
  pair[1] = z;
  launch(s[2], &fz_mix_kernel, pair, 2, 0); /* C waits for B */
  FUZZ_CHECK(cubert_client_read_one(s[2], &z, out[0], sizeof out[0], NULL) == CUBERT_STATUS_OK);
  FUZZ_CHECK(cubert_client_read_one(s[1], &y, out[1], sizeof out[1], NULL) == CUBERT_STATUS_OK);
  for (i = 0; i < N; i++) {
    uint32_t yv = i * 3u + (i + 5u), zv = (i + 7u) * 3u + yv;
    FUZZ_CHECK(out[0][i] == zv && out[1][i] == yv);
  }
  cubert_client_handle_release(client, &x, NULL);
  cubert_client_handle_release(client, &y, NULL);
  cubert_client_handle_release(client, &z, NULL);
  FUZZ_CHECK(cubert_cpu_sim_drain(client, NULL) == CUBERT_STATUS_OK);
  FUZZ_CHECK(cubert_cpu_sim_info(client, &info, NULL) == CUBERT_STATUS_OK);
  FUZZ_CHECK(cubert_cpu_race_counters(client, &rc, NULL) == CUBERT_STATUS_OK);
  FUZZ_CHECK(rc.reports == 0 && info.deadlocks == 0);
  FUZZ_CHECK(info.source == (size ? CUBERT_SIM_SOURCE_BYTES : CUBERT_SIM_SOURCE_SEED));
  for (k = 0; k < 3; k++) cubert_client_release(s[k]);
  cubert_client_release(client);
  return info.trace_hash;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FUZZ_CHECK(run(data, size) == run(data, size));
  return 0;
}

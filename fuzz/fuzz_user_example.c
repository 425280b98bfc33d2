/* SPDX-License-Identifier: MIT */
/*
 * fuzz/fuzz_user_example.c: the worked example of fuzz/README.md ("Fuzzing
 * your own kernels and host code"): a user's kernel and host program fuzzed
 * against cubert's deterministic CPU server. The input is the data (a size,
 * a scalar, a seed for the vectors) followed by the schedule: every byte
 * after the header is one scheduling choice of the server (choice_bytes), so
 * the fuzzer explores interleavings of the streams as well as data.
 *
 * The program: x is uploaded on stream 1, y on stream 2; y = a*x + y runs on
 * stream 2 (it binds x, so the runtime makes stream 2 wait for stream 1);
 * then x = x + y runs on stream 1 (it binds y, made on stream 2: stream 1
 * waits for stream 2); both are read back and compared with a host model.
 * Checked for every input: the results, no race report, no deadlock, the
 * same trace hash when the same input runs twice, nothing leaked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "fuzz.h"
#include "fuzz_alloc.h"

#define CHECK(cond)                                                                      \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "fuzz_user_example: line %d: check failed: %s\n", __LINE__, #cond); \
      abort();                                                                           \
    }                                                                                    \
  } while (0)

/* ---- the user's kernels (cubert/kernel.h dialect) ---- */

CUBERT_KERNEL(axpy_u32) { /* y[i] = a * x[i] + y[i] */
  CUBERT_BUFFER(const uint32_t, x, 0);
  CUBERT_BUFFER(uint32_t, y, 1);
  CUBERT_SCALAR_U32(a, 0);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(y)) CUBERT_UNIT_DONE;
    CUBERT_STORE(y, i, a * CUBERT_LOAD(x, i) + CUBERT_LOAD(y, i));
  }
}

CUBERT_KERNEL(accumulate_u32) { /* dst[i] += src[i] */
  CUBERT_BUFFER(const uint32_t, src, 0);
  CUBERT_BUFFER(uint32_t, dst, 1);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(dst)) CUBERT_UNIT_DONE;
    CUBERT_STORE(dst, i, CUBERT_LOAD(dst, i) + CUBERT_LOAD(src, i));
  }
}

/* 2 buffers (buffer 0 read-only), 1 scalar, no shared memory, 16 units per cube */
CUBERT_KERNEL_DESCRIPTOR_RO(axpy_kernel, axpy_u32, 2, 1, 0, 16, 1, 1, 0x1u);
CUBERT_KERNEL_DESCRIPTOR_RO(accumulate_kernel, accumulate_u32, 2, 0, 0, 16, 1, 1, 0x1u);

#define MAX_N 64u

static void launch(cubert_client_t *c, const cubert_kernel_t *k, const cubert_handle_t *src,
                   const cubert_handle_t *dst, uint32_t n, uint64_t scalar) {
  cubert_binding_t b[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d((n + 15u) / 16u);
  cubert_error_t err;
  b[0] = *src;
  b[1] = *dst;
  cubert_launch_arguments_initialize(&args);
  args.buffers = b;
  args.buffer_count = 2;
  args.scalars = &scalar;
  args.scalar_count = k->scalar_count;
  CHECK(cubert_client_launch(c, k, &count, &args, &err) == CUBERT_STATUS_OK);
}

/* One run of the program on a fresh device; returns its trace hash. */
static uint64_t run(const uint8_t *data, size_t size) {
  fuzz_reader_t r = fuzz_reader_init(data, size);
  uint32_t n = 1u + fuzz_u8(&r) % MAX_N, a = fuzz_u8(&r), i;
  uint64_t seed = fuzz_u8(&r);
  uint32_t x[MAX_N], y[MAX_N], want_x[MAX_N], want_y[MAX_N], got_x[MAX_N], got_y[MAX_N];
  fuzz_alloc_t counting;
  cubert_allocator_t allocator = fuzz_alloc_init(&counting);
  cubert_cpu_options_t o;
  cubert_client_t *dev = NULL, *s1 = NULL, *s2 = NULL;
  cubert_handle_t hx, hy;
  cubert_race_counters_t races;
  cubert_cpu_sim_info_t info;
  cubert_error_t err;
  for (i = 0; i < n; i++) {
    x[i] = (uint32_t)cubert_sim_splitmix64(&seed);
    y[i] = (uint32_t)cubert_sim_splitmix64(&seed);
    want_y[i] = a * x[i] + y[i]; /* the host model */
    want_x[i] = x[i] + want_y[i];
  }
  /* the deterministic server: no threads, every scheduling choice taken
   * from the rest of the input; the race checker on; small limits (fast) */
  cubert_cpu_options_initialize(&o);
  o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  o.choice_bytes = fuzz_reader_done(&r) ? NULL : data + r.pos;
  o.choice_bytes_count = fuzz_reader_done(&r) ? 0 : size - r.pos;
  o.device.race_check = 1;
  o.device.max_streams = 4;
  o.device.max_handles = 64;
  o.device.memory_size = 1u << 12; /* 4 KiB pages: small allocations stay small */
  o.log_capacity = 256;
  o.profile_level = CUBERT_PROFILE_LEVEL_OFF;
  CHECK(cubert_cpu_client_create(allocator, &o, &dev, &err) == CUBERT_STATUS_OK);
  CHECK(cubert_client_clone(dev, &s1, NULL) == CUBERT_STATUS_OK);
  CHECK(cubert_client_clone(dev, &s2, NULL) == CUBERT_STATUS_OK);
  cubert_client_set_stream(s1, 1);
  cubert_client_set_stream(s2, 2);

  CHECK(cubert_client_create_from_slice(s1, x, n * 4u, &hx, &err) == CUBERT_STATUS_OK);
  CHECK(cubert_client_create_from_slice(s2, y, n * 4u, &hy, &err) == CUBERT_STATUS_OK);
  launch(s2, &axpy_kernel, &hx, &hy, n, a);     /* y = a*x + y on stream 2 */
  launch(s1, &accumulate_kernel, &hy, &hx, n, 0); /* x += y on stream 1 */
  CHECK(cubert_client_read_one(s1, &hx, got_x, sizeof got_x, &err) == CUBERT_STATUS_OK);
  CHECK(cubert_client_read_one(s2, &hy, got_y, sizeof got_y, &err) == CUBERT_STATUS_OK);
  CHECK(memcmp(got_x, want_x, n * 4u) == 0 && memcmp(got_y, want_y, n * 4u) == 0);

  CHECK(cubert_client_handle_release(dev, &hx, NULL) == CUBERT_STATUS_OK);
  CHECK(cubert_client_handle_release(dev, &hy, NULL) == CUBERT_STATUS_OK);
  CHECK(cubert_cpu_sim_drain(dev, NULL) == CUBERT_STATUS_OK);
  CHECK(cubert_cpu_race_counters(dev, &races, NULL) == CUBERT_STATUS_OK && races.reports == 0);
  CHECK(cubert_cpu_sim_info(dev, &info, NULL) == CUBERT_STATUS_OK && info.deadlocks == 0);
  cubert_client_release(s1);
  cubert_client_release(s2);
  cubert_client_release(dev);
  CHECK(fuzz_alloc_balanced(&counting)); /* nothing leaked */
  return info.trace_hash;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  CHECK(run(data, size) == run(data, size)); /* the same input, the same run */
  return 0;
}

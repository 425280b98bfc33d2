/* SPDX-License-Identifier: MIT */
/*
 * tests/os/test_cpu_executor.c: the CPU kernel executor running kernels
 * written in the dialect of cubert/kernel.h (kernels_test.h), over pools of
 * 0, 1 and 4 workers.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "counting_allocator.h"
#include "cubert/os.h"
#include "cpu/cpu_executor.h"
#include "os/os_thread.h"
#include "cubert_kernels.h"

#include "executor_test.h"

/* ---- elementwise add ------------------------------------------------------- */

TEST(executor_add_many_sizes) {
  static const size_t sizes[] = {1, 2, 7, 255, 256, 257, 511, 1000, 4099, 65536, 100003};
  size_t p, s;
  for (p = 0; p < N_POOLS; p++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_executor_t *ex = NULL;
    CHECK_OK(cubert__cpu_executor_create(a, k_pools[p], &ex, NULL));
    CHECK_EQ_U64(cubert__cpu_executor_worker_count(ex), k_pools[p]);
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) run_add(ex, sizes[s]);
    cubert__cpu_executor_destroy(ex);
    CHECK_EQ_I64(c.live_blocks, 0);
    CHECK_EQ_U64(c.bad_frees, 0);
    counting_allocator_destroy(&c);
  }
}

/* A zero in any cube-count component runs nothing (CubeCount is_empty). */
TEST(executor_zero_cubes_is_noop) {
  cubert_allocator_t a;
  counting_allocator_t c;
  cubert_cpu_executor_t *ex = NULL;
  float out[4] = {1, 2, 3, 4}, in[4] = {0, 0, 0, 0};
  cubert_kernel_args_t args;
  cubert_kernel_report_t report;
  int z;
  a = counting_allocator_initialize(&c);
  CHECK_OK(cubert__cpu_executor_create(a, 2, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, in, 0); /* oob_copy would write out[0..] */
  cubert_kernel_args_set_buffer(&args, 1, out, 0);
  for (z = 0; z < 3; z++) {
    cubert_dim3_t count = dim3(z == 0 ? 0 : 5, z == 1 ? 0 : 5, z == 2 ? 0 : 5);
    memset(&report, 0xff, sizeof(report));
    CHECK_OK(cubert__cpu_executor_run(ex, &ck_oob_copy_f32_kernel, count, dim3(4, 1, 1), &args,
                                      CUBERT_EXECUTION_UNCHECKED, &report, NULL));
    CHECK_EQ_U64(report.oob_count, 0);
    CHECK_EQ_U64(report.has_violation, 0);
    CHECK_EQ_STR(report.kernel_name, "ck_oob_copy_f32");
  }
  CHECK(out[0] == 1 && out[1] == 2 && out[2] == 3 && out[3] == 4);
  cubert__cpu_executor_destroy(ex);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- reduction with barriers ---------------------------------------------- */

TEST(executor_reduce_shared_tree_matches_reference) {
  static const uint32_t dims[] = {256, 128, 64, 1};
  const size_t n = 100003;
  float *in = floats(n);
  size_t i, p, d;
  for (i = 0; i < n; i++) in[i] = (float)(int)((i * 7919u) % 13u) - 6.0f; /* exact sums */
  for (p = 0; p < N_POOLS; p++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_executor_t *ex = NULL;
    CHECK_OK(cubert__cpu_executor_create(a, k_pools[p], &ex, NULL));
    for (d = 0; d < sizeof(dims) / sizeof(dims[0]); d++) {
      uint32_t block = dims[d];
      size_t cubes = (n + block - 1) / block, cube;
      float *partial = floats(cubes);
      cubert_kernel_args_t args;
      cubert_kernel_args_initialize(&args);
      cubert_kernel_args_set_buffer(&args, 0, in, n * sizeof(float));
      cubert_kernel_args_set_buffer(&args, 1, partial, cubes * sizeof(float));
      CHECK_OK(cubert__cpu_executor_run(ex, &ck_reduce_sum_f32_kernel, dim3((uint32_t)cubes, 1, 1),
                                        dim3(block, 1, 1), &args, CUBERT_EXECUTION_CHECKED, NULL,
                                        NULL));
      for (cube = 0; cube < cubes; cube++) {
        float ref = 0.0f;
        for (i = cube * block; i < (cube + 1) * block && i < n; i++) ref += in[i];
        CHECK_MSG(partial[cube] == ref, "block %u cube %zu: %f != %f", block, cube,
                  (double)partial[cube], (double)ref);
      }
      free(partial);
    }
    cubert__cpu_executor_destroy(ex);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
  }
  free(in);
}

/* ---- tiled matmul ------------------------------------------------------------ */

/* c = a . b in `mode`, against the reference; 16 guard floats past c must stay
 * untouched. Shapes with m, n multiples of the tile and k % CK_TILE == 0 run
 * the kernel's full-tile path, others its edge path, some both. */
static void check_matmul(cubert_cpu_executor_t *ex, uint32_t m, uint32_t k, uint32_t n,
                         cubert_execution_mode_t mode) {
  float *a = floats((size_t)m * k), *b = floats((size_t)k * n), *c = floats((size_t)m * n + 16);
  cubert_kernel_args_t args;
  cubert_kernel_report_t report;
  uint32_t i, j, t;
  for (i = 0; i < m * k; i++) a[i] = (float)((int)(i % 7u) - 3);
  for (i = 0; i < k * n; i++) b[i] = (float)((int)(i % 5u) - 2);
  for (i = 0; i < m * n + 16; i++) c[i] = -9.0f;
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, a, (uint64_t)m * k * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 1, b, (uint64_t)k * n * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 2, c, (uint64_t)m * n * sizeof(float));
  cubert_kernel_args_set_u32(&args, 0, m);
  cubert_kernel_args_set_u32(&args, 1, k);
  cubert_kernel_args_set_u32(&args, 2, n);
  CHECK_OK(cubert__cpu_executor_run(ex, &ck_matmul_f32_kernel,
                                    dim3((n + CK_TILE - 1) / CK_TILE, (m + CK_TILE - 1) / CK_TILE, 1),
                                    ck_matmul_f32_kernel.cube_dim, &args, mode, &report, NULL));
  CHECK_EQ_U64(report.oob_count, 0);
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++) {
      float ref = 0.0f;
      for (t = 0; t < k; t++) ref += a[i * k + t] * b[t * n + j];
      CHECK_MSG(c[i * n + j] == ref, "%ux%ux%u mode %d c[%u][%u] = %f, want %f", m, k, n,
                (int)mode, i, j, (double)c[i * n + j], (double)ref);
    }
  for (i = m * n; i < m * n + 16; i++)
    CHECK_MSG(c[i] == -9.0f, "%ux%ux%u mode %d: guard %u written", m, k, n, (int)mode, i);
  free(a);
  free(b);
  free(c);
}


TEST(executor_matmul_tiled_matches_reference) {
  static const uint32_t shapes[][3] = {
      {64, 48, 80}, /* every cube full */
      {37, 29, 53}, /* not multiples of the tile: every cube on the edge path */
      {40, 32, 56}, /* full cubes and edge cubes in one launch */
      {16, 16, 16}, {1, 1, 1}, {17, 16, 15}};
  size_t p, s;
  int mode;
  for (p = 0; p < N_POOLS; p++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_executor_t *ex = NULL;
    CHECK_OK(cubert__cpu_executor_create(a, k_pools[p], &ex, NULL));
    for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
      for (mode = 0; mode < 3; mode++)
        check_matmul(ex, shapes[s][0], shapes[s][1], shapes[s][2], (cubert_execution_mode_t)mode);
    cubert__cpu_executor_destroy(ex);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
  }
}

/* ---- CUBERT_CUBE_WITHIN ----------------------------------------------------- */

/* flags[CUBE_POS] = CUBERT_CUBE_WITHIN(n) (uniform code, once per cube). */
CUBERT_KERNEL(within_flags) {
  CUBERT_BUFFER(uint32_t, flags, 0);
  CUBERT_SCALAR_U64(n, 0);
  const uint32_t within = CUBERT_CUBE_WITHIN(n) ? 1u : 0u;
  CUBERT_PHASE {
    if (UNIT_POS == 0) CUBERT_STORE(flags, CUBE_POS, within);
  }
}
CUBERT_KERNEL_DESCRIPTOR(within_flags_kernel, within_flags, 1, 1, 0, 8, 1, 1);

/* True exactly for the cubes whose every unit has ABSOLUTE_POS < n. */
TEST(executor_cube_within_is_true_for_whole_cubes_only) {
  static const uint64_t ns[] = {0, 1, 7, 8, 9, 16, 23, 24, 25};
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_executor_t *ex = NULL;
  uint32_t flags[4];
  size_t s;
  CHECK_OK(cubert__cpu_executor_create(a, 1, &ex, NULL));
  for (s = 0; s < sizeof(ns) / sizeof(ns[0]); s++) {
    cubert_kernel_args_t args;
    uint32_t cube;
    memset(flags, 0xee, sizeof(flags));
    cubert_kernel_args_initialize(&args);
    cubert_kernel_args_set_buffer(&args, 0, flags, sizeof(flags));
    cubert_kernel_args_set_u64(&args, 0, ns[s]);
    CHECK_OK(cubert__cpu_executor_run(ex, &within_flags_kernel, dim3(4, 1, 1), dim3(8, 1, 1),
                                      &args, CUBERT_EXECUTION_CHECKED, NULL, NULL));
    for (cube = 0; cube < 4; cube++)
      CHECK_MSG(flags[cube] == ((cube + 1u) * 8u <= ns[s] ? 1u : 0u), "n=%u cube %u: %u",
                (unsigned)ns[s], cube, flags[cube]);
  }
  cubert__cpu_executor_destroy(ex);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- shared-memory isolation (cubecl#1575) ----------------------------------- */

/* Writes to the cubes' shared memory are serialized by iso_lock and counted
 * by iso_written, so "iso_written grew while I waited" means another cube
 * wrote its shared memory after this one did and before this one checks.
 * If two running cubes shared a block, that later write would clobber this
 * cube's values. The negative control (scalar 0 = 1) uses one global block
 * for every cube and must detect exactly that. */
static uint32_t iso_lock;
static uint32_t iso_written;
static uint32_t iso_global_block[64];
#define ISO_UNITS 64
#define ISO_WAIT_NS 20000000u

static void iso_acquire(void) {
  uint32_t expected = 0;
  while (!__atomic_compare_exchange_n(&iso_lock, &expected, 1u, false, __ATOMIC_ACQUIRE,
                                      __ATOMIC_RELAXED)) {
    expected = 0;
    cubert__os_thread_yield();
  }
}

CUBERT_KERNEL(iso_kernel) {
  CUBERT_BUFFER(uint32_t, errors, 0);
  CUBERT_BUFFER(uint32_t, overlapped, 1);
  CUBERT_SCALAR_U32(use_global_block, 0);
  CUBERT_SHARED(uint32_t, stat, ISO_UNITS);
  CUBERT_SHARED_DYNAMIC(uint32_t, dyn);
  uint32_t *block = use_global_block ? iso_global_block : dyn.ptr;
  uint32_t mine, saw_other = 0;
  uint64_t start;
  iso_acquire();
  CUBERT_PHASE {
    CUBERT_STORE(stat, UNIT_POS, (uint32_t)CUBE_POS * 7u + 1u);
    /* relaxed atomics: the negative control's aliasing is deliberate */
    __atomic_store_n(&block[UNIT_POS], (uint32_t)CUBE_POS * 7u + 1u, __ATOMIC_RELAXED);
  }
  mine = __atomic_add_fetch(&iso_written, 1u, __ATOMIC_SEQ_CST);
  __atomic_store_n(&iso_lock, 0u, __ATOMIC_RELEASE);
  start = cubert__os_clock_ns();
  while (cubert__os_clock_ns() - start < ISO_WAIT_NS) {
    if (__atomic_load_n(&iso_written, __ATOMIC_SEQ_CST) != mine) {
      saw_other = 1;
      break;
    }
    cubert__os_thread_yield();
  }
  CUBERT_PHASE {
    uint32_t want = (uint32_t)CUBE_POS * 7u + 1u;
    if (CUBERT_LOAD(stat, UNIT_POS) != want || __atomic_load_n(&block[UNIT_POS], __ATOMIC_RELAXED) != want)
      CUBERT_STORE(errors, CUBE_POS, 1u);
    if (UNIT_POS == 0) CUBERT_STORE(overlapped, CUBE_POS, saw_other);
  }
}
CUBERT_KERNEL_DESCRIPTOR(iso_kernel_desc, iso_kernel, 2, 1, ISO_UNITS * sizeof(uint32_t),
                         ISO_UNITS, 1, 1);

#define ISO_MAX_CUBES 48

static void iso_run(cubert_cpu_executor_t *ex, uint32_t use_global, uint32_t cubes,
                    uint32_t *out_errors, uint32_t *out_overlapped) {
  uint32_t errors[ISO_MAX_CUBES], overlapped[ISO_MAX_CUBES], i;
  cubert_kernel_args_t args;
  memset(errors, 0, sizeof(errors));
  memset(overlapped, 0, sizeof(overlapped));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, errors, sizeof(errors));
  cubert_kernel_args_set_buffer(&args, 1, overlapped, sizeof(overlapped));
  cubert_kernel_args_set_u32(&args, 0, use_global);
  CHECK(cubes <= ISO_MAX_CUBES);
  CHECK_OK(cubert__cpu_executor_run(ex, &iso_kernel_desc, dim3(cubes, 1, 1),
                                    iso_kernel_desc.cube_dim, &args, CUBERT_EXECUTION_CHECKED,
                                    NULL, NULL));
  *out_errors = 0;
  *out_overlapped = 0;
  for (i = 0; i < cubes; i++) {
    *out_errors += errors[i];
    *out_overlapped += overlapped[i];
  }
}

TEST(executor_shared_memory_per_cube) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_executor_t *ex = NULL;
  uint32_t errors, overlapped, round;
  CHECK_OK(cubert__cpu_executor_create(a, 4, &ex, NULL));
  for (round = 0; round < 3; round++) {
    iso_run(ex, 0, ISO_MAX_CUBES, &errors, &overlapped);
    CHECK_MSG(overlapped >= 1, "no two cubes ran concurrently (overlapped=%u)", overlapped);
    CHECK_MSG(errors == 0, "%u cubes saw another cube's shared memory", errors);
  }
  /* Negative control: one block for all cubes is caught whenever cubes overlap. */
  iso_run(ex, 1, ISO_MAX_CUBES, &errors, &overlapped);
  CHECK(overlapped >= 1);
  CHECK_MSG(errors >= 1, "the isolation check missed aliased shared memory");
  cubert__cpu_executor_destroy(ex);
  CHECK_EQ_I64(c.live_blocks, 0);
  CHECK_EQ_U64(c.bad_frees, 0);
  counting_allocator_destroy(&c);
}

/* ---- steady state: no allocation per launch ---------------------------------- */

TEST(executor_1000_launches_allocate_nothing) {
  size_t p;
  for (p = 0; p < N_POOLS; p++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_executor_t *ex = NULL;
    const size_t n = 5000;
    float *x = floats(n), *y = floats(n), *out = floats(n);
    cubert_kernel_args_t args;
    uint64_t calls;
    int64_t live;
    int i;
    size_t j;
    for (j = 0; j < n; j++) {
      x[j] = (float)j;
      y[j] = 1.0f;
    }
    CHECK_OK(cubert__cpu_executor_create(a, k_pools[p], &ex, NULL));
    cubert_kernel_args_initialize(&args);
    cubert_kernel_args_set_buffer(&args, 0, x, n * sizeof(float));
    cubert_kernel_args_set_buffer(&args, 1, y, n * sizeof(float));
    cubert_kernel_args_set_buffer(&args, 2, out, n * sizeof(float));
    /* warm-up with the largest dynamic shared memory used below, and the
     * largest cube (the unit variables' block) */
    {
      uint32_t e, o;
      iso_run(ex, 0, 1, &e, &o);
      CHECK_EQ_U64(e, 0);
      CHECK_OK(cubert__cpu_executor_run(ex, &ck_add_f32_kernel, dim3(64, 1, 1),
                                        ck_add_f32_kernel.cube_dim, &args,
                                        CUBERT_EXECUTION_CHECKED, NULL, NULL));
    }
    calls = c.calls;
    live = c.live_blocks;
    for (i = 0; i < 1000; i++) {
      cubert_kernel_report_t report;
      CHECK_OK(cubert__cpu_executor_run(ex, &ck_add_f32_kernel,
                                        dim3((uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK), 1, 1),
                                        ck_add_f32_kernel.cube_dim, &args,
                                        (cubert_execution_mode_t)(i % 3), &report, NULL));
      CHECK_EQ_U64(c.calls, calls);
      CHECK_EQ_I64(c.live_blocks, live);
    }
    for (j = 0; j < n; j++) CHECK(out[j] == (float)j + 1.0f);
    cubert__cpu_executor_destroy(ex);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
    free(x);
    free(y);
    free(out);
  }
}

/* ---- positions in 3-D grids ---------------------------------------------------- */

static void check_positions(cubert_cpu_executor_t *ex, cubert_dim3_t count, cubert_dim3_t dim) {
  uint32_t units = dim.x * dim.y * dim.z;
  uint64_t cubes = (uint64_t)count.x * count.y * count.z, total = cubes * units, g;
  uint32_t *pos = (uint32_t *)malloc(total * 8 * sizeof(uint32_t));
  uint32_t *abs_pos = (uint32_t *)malloc(total * 3 * sizeof(uint32_t));
  cubert_kernel_args_t args;
  cubert_kernel_report_t report;
  CHECK(pos && abs_pos);
  memset(pos, 0xee, total * 8 * sizeof(uint32_t));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, pos, total * 8 * sizeof(uint32_t));
  cubert_kernel_args_set_buffer(&args, 1, abs_pos, total * 3 * sizeof(uint32_t));
  CHECK_OK(cubert__cpu_executor_run(ex, &ck_positions_kernel, count, dim, &args,
                                    CUBERT_EXECUTION_VALIDATE, &report, NULL));
  CHECK_EQ_U64(report.oob_count, 0);
  for (g = 0; g < total; g++) {
    /* ABSOLUTE_POS = CUBE_POS * CUBE_DIM + UNIT_POS; linear ids are x-fastest. */
    uint64_t cube = g / units;
    uint32_t unit = (uint32_t)(g % units);
    uint32_t cx = (uint32_t)(cube % count.x), cy = (uint32_t)(cube / count.x % count.y),
             cz = (uint32_t)(cube / count.x / count.y);
    uint32_t ux = unit % dim.x, uy = unit / dim.x % dim.y, uz = unit / dim.x / dim.y;
    const uint32_t *w = pos + g * 8, *ab = abs_pos + g * 3;
    CHECK_MSG(w[0] == cx && w[1] == cy && w[2] == cz, "g=%llu cube (%u,%u,%u) want (%u,%u,%u)",
              (unsigned long long)g, w[0], w[1], w[2], cx, cy, cz);
    CHECK(w[3] == ux && w[4] == uy && w[5] == uz);
    CHECK_EQ_U64(w[6], unit);
    CHECK_EQ_U64(w[7], cube);
    CHECK_EQ_U64(ab[0], cx * dim.x + ux);
    CHECK_EQ_U64(ab[1], cy * dim.y + uy);
    CHECK_EQ_U64(ab[2], cz * dim.z + uz);
  }
  free(pos);
  free(abs_pos);
}

TEST(executor_positions_3d) {
  size_t p;
  for (p = 0; p < N_POOLS; p++) {
    cubert_cpu_executor_t *ex = NULL;
    CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), k_pools[p], &ex, NULL));
    check_positions(ex, dim3(3, 2, 4), dim3(4, 2, 3));
    check_positions(ex, dim3(1, 1, 1), dim3(1, 1, 1));
    check_positions(ex, dim3(1, 7, 1), dim3(1, 1, 5));
    check_positions(ex, dim3(5, 1, 3), dim3(2, 3, 1));
    check_positions(ex, dim3(300, 2, 2), dim3(8, 1, 1));
    cubert__cpu_executor_destroy(ex);
  }
}

/* ---- execution modes on out-of-bounds accesses ---------------------------------- */

/* 4 cubes x 4 units run out[i] = in[i] + 1 for i in 0..16 over views of 9
 * elements inside 16-element backings. */
static void oob_run(cubert_cpu_executor_t *ex, cubert_execution_mode_t mode, float *in,
                    float *out, cubert_kernel_report_t *report) {
  cubert_kernel_args_t args;
  int i;
  for (i = 0; i < 16; i++) {
    in[i] = (float)(10 * i);
    out[i] = -1.0f;
  }
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, in, 9 * sizeof(float));
  cubert_kernel_args_set_buffer(&args, 1, out, 9 * sizeof(float));
  CHECK_OK(cubert__cpu_executor_run(ex, &ck_oob_copy_f32_kernel, dim3(4, 1, 1), dim3(4, 1, 1), &args,
                                    mode, report, NULL));
}

TEST(executor_modes_checked_validate_unchecked) {
  size_t p;
  for (p = 0; p < N_POOLS; p++) {
    cubert_cpu_executor_t *ex = NULL;
    float in[16], out[16];
    cubert_kernel_report_t r;
    int i;
    CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), k_pools[p], &ex, NULL));

    /* CHECKED: in-bounds work done, OOB stores dropped, counted, no details. */
    oob_run(ex, CUBERT_EXECUTION_CHECKED, in, out, &r);
    for (i = 0; i < 9; i++) CHECK(out[i] == (float)(10 * i) + 1.0f);
    for (i = 9; i < 16; i++) CHECK(out[i] == -1.0f);
    CHECK_EQ_U64(r.oob_count, 14); /* 7 loads + 7 stores */
    CHECK_EQ_U64(r.has_violation, 0);
    CHECK_EQ_STR(r.kernel_name, "ck_oob_copy_f32");

    /* VALIDATE: same effect; the first violation is cube 2's first unit load
     * of in[9] (unit 1 of cube 2 = absolute 9). */
    oob_run(ex, CUBERT_EXECUTION_VALIDATE, in, out, &r);
    for (i = 0; i < 9; i++) CHECK(out[i] == (float)(10 * i) + 1.0f);
    for (i = 9; i < 16; i++) CHECK(out[i] == -1.0f);
    CHECK_EQ_U64(r.oob_count, 14);
    CHECK_EQ_U64(r.has_violation, 1);
    CHECK_EQ_U64(r.buffer_index, 0);
    CHECK_EQ_U64(r.element_index, 9);
    CHECK_EQ_U64(r.buffer_length, 9);
    CHECK_EQ_U64(r.is_write, 0);
    CHECK_EQ_U64(r.cube_linear, 2);
    CHECK(r.cube_pos.x == 2 && r.cube_pos.y == 0 && r.cube_pos.z == 0);
    CHECK_EQ_STR(r.kernel_name, "ck_oob_copy_f32");

    /* UNCHECKED: raw accesses reach the backing past the view; nothing counted. */
    oob_run(ex, CUBERT_EXECUTION_UNCHECKED, in, out, &r);
    for (i = 0; i < 16; i++) CHECK(out[i] == (float)(10 * i) + 1.0f);
    CHECK_EQ_U64(r.oob_count, 0);
    CHECK_EQ_U64(r.has_violation, 0);
    cubert__cpu_executor_destroy(ex);
  }
}

/* An out-of-bounds store is reported as a write with its buffer slot. */
TEST(executor_validate_reports_store_violation) {
  cubert_cpu_executor_t *ex = NULL;
  float in[64], out[8];
  cubert_kernel_args_t args;
  cubert_kernel_report_t r;
  memset(in, 0, sizeof(in));
  CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), 3, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, in, sizeof(in));
  cubert_kernel_args_set_buffer(&args, 1, out, 5 * sizeof(float));
  CHECK_OK(cubert__cpu_executor_run(ex, &ck_oob_copy_f32_kernel, dim3(2, 2, 2), dim3(2, 2, 2), &args,
                                    CUBERT_EXECUTION_VALIDATE, &r, NULL));
  CHECK_EQ_U64(r.oob_count, 64 - 5);
  CHECK_EQ_U64(r.has_violation, 1);
  CHECK_EQ_U64(r.buffer_index, 1);
  CHECK_EQ_U64(r.element_index, 5);
  CHECK_EQ_U64(r.buffer_length, 5);
  CHECK_EQ_U64(r.is_write, 1);
  CHECK_EQ_U64(r.cube_linear, 0);
  cubert__cpu_executor_destroy(ex);
}

/* The reported first violation does not depend on the pool or scheduling. */
TEST(executor_validate_first_violation_is_deterministic) {
  int rep;
  size_t p;
  for (p = 0; p < N_POOLS; p++) {
    cubert_cpu_executor_t *ex = NULL;
    CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), k_pools[p], &ex, NULL));
    for (rep = 0; rep < 20; rep++) {
      static float in[4096], out[4096];
      cubert_kernel_args_t args;
      cubert_kernel_report_t r;
      cubert_kernel_args_initialize(&args);
      cubert_kernel_args_set_buffer(&args, 0, in, 3000 * sizeof(float));
      cubert_kernel_args_set_buffer(&args, 1, out, 4096 * sizeof(float));
      CHECK_OK(cubert__cpu_executor_run(ex, &ck_oob_copy_f32_kernel, dim3(1024, 1, 1), dim3(4, 1, 1),
                                        &args, CUBERT_EXECUTION_VALIDATE, &r, NULL));
      CHECK_EQ_U64(r.oob_count, 4096 - 3000);
      CHECK_EQ_U64(r.cube_linear, 750);
      CHECK_EQ_U64(r.element_index, 3000);
    }
    cubert__cpu_executor_destroy(ex);
  }
}

/* ---- scalars ------------------------------------------------------------------------ */

TEST(executor_scalar_slots) {
  cubert_cpu_executor_t *ex = NULL;
  float x[200], y[100], out[100];
  cubert_kernel_args_t args;
  int i;
  for (i = 0; i < 200; i++) x[i] = (float)i;
  for (i = 0; i < 100; i++) y[i] = 1000.0f;
  CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), 2, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, x, sizeof(x));
  cubert_kernel_args_set_buffer(&args, 1, y, sizeof(y));
  cubert_kernel_args_set_buffer(&args, 2, out, sizeof(out));
  CHECK(cubert_kernel_args_set_f32(&args, 0, 2.5f));
  CHECK(cubert_kernel_args_set_i64(&args, 1, -3));
  CHECK(!cubert_kernel_args_set_u32(&args, CUBERT_KERNEL_MAX_SCALARS, 1));
  CHECK(!cubert_kernel_args_set_buffer(&args, CUBERT_KERNEL_MAX_BUFFERS, x, 4));
  CHECK_EQ_U64(args.scalar_count, 2);
  CHECK_EQ_U64(args.buffer_count, 3);
  CHECK_EQ_U64(args.scalars[0], 0x40200000u); /* 2.5f */
  CHECK(cubert_kernel_bits_f64(cubert_kernel_f64_bits(-0.125)) == -0.125);
  CHECK_OK(cubert__cpu_executor_run(ex, &ck_axpy_offset_f32_kernel, dim3(2, 1, 1), dim3(64, 1, 1), &args,
                                    CUBERT_EXECUTION_CHECKED, NULL, NULL));
  /* x index i - 3: out of bounds (a load of 0) for i < 3. */
  for (i = 0; i < 100; i++)
    CHECK(out[i] == (i < 3 ? 1000.0f : 2.5f * (float)(i - 3) + 1000.0f));
  cubert__cpu_executor_destroy(ex);
}

/* ---- dynamic shared memory ------------------------------------------------------------ */

TEST(executor_dynamic_shared_reverse) {
  size_t p;
  for (p = 0; p < N_POOLS; p++) {
    cubert_cpu_executor_t *ex = NULL;
    enum { CUBES = 37, D = 128 };
    static uint32_t in[CUBES * D], out[CUBES * D];
    cubert_kernel_args_t args;
    uint32_t i;
    for (i = 0; i < CUBES * D; i++) in[i] = i * 2654435761u;
    CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), k_pools[p], &ex, NULL));
    cubert_kernel_args_initialize(&args);
    cubert_kernel_args_set_buffer(&args, 0, in, sizeof(in));
    cubert_kernel_args_set_buffer(&args, 1, out, sizeof(out));
    CHECK_OK(cubert__cpu_executor_run(ex, &ck_reverse_u32_kernel, dim3(CUBES, 1, 1),
                                      ck_reverse_u32_kernel.cube_dim, &args,
                                      CUBERT_EXECUTION_CHECKED, NULL, NULL));
    for (i = 0; i < CUBES * D; i++) CHECK_EQ_U64(out[i], in[(i / D) * D + (D - 1 - i % D)]);
    cubert__cpu_executor_destroy(ex);
  }
}

TEST(executor_dynamic_shared_growth_out_of_memory) {
  uint64_t n;
  for (n = 1; n <= 4; n++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_executor_t *ex = NULL;
    cubert_error_t e;
    uint32_t errors[48], overlapped[48];
    cubert_kernel_args_t args;
    int64_t live;
    CHECK_OK(cubert__cpu_executor_create(a, 3, &ex, NULL));
    live = c.live_blocks;
    cubert_kernel_args_initialize(&args);
    cubert_kernel_args_set_buffer(&args, 0, errors, sizeof(errors));
    cubert_kernel_args_set_buffer(&args, 1, overlapped, sizeof(overlapped));
    cubert_kernel_args_set_u32(&args, 0, 0);
    counting_allocator_fail_at(&c, n, 0); /* 4 contexts: the nth block fails */
    CHECK_STATUS(cubert__cpu_executor_run(ex, &iso_kernel_desc, dim3(1, 1, 1),
                                          iso_kernel_desc.cube_dim, &args,
                                          CUBERT_EXECUTION_CHECKED, NULL, &e),
                 CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK(cubert_error_kind(&e) == CUBERT_ERROR_HOST_OUT_OF_MEMORY);
    CHECK_EQ_I64(c.live_blocks, live);
    memset(errors, 0, sizeof(errors));
    CHECK_OK(cubert__cpu_executor_run(ex, &iso_kernel_desc, dim3(1, 1, 1),
                                      iso_kernel_desc.cube_dim, &args, CUBERT_EXECUTION_CHECKED,
                                      NULL, &e));
    CHECK_EQ_U64(errors[0], 0);
    CHECK_EQ_I64(c.live_blocks, live + 5); /* 4 dynamic blocks + the cube block of the context that ran (its shared array) */
    cubert__cpu_executor_destroy(ex);
    CHECK_EQ_I64(c.live_blocks, 0);
    CHECK_EQ_U64(c.bad_frees, 0);
    counting_allocator_destroy(&c);
  }
}

TEST(executor_create_out_of_memory_each_allocation) {
  uint64_t n;
  int done = 0;
  for (n = 1; !done; n++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_executor_t *ex = NULL;
    cubert_error_t e;
    cubert_status_t s;
    counting_allocator_fail_at(&c, n, 0);
    s = cubert__cpu_executor_create(a, 3, &ex, &e);
    if (s == CUBERT_STATUS_OK) {
      CHECK(c.failures == 0);
      c.fail_at = 0; /* the run's own allocations (the cubes' blocks) are tested elsewhere */
      run_add(ex, 777);
      cubert__cpu_executor_destroy(ex);
      done = 1;
    } else {
      CHECK_STATUS(s, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      CHECK(cubert_error_kind(&e) == CUBERT_ERROR_HOST_OUT_OF_MEMORY);
      CHECK(ex == NULL);
    }
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
    CHECK(n < 100);
  }
}

/* A worker thread that cannot start: the ones already started are stopped. */

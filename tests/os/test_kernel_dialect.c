/* SPDX-License-Identifier: MIT */
/*
 * tests/os/test_kernel_dialect.c: the execution model on the CPU alone:
 * plane operations under every plane size (1 .. 64) and cube sizes that are
 * not powers of two, on the executor (0 and 2 workers, so cubes also run on
 * several threads) and the inline driver; the kernel race checker
 * (RACECHECK): a catalogue of seeded kernel bugs, each report's text
 * checked, and the project's kernels running clean under it; the options
 * that choose the plane size; the checker's out-of-memory paths.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "counting_allocator.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/inline.h"
#include "cpu/cpu_executor.h"
#include "kernel/cpu_kernel.h"
#include "cubert_kernels.h"
#include "../cts/cts_dialect_kernels.h"

/* tests/cts/test_cts_dialect.c */
void cts_plane_reference(const uint32_t *in, uint64_t n, uint32_t d, uint32_t p, uint32_t *out);
void cts_plane_inputs(uint32_t *in, uint64_t n);
uint64_t cts_plane_compare(const uint32_t *got, const uint32_t *want, uint64_t n, const char *what);

static cubert_dim3_t d3(uint32_t x, uint32_t y, uint32_t z) {
  cubert_dim3_t d;
  d.x = x;
  d.y = y;
  d.z = z;
  return d;
}

/* ---- plane sizes ------------------------------------------------------------------ */

CUBERT_KERNEL_DESCRIPTOR(k_plane, cts_plane_u32, 2, 0, 0, 1, 1, 1);

/* cts_plane_u32 over `cubes` cubes of `dim` with planes of p, in `mode`;
 * returns the mismatches against the reference (and the report). */
static uint64_t plane_run(cubert_cpu_executor_t *ex, cubert_dim3_t dim, uint32_t cubes, uint32_t p,
                          cubert_execution_mode_t mode, cubert_kernel_report_t *report) {
  const uint32_t d = dim.x * dim.y * dim.z;
  const uint64_t n = (uint64_t)d * cubes;
  uint32_t *in = (uint32_t *)malloc(n * 4), *out = (uint32_t *)calloc(n * CTS_PL_OUTPUTS, 4),
           *want = (uint32_t *)calloc(n * CTS_PL_OUTPUTS, 4);
  cubert_kernel_args_t args;
  char what[64];
  uint64_t bad;
  cts_plane_inputs(in, n);
  cts_plane_reference(in, n, d, p, want);
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, in, n * 4);
  cubert_kernel_args_set_buffer(&args, 1, out, n * 4 * CTS_PL_OUTPUTS);
  cubert__cpu_executor_set_plane_dim(ex, p);
  CHECK_OK(cubert__cpu_executor_run(ex, &k_plane, d3(cubes, 1, 1), dim, &args, mode, report, NULL));
  snprintf(what, sizeof what, "cube %ux%ux%u plane %u", dim.x, dim.y, dim.z, p);
  bad = cts_plane_compare(out, want, n, what);
  free(in);
  free(out);
  free(want);
  return bad;
}

TEST(dialect_plane_ops_every_plane_size) {
  static const uint32_t planes[] = {1, 2, 4, 8, 16, 32, 64};
  static const uint32_t pools[] = {0, 2};
  const cubert_dim3_t dims[] = {{100, 1, 1}, {5, 3, 2}, {37, 1, 1}, {256, 1, 1}, {1, 1, 1},
                                {96, 1, 1}};
  size_t w, i, j;
  for (w = 0; w < 2; w++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_executor_t *ex = NULL;
    CHECK_OK(cubert__cpu_executor_create(a, pools[w], &ex, NULL));
    for (i = 0; i < sizeof planes / sizeof planes[0]; i++)
      for (j = 0; j < sizeof dims / sizeof dims[0]; j++) {
        cubert_kernel_report_t r;
        CHECK_EQ_U64(plane_run(ex, dims[j], 3, planes[i], CUBERT_EXECUTION_CHECKED, &r), 0);
        CHECK_EQ_U64(plane_run(ex, dims[j], 2, planes[i], CUBERT_EXECUTION_UNCHECKED, &r), 0);
      }
    cubert__cpu_executor_destroy(ex);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
  }
}

/* The plane kernel is race-free for every plane size; a plane of one unit
 * has no lane 1 for shuffle_xor(1): that (and only that) is reported. */
TEST(dialect_plane_ops_race_clean) {
  static const uint32_t planes[] = {1, 2, 4, 8, 16, 32, 64};
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_executor_t *ex = NULL;
  size_t i;
  CHECK_OK(cubert__cpu_executor_create(a, 2, &ex, NULL));
  for (i = 0; i < sizeof planes / sizeof planes[0]; i++) {
    cubert_kernel_report_t r;
    CHECK_EQ_U64(plane_run(ex, d3(100, 1, 1), 2, planes[i], CUBERT_EXECUTION_RACECHECK, &r), 0);
    CHECK_EQ_U64(r.oob_count, 0);
    if (planes[i] == 1) {
      CHECK_EQ_U64(r.race_kind, CUBERT_KERNEL_RACE_PLANE_LANE);
      CHECK_EQ_STR(r.race_name, "plane_shuffle_xor");
      CHECK_EQ_U64(r.race_count, 200); /* every unit of both cubes */
    } else {
      CHECK_MSG(r.race_count == 0, "plane %u: %llu reports, kind %u", planes[i],
                (unsigned long long)r.race_count, r.race_kind);
    }
  }
  cubert__cpu_executor_destroy(ex);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* The device option and the environment choose the plane size. */
TEST(dialect_plane_dim_options) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_options_t o;
  cubert_inline_options_t io;
  cubert_client_t *client = NULL;
  cubert_device_properties_t p;
  cubert_error_t e;
  cubert_cpu_options_initialize(&o);
  o.device.index = 41;
  o.workers = 1;
  o.ignore_environment = 1;
  o.plane_dim = 12;
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &client, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(e.reason, "plane_dim") != NULL);
  CHECK_EQ_U64(e.field[0], 12);
  o.plane_dim = 128;
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &client, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  o.plane_dim = 8;
  CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
  cubert_client_properties(client, &p);
  CHECK_EQ_U64(p.hardware.plane_size_min, 8);
  CHECK_EQ_U64(p.hardware.plane_size_max, 8);
  CHECK(p.features & CUBERT_FEATURE_PLANE);
  cubert_client_release(client);
  /* the environment fills a field left at 0 */
  o.plane_dim = 0;
  o.ignore_environment = 0;
  setenv("CUBERT_CPU_PLANE_DIM", "16", 1);
  CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
  cubert_client_properties(client, &p);
  CHECK_EQ_U64(p.hardware.plane_size_max, 16);
  cubert_client_release(client);
  setenv("CUBERT_CPU_PLANE_DIM", "24", 1);
  CHECK_STATUS(cubert_cpu_client_create(a, &o, &client, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(e.reason, "CUBERT_CPU_PLANE_DIM") != NULL);
  unsetenv("CUBERT_CPU_PLANE_DIM");
  o.ignore_environment = 1;
  CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
  cubert_client_properties(client, &p);
  CHECK_EQ_U64(p.hardware.plane_size_max, 32); /* the default: a warp */
  cubert_client_release(client);
  /* the inline driver */
  cubert_inline_options_initialize(&io);
  io.device.index = 42;
  io.plane_dim = 3;
  CHECK_STATUS(cubert_inline_client_create(a, &io, &client, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(strstr(e.reason, "plane_dim") != NULL);
  io.plane_dim = 4;
  CHECK_OK(cubert_inline_client_create(a, &io, &client, NULL));
  cubert_client_properties(client, &p);
  CHECK_EQ_U64(p.hardware.plane_size_max, 4);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- the race checker: seeded bugs ----------------------------------------------------- */

/* Every unit writes shared s[0] (no atomic). */
CUBERT_KERNEL(bug_units_write_write) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_SHARED(uint32_t, s, 4);
  CUBERT_PHASE { CUBERT_STORE(s, 0, (uint32_t)UNIT_POS); }
  CUBERT_PHASE {
    if (UNIT_POS == 0) CUBERT_STORE(out, CUBE_POS, CUBERT_LOAD(s, 0));
  }
}

/* Unit u reads s[u + 1], which unit u + 1 writes in the same phase. */
CUBERT_KERNEL(bug_units_read_write) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_SHARED(uint32_t, s, 64);
  CUBERT_PHASE { CUBERT_STORE(s, UNIT_POS, 1u); }
  CUBERT_PHASE {
    uint32_t next = UNIT_POS + 1u < CUBE_DIM ? CUBERT_LOAD(s, UNIT_POS + 1u) : 0u;
    CUBERT_STORE(s, UNIT_POS, next + 1u);
  }
  CUBERT_PHASE { CUBERT_STORE(out, ABSOLUTE_POS, CUBERT_LOAD(s, UNIT_POS)); }
}

/* A tree reduction with the barriers missing: all levels in one phase. */
CUBERT_KERNEL(bug_tree_without_barrier) {
  CUBERT_BUFFER(const float, in, 0);
  CUBERT_BUFFER(float, out, 1);
  CUBERT_SHARED(float, sums, 64);
  CUBERT_PHASE { CUBERT_STORE(sums, UNIT_POS, CUBERT_LOAD(in, ABSOLUTE_POS)); }
  CUBERT_PHASE {
    uint32_t stride;
    for (stride = CUBE_DIM / 2; stride > 0; stride /= 2)
      if (UNIT_POS < stride)
        CUBERT_STORE(sums, UNIT_POS, CUBERT_LOAD(sums, UNIT_POS) + CUBERT_LOAD(sums, UNIT_POS + stride));
  }
  CUBERT_PHASE {
    if (UNIT_POS == 0) CUBERT_STORE(out, CUBE_POS, CUBERT_LOAD(sums, 0));
  }
}

/* Unit 0 of every cube writes out[0]. */
CUBERT_KERNEL(bug_cubes_write_write) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_PHASE {
    if (UNIT_POS == 0) CUBERT_STORE(out, 0, (uint32_t)CUBE_POS);
  }
}

/* A plane sum inside a phase (divergent control flow on a GPU). */
CUBERT_KERNEL(bug_plane_in_phase) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_UNIT_VAR(uint32_t, v);
  CUBERT_PHASE {
    CUBERT_UNIT(v) = 1u;
    if (UNIT_POS < 16u) CUBERT_PLANE_SUM(v, v);
    CUBERT_STORE(out, ABSOLUTE_POS, CUBERT_UNIT(v));
  }
}

/* Assumes planes of 32: plane leaders (UNIT_POS % 32 == 0) store the plane
 * sum at UNIT_POS / 32. With planes of 8, the leaders are the units whose
 * UNIT_POS_PLANE is 0 (0, 8, 16 ..), and four of them write one slot. */
CUBERT_KERNEL(bug_plane_size_assumed) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_SHARED(uint32_t, partial, 32);
  CUBERT_UNIT_VAR(uint32_t, v);
  CUBERT_PHASE { CUBERT_UNIT(v) = (uint32_t)UNIT_POS; }
  CUBERT_PLANE_SUM(v, v);
  CUBERT_PHASE {
    if (UNIT_POS_PLANE == 0) CUBERT_STORE(partial, UNIT_POS / 32u, CUBERT_UNIT(v));
  }
  CUBERT_PHASE {
    if (UNIT_POS < CUBE_DIM / 32u) CUBERT_STORE(out, UNIT_POS, CUBERT_LOAD(partial, UNIT_POS));
  }
}

/* Uniform code stores (it must not write memory). */
CUBERT_KERNEL(bug_uniform_write) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_PHASE { CUBERT_STORE(out, ABSOLUTE_POS, 1u); }
  CUBERT_STORE(out, CUBE_POS, 7u);
}

/* CUBERT_SYNC_CUBE inside a phase. */
CUBERT_KERNEL(bug_sync_in_phase) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_PHASE {
    if (UNIT_POS == 3) CUBERT_SYNC_CUBE();
    CUBERT_STORE(out, ABSOLUTE_POS, 1u);
  }
}

/* CUBERT_UNIT_DONE inside a loop nested in the phase: it continues the loop,
 * and the unit goes on to the store after it. */
CUBERT_KERNEL(bug_unit_done_in_loop) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_PHASE {
    uint32_t i;
    for (i = 0; i < 2; i++)
      if (UNIT_POS >= 5) CUBERT_UNIT_DONE;
    CUBERT_STORE(out, ABSOLUTE_POS, 1u);
  }
}

/* Unit 0 stores c[0] while the others add to it atomically. */
CUBERT_KERNEL(bug_atomic_and_plain) {
  CUBERT_BUFFER(uint32_t, c, 0);
  CUBERT_PHASE {
    if (UNIT_POS == 0) CUBERT_STORE(c, 0, 0u);
    else (void)CUBERT_ATOMIC_ADD(c, 0, 1u);
  }
}

CUBERT_KERNEL_DESCRIPTOR(k_bug_ww, bug_units_write_write, 1, 0, 0, 48, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_bug_rw, bug_units_read_write, 1, 0, 0, 48, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_bug_tree, bug_tree_without_barrier, 2, 0, 0, 64, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_bug_cubes, bug_cubes_write_write, 1, 0, 0, 8, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_bug_plane_phase, bug_plane_in_phase, 1, 0, 0, 32, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_bug_plane_size, bug_plane_size_assumed, 1, 0, 0, 64, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_bug_uniform, bug_uniform_write, 1, 0, 0, 8, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_bug_sync, bug_sync_in_phase, 1, 0, 0, 8, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_bug_done, bug_unit_done_in_loop, 1, 0, 0, 8, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_bug_atomic, bug_atomic_and_plain, 1, 0, 0, 8, 1, 1);

typedef struct bug_case_t {
  const cubert_kernel_t *kernel;
  uint32_t cubes;
  uint32_t plane_dim;
  uint32_t kind;
  const char *text; /* the report's text after "kernel <name> failed on stream 0: " */
} bug_case_t;

static const bug_case_t k_bugs[] = {
    {&k_bug_ww, 2, 32, CUBERT_KERNEL_RACE_UNITS,
     "race: units 0 and 1 of cube 0 in phase 1: write then write of shared s[0]"},
    {&k_bug_rw, 1, 32, CUBERT_KERNEL_RACE_UNITS,
     "race: units 0 and 1 of cube 0 in phase 2: read then write of shared s[1]"},
    {&k_bug_tree, 1, 32, CUBERT_KERNEL_RACE_UNITS,
     "race: units 0 and 1 of cube 0 in phase 2: read then write of shared sums[1]"},
    {&k_bug_cubes, 3, 32, CUBERT_KERNEL_RACE_CUBES,
     "race: cubes 0 and 1 (unit 0, phase 1): write then write of buffer 0 (out)[0]"},
    {&k_bug_plane_phase, 1, 32, CUBERT_KERNEL_RACE_PLANE_DIVERGENT,
     "race: plane_sum inside a phase (divergent control flow): unit 0 of cube 0, phase 1"},
    {&k_bug_plane_size, 1, 8, CUBERT_KERNEL_RACE_UNITS,
     "race: units 0 and 8 of cube 0 in phase 2: write then write of shared partial[0]"},
    {&k_bug_uniform, 1, 32, CUBERT_KERNEL_RACE_UNIFORM_WRITE,
     "race: uniform code of cube 0 after phase 1 wrote buffer 0 (out)[0]"},
    {&k_bug_sync, 1, 32, CUBERT_KERNEL_RACE_SYNC_DIVERGENT,
     "race: sync_cube inside a phase (divergent control flow): unit 3 of cube 0, phase 1"},
    {&k_bug_done, 1, 32, CUBERT_KERNEL_RACE_UNIT_DONE,
     "race: unit 5 of cube 0 went on after CUBERT_UNIT_DONE in phase 1 (a nested loop?): write "
     "of buffer 0 (out)[5]"},
    {&k_bug_atomic, 1, 32, CUBERT_KERNEL_RACE_UNITS,
     "race: units 0 and 1 of cube 0 in phase 1: write then atomic of buffer 0 (c)[0]"},
};

/* Each seeded bug is reported by the executor (0 and 2 workers: RACECHECK
 * runs the cubes in order either way), with the same report every run. */
TEST(dialect_race_seeded_bugs_executor) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_executor_t *ex = NULL;
  static uint32_t buf[4096];
  static float fin[4096];
  size_t i;
  int w;
  for (w = 0; w < 2; w++) {
    CHECK_OK(cubert__cpu_executor_create(a, (uint32_t)(w * 2), &ex, NULL));
    for (i = 0; i < sizeof k_bugs / sizeof k_bugs[0]; i++) {
      const bug_case_t *b = &k_bugs[i];
      cubert_kernel_args_t args;
      cubert_kernel_report_t r;
      char text[CUBERT_ERROR_REASON_SIZE];
      cubert_kernel_args_initialize(&args);
      memset(buf, 0, sizeof buf);
      if (b->kernel->buffer_count == 2) {
        cubert_kernel_args_set_buffer(&args, 0, fin, sizeof fin);
        cubert_kernel_args_set_buffer(&args, 1, buf, sizeof buf);
      } else {
        cubert_kernel_args_set_buffer(&args, 0, buf, sizeof buf);
      }
      cubert__cpu_executor_set_plane_dim(ex, b->plane_dim);
      CHECK_OK(cubert__cpu_executor_run(ex, b->kernel, d3(b->cubes, 1, 1), b->kernel->cube_dim,
                                        &args, CUBERT_EXECUTION_RACECHECK, &r, NULL));
      CHECK_MSG(r.race_kind == b->kind, "%s: kind %u, want %u", b->kernel->name, r.race_kind,
                b->kind);
      CHECK(r.race_count >= 1);
      cpu_kernel_race_text(&r, text, sizeof text);
      CHECK_MSG(strcmp(text, b->text) == 0, "%s:\n  got  %s\n  want %s", b->kernel->name, text,
                b->text);
      /* VALIDATE runs it without a report, except a unit going on after
       * CUBERT_UNIT_DONE, which it checks too (the same report). On the
       * caller's thread only: VALIDATE runs cubes in parallel, and these
       * kernels race on purpose (TSan would see the cross-cube one). */
      if (w != 0) continue;
      CHECK_OK(cubert__cpu_executor_run(ex, b->kernel, d3(b->cubes, 1, 1), b->kernel->cube_dim,
                                        &args, CUBERT_EXECUTION_VALIDATE, &r, NULL));
      if (b->kind == CUBERT_KERNEL_RACE_UNIT_DONE) {
        CHECK_EQ_U64(r.race_kind, CUBERT_KERNEL_RACE_UNIT_DONE);
        cpu_kernel_race_text(&r, text, sizeof text);
        CHECK_MSG(strcmp(text, b->text) == 0, "VALIDATE %s:\n  got  %s\n  want %s",
                  b->kernel->name, text, b->text);
      } else {
        CHECK_EQ_U64(r.race_kind, 0);
        CHECK_EQ_U64(r.race_count, 0);
      }
      /* CHECKED does not check it */
      if (b->kind == CUBERT_KERNEL_RACE_UNIT_DONE) {
        CHECK_OK(cubert__cpu_executor_run(ex, b->kernel, d3(b->cubes, 1, 1), b->kernel->cube_dim,
                                          &args, CUBERT_EXECUTION_CHECKED, &r, NULL));
        CHECK_EQ_U64(r.race_kind, 0);
      }
    }
    cubert__cpu_executor_destroy(ex);
  }
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* The plane-size assumption is invisible with planes of 32 (the kernel is
 * then right): the test mode with other sizes is what catches it. */
TEST(dialect_race_plane_size_assumption_needs_another_size) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_executor_t *ex = NULL;
  uint32_t out[64];
  cubert_kernel_args_t args;
  cubert_kernel_report_t r;
  CHECK_OK(cubert__cpu_executor_create(a, 0, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, out, sizeof out);
  CHECK_OK(cubert__cpu_executor_run(ex, &k_bug_plane_size, d3(1, 1, 1), k_bug_plane_size.cube_dim,
                                    &args, CUBERT_EXECUTION_RACECHECK, &r, NULL));
  CHECK_EQ_U64(r.race_count, 0);
  CHECK_EQ_U64(out[0], 31u * 32u / 2u);          /* 0 + .. + 31 */
  CHECK_EQ_U64(out[1], (32u + 63u) * 32u / 2u);  /* 32 + .. + 63 */
  cubert__cpu_executor_set_plane_dim(ex, 16);
  CHECK_OK(cubert__cpu_executor_run(ex, &k_bug_plane_size, d3(1, 1, 1), k_bug_plane_size.cube_dim,
                                    &args, CUBERT_EXECUTION_CHECKED, &r, NULL));
  CHECK(out[0] != 31u * 32u / 2u); /* wrong results under planes of 16 */
  cubert__cpu_executor_destroy(ex);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- the race checker: the project's kernels run clean ----------------------------------- */

static void race_clean(cubert_cpu_executor_t *ex, const cubert_kernel_t *k, cubert_dim3_t count,
                       cubert_kernel_args_t *args) {
  cubert_kernel_report_t r;
  CHECK_OK(cubert__cpu_executor_run(ex, k, count, k->cube_dim, args, CUBERT_EXECUTION_RACECHECK,
                                    &r, NULL));
  CHECK_MSG(r.race_count == 0 && r.oob_count == 0, "%s: %llu race reports (kind %u), %llu oob",
            k->name, (unsigned long long)r.race_count, r.race_kind,
            (unsigned long long)r.oob_count);
}

TEST(dialect_race_project_kernels_run_clean) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_executor_t *ex = NULL;
  enum { N = 1000, M = 37, K = 48, NN = 29 };
  static float fa[N], fb[N], fo[N], ma[M * K], mb[K * NN], mc[M * NN];
  static uint32_t ua[N], ub[N], uo[N], pos[8 * 4 * 64], abs3[3 * 4 * 64];
  static uint8_t ba[N], bb[N], bo[N];
  cubert_kernel_args_t args;
  uint32_t i;
  for (i = 0; i < N; i++) {
    fa[i] = (float)i;
    fb[i] = 1.0f;
    ua[i] = i;
    ub[i] = 2u * i;
  }
  CHECK_OK(cubert__cpu_executor_create(a, 2, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, fa, sizeof fa);
  cubert_kernel_args_set_buffer(&args, 1, fb, sizeof fb);
  cubert_kernel_args_set_buffer(&args, 2, fo, sizeof fo);
  cubert_kernel_args_set_f32(&args, 0, 2.0f);
  cubert_kernel_args_set_i64(&args, 1, 0);
  race_clean(ex, &ck_add_f32_kernel, d3((N + CK_BLOCK - 1) / CK_BLOCK, 1, 1), &args);
  race_clean(ex, &ck_axpy_f32_kernel, d3((N + CK_BLOCK - 1) / CK_BLOCK, 1, 1), &args);
  race_clean(ex, &ck_axpy_offset_f32_kernel, d3((N + 63) / 64, 1, 1), &args);
  cubert_kernel_args_set_buffer(&args, 1, fo, 4 * sizeof(float));
  race_clean(ex, &ck_reduce_sum_f32_kernel, d3(4, 1, 1), &args);
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, ma, sizeof ma);
  cubert_kernel_args_set_buffer(&args, 1, mb, sizeof mb);
  cubert_kernel_args_set_buffer(&args, 2, mc, sizeof mc);
  cubert_kernel_args_set_u32(&args, 0, M);
  cubert_kernel_args_set_u32(&args, 1, K);
  cubert_kernel_args_set_u32(&args, 2, NN);
  race_clean(ex, &ck_matmul_f32_kernel, d3((NN + CK_TILE - 1) / CK_TILE, (M + CK_TILE - 1) / CK_TILE, 1),
             &args);
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, ba, sizeof ba);
  cubert_kernel_args_set_buffer(&args, 1, bb, sizeof bb);
  cubert_kernel_args_set_buffer(&args, 2, bo, sizeof bo);
  race_clean(ex, &ck_add_u8_kernel, d3((N + 63) / 64, 1, 1), &args);
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, ua, sizeof ua);
  cubert_kernel_args_set_buffer(&args, 1, uo, sizeof uo);
  cubert_kernel_args_set_buffer(&args, 2, ub, sizeof ub);
  cubert_kernel_args_set_u32(&args, 0, 3);
  race_clean(ex, &ck_add_scalar_u32_kernel, d3((N + 63) / 64, 1, 1), &args);
  race_clean(ex, &ck_double_u32_kernel, d3((N + 63) / 64, 1, 1), &args);
  race_clean(ex, &ck_copy_u32_kernel, d3((N + 63) / 64, 1, 1), &args);
  race_clean(ex, &ck_mix_u32_kernel, d3((N + 63) / 64, 1, 1), &args);
  cubert_kernel_args_set_buffer(&args, 2, uo, sizeof uo);
  cubert_kernel_args_set_buffer(&args, 1, ub, sizeof ub);
  race_clean(ex, &ck_sum_u32_kernel, d3((N + 63) / 64, 1, 1), &args);
  cubert_kernel_args_initialize(&args);
  race_clean(ex, &ck_empty_kernel, d3(5, 1, 1), &args);
  cubert_kernel_args_set_buffer(&args, 0, pos, sizeof pos);
  cubert_kernel_args_set_buffer(&args, 1, abs3, sizeof abs3);
  {
    CUBERT_KERNEL_DESCRIPTOR(positions_3d, ck_positions, 2, 0, 0, 4, 2, 2);
    race_clean(ex, &positions_3d, d3(2, 1, 2), &args);
  }
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, ua, 128 * 4 * sizeof(uint32_t));
  cubert_kernel_args_set_buffer(&args, 1, uo, 128 * 4 * sizeof(uint32_t));
  race_clean(ex, &ck_reverse_u32_kernel, d3(4, 1, 1), &args);
  cubert__cpu_executor_destroy(ex);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* The conformance kernels of the execution model run clean too. */
CUBERT_KERNEL_DESCRIPTOR(k_atomic_u32_100, cts_atomic_u32, 3, 0, 0, 100, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(k_atomic_f32_30, cts_atomic_f32, 3, 0, 0, 5, 3, 2);
CUBERT_KERNEL_DESCRIPTOR(k_barrier_40, cts_barrier_u32, 2, 0, 0, 40, 1, 1);

TEST(dialect_race_dialect_kernels_run_clean) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_executor_t *ex = NULL;
  static uint32_t acc[CTS_AT_SLOTS], per[16], chk[16], in[8], out[8 * 40];
  static float facc[CTS_AT_SLOTS], fper[16], fchk[16];
  cubert_kernel_args_t args;
  CHECK_OK(cubert__cpu_executor_create(a, 2, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, acc, sizeof acc);
  cubert_kernel_args_set_buffer(&args, 1, per, sizeof per);
  cubert_kernel_args_set_buffer(&args, 2, chk, sizeof chk);
  race_clean(ex, &k_atomic_u32_100, d3(7, 1, 1), &args);
  cubert_kernel_args_set_buffer(&args, 0, facc, sizeof facc);
  cubert_kernel_args_set_buffer(&args, 1, fper, sizeof fper);
  cubert_kernel_args_set_buffer(&args, 2, fchk, sizeof fchk);
  race_clean(ex, &k_atomic_f32_30, d3(3, 1, 1), &args);
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, in, sizeof in);
  cubert_kernel_args_set_buffer(&args, 1, out, sizeof out);
  race_clean(ex, &k_barrier_40, d3(8, 1, 1), &args);
  cubert__cpu_executor_destroy(ex);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- the race checker through a device ---------------------------------------------------- */

/* A device created with bounds_check RACECHECK checks every launch; the
 * report reaches the stream's errors with the kernel's name. */
TEST(dialect_race_report_reaches_the_stream) {
  int driver;
  for (driver = 0; driver < 3; driver++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_client_t *client = NULL;
    uint32_t data[64] = {0};
    cubert_handle_t h;
    cubert_launch_arguments_t la;
    cubert_cube_count_t count = cubert_cube_count_new_3d(3, 1, 1);
    cubert_error_t err;
    const uint64_t delta = 1;
    if (driver < 2) {
      cubert_cpu_options_t o;
      cubert_cpu_options_initialize(&o);
      o.device.index = 43;
      o.workers = 2;
      o.ignore_environment = 1;
      o.device.bounds_check = CUBERT_BOUNDS_CHECK_RACECHECK;
      o.mode = driver == 0 ? CUBERT_CPU_MODE_THREADED : CUBERT_CPU_MODE_DETERMINISTIC;
      o.seed = 7;
      CHECK_OK(cubert_cpu_client_create(a, &o, &client, NULL));
    } else {
      cubert_inline_options_t io;
      cubert_inline_options_initialize(&io);
      io.device.index = 43;
      io.device.bounds_check = CUBERT_BOUNDS_CHECK_RACECHECK;
      CHECK_OK(cubert_inline_client_create(a, &io, &client, NULL));
    }
    CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
    cubert_launch_arguments_initialize(&la);
    la.buffers = &h;
    la.buffer_count = 1;
    la.scalars = &delta;
    la.scalar_count = 1;
    /* a clean kernel first: nothing queued */
    CHECK_OK(cubert_client_launch(client, &ck_add_scalar_u32_kernel, &count, &la, NULL));
    CHECK_OK(cubert_client_sync(client, NULL));
    CHECK_OK(cubert_client_launch(client, &k_bug_cubes, &count, &la, NULL));
    CHECK_STATUS(cubert_client_sync(client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
    CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_SERVER_VALIDATION));
    CHECK_MSG(strstr(err.reason,
                     "kernel bug_cubes_write_write failed on stream 0: race: cubes 0 and 1 (unit 0, "
                     "phase 1): write then write of buffer 0 (out)[0]") != NULL,
              "driver %d: %s", driver, err.reason);
    /* launch_unchecked races too */
    CHECK_OK(cubert_client_launch_unchecked(client, &k_bug_ww, &count, &la, NULL));
    CHECK_STATUS(cubert_client_sync(client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
    CHECK(strstr(err.reason, "write then write of shared s[0]") != NULL);
    CHECK_OK(cubert_client_handle_release(client, &h, NULL));
    cubert_client_release(client);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
  }
}

/* ---- the checker's memory ---------------------------------------------------------------- */

/* Its first table cannot be allocated: the run fails, nothing leaks; its
 * table cannot grow: the run fails (the reports would be incomplete). */
TEST(dialect_race_out_of_memory) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_executor_t *ex = NULL;
  static uint32_t buf[100000];
  cubert_kernel_args_t args;
  cubert_kernel_report_t r;
  cubert_error_t e;
  int64_t live;
  CHECK_OK(cubert__cpu_executor_create(a, 0, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, buf, sizeof buf);
  cubert_kernel_args_set_u32(&args, 0, 1);
  /* warm the cubes' blocks, then fail the table */
  CHECK_OK(cubert__cpu_executor_run(ex, &ck_add_scalar_u32_kernel, d3(2, 1, 1), d3(64, 1, 1), &args,
                                    CUBERT_EXECUTION_CHECKED, &r, NULL));
  live = c.live_blocks;
  counting_allocator_fail_at(&c, 1, 0);
  CHECK_STATUS(cubert__cpu_executor_run(ex, &ck_add_scalar_u32_kernel, d3(2, 1, 1), d3(64, 1, 1),
                                        &args, CUBERT_EXECUTION_RACECHECK, &r, &e),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK(cubert_error_kind(&e) == CUBERT_ERROR_HOST_OUT_OF_MEMORY);
  CHECK_EQ_I64(c.live_blocks, live); /* nothing of the checker left */
  /* 100000 elements need the table to grow; the second growth fails */
  counting_allocator_fail_at(&c, 3, 1);
  CHECK_STATUS(cubert__cpu_executor_run(ex, &ck_add_scalar_u32_kernel, d3(1563, 1, 1), d3(64, 1, 1),
                                        &args, CUBERT_EXECUTION_RACECHECK, &r, &e),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK(strstr(e.reason, "race checker") != NULL);
  CHECK_EQ_I64(c.live_blocks, live);
  c.fail_at = 0;
  c.fail_persist = 0;
  /* and with memory it runs */
  CHECK_OK(cubert__cpu_executor_run(ex, &ck_add_scalar_u32_kernel, d3(1563, 1, 1), d3(64, 1, 1),
                                    &args, CUBERT_EXECUTION_RACECHECK, &r, NULL));
  CHECK_EQ_U64(r.race_count, 0);
  cubert__cpu_executor_destroy(ex);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- storage of the cube: the block grows to what a kernel declares ------------------- */

/* A shared array declared in a uniform loop takes new storage each time (8
 * x 8 KiB here): the first cube finds the block too small, runs no phase,
 * and runs again once it grew; the results are those of a plain run. */
CUBERT_KERNEL(shared_in_loop) {
  CUBERT_BUFFER(uint32_t, out, 0);
  uint32_t i;
  for (i = 0; i < 8; i++) {
    CUBERT_SHARED(uint32_t, big, 2048);
    CUBERT_PHASE { CUBERT_STORE(big, UNIT_POS, i); }
    CUBERT_PHASE { CUBERT_STORE(out, ABSOLUTE_POS, CUBERT_LOAD(out, ABSOLUTE_POS) + CUBERT_LOAD(big, UNIT_POS)); }
  }
}
CUBERT_KERNEL_DESCRIPTOR(k_shared_in_loop, shared_in_loop, 1, 0, 0, 16, 1, 1);

TEST(dialect_cube_block_grows_to_the_declarations) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_executor_t *ex = NULL;
  uint32_t out[64], u;
  cubert_kernel_args_t args;
  cubert_kernel_report_t r;
  cubert_error_t e;
  int w;
  for (w = 0; w < 2; w++) {
    CHECK_OK(cubert__cpu_executor_create(a, (uint32_t)w * 2, &ex, NULL));
    cubert_kernel_args_initialize(&args);
    cubert_kernel_args_set_buffer(&args, 0, out, sizeof out);
    /* the block cannot grow: the launch fails, nothing ran */
    memset(out, 0, sizeof out);
    counting_allocator_fail_at(&c, 1, 1);
    CHECK_STATUS(cubert__cpu_executor_run(ex, &k_shared_in_loop, d3(4, 1, 1), d3(16, 1, 1), &args,
                                          CUBERT_EXECUTION_CHECKED, &r, &e),
                 CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK(cubert_error_kind(&e) == CUBERT_ERROR_HOST_OUT_OF_MEMORY);
    CHECK(strstr(e.reason, "shared memory") != NULL);
    for (u = 0; u < 64; u++) CHECK_EQ_U64(out[u], 0);
    c.fail_at = 0;
    c.fail_persist = 0;
    /* it grows, each cube runs once in effect */
    CHECK_OK(cubert__cpu_executor_run(ex, &k_shared_in_loop, d3(4, 1, 1), d3(16, 1, 1), &args,
                                      CUBERT_EXECUTION_VALIDATE, &r, NULL));
    CHECK_EQ_U64(r.oob_count, 0);
    for (u = 0; u < 64; u++) CHECK_EQ_U64(out[u], 28); /* 0 + 1 + .. + 7 */
    /* then it fits: no allocation on a thread whose block grew. The blocks are per
     * thread: with workers, one that ran no cube of the launch above grows its own
     * once (at most one allocation per participant: the workers and the caller) */
    {
      uint64_t calls = c.calls;
      CHECK_OK(cubert__cpu_executor_run(ex, &k_shared_in_loop, d3(4, 1, 1), d3(16, 1, 1), &args,
                                        CUBERT_EXECUTION_UNCHECKED, &r, NULL));
      if (w == 0) CHECK_EQ_U64(c.calls, calls);
      else CHECK(c.calls <= calls + (uint64_t)w * 2 + 1);
      for (u = 0; u < 64; u++) CHECK_EQ_U64(out[u], 56);
    }
    cubert__cpu_executor_destroy(ex);
  }
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* ---- the worked example of docs/kernels.md ------------------------------------------------ */

/* out[r][j] = exp(x[r][j] - max_r) / sum_j exp(x[r][j] - max_r): one cube
 * per row, each unit walks its columns with a stride of CUBE_DIM. */
CUBERT_KERNEL(softmax_rows_f32) {
  CUBERT_BUFFER(const float, x, 0);
  CUBERT_BUFFER(float, out, 1);
  CUBERT_SCALAR_U32(cols, 0);
  CUBERT_SHARED(float, scratch, 256); /* a slot per plane: CUBE_DIM <= 256 */
  CUBERT_UNIT_VAR(float, v);
  CUBERT_UNIT_VAR(float, m);
  const uint64_t row = (uint64_t)CUBE_POS * cols;
  CUBERT_PHASE { /* each unit: the largest of its columns */
    uint32_t j;
    CUBERT_UNIT(v) = -3.0e38f;
    for (j = (uint32_t)UNIT_POS; j < cols; j += CUBE_DIM)
      CUBERT_UNIT(v) = cubert_fmaxf(CUBERT_UNIT(v), CUBERT_LOAD(x, row + j));
  }
  CUBERT_CUBE_MAX(m, v, scratch); /* uniform: every unit gets the row's max */
  CUBERT_PHASE {
    uint32_t j;
    CUBERT_UNIT(v) = 0.0f;
    for (j = (uint32_t)UNIT_POS; j < cols; j += CUBE_DIM)
      CUBERT_UNIT(v) += cubert_expf(CUBERT_LOAD(x, row + j) - CUBERT_UNIT(m));
  }
  CUBERT_CUBE_SUM(v, v, scratch); /* every unit gets the row's sum */
  CUBERT_PHASE {
    uint32_t j;
    for (j = (uint32_t)UNIT_POS; j < cols; j += CUBE_DIM)
      CUBERT_STORE(out, row + j, cubert_expf(CUBERT_LOAD(x, row + j) - CUBERT_UNIT(m)) / CUBERT_UNIT(v));
  }
}
CUBERT_KERNEL_DESCRIPTOR(k_softmax, softmax_rows_f32, 2, 1, 0, 96, 1, 1);

TEST(dialect_worked_example_softmax) {
  static const uint32_t planes[] = {4, 32, 64};
  enum { ROWS = 5, COLS = 1000 };
  static float x[ROWS * COLS], out[ROWS * COLS];
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_cpu_executor_t *ex = NULL;
  cubert_kernel_args_t args;
  cubert_kernel_report_t r;
  uint32_t i, j, p;
  for (i = 0; i < ROWS * COLS; i++) x[i] = (float)((i * 37u) % 101u) / 10.0f - 5.0f;
  CHECK_OK(cubert__cpu_executor_create(a, 2, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, x, sizeof x);
  cubert_kernel_args_set_buffer(&args, 1, out, sizeof out);
  cubert_kernel_args_set_u32(&args, 0, COLS);
  for (p = 0; p < 3; p++) {
    cubert__cpu_executor_set_plane_dim(ex, planes[p]);
    CHECK_OK(cubert__cpu_executor_run(ex, &k_softmax, d3(ROWS, 1, 1), k_softmax.cube_dim, &args,
                                      CUBERT_EXECUTION_RACECHECK, &r, NULL));
    CHECK_EQ_U64(r.race_count, 0);
    CHECK_EQ_U64(r.oob_count, 0);
    for (i = 0; i < ROWS; i++) {
      double mx = -1e30, sum = 0;
      for (j = 0; j < COLS; j++) mx = x[i * COLS + j] > mx ? x[i * COLS + j] : mx;
      for (j = 0; j < COLS; j++) sum += exp(x[i * COLS + j] - mx);
      for (j = 0; j < COLS; j++) {
        double want = exp(x[i * COLS + j] - mx) / sum;
        CHECK_MSG(fabs(out[i * COLS + j] - want) <= 1e-6 * want + 1e-9, "row %u col %u: %g vs %g", i,
                  j, out[i * COLS + j], want);
      }
    }
  }
  cubert__cpu_executor_destroy(ex);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

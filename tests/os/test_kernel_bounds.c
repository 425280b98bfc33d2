/* SPDX-License-Identifier: MIT */
/*
 * tests/os/test_kernel_bounds.c: declared cube bounds and the CHECKED fast
 * path (cubert/kernel_bounds.h) on the CPU kernel runner: which copy of the
 * body a cube runs in each mode (a full cube of a CHECKED launch: the
 * unchecked one; a partial cube, a view without a bound, VALIDATE: the
 * checked one), that the checks a partial cube makes still fire, and that
 * VALIDATE verifies the claims (an access beyond a declared bound, a view
 * declared after the decision). These kernels read the dialect's internal
 * `cubert_unchecked_` to report the copy: CPU only.
 */
#include <string.h>

#include "test.h"
#include "counting_allocator.h"
#include "cubert/os.h"
#include "cpu/cpu_executor.h"
#include "executor_test.h"

/* copies[CUBE_POS] = 1 (checked copy) or 2 (unchecked copy); out[i] =
 * in[i] + 1 for every unit (no guard: a checked cube drops what is out of
 * bounds). Bounds: in and out below the cube's end; copies below
 * CUBE_POS + 1 when scalar 0 is 1, else no bound on copies. */
CUBERT_KERNEL(kb_copy) {
  CUBERT_BUFFER(const uint32_t, in, 0);
  CUBERT_BUFFER(uint32_t, out, 1);
  CUBERT_BUFFER(uint32_t, copies, 2);
  CUBERT_SCALAR_U32(bound_copies, 0);
  CUBERT_CUBE_BOUND(in, (CUBE_POS + 1u) * CUBE_DIM);
  CUBERT_CUBE_BOUND(out, (CUBE_POS + 1u) * CUBE_DIM);
  if (bound_copies) CUBERT_CUBE_BOUND(copies, CUBE_POS + 1u);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (UNIT_POS == 0) CUBERT_STORE(copies, CUBE_POS, 1u + (uint32_t)cubert_unchecked_);
    CUBERT_STORE(out, i, CUBERT_LOAD(in, i) + 1u);
  }
}
CUBERT_KERNEL_DESCRIPTOR(kb_copy_kernel, kb_copy, 3, 1, 0, 8, 1, 1);

/* A false claim: out is bounded at CUBE_POS * 8 + 4 but every unit of the
 * cube stores; lens[0] = CUBERT_LEN(out) (the real length in every mode). */
CUBERT_KERNEL(kb_liar) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_BUFFER(uint64_t, lens, 1);
  CUBERT_CUBE_BOUND(out, CUBE_POS * CUBE_DIM + 4u);
  CUBERT_CUBE_BOUND(lens, 1u);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE {
    if (UNIT_POS == 0 && CUBE_POS == 0) CUBERT_STORE(lens, 0, CUBERT_LEN(out));
    CUBERT_STORE(out, ABSOLUTE_POS, 5u);
  }
}
CUBERT_KERNEL_DESCRIPTOR(kb_liar_kernel, kb_liar, 2, 0, 0, 8, 1, 1);

/* A view declared after the decision: VALIDATE gives it length 0. */
CUBERT_KERNEL(kb_late) {
  CUBERT_BUFFER(uint32_t, early, 0);
  CUBERT_CUBE_BOUND(early, CUBE_DIM);
  CUBERT_CUBE_BOUNDS_DONE;
  {
    CUBERT_BUFFER(uint32_t, late, 1);
    CUBERT_PHASE {
      if (CUBE_POS == 0) {
        CUBERT_STORE(early, UNIT_POS, 1u);
        CUBERT_STORE(late, UNIT_POS, 2u);
      }
    }
  }
}
CUBERT_KERNEL_DESCRIPTOR(kb_late_kernel, kb_late, 2, 0, 0, 8, 1, 1);

typedef struct kb_run_t {
  uint32_t in[32], out[32], copies[4];
  cubert_kernel_report_t report;
} kb_run_t;

/* kb_copy over 4 cubes of 8 units with views of `len` elements. */
static void run_copy(cubert_cpu_executor_t *ex, uint32_t len, uint32_t bound_copies,
                     cubert_execution_mode_t mode, kb_run_t *r) {
  cubert_kernel_args_t args;
  uint32_t i;
  for (i = 0; i < 32; i++) {
    r->in[i] = i * 10u;
    r->out[i] = 0;
  }
  memset(r->copies, 0, sizeof r->copies);
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, r->in, len * sizeof(uint32_t));
  cubert_kernel_args_set_buffer(&args, 1, r->out, len * sizeof(uint32_t));
  cubert_kernel_args_set_buffer(&args, 2, r->copies, sizeof r->copies);
  cubert_kernel_args_set_u32(&args, 0, bound_copies);
  CHECK_OK(cubert__cpu_executor_run(ex, &kb_copy_kernel, dim3(4, 1, 1), dim3(8, 1, 1), &args, mode,
                                    &r->report, NULL));
}

TEST(kernel_bounds_full_cubes_of_a_checked_launch_run_unchecked) {
  size_t p;
  for (p = 0; p < N_POOLS; p++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_cpu_executor_t *ex = NULL;
    kb_run_t r;
    uint32_t i;
    CHECK_OK(cubert__cpu_executor_create(a, k_pools[p], &ex, NULL));
    /* every cube full */
    run_copy(ex, 32, 1, CUBERT_EXECUTION_CHECKED, &r);
    for (i = 0; i < 4; i++) CHECK_EQ_U64(r.copies[i], 2);
    for (i = 0; i < 32; i++) CHECK_EQ_U64(r.out[i], i * 10u + 1u);
    CHECK_EQ_U64(r.report.oob_count, 0);
    /* views of 20: cubes 0 and 1 full; 2 (units 16..23) and 3 partial, checked,
     * and their checks fire: 4 + 8 loads and as many stores dropped */
    run_copy(ex, 20, 1, CUBERT_EXECUTION_CHECKED, &r);
    CHECK_EQ_U64(r.copies[0], 2);
    CHECK_EQ_U64(r.copies[1], 2);
    CHECK_EQ_U64(r.copies[2], 1);
    CHECK_EQ_U64(r.copies[3], 1);
    for (i = 0; i < 32; i++) CHECK_EQ_U64(r.out[i], i < 20 ? i * 10u + 1u : 0u);
    CHECK_EQ_U64(r.report.oob_count, 24);
    /* a view without a bound: no cube is full */
    run_copy(ex, 32, 0, CUBERT_EXECUTION_CHECKED, &r);
    for (i = 0; i < 4; i++) CHECK_EQ_U64(r.copies[i], 1);
    /* UNCHECKED: the unchecked copy; VALIDATE: always the checked one */
    run_copy(ex, 32, 1, CUBERT_EXECUTION_UNCHECKED, &r);
    for (i = 0; i < 4; i++) CHECK_EQ_U64(r.copies[i], 2);
    run_copy(ex, 32, 1, CUBERT_EXECUTION_VALIDATE, &r);
    for (i = 0; i < 4; i++) CHECK_EQ_U64(r.copies[i], 1);
    CHECK_EQ_U64(r.report.has_violation, 0);
    for (i = 0; i < 32; i++) CHECK_EQ_U64(r.out[i], i * 10u + 1u);
    /* VALIDATE with views of 20: the first violation is cube 2's first load */
    run_copy(ex, 20, 1, CUBERT_EXECUTION_VALIDATE, &r);
    CHECK_EQ_U64(r.report.has_violation, 1);
    CHECK_EQ_U64(r.report.cube_linear, 2);
    CHECK_EQ_U64(r.report.element_index, 20);
    CHECK_EQ_U64(r.report.buffer_length, 20);
    cubert__cpu_executor_destroy(ex);
    CHECK_EQ_I64(c.live_blocks, 0);
    counting_allocator_destroy(&c);
  }
}

TEST(kernel_bounds_validate_reports_an_access_beyond_a_declared_bound) {
  cubert_cpu_executor_t *ex = NULL;
  cubert_kernel_args_t args;
  cubert_kernel_report_t report;
  uint32_t out[16];
  uint64_t lens[1];
  uint32_t i;
  CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), 0, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, out, sizeof out);
  cubert_kernel_args_set_buffer(&args, 1, lens, sizeof lens);
  memset(out, 0, sizeof out);
  lens[0] = 0;
  CHECK_OK(cubert__cpu_executor_run(ex, &kb_liar_kernel, dim3(2, 1, 1), dim3(8, 1, 1), &args,
                                    CUBERT_EXECUTION_VALIDATE, &report, NULL));
  /* the bound acts as the length: unit 4 of cube 0 is the first violation */
  CHECK_EQ_U64(report.has_violation, 1);
  CHECK_EQ_U64(report.buffer_index, 0);
  CHECK_EQ_U64(report.element_index, 4);
  CHECK_EQ_U64(report.buffer_length, 4);
  CHECK_EQ_U64(report.is_write, 1);
  CHECK_EQ_U64(report.cube_linear, 0);
  CHECK_EQ_U64(report.oob_count, 4 + 4); /* units 4..7 of each cube (bounds 4 and 12) */
  CHECK_EQ_U64(lens[0], 16); /* CUBERT_LEN is the view's own length */
  for (i = 0; i < 16; i++) CHECK_EQ_U64(out[i], (i % 8) < 4 ? 5u : 0u);
  /* CHECKED trusts the claim (the accesses are inside the real view here) */
  memset(out, 0, sizeof out);
  CHECK_OK(cubert__cpu_executor_run(ex, &kb_liar_kernel, dim3(2, 1, 1), dim3(8, 1, 1), &args,
                                    CUBERT_EXECUTION_CHECKED, &report, NULL));
  CHECK_EQ_U64(report.oob_count, 0);
  for (i = 0; i < 16; i++) CHECK_EQ_U64(out[i], 5u);
  cubert__cpu_executor_destroy(ex);
}

TEST(kernel_bounds_validate_reports_a_view_declared_after_the_decision) {
  cubert_cpu_executor_t *ex = NULL;
  cubert_kernel_args_t args;
  cubert_kernel_report_t report;
  uint32_t early[8], late[8];
  CHECK_OK(cubert__cpu_executor_create(cubert_allocator_libc(), 0, &ex, NULL));
  cubert_kernel_args_initialize(&args);
  cubert_kernel_args_set_buffer(&args, 0, early, sizeof early);
  cubert_kernel_args_set_buffer(&args, 1, late, sizeof late);
  memset(late, 0, sizeof late);
  CHECK_OK(cubert__cpu_executor_run(ex, &kb_late_kernel, dim3(1, 1, 1), dim3(8, 1, 1), &args,
                                    CUBERT_EXECUTION_VALIDATE, &report, NULL));
  CHECK_EQ_U64(report.has_violation, 1);
  CHECK_EQ_U64(report.buffer_index, 1);
  CHECK_EQ_U64(report.element_index, 0);
  CHECK_EQ_U64(report.buffer_length, 0);
  CHECK_EQ_U64(report.oob_count, 8);
  CHECK_EQ_U64(late[0], 0);
  /* CHECKED: the cube was full when decided; it runs unchecked */
  CHECK_OK(cubert__cpu_executor_run(ex, &kb_late_kernel, dim3(1, 1, 1), dim3(8, 1, 1), &args,
                                    CUBERT_EXECUTION_CHECKED, &report, NULL));
  CHECK_EQ_U64(report.oob_count, 0);
  CHECK_EQ_U64(late[7], 2);
  cubert__cpu_executor_destroy(ex);
}

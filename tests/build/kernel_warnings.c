/* SPDX-License-Identifier: MIT */
/*
 * tests/build/kernel_warnings.c: every kernel source of the project in one
 * translation unit, for `make check-kernel-warnings`: gcc and clang at -O3
 * with -Wall -Wextra (and -Wmaybe-uninitialized, which -O3 makes gcc run
 * over the phases) must say nothing. A kernel is only compiled when
 * something refers to it: the table below does.
 */
#include "cubert/kernel.h"
#include "cubert_kernels.h"
#include "cts_kernels.h"
#include "cts_kernels_launch.h"
#include "cts_dialect_kernels.h"
#include "transformer_kernels.h"
#include "cuda_test_kernels.h"
#include "comm/cuda_comm_kernels.h"

/* The shape issue 22 reported: unit 0 writes a shared value, every unit
 * reads it in the next phase (gcc -O3 warned "may be used uninitialized"
 * when shared arrays were plain locals). */
CUBERT_KERNEL(kw_broadcast_f32) {
  CUBERT_BUFFER(float, out, 0);
  CUBERT_SHARED(float, s, 1);
  float seen;
  CUBERT_PHASE {
    if (UNIT_POS == 0) CUBERT_STORE(s, 0, CUBERT_LOAD(out, 0) * 2.0f);
  }
  seen = CUBERT_LOAD(s, 0);
  CUBERT_PHASE { CUBERT_STORE(out, ABSOLUTE_POS, CUBERT_LOAD(s, 0) + seen); }
}

const cubert_kernel_cpu_fn_t kernel_warnings_table[];
const cubert_kernel_cpu_fn_t kernel_warnings_table[] = {
    ck_add_f32,      ck_axpy_f32,      ck_axpy_offset_f32, ck_reduce_sum_f32, ck_matmul_f32,
    ck_add_u8,       ck_add_scalar_u32, ck_double_u32,     ck_copy_u32,       ck_mix_u32,
    ck_sum_u32,      ck_empty,         ck_positions,       ck_reverse_u32,    ck_oob_copy_f32,
    ck_oob_write_u32, cts_sleep_u32,   cts_oob_rw_u32,     cts_nop,           cts_atomic_u32,
    cts_atomic_i32,  cts_atomic_u64,   cts_atomic_i64,     cts_atomic_f32,    cts_plane_u32,
    cts_plane_f32,   cts_barrier_u32,  cts_math_f32,  cuda_test_poke_u32, kw_broadcast_f32,
    tk_encoder,      tk_layernorm,     tk_matmul,          tk_attention,      tk_gelu,
    tk_residual,     tk_softmax,
    cubert_comm_mean_f32, cubert_comm_mean_f64, cubert_comm_mean_i32, cubert_comm_mean_i64,
    cubert_comm_mean_u32, cubert_comm_mean_u64, cubert_comm_mean_i8, cubert_comm_mean_u8,
    cts_scalars_typed, cts_shape_probe, cts_line_axpy_f32x4, cts_line_edges_u32x4,
    cts_line_inc_u8x2, cts_line_inc_u16x2, cts_line_inc_u32x2, cts_line_inc_u8x16,
    cts_line_inc_f64x2,
};

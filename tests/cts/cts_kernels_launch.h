/* SPDX-License-Identifier: MIT */
/*
 * tests/cts/cts_kernels_launch.h: kernels of the launch-argument, launch-time
 * shape, CHECKED fast path and Line tests (tests/cts/test_cts_launch_shape.c,
 * test_cts_line.c). One source for every device, as cts_kernels.h: compiled
 * as C into the tests and, in a CUDA=1 build, by nvcc into the image the
 * CUDA device finds them in. Every function here is static.
 */
#ifndef CUBERT_TESTS_CTS_KERNELS_LAUNCH_H
#define CUBERT_TESTS_CTS_KERNELS_LAUNCH_H

#include "cubert/kernel.h"

/* Unit 0 of cube 0 writes the six scalar slots, each read by its type, into
 * out (u64): s0 u32, s1 i32 (sign-extended), s2 f32 * 4, s3 f64 * 8, s4 u64,
 * s5 i64 (as its bits). */
CUBERT_KERNEL(cts_scalars_typed) {
  CUBERT_BUFFER(uint64_t, out, 0);
  CUBERT_SCALAR_U32(s0, 0);
  CUBERT_SCALAR_I32(s1, 1);
  CUBERT_SCALAR_F32(s2, 2);
  CUBERT_SCALAR_F64(s3, 3);
  CUBERT_SCALAR_U64(s4, 4);
  CUBERT_SCALAR_I64(s5, 5);
  CUBERT_PHASE {
    if (UNIT_POS == 0 && CUBE_POS == 0) {
      CUBERT_STORE(out, 0, (uint64_t)s0);
      CUBERT_STORE(out, 1, (uint64_t)(int64_t)s1);
      CUBERT_STORE(out, 2, (uint64_t)(s2 * 4.0f));
      CUBERT_STORE(out, 3, (uint64_t)(s3 * 8.0));
      CUBERT_STORE(out, 4, s4);
      CUBERT_STORE(out, 5, (uint64_t)s5);
    }
  }
}

/* The launch's shape, seen from inside: cube 0 writes info[0..4] = CUBE_DIM_X,
 * CUBE_DIM_Y, CUBE_DIM_Z, CUBE_DIM, CUBERT_SHARED_DYNAMIC_BYTES. Every unit
 * stores UNIT_POS + 1 in the dynamic shared block (u32, at least CUBE_DIM of
 * them), and in the next phase out[ABSOLUTE_POS] = shared[CUBE_DIM - 1 -
 * UNIT_POS] + 1000 * CUBE_POS (the cube's units reversed), for
 * ABSOLUTE_POS < len(out). */
CUBERT_KERNEL(cts_shape_probe) {
  CUBERT_BUFFER(uint32_t, out, 0);
  CUBERT_BUFFER(uint64_t, info, 1);
  CUBERT_SHARED_DYNAMIC(uint32_t, tile);
  CUBERT_PHASE {
    if (UNIT_POS == 0 && CUBE_POS == 0) {
      CUBERT_STORE(info, 0, (uint64_t)CUBE_DIM_X);
      CUBERT_STORE(info, 1, (uint64_t)CUBE_DIM_Y);
      CUBERT_STORE(info, 2, (uint64_t)CUBE_DIM_Z);
      CUBERT_STORE(info, 3, (uint64_t)CUBE_DIM);
      CUBERT_STORE(info, 4, (uint64_t)CUBERT_SHARED_DYNAMIC_BYTES);
    }
    CUBERT_STORE(tile, UNIT_POS, (uint32_t)UNIT_POS + 1u);
  }
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i < CUBERT_LEN(out))
      CUBERT_STORE(out, i,
                   CUBERT_LOAD(tile, CUBE_DIM - 1u - UNIT_POS) + 1000u * (uint32_t)CUBE_POS);
  }
}

/* ---- lines (cubert/kernel_line.h) ---- */

/* out[j] = a[j] * alpha + out[j] on f32x4 lines, lane by lane, over the
 * lines [CUBE_POS * per_cube, min(+ per_cube, len(out))) shared by the cube's
 * units with CUBERT_UNIT_FOR (no barrier). Buffers: a, out (lines); scalars:
 * alpha (f32), per_cube (u32, lines per cube). */
CUBERT_KERNEL(cts_line_axpy_f32x4) {
  CUBERT_BUFFER_LINES(cubert_line_f32x4_t, a, 0);
  CUBERT_BUFFER_LINES(cubert_line_f32x4_t, out, 1);
  CUBERT_SCALAR_F32(alpha, 0);
  CUBERT_SCALAR_U32(per_cube, 1);
  const uint64_t lo = CUBE_POS * per_cube;
  const uint64_t hi = lo + per_cube < CUBERT_LEN(out) ? lo + per_cube : CUBERT_LEN(out);
  CUBERT_CUBE_BOUND(a, hi);
  CUBERT_CUBE_BOUND(out, hi);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE {
    CUBERT_UNIT_FOR(j, lo, hi) {
      cubert_line_f32x4_t x = CUBERT_LOAD(a, j), y = CUBERT_LOAD(out, j);
      uint32_t l;
      for (l = 0; l < 4; l++) y.v[l] = x.v[l] * alpha + y.v[l];
      CUBERT_STORE(out, j, y);
    }
  }
}

/* Every line type: out[j] = in[j] + 1 lane by lane for j < len(out), one
 * line per unit (ABSOLUTE_POS). Buffers: in, out (lines). */
#define CTS_LINE_INC(name, line_t)                                                           \
  CUBERT_KERNEL(name) {                                                                      \
    CUBERT_BUFFER_LINES(const line_t, in, 0);                                                \
    CUBERT_BUFFER_LINES(line_t, out, 1);                                                     \
    CUBERT_PHASE {                                                                           \
      uint64_t j = ABSOLUTE_POS;                                                             \
      if (j < CUBERT_LEN(out)) {                                                             \
        line_t x = CUBERT_LOAD(in, j);                                                       \
        uint32_t l;                                                                          \
        for (l = 0; l < CUBERT_LINE_WIDTH(x); l++) x.v[l] += 1;                              \
        CUBERT_STORE(out, j, x);                                                             \
      }                                                                                      \
    }                                                                                        \
  }
CTS_LINE_INC(cts_line_inc_u8x2, cubert_line_u8x2_t)
CTS_LINE_INC(cts_line_inc_u16x2, cubert_line_u16x2_t)
CTS_LINE_INC(cts_line_inc_u32x2, cubert_line_u32x2_t)
CTS_LINE_INC(cts_line_inc_u8x16, cubert_line_u8x16_t)
CTS_LINE_INC(cts_line_inc_f64x2, cubert_line_f64x2_t)

/* Lines at the bounds, unit 0 of cube 0: out[0] = in[len(in) - 1] (the last
 * whole line), out[1] = in[len(in)] (the line past the end: zeros in
 * CHECKED), then a store of {9, 9, 9, 9} at out[len(out)] (dropped as a
 * unit: no lane lands even where the buffer has room for part of it).
 * Buffers: in, out (u32x4 lines). */
CUBERT_KERNEL(cts_line_edges_u32x4) {
  CUBERT_BUFFER_LINES(const cubert_line_u32x4_t, in, 0);
  CUBERT_BUFFER_LINES(cubert_line_u32x4_t, out, 1);
  CUBERT_PHASE {
    if (UNIT_POS == 0 && CUBE_POS == 0) {
      cubert_line_u32x4_t nine;
      nine.v[0] = nine.v[1] = nine.v[2] = nine.v[3] = 9u;
      CUBERT_STORE(out, 0, CUBERT_LOAD(in, CUBERT_LEN(in) - 1u));
      CUBERT_STORE(out, 1, CUBERT_LOAD(in, CUBERT_LEN(in)));
      CUBERT_STORE(out, CUBERT_LEN(out), nine);
    }
  }
}

#endif /* CUBERT_TESTS_CTS_KERNELS_LAUNCH_H */

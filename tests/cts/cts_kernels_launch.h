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
    tile[UNIT_POS] = (uint32_t)UNIT_POS + 1u;
  }
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i < CUBERT_LEN(out))
      CUBERT_STORE(out, i, tile[CUBE_DIM - 1u - UNIT_POS] + 1000u * (uint32_t)CUBE_POS);
  }
}

#endif /* CUBERT_TESTS_CTS_KERNELS_LAUNCH_H */

/* examples/demo_kernels.h: the demo's kernels, written once in the portable
 * kernel dialect (cubert/kernel.h): they compile as C for the CPU server and
 * as CUDA C with nvcc. */
#ifndef CUBERT_DEMO_KERNELS_H
#define CUBERT_DEMO_KERNELS_H

#include "cubert/kernel.h"

#define DEMO_BLOCK 256
#define DEMO_TILE 16

/* out[i] = a[i] * alpha + b[i] */
CUBERT_KERNEL(demo_axpy_f32) {
  CUBERT_BUFFER(const float, a, 0);
  CUBERT_BUFFER(const float, b, 1);
  CUBERT_BUFFER(float, out, 2);
  CUBERT_SCALAR_F32(alpha, 0);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(out)) CUBERT_UNIT_DONE;
    CUBERT_STORE(out, i, CUBERT_LOAD(a, i) * alpha + CUBERT_LOAD(b, i));
  }
}

/* partial[cube] = sum of a DEMO_BLOCK slice of input: a shared-memory tree
 * reduction with one barrier (phase) per level. */
CUBERT_KERNEL(demo_reduce_sum_f32) {
  CUBERT_BUFFER(const float, input, 0);
  CUBERT_BUFFER(float, partial, 1);
  CUBERT_SHARED(float, sums, DEMO_BLOCK);
  uint32_t stride;
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    sums[UNIT_POS] = i < CUBERT_LEN(input) ? CUBERT_LOAD(input, i) : 0.0f;
  }
  for (stride = CUBE_DIM / 2; stride > 0; stride /= 2) {
    CUBERT_PHASE {
      if (UNIT_POS < stride) sums[UNIT_POS] += sums[UNIT_POS + stride];
    }
  }
  CUBERT_PHASE {
    if (UNIT_POS == 0) CUBERT_STORE(partial, CUBE_POS, sums[0]);
  }
}

/* c (m x n) = a (m x k) . b (k x n) with DEMO_TILE x DEMO_TILE shared tiles. */
CUBERT_KERNEL(demo_matmul_f32) {
  CUBERT_BUFFER(const float, a, 0);
  CUBERT_BUFFER(const float, b, 1);
  CUBERT_BUFFER(float, c, 2);
  CUBERT_SCALAR_U32(m, 0);
  CUBERT_SCALAR_U32(k, 1);
  CUBERT_SCALAR_U32(n, 2);
  CUBERT_SHARED(float, tile_a, DEMO_TILE * DEMO_TILE);
  CUBERT_SHARED(float, tile_b, DEMO_TILE * DEMO_TILE);
  CUBERT_UNIT_VAR(float, acc);
  uint32_t t;
  CUBERT_PHASE { CUBERT_UNIT(acc) = 0.0f; }
  for (t = 0; t < k; t += DEMO_TILE) {
    CUBERT_PHASE {
      uint32_t row = CUBE_POS_Y * DEMO_TILE + UNIT_POS_Y;
      uint32_t col = CUBE_POS_X * DEMO_TILE + UNIT_POS_X;
      uint32_t ka = t + UNIT_POS_X, kb = t + UNIT_POS_Y;
      tile_a[UNIT_POS_Y * DEMO_TILE + UNIT_POS_X] =
          row < m && ka < k ? CUBERT_LOAD(a, (uint64_t)row * k + ka) : 0.0f;
      tile_b[UNIT_POS_Y * DEMO_TILE + UNIT_POS_X] =
          kb < k && col < n ? CUBERT_LOAD(b, (uint64_t)kb * n + col) : 0.0f;
    }
    CUBERT_PHASE {
      uint32_t i;
      for (i = 0; i < DEMO_TILE; i++)
        CUBERT_UNIT(acc) += tile_a[UNIT_POS_Y * DEMO_TILE + i] * tile_b[i * DEMO_TILE + UNIT_POS_X];
    }
  }
  CUBERT_PHASE {
    uint32_t row = CUBE_POS_Y * DEMO_TILE + UNIT_POS_Y;
    uint32_t col = CUBE_POS_X * DEMO_TILE + UNIT_POS_X;
    if (row < m && col < n) CUBERT_STORE(c, (uint64_t)row * n + col, CUBERT_UNIT(acc));
  }
}

CUBERT_KERNEL_DESCRIPTOR(demo_axpy_kernel, demo_axpy_f32, 3, 1, 0, DEMO_BLOCK, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(demo_reduce_kernel, demo_reduce_sum_f32, 2, 0, 0, DEMO_BLOCK, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(demo_matmul_kernel, demo_matmul_f32, 3, 3, 0, DEMO_TILE, DEMO_TILE, 1);

#endif

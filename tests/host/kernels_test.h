/*
 * tests/host/kernels_test.h: kernels written once in the dialect of
 * cubert/kernel.h. Compiled as C99 by the CPU executor tests
 * (test_cpu_executor.c) and the bench, and as CUDA by nvcc through
 * kernels_test.cu, so both servers run the very same source.
 */
#ifndef CUBERT_TESTS_KERNELS_TEST_H
#define CUBERT_TESTS_KERNELS_TEST_H

#include "cubert/kernel.h"

/* Units per cube of the 1-D kernels below, and the matmul tile edge. */
#define KT_BLOCK 256
#define KT_TILE 16

/* out[i] = a[i] + b[i] for every i < len(out). Buffers: a, b, out. */
CUBERT_KERNEL(kt_add_f32) {
  CUBERT_BUFFER(const float, a, 0);
  CUBERT_BUFFER(const float, b, 1);
  CUBERT_BUFFER(float, out, 2);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(out)) CUBERT_UNIT_DONE;
    CUBERT_STORE(out, i, CUBERT_LOAD(a, i) + CUBERT_LOAD(b, i));
  }
}

/* Does nothing (launch-overhead benchmark). */
CUBERT_KERNEL(kt_empty) {}

/* partial[c] = sum of input[c*KT_BLOCK .. (c+1)*KT_BLOCK) (zeros past the
 * end): a shared-memory tree reduction, one barrier per level. Launch with
 * KT_BLOCK units (x) per cube. Buffers: input, partial. */
CUBERT_KERNEL(kt_reduce_sum_f32) {
  CUBERT_BUFFER(const float, input, 0);
  CUBERT_BUFFER(float, partial, 1);
  CUBERT_SHARED(float, sums, KT_BLOCK);
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

/* c (m x n) = a (m x k) . b (k x n), row-major, with KT_TILE x KT_TILE
 * shared tiles. Launch with cube dim (KT_TILE, KT_TILE, 1) and cube count
 * (ceil(n / KT_TILE), ceil(m / KT_TILE), 1). Buffers: a, b, c; scalars: m, k, n. */
CUBERT_KERNEL(kt_matmul_f32) {
  CUBERT_BUFFER(const float, a, 0);
  CUBERT_BUFFER(const float, b, 1);
  CUBERT_BUFFER(float, c, 2);
  CUBERT_SCALAR_U32(m, 0);
  CUBERT_SCALAR_U32(k, 1);
  CUBERT_SCALAR_U32(n, 2);
  CUBERT_SHARED(float, tile_a, KT_TILE * KT_TILE);
  CUBERT_SHARED(float, tile_b, KT_TILE * KT_TILE);
  CUBERT_UNIT_VAR(float, acc);
  uint32_t t;
  CUBERT_PHASE { CUBERT_UNIT(acc) = 0.0f; }
  for (t = 0; t < k; t += KT_TILE) {
    CUBERT_PHASE { /* each unit loads one element of each tile */
      uint32_t row = CUBE_POS_Y * KT_TILE + UNIT_POS_Y;
      uint32_t col = CUBE_POS_X * KT_TILE + UNIT_POS_X;
      uint32_t ka = t + UNIT_POS_X, kb = t + UNIT_POS_Y;
      tile_a[UNIT_POS_Y * KT_TILE + UNIT_POS_X] =
          row < m && ka < k ? CUBERT_LOAD(a, (uint64_t)row * k + ka) : 0.0f;
      tile_b[UNIT_POS_Y * KT_TILE + UNIT_POS_X] =
          kb < k && col < n ? CUBERT_LOAD(b, (uint64_t)kb * n + col) : 0.0f;
    }
    CUBERT_PHASE { /* then multiplies the tiles */
      uint32_t i;
      for (i = 0; i < KT_TILE; i++)
        CUBERT_UNIT(acc) += tile_a[UNIT_POS_Y * KT_TILE + i] * tile_b[i * KT_TILE + UNIT_POS_X];
    }
  }
  CUBERT_PHASE {
    uint32_t row = CUBE_POS_Y * KT_TILE + UNIT_POS_Y;
    uint32_t col = CUBE_POS_X * KT_TILE + UNIT_POS_X;
    if (row < m && col < n) CUBERT_STORE(c, (uint64_t)row * n + col, CUBERT_UNIT(acc));
  }
}

/* Every unit writes its positions at ABSOLUTE_POS, 8 words per unit:
 * cube x,y,z, unit x,y,z, UNIT_POS, CUBE_POS (low 32 bits), plus
 * ABSOLUTE_POS_X/Y/Z in a second buffer (3 words). Buffers: pos, abs. */
CUBERT_KERNEL(kt_positions) {
  CUBERT_BUFFER(uint32_t, pos, 0);
  CUBERT_BUFFER(uint32_t, abs_pos, 1);
  CUBERT_PHASE {
    uint64_t base = ABSOLUTE_POS * 8u, base3 = ABSOLUTE_POS * 3u;
    CUBERT_STORE(pos, base + 0, CUBE_POS_X);
    CUBERT_STORE(pos, base + 1, CUBE_POS_Y);
    CUBERT_STORE(pos, base + 2, CUBE_POS_Z);
    CUBERT_STORE(pos, base + 3, UNIT_POS_X);
    CUBERT_STORE(pos, base + 4, UNIT_POS_Y);
    CUBERT_STORE(pos, base + 5, UNIT_POS_Z);
    CUBERT_STORE(pos, base + 6, UNIT_POS);
    CUBERT_STORE(pos, base + 7, (uint32_t)CUBE_POS);
    CUBERT_STORE(abs_pos, base3 + 0, ABSOLUTE_POS_X);
    CUBERT_STORE(abs_pos, base3 + 1, ABSOLUTE_POS_Y);
    CUBERT_STORE(abs_pos, base3 + 2, ABSOLUTE_POS_Z);
  }
}

/* Deliberately unbounded: out[i] = in[i] + 1 for every unit, whatever the
 * view lengths (the load comes first, in its own statement, so the first
 * violation of a unit is its load). Buffers: in, out. */
CUBERT_KERNEL(kt_oob_copy) {
  CUBERT_BUFFER(const float, in, 0);
  CUBERT_BUFFER(float, out, 1);
  CUBERT_PHASE {
    float v = CUBERT_LOAD(in, ABSOLUTE_POS);
    CUBERT_STORE(out, ABSOLUTE_POS, v + 1.0f);
  }
}

/* out[i] = alpha * x[i] + y[i] with alpha an f32 scalar and an i64 offset
 * added to the index of x (scalars of several types). Buffers: x, y, out;
 * scalars: alpha (f32), offset (i64). */
CUBERT_KERNEL(kt_axpy_f32) {
  CUBERT_BUFFER(const float, x, 0);
  CUBERT_BUFFER(const float, y, 1);
  CUBERT_BUFFER(float, out, 2);
  CUBERT_SCALAR_F32(alpha, 0);
  CUBERT_SCALAR_I64(offset, 1);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(out)) CUBERT_UNIT_DONE;
    CUBERT_STORE(out, i, alpha * CUBERT_LOAD(x, (int64_t)i + offset) + CUBERT_LOAD(y, i));
  }
}

/* out[c*D + u] = in[c*D + D-1-u] with D = CUBE_DIM: reverses each cube's
 * block through dynamic shared memory (launch with CUBE_DIM * 4 bytes of it).
 * Buffers: in, out. */
CUBERT_KERNEL(kt_reverse_u32) {
  CUBERT_BUFFER(const uint32_t, in, 0);
  CUBERT_BUFFER(uint32_t, out, 1);
  CUBERT_SHARED_DYNAMIC(uint32_t, block);
  CUBERT_PHASE { block[UNIT_POS] = CUBERT_LOAD(in, ABSOLUTE_POS); }
  CUBERT_PHASE { CUBERT_STORE(out, ABSOLUTE_POS, block[CUBE_DIM - 1 - UNIT_POS]); }
}

/* Descriptors (host side; nothing under nvcc). */
CUBERT_KERNEL_DESCRIPTOR(kt_add_f32_kernel, kt_add_f32, 3, 0, 0, KT_BLOCK, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(kt_empty_kernel, kt_empty, 0, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(kt_reduce_sum_f32_kernel, kt_reduce_sum_f32, 2, 0, 0, KT_BLOCK, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(kt_matmul_f32_kernel, kt_matmul_f32, 3, 3, 0, KT_TILE, KT_TILE, 1);
CUBERT_KERNEL_DESCRIPTOR(kt_positions_kernel, kt_positions, 2, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(kt_oob_copy_kernel, kt_oob_copy, 2, 0, 0, 4, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(kt_axpy_f32_kernel, kt_axpy_f32, 3, 2, 0, 64, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(kt_reverse_u32_kernel, kt_reverse_u32, 2, 0, 128 * sizeof(uint32_t), 128,
                         1, 1);

#endif /* CUBERT_TESTS_KERNELS_TEST_H */

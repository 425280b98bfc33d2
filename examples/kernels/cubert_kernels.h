/* SPDX-License-Identifier: MIT */
/*
 * examples/kernels/cubert_kernels.h: the kernels every example, test, tool,
 * benchmark and fuzz target runs, written once in the portable dialect of
 * cubert/kernel.h (docs/kernels.md). The same source compiles as C99 for the
 * CPU servers and as CUDA C with nvcc (examples/kernels/cubert_kernels.cu
 * builds and checks them on a GPU):
 *
 *   nvcc -std=c++14 -arch=sm_90 -Iinclude -Iexamples/kernels -x cu -c \
 *        examples/kernels/cubert_kernels.h -o cubert_kernels.o
 *
 * Every kernel is `static` (one copy per including file) and has a default
 * descriptor `<name>_kernel` (host side only; nothing under nvcc). A user that
 * needs another cube dim defines its own descriptor over the same function:
 *   CUBERT_KERNEL_DESCRIPTOR(my_add, ck_add_scalar_u32, 1, 1, 0, 32, 1, 1);
 *
 * f32, CK_BLOCK (256) units per cube unless said otherwise:
 *   ck_add_f32            out = a + b
 *   ck_axpy_f32           out = a * alpha + b
 *   ck_axpy_offset_f32    out[i] = alpha * x[i + offset] + y[i] (f32 and i64 scalars)
 *   ck_reduce_sum_f32     partial[cube] = sum of the cube's CK_BLOCK inputs
 *   ck_matmul_f32         c = a . b with CK_TILE x CK_TILE shared tiles
 * u8 / u32, CK_SMALL_BLOCK (64) units per cube:
 *   ck_add_u8             out = lhs + rhs (bytes)
 *   ck_add_scalar_u32     buf += delta
 *   ck_double_u32         dst = src * 2
 *   ck_copy_u32           dst = src
 *   ck_mix_u32            dst = dst * 3 + src (order-sensitive)
 *   ck_sum_u32            dst = a + b
 * Positions, shared memory, bounds:
 *   ck_empty              nothing (launch overhead)
 *   ck_positions          every unit writes its cube/unit/absolute positions
 *   ck_reverse_u32        reverses each cube's block through dynamic shared memory
 *   ck_oob_copy_f32       out = in + 1 for every unit, deliberately unbounded
 *   ck_oob_write_u32      writes one element past the end of its buffer
 */
#ifndef CUBERT_EXAMPLES_KERNELS_H
#define CUBERT_EXAMPLES_KERNELS_H

#include "cubert/kernel.h"

/* Units per cube of the 1-D f32 kernels, and the matmul tile edge. */
#define CK_BLOCK 256
#define CK_TILE 16
/* Units per cube of the u8 / u32 kernels. */
#define CK_SMALL_BLOCK 64

/* ---- f32 ------------------------------------------------------------------------ */

/* out[i] = a[i] + b[i] for every i < len(out). Buffers: a, b, out. Every
 * index used is < len(out) (the declared bounds, cubert/kernel_bounds.h): a
 * CHECKED launch with a and b at least as long as out runs unchecked. */
CUBERT_KERNEL(ck_add_f32) {
  CUBERT_BUFFER(const float, a, 0);
  CUBERT_BUFFER(const float, b, 1);
  CUBERT_BUFFER(float, out, 2);
  CUBERT_CUBE_BOUND(a, CUBERT_LEN(out));
  CUBERT_CUBE_BOUND(b, CUBERT_LEN(out));
  CUBERT_CUBE_BOUND(out, CUBERT_LEN(out));
  CUBERT_CUBE_BOUNDS_DONE;
  if (CUBERT_CUBE_WITHIN(CUBERT_LEN(out))) {
    CUBERT_PHASE {
      uint64_t i = ABSOLUTE_POS;
      CUBERT_STORE(out, i, CUBERT_LOAD(a, i) + CUBERT_LOAD(b, i));
    }
  } else {
    CUBERT_PHASE {
      uint64_t i = ABSOLUTE_POS;
      if (i >= CUBERT_LEN(out)) CUBERT_UNIT_DONE;
      CUBERT_STORE(out, i, CUBERT_LOAD(a, i) + CUBERT_LOAD(b, i));
    }
  }
}

/* out[i] = a[i] * alpha + b[i]. Buffers: a, b, out; scalar: alpha (f32). */
CUBERT_KERNEL(ck_axpy_f32) {
  CUBERT_BUFFER(const float, a, 0);
  CUBERT_BUFFER(const float, b, 1);
  CUBERT_BUFFER(float, out, 2);
  CUBERT_SCALAR_F32(alpha, 0);
  CUBERT_CUBE_BOUND(a, CUBERT_LEN(out));
  CUBERT_CUBE_BOUND(b, CUBERT_LEN(out));
  CUBERT_CUBE_BOUND(out, CUBERT_LEN(out));
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(out)) CUBERT_UNIT_DONE;
    CUBERT_STORE(out, i, CUBERT_LOAD(a, i) * alpha + CUBERT_LOAD(b, i));
  }
}

/* out[i] = alpha * x[i + offset] + y[i]: scalars of two types. Buffers: x, y,
 * out; scalars: alpha (f32), offset (i64). */
CUBERT_KERNEL(ck_axpy_offset_f32) {
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

/* partial[c] = sum of input[c*CK_BLOCK .. (c+1)*CK_BLOCK) (zeros past the
 * end): a shared-memory tree reduction, one barrier (phase) per level. Launch
 * with CK_BLOCK units (x) per cube. Buffers: input, partial. */
CUBERT_KERNEL(ck_reduce_sum_f32) {
  CUBERT_BUFFER(const float, input, 0);
  CUBERT_BUFFER(float, partial, 1);
  CUBERT_SHARED(float, sums, CK_BLOCK);
  uint32_t stride;
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    CUBERT_STORE(sums, UNIT_POS, i < CUBERT_LEN(input) ? CUBERT_LOAD(input, i) : 0.0f);
  }
  for (stride = CUBE_DIM / 2; stride > 0; stride /= 2) {
    CUBERT_PHASE {
      if (UNIT_POS < stride)
        CUBERT_STORE(sums, UNIT_POS, CUBERT_LOAD(sums, UNIT_POS) + CUBERT_LOAD(sums, UNIT_POS + stride));
    }
  }
  CUBERT_PHASE {
    if (UNIT_POS == 0) CUBERT_STORE(partial, CUBE_POS, CUBERT_LOAD(sums, 0));
  }
}

/* c (m x n) = a (m x k) . b (k x n), row-major, with CK_TILE x CK_TILE
 * shared tiles. Launch with cube dim (CK_TILE, CK_TILE, 1) and cube count
 * (ceil(n / CK_TILE), ceil(m / CK_TILE), 1). Buffers: a, b, c; scalars: m, k, n.
 * A cube whose tiles lie wholly inside a, b and c (`full`, uniform) loads and
 * stores without the edge tests: on the CPU those phases are plain loops over
 * x the compiler vectorizes (docs/kernels.md). Every index used is below
 * m*k, k*n, m*n (the declared bounds): a CHECKED launch over buffers that
 * large runs unchecked. */
CUBERT_KERNEL(ck_matmul_f32) {
  CUBERT_BUFFER(const float, a, 0);
  CUBERT_BUFFER(const float, b, 1);
  CUBERT_BUFFER(float, c, 2);
  CUBERT_SCALAR_U32(m, 0);
  CUBERT_SCALAR_U32(k, 1);
  CUBERT_SCALAR_U32(n, 2);
  CUBERT_SHARED(float, tile_a, CK_TILE * CK_TILE);
  CUBERT_SHARED(float, tile_b, CK_TILE * CK_TILE);
  CUBERT_UNIT_VAR(float, acc);
  const uint64_t row0 = (uint64_t)CUBE_POS_Y * CK_TILE, col0 = (uint64_t)CUBE_POS_X * CK_TILE;
  const int full = row0 + CK_TILE <= m && col0 + CK_TILE <= n && k % CK_TILE == 0;
  uint32_t t;
  CUBERT_CUBE_BOUND(a, (uint64_t)m * k);
  CUBERT_CUBE_BOUND(b, (uint64_t)k * n);
  CUBERT_CUBE_BOUND(c, (uint64_t)m * n);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE { CUBERT_UNIT(acc) = 0.0f; }
  for (t = 0; t < k; t += CK_TILE) {
    if (full) {
      CUBERT_PHASE { /* each unit loads one element of each tile */
        CUBERT_STORE(tile_a, UNIT_POS, CUBERT_LOAD(a, (row0 + UNIT_POS_Y) * k + t + UNIT_POS_X));
        CUBERT_STORE(tile_b, UNIT_POS,
                     CUBERT_LOAD(b, ((uint64_t)t + UNIT_POS_Y) * n + col0 + UNIT_POS_X));
      }
    } else {
      CUBERT_PHASE { /* the same at the edges: zeros outside a and b */
        uint64_t row = row0 + UNIT_POS_Y, col = col0 + UNIT_POS_X;
        uint32_t ka = t + UNIT_POS_X, kb = t + UNIT_POS_Y;
        CUBERT_STORE(tile_a, UNIT_POS, row < m && ka < k ? CUBERT_LOAD(a, row * k + ka) : 0.0f);
        CUBERT_STORE(tile_b, UNIT_POS,
                     kb < k && col < n ? CUBERT_LOAD(b, (uint64_t)kb * n + col) : 0.0f);
      }
    }
    CUBERT_PHASE { /* then multiplies the tiles */
      uint32_t i;
      for (i = 0; i < CK_TILE; i++)
        CUBERT_UNIT(acc) += CUBERT_LOAD(tile_a, UNIT_POS_Y * CK_TILE + i) *
                            CUBERT_LOAD(tile_b, i * CK_TILE + UNIT_POS_X);
    }
  }
  if (full) {
    CUBERT_PHASE { CUBERT_STORE(c, (row0 + UNIT_POS_Y) * n + col0 + UNIT_POS_X, CUBERT_UNIT(acc)); }
  } else {
    CUBERT_PHASE {
      uint64_t row = row0 + UNIT_POS_Y, col = col0 + UNIT_POS_X;
      if (row < m && col < n) CUBERT_STORE(c, row * n + col, CUBERT_UNIT(acc));
    }
  }
}

/* ---- u8 / u32 --------------------------------------------------------------------- */

/* out[i] = lhs[i] + rhs[i] for i < len(lhs), bytes (CubeCL's dummy server's
 * DummyElementwiseAddition). Buffers: lhs, rhs, out. */
CUBERT_KERNEL(ck_add_u8) {
  CUBERT_BUFFER(const uint8_t, lhs, 0);
  CUBERT_BUFFER(const uint8_t, rhs, 1);
  CUBERT_BUFFER(uint8_t, out, 2);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(lhs)) CUBERT_UNIT_DONE;
    CUBERT_STORE(out, i, (uint8_t)(CUBERT_LOAD(lhs, i) + CUBERT_LOAD(rhs, i)));
  }
}

/* buf[i] += delta for i < len(buf). Buffer: buf; scalar: delta (u32). Every
 * index used is < len(buf) (the declared bound, cubert/kernel_bounds.h): a
 * CHECKED launch runs its full cubes unchecked, a plain loop. */
CUBERT_KERNEL(ck_add_scalar_u32) {
  CUBERT_BUFFER(uint32_t, buf, 0);
  CUBERT_SCALAR_U32(delta, 0);
  CUBERT_CUBE_BOUND(buf, CUBERT_LEN(buf));
  CUBERT_CUBE_BOUNDS_DONE;
  if (CUBERT_CUBE_WITHIN(CUBERT_LEN(buf))) {
    CUBERT_PHASE {
      uint64_t i = ABSOLUTE_POS;
      CUBERT_STORE(buf, i, CUBERT_LOAD(buf, i) + delta);
    }
  } else {
    CUBERT_PHASE {
      uint64_t i = ABSOLUTE_POS;
      if (i >= CUBERT_LEN(buf)) CUBERT_UNIT_DONE;
      CUBERT_STORE(buf, i, CUBERT_LOAD(buf, i) + delta);
    }
  }
}

/* dst[i] = src[i] * 2 for i < len(dst). Buffers: src, dst. */
CUBERT_KERNEL(ck_double_u32) {
  CUBERT_BUFFER(const uint32_t, src, 0);
  CUBERT_BUFFER(uint32_t, dst, 1);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(dst)) CUBERT_UNIT_DONE;
    CUBERT_STORE(dst, i, CUBERT_LOAD(src, i) * 2u);
  }
}

/* dst[i] = src[i] for i below both lengths. Buffers: src, dst. */
CUBERT_KERNEL(ck_copy_u32) {
  CUBERT_BUFFER(const uint32_t, src, 0);
  CUBERT_BUFFER(uint32_t, dst, 1);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(dst) || i >= CUBERT_LEN(src)) CUBERT_UNIT_DONE;
    CUBERT_STORE(dst, i, CUBERT_LOAD(src, i));
  }
}

/* dst[i] = dst[i] * 3 + src[i] for i below both lengths: order-sensitive, so
 * two launches that race give a result that shows it (the simulation tests
 * and tools/cubert_sim.c use it). Buffers: src, dst. */
CUBERT_KERNEL(ck_mix_u32) {
  CUBERT_BUFFER(const uint32_t, src, 0);
  CUBERT_BUFFER(uint32_t, dst, 1);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(dst) || i >= CUBERT_LEN(src)) CUBERT_UNIT_DONE;
    CUBERT_STORE(dst, i, CUBERT_LOAD(dst, i) * 3u + CUBERT_LOAD(src, i));
  }
}

/* dst[i] = a[i] + b[i] for i below every length. Buffers: a, b, dst. */
CUBERT_KERNEL(ck_sum_u32) {
  CUBERT_BUFFER(const uint32_t, a, 0);
  CUBERT_BUFFER(const uint32_t, b, 1);
  CUBERT_BUFFER(uint32_t, dst, 2);
  CUBERT_PHASE {
    uint64_t i = ABSOLUTE_POS;
    if (i >= CUBERT_LEN(dst) || i >= CUBERT_LEN(a) || i >= CUBERT_LEN(b)) CUBERT_UNIT_DONE;
    CUBERT_STORE(dst, i, CUBERT_LOAD(a, i) + CUBERT_LOAD(b, i));
  }
}

/* ---- positions, shared memory, bounds ------------------------------------------------ */

/* Does nothing (launch overhead). */
CUBERT_KERNEL(ck_empty) {}

/* Every unit writes its positions at ABSOLUTE_POS, 8 words per unit:
 * cube x,y,z, unit x,y,z, UNIT_POS, CUBE_POS (low 32 bits), plus
 * ABSOLUTE_POS_X/Y/Z in a second buffer (3 words). Buffers: pos, abs. */
CUBERT_KERNEL(ck_positions) {
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

/* out[c*D + u] = in[c*D + D-1-u] with D = CUBE_DIM: reverses each cube's
 * block through dynamic shared memory (launch with CUBE_DIM * 4 bytes of it).
 * Buffers: in, out. */
CUBERT_KERNEL(ck_reverse_u32) {
  CUBERT_BUFFER(const uint32_t, in, 0);
  CUBERT_BUFFER(uint32_t, out, 1);
  CUBERT_SHARED_DYNAMIC(uint32_t, block);
  CUBERT_PHASE { CUBERT_STORE(block, UNIT_POS, CUBERT_LOAD(in, ABSOLUTE_POS)); }
  CUBERT_PHASE { CUBERT_STORE(out, ABSOLUTE_POS, CUBERT_LOAD(block, CUBE_DIM - 1 - UNIT_POS)); }
}

/* Deliberately unbounded: out[i] = in[i] + 1 for every unit, whatever the
 * view lengths (the load comes first, in its own statement, so the first
 * violation of a unit is its load). Buffers: in, out. */
CUBERT_KERNEL(ck_oob_copy_f32) {
  CUBERT_BUFFER(const float, in, 0);
  CUBERT_BUFFER(float, out, 1);
  CUBERT_PHASE {
    float v = CUBERT_LOAD(in, ABSOLUTE_POS);
    CUBERT_STORE(out, ABSOLUTE_POS, v + 1.0f);
  }
}

/* Unit 0 of cube 0 writes 7 at index len(buf): one element past the end. */
CUBERT_KERNEL(ck_oob_write_u32) {
  CUBERT_BUFFER(uint32_t, buf, 0);
  CUBERT_PHASE {
    if (UNIT_POS == 0 && CUBE_POS == 0) CUBERT_STORE(buf, CUBERT_LEN(buf), 7u);
  }
}

/* ---- descriptors (host side; nothing under nvcc) ------------------------------------ */

CUBERT_KERNEL_DESCRIPTOR(ck_add_f32_kernel, ck_add_f32, 3, 0, 0, CK_BLOCK, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(ck_axpy_f32_kernel, ck_axpy_f32, 3, 1, 0, CK_BLOCK, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(ck_axpy_offset_f32_kernel, ck_axpy_offset_f32, 3, 2, 0, 64, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(ck_reduce_sum_f32_kernel, ck_reduce_sum_f32, 2, 0, 0, CK_BLOCK, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(ck_matmul_f32_kernel, ck_matmul_f32, 3, 3, 0, CK_TILE, CK_TILE, 1);

CUBERT_KERNEL_DESCRIPTOR_RO(ck_add_u8_kernel, ck_add_u8, 3, 0, 0, CK_SMALL_BLOCK, 1, 1, 0x3u);
CUBERT_KERNEL_DESCRIPTOR(ck_add_scalar_u32_kernel, ck_add_scalar_u32, 1, 1, 0, CK_SMALL_BLOCK,
                         1, 1);
CUBERT_KERNEL_DESCRIPTOR_RO(ck_double_u32_kernel, ck_double_u32, 2, 0, 0, CK_SMALL_BLOCK, 1, 1,
                            0x1u);
CUBERT_KERNEL_DESCRIPTOR_RO(ck_copy_u32_kernel, ck_copy_u32, 2, 0, 0, CK_SMALL_BLOCK, 1, 1, 0x1u);
CUBERT_KERNEL_DESCRIPTOR_RO(ck_mix_u32_kernel, ck_mix_u32, 2, 0, 0, CK_SMALL_BLOCK, 1, 1, 0x1u);
CUBERT_KERNEL_DESCRIPTOR_RO(ck_sum_u32_kernel, ck_sum_u32, 3, 0, 0, CK_SMALL_BLOCK, 1, 1, 0x3u);
/* Too many units per cube for any device (a resource-limit test). */
CUBERT_KERNEL_DESCRIPTOR(ck_add_scalar_u32_huge_cube_kernel, ck_add_scalar_u32, 1, 1, 0, 1024, 2,
                         1);

CUBERT_KERNEL_DESCRIPTOR(ck_empty_kernel, ck_empty, 0, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(ck_positions_kernel, ck_positions, 2, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(ck_reverse_u32_kernel, ck_reverse_u32, 2, 0, 128 * sizeof(uint32_t), 128,
                         1, 1);
CUBERT_KERNEL_DESCRIPTOR(ck_oob_copy_f32_kernel, ck_oob_copy_f32, 2, 0, 0, 4, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(ck_oob_write_u32_kernel, ck_oob_write_u32, 1, 0, 0, CK_SMALL_BLOCK, 1, 1);

#endif /* CUBERT_EXAMPLES_KERNELS_H */

/* SPDX-License-Identifier: MIT */
/*
 * tests/cts/cts_dialect_kernels.h: kernels of the conformance tests of the
 * execution model (tests/cts/test_cts_dialect.c): atomics, plane operations,
 * the cube-wide reduce and scan, the barrier rule. One source for every
 * device: compiled as C into the tests and, in a CUDA=1 build, by nvcc into
 * the image the CUDA device finds them in. Every function here is static.
 */
#ifndef CUBERT_TESTS_CTS_DIALECT_KERNELS_H
#define CUBERT_TESTS_CTS_DIALECT_KERNELS_H

#include "cubert/kernel.h"

/* Slots of the atomics kernels' `acc` buffer. */
#define CTS_AT_ADD 0      /* += 1 per unit */
#define CTS_AT_SUB 1      /* -= 1 per unit */
#define CTS_AT_MAX 2      /* max of ABSOLUTE_POS */
#define CTS_AT_MIN 3      /* min of ABSOLUTE_POS + 5 (starts at the type's max) */
#define CTS_AT_CAS 4      /* compare_exchange(0 -> ABSOLUTE_POS + 1): one unit wins */
#define CTS_AT_WINNERS 5  /* += 1 by the unit whose compare-exchange saw 0 */
#define CTS_AT_XCHG 6     /* exchange(ABSOLUTE_POS + 1) */
#define CTS_AT_XCHG_SUM 7 /* += what each exchange returned */
#define CTS_AT_OR 8       /* |= 1 << (pos % 31) */
#define CTS_AT_AND 9      /* &= ~(1 << (pos % 31)) (starts all ones) */
#define CTS_AT_XOR 10     /* ^= 1 << (pos % 31) */
#define CTS_AT_SLOTS 11

/* Every unit of every cube updates acc (global atomics), and the cube's
 * units count themselves in shared memory with atomics: per_cube[c] = the
 * count, stored (atomic store) by unit 0 and read back (atomic load) by the
 * last unit into check[c]. Buffers: acc (CTS_AT_SLOTS), per_cube, check. */
#define CTS_ATOMIC_KERNEL_(name, T, BITS)                                                    \
  CUBERT_KERNEL(name) {                                                                      \
    CUBERT_BUFFER(T, acc, 0);                                                                \
    CUBERT_BUFFER(T, per_cube, 1);                                                           \
    CUBERT_BUFFER(T, check, 2);                                                              \
    CUBERT_SHARED(T, count, 1);                                                              \
    CUBERT_PHASE {                                                                           \
      if (UNIT_POS == 0) CUBERT_ATOMIC_STORE(count, 0, (T)0);                                \
    }                                                                                        \
    CUBERT_PHASE {                                                                           \
      const T pos = (T)ABSOLUTE_POS;                                                         \
      T old;                                                                                 \
      (void)CUBERT_ATOMIC_ADD(acc, CTS_AT_ADD, (T)1);                                        \
      (void)CUBERT_ATOMIC_SUB(acc, CTS_AT_SUB, (T)1);                                        \
      (void)CUBERT_ATOMIC_MAX(acc, CTS_AT_MAX, pos);                                         \
      (void)CUBERT_ATOMIC_MIN(acc, CTS_AT_MIN, (T)(pos + (T)5));                             \
      old = CUBERT_ATOMIC_COMPARE_EXCHANGE(acc, CTS_AT_CAS, (T)0, (T)(pos + (T)1));          \
      if (old == (T)0) (void)CUBERT_ATOMIC_ADD(acc, CTS_AT_WINNERS, (T)1);                   \
      old = CUBERT_ATOMIC_EXCHANGE(acc, CTS_AT_XCHG, (T)(pos + (T)1));                       \
      (void)CUBERT_ATOMIC_ADD(acc, CTS_AT_XCHG_SUM, old);                                    \
      BITS                                                                                   \
      (void)CUBERT_ATOMIC_ADD(count, 0, (T)1);                                               \
    }                                                                                        \
    CUBERT_PHASE {                                                                           \
      if (UNIT_POS == 0) CUBERT_ATOMIC_STORE(per_cube, CUBE_POS, CUBERT_ATOMIC_LOAD(count, 0)); \
    }                                                                                        \
    CUBERT_PHASE {                                                                           \
      if (UNIT_POS + 1u == CUBE_DIM)                                                         \
        CUBERT_STORE(check, CUBE_POS, CUBERT_ATOMIC_LOAD(per_cube, CUBE_POS));               \
    }                                                                                        \
  }

#define CTS_ATOMIC_BITS_(T)                                                                  \
  {                                                                                          \
    const T bit = (T)((T)1 << (ABSOLUTE_POS % 31u));                                         \
    (void)CUBERT_ATOMIC_OR(acc, CTS_AT_OR, bit);                                             \
    (void)CUBERT_ATOMIC_AND(acc, CTS_AT_AND, (T)~bit);                                       \
    (void)CUBERT_ATOMIC_XOR(acc, CTS_AT_XOR, bit);                                           \
  }

CTS_ATOMIC_KERNEL_(cts_atomic_u32, uint32_t, CTS_ATOMIC_BITS_(uint32_t))
CTS_ATOMIC_KERNEL_(cts_atomic_i32, int32_t, CTS_ATOMIC_BITS_(int32_t))
CTS_ATOMIC_KERNEL_(cts_atomic_u64, uint64_t, CTS_ATOMIC_BITS_(uint64_t))
CTS_ATOMIC_KERNEL_(cts_atomic_i64, int64_t, CTS_ATOMIC_BITS_(int64_t))
CTS_ATOMIC_KERNEL_(cts_atomic_f32, float, )

/* Outputs of cts_plane_u32, each a block of N = len(in) words of `out`. */
#define CTS_PL_SUM 0
#define CTS_PL_PROD 1
#define CTS_PL_MIN 2
#define CTS_PL_MAX 3
#define CTS_PL_ALL 4
#define CTS_PL_ANY 5
#define CTS_PL_BROADCAST 6 /* from lane 0 */
#define CTS_PL_SHUFFLE 7   /* from lane (lane + 1) % (units of the plane) */
#define CTS_PL_XOR 8       /* from lane ^ 1 */
#define CTS_PL_INCL 9
#define CTS_PL_EXCL 10
#define CTS_PL_CUBE_SUM 11
#define CTS_PL_CUBE_MAX 12
#define CTS_PL_CUBE_INCL 13
#define CTS_PL_CUBE_EXCL 14
#define CTS_PL_DIM 15      /* PLANE_DIM */
#define CTS_PL_LANE 16     /* UNIT_POS_PLANE */
#define CTS_PL_OUTPUTS 17

/* Every plane operation and cube-wide helper over in[ABSOLUTE_POS] (u32),
 * each result stored at out[k * N + ABSOLUTE_POS]. Every unit of the launch
 * must have an input (N = units of the launch). Buffers: in, out. */
CUBERT_KERNEL(cts_plane_u32) {
  CUBERT_BUFFER(const uint32_t, in, 0);
  CUBERT_BUFFER(uint32_t, out, 1);
  CUBERT_SHARED(uint32_t, scratch, 1024);
  CUBERT_UNIT_VAR(uint32_t, v);
  CUBERT_UNIT_VAR(uint32_t, r);
  CUBERT_UNIT_VAR(uint32_t, lanes);
  const uint64_t n = CUBERT_LEN(in);
  CUBERT_PHASE {
    uint32_t base = (uint32_t)UNIT_POS - UNIT_POS_PLANE, count = CUBE_DIM - base;
    if (count > PLANE_DIM) count = PLANE_DIM;
    CUBERT_UNIT(v) = CUBERT_LOAD(in, ABSOLUTE_POS);
    CUBERT_UNIT(lanes) = (UNIT_POS_PLANE + 1u) % count;
    CUBERT_STORE(out, CTS_PL_DIM * n + ABSOLUTE_POS, PLANE_DIM);
    CUBERT_STORE(out, CTS_PL_LANE * n + ABSOLUTE_POS, UNIT_POS_PLANE);
  }
#define CTS_PLANE_STEP_(K, OP)                                                               \
  OP;                                                                                        \
  CUBERT_PHASE { CUBERT_STORE(out, (K) * n + ABSOLUTE_POS, CUBERT_UNIT(r)); }
  CTS_PLANE_STEP_(CTS_PL_SUM, CUBERT_PLANE_SUM(r, v))
  CTS_PLANE_STEP_(CTS_PL_PROD, CUBERT_PLANE_PROD(r, v))
  CTS_PLANE_STEP_(CTS_PL_MIN, CUBERT_PLANE_MIN(r, v))
  CTS_PLANE_STEP_(CTS_PL_MAX, CUBERT_PLANE_MAX(r, v))
  CTS_PLANE_STEP_(CTS_PL_ALL, CUBERT_PLANE_ALL(r, v))
  CTS_PLANE_STEP_(CTS_PL_ANY, CUBERT_PLANE_ANY(r, v))
  CTS_PLANE_STEP_(CTS_PL_BROADCAST, CUBERT_PLANE_BROADCAST(r, v, 0))
  CTS_PLANE_STEP_(CTS_PL_SHUFFLE, CUBERT_PLANE_SHUFFLE(r, v, lanes))
  CTS_PLANE_STEP_(CTS_PL_XOR, CUBERT_PLANE_SHUFFLE_XOR(r, v, 1))
  CTS_PLANE_STEP_(CTS_PL_INCL, CUBERT_PLANE_INCLUSIVE_SUM(r, v))
  CTS_PLANE_STEP_(CTS_PL_EXCL, CUBERT_PLANE_EXCLUSIVE_SUM(r, v))
  CTS_PLANE_STEP_(CTS_PL_CUBE_SUM, CUBERT_CUBE_SUM(r, v, scratch))
  CTS_PLANE_STEP_(CTS_PL_CUBE_MAX, CUBERT_CUBE_MAX(r, v, scratch))
  CTS_PLANE_STEP_(CTS_PL_CUBE_INCL, CUBERT_CUBE_INCLUSIVE_SUM(r, v, scratch))
  CTS_PLANE_STEP_(CTS_PL_CUBE_EXCL, CUBERT_CUBE_EXCLUSIVE_SUM(r, v, scratch))
#undef CTS_PLANE_STEP_
}

/* f32 through the plane and cube sums (integer-valued inputs: exact):
 * out[0 * N + i] plane sum, out[1 * N + i] cube sum, out[2 * N + i] the plane's
 * inclusive scan. Buffers: in, out. */
CUBERT_KERNEL(cts_plane_f32) {
  CUBERT_BUFFER(const float, in, 0);
  CUBERT_BUFFER(float, out, 1);
  CUBERT_SHARED(float, scratch, 1024);
  CUBERT_UNIT_VAR(float, v);
  CUBERT_UNIT_VAR(float, r);
  const uint64_t n = CUBERT_LEN(in);
  CUBERT_PHASE { CUBERT_UNIT(v) = CUBERT_LOAD(in, ABSOLUTE_POS); }
  CUBERT_PLANE_SUM(r, v);
  CUBERT_PHASE { CUBERT_STORE(out, ABSOLUTE_POS, CUBERT_UNIT(r)); }
  CUBERT_CUBE_SUM(r, v, scratch);
  CUBERT_PHASE { CUBERT_STORE(out, n + ABSOLUTE_POS, CUBERT_UNIT(r)); }
  CUBERT_PLANE_INCLUSIVE_SUM(r, v);
  CUBERT_PHASE { CUBERT_STORE(out, 2u * n + ABSOLUTE_POS, CUBERT_UNIT(r)); }
}

/* The barrier rule: unit 0 writes a shared value, uniform code reads it
 * right after the phase (a barrier ends every phase), and every unit of the
 * next phase stores what uniform code read plus its own position; then
 * every unit overwrites the shared value's slot in a later phase, which uniform
 * code read before it (a barrier begins every phase). Buffers: in (>= 1
 * element per cube), out (one per unit). */
CUBERT_KERNEL(cts_barrier_u32) {
  CUBERT_BUFFER(const uint32_t, in, 0);
  CUBERT_BUFFER(uint32_t, out, 1);
  CUBERT_SHARED(uint32_t, value, 1);
  uint32_t seen;
  CUBERT_PHASE {
    if (UNIT_POS == 0) CUBERT_STORE(value, 0, CUBERT_LOAD(in, CUBE_POS) * 10u);
  }
  seen = CUBERT_LOAD(value, 0); /* uniform: every unit reads the same */
  CUBERT_SYNC_CUBE();
  CUBERT_PHASE {
    if (UNIT_POS + 1u == CUBE_DIM) CUBERT_STORE(value, 0, 0u); /* after every unit read it */
  }
  CUBERT_PHASE { CUBERT_STORE(out, ABSOLUTE_POS, seen + (uint32_t)UNIT_POS); }
}

/* The portable math (cubert/kernel_math.h): function k of the table below
 * over its own block of inputs, out[k * n + i] = f_k(x, y, z) with
 * x = in[k * n + i], y = in[k * n + (i + 1) % n], z = in[k * n + (i + 2) % n].
 * Buffers: in, out (CTS_MATH_FUNCS * n each); scalar: n (u32). */
#define CTS_MATH_FUNCS 24
CUBERT_KERNEL(cts_math_f32) {
  CUBERT_BUFFER(const float, in, 0);
  CUBERT_BUFFER(float, out, 1);
  CUBERT_SCALAR_U32(n, 0);
  CUBERT_PHASE {
    const uint64_t i = ABSOLUTE_POS;
    if (i >= n) CUBERT_UNIT_DONE;
#define CTS_X_(k) CUBERT_LOAD(in, (uint64_t)(k) * n + i)
#define CTS_Y_(k) CUBERT_LOAD(in, (uint64_t)(k) * n + (i + 1u) % n)
#define CTS_Z_(k) CUBERT_LOAD(in, (uint64_t)(k) * n + (i + 2u) % n)
#define CTS_F1_(k, f) CUBERT_STORE(out, (uint64_t)(k) * n + i, f(CTS_X_(k)))
#define CTS_F2_(k, f) CUBERT_STORE(out, (uint64_t)(k) * n + i, f(CTS_X_(k), CTS_Y_(k)))
    CTS_F1_(0, cubert_expf);
    CTS_F1_(1, cubert_exp2f);
    CTS_F1_(2, cubert_logf);
    CTS_F1_(3, cubert_log2f);
    CTS_F1_(4, cubert_sqrtf);
    CTS_F1_(5, cubert_rsqrtf);
    CTS_F1_(6, cubert_tanhf);
    CTS_F1_(7, cubert_erff);
    CTS_F1_(8, cubert_sinf);
    CTS_F1_(9, cubert_cosf);
    CTS_F2_(10, cubert_powf);
    CUBERT_STORE(out, 11u * n + i, cubert_fmaf(CTS_X_(11), CTS_Y_(11), CTS_Z_(11)));
    CTS_F2_(12, cubert_fminf);
    CTS_F2_(13, cubert_fmaxf);
    CTS_F1_(14, cubert_fabsf);
    CTS_F1_(15, cubert_floorf);
    CTS_F1_(16, cubert_ceilf);
    CTS_F1_(17, cubert_roundf);
    CTS_F1_(18, cubert_fast_expf);
    CTS_F1_(19, cubert_fast_logf);
    CTS_F1_(20, cubert_fast_log2f);
    CTS_F1_(21, cubert_fast_sinf);
    CTS_F1_(22, cubert_fast_cosf);
    CTS_F2_(23, cubert_fast_powf);
#undef CTS_X_
#undef CTS_Y_
#undef CTS_Z_
#undef CTS_F1_
#undef CTS_F2_
  }
}

#endif /* CUBERT_TESTS_CTS_DIALECT_KERNELS_H */

/* SPDX-License-Identifier: MIT */
/*
 * examples/transformer/transformer_kernels.h: the forward layers of a GPT-2
 * block written in the kernel dialect (cubert/kernel.h), one source for the
 * CPU drivers (C99) and CUDA (nvcc -x cu). docs/kernels.md, "Patterns",
 * describes each as a pattern to copy; examples/transformer/transformer_ref.h
 * is the plain C reference (llm.c's forward functions) they are checked
 * against; examples/transformer/transformer_host.h launches them.
 *
 * Layouts are llm.c's (row-major, f32): B batches, T positions, C channels,
 * NH heads of TK_HS channels each, V vocabulary rows (Vp the padded row).
 * Buffers of f32 rows are viewed as f32x4 lines (cubert/kernel_line.h), so
 * C, K, N and Vp must be multiples of 4; every kernel works for any cube
 * size the host picks at launch (cubert_launch_arguments_set_cube_dim),
 * except the matmul (TK_MM_UNITS units). The host picks small cubes on the
 * CPU (a unit walks a contiguous run: plain vectorized loops) and large
 * ones on a GPU (coalesced, many threads): transformer_host.h's plans.
 *
 *   tk_encoder    out[b,t,:] = wte[inp[b,t],:] + wpe[t,:]            (lines, CUBERT_UNIT_FOR)
 *   tk_layernorm  out = (x - mean) * rstd * w + b per row; mean, rstd  (one pass, plane sums)
 *   tk_matmul     out = inp . weight^T + bias (register-tiled, shared-memory staging)
 *   tk_attention  causal self-attention, fused (short sequences, TK_HS = 64)
 *   tk_attention_planes  the same, a plane per query (a GPU's)
 *   tk_gelu       out = gelu_tanh(x)                                  (lines, elementwise)
 *   tk_residual   out = a + b                                         (lines, elementwise)
 *   tk_softmax    probs = softmax(logits[:V]) per row of Vp, 0 past V  (one pass, cube max/sum)
 */
#ifndef CUBERT_EXAMPLES_TRANSFORMER_KERNELS_H
#define CUBERT_EXAMPLES_TRANSFORMER_KERNELS_H

#include "cubert/kernel.h"

/* Channels per head of tk_attention (GPT-2: 768 / 12). */
#define TK_HS 64
/* Longest sequence tk_attention takes (its keys and values sit in shared memory). */
#define TK_ATT_MAX_T 64
/* Slots for per-plane partial results: a cube of 1024 units in planes of 1. */
#define TK_MAX_PLANES 1024
/* tk_matmul's tile: a cube computes TK_MM_BM x TK_MM_BN outputs, TK_MM_BK
 * channels at a time; each of its TK_MM_UNITS units a 4 x 8 block. */
#define TK_MM_BM 64
#define TK_MM_BN 64
#define TK_MM_BK 16
#define TK_MM_UNITS 128
/* Padding (in lines) of a staged tile's rows (fewer shared-memory bank conflicts). */
#define TK_MM_PAD 1
#define TK_MM_ROW4 (TK_MM_BM / 4 + TK_MM_PAD)

/* Elementwise math. On CUDA: the dialect's (cubert/kernel_math.h). On the CPU:
 * tk_expf is a polynomial (Cephes' expf: 2^n * p(r), |r| <= ln2 / 2, n rounded
 * with the 1.5 * 2^23 trick: floorf needs -fno-trapping-math to vectorize) written
 * so that a loop calling it vectorizes (the C library's expf does not without
 * -ffast-math); within 2 ulp of exp on [-87, 88], 0 below -87, exp(88) above.
 * tk_tanhf = sign(x) (1 - e) / (1 + e), e = exp(-2|x|); an odd polynomial below 0.125;
 * within 2e-7 absolute. Tested against the C library by test_cts_transformer. */
#if defined(__CUDACC__)
static __device__ __forceinline__ float tk_expf(float x) { return cubert_expf(x); }
static __device__ __forceinline__ float tk_tanhf(float x) { return cubert_tanhf(x); }
static __device__ __forceinline__ float tk_select(int c, float a, float b) { return c ? a : b; }
#define TK_UNROLL _Pragma("unroll")
#else
/* c ? a : b as bit operations: gcc does not if-convert a float select that
 * feeds arithmetic under the default -ftrapping-math, so a ?: keeps a loop
 * from vectorizing; this form vectorizes (and is exact for every a, b). */
static inline float tk_select(int c, float a, float b) {
  union {
    float f;
    int32_t i;
  } ua, ub, r;
  const int32_t mask = -(int32_t)(c != 0);
  ua.f = a;
  ub.f = b;
  r.i = (ua.i & mask) | (ub.i & ~mask);
  return r.f;
}
static inline float tk_expf(float x) {
  union {
    float f;
    int32_t i;
  } u;
  float xc = tk_select(x > 88.0f, 88.0f, x), n, r, p;
  xc = tk_select(xc < -87.0f, -87.0f, xc);
  n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest (1.5 * 2^23) */
  r = xc - n * 0.693359375f;
  r = r + n * 2.12194440e-4f;
  p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  u.i = ((int32_t)n + 127) * 8388608; /* 2^n: the exponent field */
  return tk_select(x < -87.0f, 0.0f, p * u.f);
}
static inline float tk_tanhf(float x) {
  float ax = __builtin_fabsf(x), x2 = x * x;
  float e = tk_expf(-2.0f * ax), t = (1.0f - e) / (1.0f + e);
  float s = ax * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * -0.0539682540f)));
  t = tk_select(ax < 0.125f, s, t);
  return tk_select(x < 0.0f, -t, t);
}
#define TK_UNROLL
#endif

#define TK_FLT_MAX 3.402823466e38f
#define TK_GELU_K 0.7978845608028654f /* sqrt(2 / pi) */

/* ---- encoder ------------------------------------------------------------------------ */

/* out[bt, :] = wte[inp[bt], :] + wpe[bt % T, :]: one cube per row bt; its
 * units share the row's C / 4 lines (CUBERT_UNIT_FOR). A token outside the
 * table reads row 0 (the bound below holds for any input).
 * Buffers: inp (i32, B*T), wte (V*C), wpe (maxT*C), out (B*T*C). Scalars: T, C/4.
 * Cube count: B*T (x). */
CUBERT_KERNEL(tk_encoder) {
  CUBERT_BUFFER(const int32_t, inp, 0);
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, wte, 1);
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, wpe, 2);
  CUBERT_BUFFER_LINES(cubert_line_f32x4_t, out, 3);
  CUBERT_SCALAR_U32(T, 0);
  CUBERT_SCALAR_U32(c4, 1);
  const uint64_t bt = CUBE_POS, t = bt % (T ? T : 1u);
  const uint64_t vocab = c4 ? CUBERT_LEN(wte) / c4 : 0;
  const int32_t raw = CUBERT_LOAD(inp, bt); /* uniform: every unit reads the same token */
  const uint64_t tok = raw >= 0 && (uint64_t)raw < vocab ? (uint64_t)raw : 0u;
  CUBERT_CUBE_BOUND(inp, bt + 1u);
  CUBERT_CUBE_BOUND(wte, (tok + 1u) * c4);
  CUBERT_CUBE_BOUND(wpe, (t + 1u) * c4);
  CUBERT_CUBE_BOUND(out, (bt + 1u) * c4);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE {
    CUBERT_UNIT_FOR(i, 0, c4) {
      cubert_line_f32x4_t a = CUBERT_LOAD(wte, tok * c4 + i), b = CUBERT_LOAD(wpe, t * c4 + i), o;
      uint32_t l;
      for (l = 0; l < 4; l++) o.v[l] = a.v[l] + b.v[l];
      CUBERT_STORE(out, bt * c4 + i, o);
    }
  }
}

/* ---- elementwise: residual and gelu ------------------------------------------------- */

/* The elementwise pattern: cube c takes lines [c * per_cube, (c + 1) * per_cube)
 * of the view, its units share them with CUBERT_UNIT_FOR (CPU: a contiguous
 * run each, vectorized; CUDA: strided by CUBE_DIM, coalesced). */
#define TK_ELEMENTWISE_RANGE_(n)                                                             \
  const uint64_t tk_begin = CUBE_POS * per_cube,                                             \
                 tk_end = tk_begin + per_cube < (n) ? tk_begin + per_cube : (n)

/* out = a + b (lines). Buffers: a, b, out; scalar: per_cube (lines). */
CUBERT_KERNEL(tk_residual) {
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, a, 0);
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, b, 1);
  CUBERT_BUFFER_LINES(cubert_line_f32x4_t, out, 2);
  CUBERT_SCALAR_U32(per_cube, 0);
  TK_ELEMENTWISE_RANGE_(CUBERT_LEN(out));
  CUBERT_CUBE_BOUND(a, tk_end);
  CUBERT_CUBE_BOUND(b, tk_end);
  CUBERT_CUBE_BOUND(out, tk_end);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE {
    CUBERT_UNIT_FOR(i, tk_begin, tk_end) {
      cubert_line_f32x4_t x = CUBERT_LOAD(a, i), y = CUBERT_LOAD(b, i), o;
      uint32_t l;
      for (l = 0; l < 4; l++) o.v[l] = x.v[l] + y.v[l];
      CUBERT_STORE(out, i, o);
    }
  }
}

/* out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (lines). Buffers: in,
 * out; scalar: per_cube (lines). */
CUBERT_KERNEL(tk_gelu) {
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, in, 0);
  CUBERT_BUFFER_LINES(cubert_line_f32x4_t, out, 1);
  CUBERT_SCALAR_U32(per_cube, 0);
  TK_ELEMENTWISE_RANGE_(CUBERT_LEN(out));
  CUBERT_CUBE_BOUND(in, tk_end);
  CUBERT_CUBE_BOUND(out, tk_end);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE {
    CUBERT_UNIT_FOR(i, tk_begin, tk_end) {
      cubert_line_f32x4_t x = CUBERT_LOAD(in, i), o;
      uint32_t l;
      for (l = 0; l < 4; l++) {
        float v = x.v[l];
        o.v[l] = 0.5f * v * (1.0f + tk_tanhf(TK_GELU_K * (v + 0.044715f * v * v * v)));
      }
      CUBERT_STORE(out, i, o);
    }
  }
}

/* ---- layernorm ---------------------------------------------------------------------- */

/* One cube per row of C = 4 * c4 channels; one pass over the row for the
 * sums (shifted by the row's first value, so that a large mean does not
 * cancel the variance), reduced by plane sums and one slot per plane, then
 * the normalized row. eps = 1e-5 (llm.c). Buffers: inp (B*T*C), weight (C),
 * bias (C), out (B*T*C), mean (B*T), rstd (B*T). Scalar: c4. Cube count:
 * B*T (x). */
CUBERT_KERNEL(tk_layernorm) {
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, inp, 0);
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, weight, 1);
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, bias, 2);
  CUBERT_BUFFER_LINES(cubert_line_f32x4_t, out, 3);
  CUBERT_BUFFER(float, mean, 4);
  CUBERT_BUFFER(float, rstd, 5);
  CUBERT_SCALAR_U32(c4, 0);
  CUBERT_SHARED(float, partial, 2 * TK_MAX_PLANES);
  CUBERT_UNIT_VAR(float, s);
  CUBERT_UNIT_VAR(float, q);
  const uint64_t row = CUBE_POS * c4;
  const float shift = c4 ? CUBERT_LOAD(inp, row).v[0] : 0.0f; /* uniform */
  CUBERT_CUBE_BOUND(inp, row + c4);
  CUBERT_CUBE_BOUND(weight, c4);
  CUBERT_CUBE_BOUND(bias, c4);
  CUBERT_CUBE_BOUND(out, row + c4);
  CUBERT_CUBE_BOUND(mean, CUBE_POS + 1u);
  CUBERT_CUBE_BOUND(rstd, CUBE_POS + 1u);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE {
    float ps[4] = {0, 0, 0, 0}, pq[4] = {0, 0, 0, 0};
    CUBERT_UNIT_FOR(i, 0, c4) {
      cubert_line_f32x4_t x = CUBERT_LOAD(inp, row + i);
      uint32_t l;
      for (l = 0; l < 4; l++) {
        float d = x.v[l] - shift;
        ps[l] += d;
        pq[l] += d * d;
      }
    }
    CUBERT_UNIT(s) = (ps[0] + ps[1]) + (ps[2] + ps[3]);
    CUBERT_UNIT(q) = (pq[0] + pq[1]) + (pq[2] + pq[3]);
  }
  CUBERT_PLANE_SUM(s, s);
  CUBERT_PLANE_SUM(q, q);
  CUBERT_PHASE {
    if (UNIT_POS_PLANE == 0) {
      CUBERT_STORE(partial, 2u * (UNIT_POS / PLANE_DIM), CUBERT_UNIT(s));
      CUBERT_STORE(partial, 2u * (UNIT_POS / PLANE_DIM) + 1u, CUBERT_UNIT(q));
    }
  }
  CUBERT_PHASE {
    const uint32_t planes = (uint32_t)((CUBE_DIM + PLANE_DIM - 1u) / PLANE_DIM);
    const float inv_c = 1.0f / (float)(4u * c4);
    float ts = 0.0f, tq = 0.0f, m, var, r;
    uint32_t p;
    for (p = 0; p < planes; p++) {
      ts += CUBERT_LOAD(partial, 2u * p);
      tq += CUBERT_LOAD(partial, 2u * p + 1u);
    }
    m = ts * inv_c;
    var = tq * inv_c - m * m;
    r = 1.0f / cubert_sqrtf((var > 0.0f ? var : 0.0f) + 1e-5f);
    m += shift;
    if (UNIT_POS == 0) {
      CUBERT_STORE(mean, CUBE_POS, m);
      CUBERT_STORE(rstd, CUBE_POS, r);
    }
    CUBERT_UNIT_FOR(i, 0, c4) {
      cubert_line_f32x4_t x = CUBERT_LOAD(inp, row + i), w = CUBERT_LOAD(weight, i),
                          b = CUBERT_LOAD(bias, i), o;
      uint32_t l;
      for (l = 0; l < 4; l++) o.v[l] = (x.v[l] - m) * r * w.v[l] + b.v[l];
      CUBERT_STORE(out, row + i, o);
    }
  }
}

/* ---- matmul ------------------------------------------------------------------------- */

/* The register-tiled matmul, one kernel per tile shape
 * (examples/transformer/transformer_matmul.h has the algorithm). tk_matmul:
 * 64 x 64 blocks, 16 channels a step, a unit's block 4 x 8 (128 units): the
 * CPU's, and a GPU's for the shapes no other tile beats. The GPU tiles the
 * host picks from by shape (transformer_host.h, tf_matmul_tile): */
#define TK_MMT_NAME tk_matmul
#define TK_MMT_BM TK_MM_BM
#define TK_MMT_BN TK_MM_BN
#define TK_MMT_BK TK_MM_BK
#define TK_MMT_TM 4
#define TK_MMT_TN 8
#include "transformer_matmul.h"
/* 128 x 128 blocks, 8 channels a step, 8 x 8 per unit (256 units). */
#define TK_MMT_NAME tk_matmul_128x128
#define TK_MMT_BM 128
#define TK_MMT_BN 128
#define TK_MMT_BK 8
#define TK_MMT_TM 8
#define TK_MMT_TN 8
#include "transformer_matmul.h"
/* 128 x 64 blocks, 16 channels a step, 8 x 8 per unit (128 units). */
#define TK_MMT_NAME tk_matmul_128x64
#define TK_MMT_BM 128
#define TK_MMT_BN 64
#define TK_MMT_BK 16
#define TK_MMT_TM 8
#define TK_MMT_TN 8
#include "transformer_matmul.h"
/* 64 x 64 blocks, 16 channels a step, 4 x 4 per unit (256 units). */
#define TK_MMT_NAME tk_matmul_64x64s
#define TK_MMT_BM 64
#define TK_MMT_BN 64
#define TK_MMT_BK 16
#define TK_MMT_TM 4
#define TK_MMT_TN 4
#include "transformer_matmul.h"
/* 32 x 64 blocks, 16 channels a step, 4 x 4 per unit (128 units). */
#define TK_MMT_NAME tk_matmul_32x64
#define TK_MMT_BM 32
#define TK_MMT_BN 64
#define TK_MMT_BK 16
#define TK_MMT_TM 4
#define TK_MMT_TN 4
#include "transformer_matmul.h"

/* 64 x 64 blocks, 32 channels a step, 4 x 8 per unit (128 units). */
#define TK_MMT_NAME tk_matmul_64x64k32
#define TK_MMT_BM 64
#define TK_MMT_BN 64
#define TK_MMT_BK 32
#define TK_MMT_TM 4
#define TK_MMT_TN 8
#include "transformer_matmul.h"
/* 64 x 128 blocks, 16 channels a step, 4 x 8 per unit (256 units). */
#define TK_MMT_NAME tk_matmul_64x128
#define TK_MMT_BM 64
#define TK_MMT_BN 128
#define TK_MMT_BK 16
#define TK_MMT_TM 4
#define TK_MMT_TN 8
#include "transformer_matmul.h"
/* 128 x 64 blocks, 16 channels a step, 8 x 4 per unit (256 units). */
#define TK_MMT_NAME tk_matmul_128x64t84
#define TK_MMT_BM 128
#define TK_MMT_BN 64
#define TK_MMT_BK 16
#define TK_MMT_TM 8
#define TK_MMT_TN 4
#include "transformer_matmul.h"

/* out[r, c] = bias[c] for r < m, c < n: what a matmul split over k (cube
 * count z > 1) adds its partial sums to. Buffers: bias, out; scalars: m, n.
 * Any cube size; cube count (ceil(m * n / CUBE_DIM)). */
CUBERT_KERNEL(tk_matmul_bias_rows) {
  CUBERT_BUFFER(const float, bias, 0);
  CUBERT_BUFFER(float, out, 1);
  CUBERT_SCALAR_U32(m, 0);
  CUBERT_SCALAR_U32(n, 1);
  CUBERT_CUBE_BOUND(bias, n);
  CUBERT_CUBE_BOUND(out, (uint64_t)m * n);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE {
    const uint64_t i = (uint64_t)CUBE_POS * CUBE_DIM + UNIT_POS;
    if (i < (uint64_t)m * n) CUBERT_STORE(out, i, CUBERT_LOAD(bias, i % n));
  }
}

/* ---- attention ---------------------------------------------------------------------- */

/* Causal self-attention fused in one kernel, for sequences up to
 * TK_ATT_MAX_T: a cube takes CUBE_DIM query positions of one (batch, head);
 * it stages the keys and values of positions 0 .. its last query into shared
 * memory, then each unit computes its query's row; no T x T matrix is
 * written. Two ways, picked by the scalar `online` (uniform), both tested on
 * every driver:
 *   online = 1 (a GPU): one pass over the keys with an online softmax
 *     (running max and sum, the accumulator rescaled when the max grows), q
 *     and the output in registers, keys and values read as lines (the units
 *     of a warp read the same key: a broadcast);
 *   online = 0 (the CPU): the keys staged transposed (channel-major), so the
 *     row's scores are axpys over the keys (q[d] * k[d][0..t]) and the output
 *     axpys over the channels (p[t2] * v[t2][0..63]): plain loops the
 *     compiler vectorizes (a dot product per key, a reduction, does not).
 * Buffers: qkv (B*T*3C: q, k, v of a position side by side, as llm.c's
 * attention_forward reads them), out (B*T*C). Scalars: T, C (= NH * TK_HS),
 * online. Cube count (ceil(T / CUBE_DIM), NH, B). */
CUBERT_KERNEL(tk_attention) {
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, qkv, 0);
  CUBERT_BUFFER_LINES(cubert_line_f32x4_t, out, 1);
  CUBERT_SCALAR_U32(T, 0);
  CUBERT_SCALAR_U32(C, 1);
  CUBERT_SCALAR_U32(online, 2);
  CUBERT_SHARED(cubert_line_f32x4_t, ks, TK_ATT_MAX_T * (TK_HS / 4));
  CUBERT_SHARED(cubert_line_f32x4_t, vs, TK_ATT_MAX_T * (TK_HS / 4));
  CUBERT_SHARED(float, kt, TK_HS * TK_ATT_MAX_T); /* online = 0: kt[d * TK_ATT_MAX_T + t2] */
  const uint32_t c4 = C / 4u, h4 = (uint32_t)CUBE_POS_Y * (TK_HS / 4);
  const uint64_t b = CUBE_POS_Z, first = (uint64_t)CUBE_POS_X * CUBE_DIM;
  const uint64_t last = first + CUBE_DIM < T ? first + CUBE_DIM : T; /* keys 0 .. last - 1 */
  const uint64_t nkeys = last < TK_ATT_MAX_T ? last : TK_ATT_MAX_T;
  const float scale = 1.0f / cubert_sqrtf((float)TK_HS);
  CUBERT_CUBE_BOUND(qkv, (b * T + last) * 3u * c4);
  CUBERT_CUBE_BOUND(out, (b * T + last) * c4);
  CUBERT_CUBE_BOUNDS_DONE;
  if (online) {
    CUBERT_PHASE {
      CUBERT_UNIT_FOR(i, 0, nkeys * (TK_HS / 4)) {
        const uint64_t t2 = i / (TK_HS / 4), d = i % (TK_HS / 4);
        const uint64_t at = (b * T + t2) * 3u * c4 + h4 + d;
        CUBERT_STORE(ks, i, CUBERT_LOAD(qkv, at + c4));
        CUBERT_STORE(vs, i, CUBERT_LOAD(qkv, at + 2u * c4));
      }
    }
    CUBERT_PHASE {
      const uint64_t t = first + UNIT_POS;
      cubert_line_f32x4_t q[TK_HS / 4], o[TK_HS / 4];
      float mx = -TK_FLT_MAX, sum = 0.0f;
      uint32_t d, l, t2;
      if (t >= last || t >= TK_ATT_MAX_T) CUBERT_UNIT_DONE;
      TK_UNROLL
      for (d = 0; d < TK_HS / 4; d++) {
        q[d] = CUBERT_LOAD(qkv, (b * T + t) * 3u * c4 + h4 + d);
        for (l = 0; l < 4; l++) {
          q[d].v[l] *= scale;
          o[d].v[l] = 0.0f;
        }
      }
      for (t2 = 0; t2 <= (uint32_t)t; t2++) {
        float part[4] = {0, 0, 0, 0}, sc, p;
        TK_UNROLL
        for (d = 0; d < TK_HS / 4; d++) {
          const cubert_line_f32x4_t kv = CUBERT_LOAD(ks, t2 * (TK_HS / 4) + d);
          for (l = 0; l < 4; l++) part[l] += q[d].v[l] * kv.v[l];
        }
        sc = (part[0] + part[1]) + (part[2] + part[3]);
        if (sc > mx) { /* a new maximum: rescale what was summed so far */
          const float c = tk_expf(mx - sc);
          sum *= c;
          TK_UNROLL
          for (d = 0; d < TK_HS / 4; d++)
            for (l = 0; l < 4; l++) o[d].v[l] *= c;
          mx = sc;
        }
        p = tk_expf(sc - mx);
        sum += p;
        TK_UNROLL
        for (d = 0; d < TK_HS / 4; d++) {
          const cubert_line_f32x4_t vv = CUBERT_LOAD(vs, t2 * (TK_HS / 4) + d);
          for (l = 0; l < 4; l++) o[d].v[l] += p * vv.v[l];
        }
      }
      {
        const float inv = 1.0f / sum;
        TK_UNROLL
        for (d = 0; d < TK_HS / 4; d++) {
          for (l = 0; l < 4; l++) o[d].v[l] *= inv;
          CUBERT_STORE(out, (b * T + t) * c4 + h4 + d, o[d]);
        }
      }
    }
  } else {
    CUBERT_PHASE { /* keys transposed, values as lines */
      CUBERT_UNIT_FOR(i, 0, nkeys * (TK_HS / 4)) {
        const uint64_t t2 = i / (TK_HS / 4), d = i % (TK_HS / 4);
        const uint64_t at = (b * T + t2) * 3u * c4 + h4 + d;
        const cubert_line_f32x4_t k = CUBERT_LOAD(qkv, at + c4);
        uint32_t e;
        for (e = 0; e < 4; e++) CUBERT_STORE(kt, (4u * d + e) * TK_ATT_MAX_T + t2, k.v[e]);
        CUBERT_STORE(vs, i, CUBERT_LOAD(qkv, at + 2u * c4));
      }
    }
    CUBERT_PHASE {
      const uint64_t t = first + UNIT_POS;
      float sc[TK_ATT_MAX_T], mx = -TK_FLT_MAX, sum = 0.0f;
      cubert_line_f32x4_t o[TK_HS / 4];
      uint32_t d, l, t2, n;
      if (t >= last || t >= TK_ATT_MAX_T) CUBERT_UNIT_DONE;
      n = (uint32_t)t + 1u;
      for (t2 = 0; t2 < n; t2++) sc[t2] = 0.0f;
      for (d = 0; d < TK_HS / 4; d++) { /* scores: an axpy over the keys per channel */
        const cubert_line_f32x4_t q = CUBERT_LOAD(qkv, (b * T + t) * 3u * c4 + h4 + d);
        for (l = 0; l < 4; l++) {
          const float qd = q.v[l] * scale;
          const uint32_t row = (4u * d + l) * TK_ATT_MAX_T;
          for (t2 = 0; t2 < n; t2++) sc[t2] += qd * CUBERT_LOAD(kt, row + t2);
        }
      }
      for (t2 = 0; t2 < n; t2++) mx = sc[t2] > mx ? sc[t2] : mx;
      for (t2 = 0; t2 < n; t2++) {
        sc[t2] = tk_expf(sc[t2] - mx);
        sum += sc[t2];
      }
      for (d = 0; d < TK_HS / 4; d++)
        for (l = 0; l < 4; l++) o[d].v[l] = 0.0f;
      for (t2 = 0; t2 < n; t2++) { /* output: an axpy over the channels per key */
        const float p = sc[t2] / sum;
        for (d = 0; d < TK_HS / 4; d++) {
          const cubert_line_f32x4_t vv = CUBERT_LOAD(vs, t2 * (TK_HS / 4) + d);
          for (l = 0; l < 4; l++) o[d].v[l] += p * vv.v[l];
        }
      }
      for (d = 0; d < TK_HS / 4; d++) CUBERT_STORE(out, (b * T + t) * c4 + h4 + d, o[d]);
    }
  }
}

/* Planes of tk_attention_planes that take queries (its scores' shared rows). */
#define TK_ATT_PLANES 32
/* A staged key row, in lines, padded (lanes reading different keys' line d
 * hit different shared-memory banks). */
#define TK_ATT_KROW4 (TK_HS / 4 + 1)

/* Causal self-attention fused in one kernel, a plane per query (a GPU's:
 * short critical paths, many cubes). A cube takes `per_cube` query positions
 * of one (batch, head) and stages the keys and values of positions 0 .. its
 * last query into shared memory; then, a round at a time, each of its first
 * TK_ATT_PLANES planes takes one query:
 *   1. its lanes take the keys in turn (lane l: keys l, l + P, ...: P the
 *      plane's units), each a 64-channel dot product with the query (held in
 *      registers), into the plane's row of scores; a plane max;
 *   2. each lane turns its scores into exp(score - max); a plane sum;
 *   3. its lanes take the output's lines in turn (lane l: channels 4l ..
 *      4l + 3, ...), each a sum over the keys of score x value, / the sum.
 * Any cube size and plane size (a partial last plane takes fewer keys per
 * lane); a unit past TK_ATT_PLANES planes idles. Buffers: qkv (B*T*3C, as
 * tk_attention), out (B*T*C). Scalars: T, C (= NH * TK_HS), per_cube. Cube
 * count (ceil(T / per_cube), NH, B). */
CUBERT_KERNEL(tk_attention_planes) {
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, qkv, 0);
  CUBERT_BUFFER_LINES(cubert_line_f32x4_t, out, 1);
  CUBERT_SCALAR_U32(T, 0);
  CUBERT_SCALAR_U32(C, 1);
  CUBERT_SCALAR_U32(per_cube, 2);
  CUBERT_SHARED(cubert_line_f32x4_t, ks, TK_ATT_MAX_T * TK_ATT_KROW4);
  CUBERT_SHARED(cubert_line_f32x4_t, vs, TK_ATT_MAX_T * (TK_HS / 4));
  CUBERT_SHARED(float, ps, TK_ATT_PLANES * TK_ATT_MAX_T);
  CUBERT_UNIT_VAR(float, mx);
  CUBERT_UNIT_VAR(float, sum);
  const uint32_t c4 = C / 4u, h4 = (uint32_t)CUBE_POS_Y * (TK_HS / 4);
  const uint32_t planes_ = (uint32_t)((CUBE_DIM + PLANE_DIM - 1u) / PLANE_DIM);
  const uint32_t planes = planes_ < TK_ATT_PLANES ? planes_ : TK_ATT_PLANES;
  const uint64_t b = CUBE_POS_Z, first = (uint64_t)CUBE_POS_X * per_cube;
  const uint64_t last_ = first + per_cube < T ? first + per_cube : T;
  const uint64_t last = last_ < TK_ATT_MAX_T ? last_ : TK_ATT_MAX_T; /* keys 0 .. last - 1 */
  const float scale = 1.0f / cubert_sqrtf((float)TK_HS);
  uint64_t q0;
  CUBERT_CUBE_BOUND(qkv, (b * T + last) * 3u * c4);
  CUBERT_CUBE_BOUND(out, (b * T + last) * c4);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE {
    CUBERT_UNIT_FOR(i, 0, last * (TK_HS / 4)) {
      const uint64_t t2 = i / (TK_HS / 4), d = i % (TK_HS / 4);
      const uint64_t at = (b * T + t2) * 3u * c4 + h4 + d;
      CUBERT_STORE(ks, t2 * TK_ATT_KROW4 + d, CUBERT_LOAD(qkv, at + c4));
      CUBERT_STORE(vs, i, CUBERT_LOAD(qkv, at + 2u * c4));
    }
  }
  for (q0 = first; q0 < last; q0 += planes) {
    CUBERT_PHASE { /* 1: scores of the plane's query, a lane per key */
      const uint32_t plane = (uint32_t)(UNIT_POS / PLANE_DIM), lane = (uint32_t)UNIT_POS_PLANE;
      const uint32_t pu_ = (uint32_t)CUBE_DIM - plane * (uint32_t)PLANE_DIM;
      const uint32_t pu = pu_ < PLANE_DIM ? pu_ : (uint32_t)PLANE_DIM; /* units of this plane */
      const uint64_t t = q0 + plane;
      float m = -TK_FLT_MAX;
      if (plane < planes && t < last) {
        cubert_line_f32x4_t q[TK_HS / 4];
        uint32_t d, l, t2;
        TK_UNROLL
        for (d = 0; d < TK_HS / 4; d++) {
          q[d] = CUBERT_LOAD(qkv, (b * T + t) * 3u * c4 + h4 + d);
          for (l = 0; l < 4; l++) q[d].v[l] *= scale;
        }
        for (t2 = lane; t2 <= (uint32_t)t; t2 += pu) {
          float part[4] = {0, 0, 0, 0}, sc;
          TK_UNROLL
          for (d = 0; d < TK_HS / 4; d++) {
            const cubert_line_f32x4_t kv = CUBERT_LOAD(ks, t2 * TK_ATT_KROW4 + d);
            for (l = 0; l < 4; l++) part[l] += q[d].v[l] * kv.v[l];
          }
          sc = (part[0] + part[1]) + (part[2] + part[3]);
          CUBERT_STORE(ps, plane * TK_ATT_MAX_T + t2, sc);
          m = sc > m ? sc : m;
        }
      }
      CUBERT_UNIT(mx) = m;
    }
    CUBERT_PLANE_MAX(mx, mx);
    CUBERT_PHASE { /* 2: exp(score - max), a lane per key */
      const uint32_t plane = (uint32_t)(UNIT_POS / PLANE_DIM), lane = (uint32_t)UNIT_POS_PLANE;
      const uint32_t pu_ = (uint32_t)CUBE_DIM - plane * (uint32_t)PLANE_DIM;
      const uint32_t pu = pu_ < PLANE_DIM ? pu_ : (uint32_t)PLANE_DIM;
      const uint64_t t = q0 + plane;
      float s = 0.0f;
      if (plane < planes && t < last) {
        uint32_t t2;
        for (t2 = lane; t2 <= (uint32_t)t; t2 += pu) {
          const float p = tk_expf(CUBERT_LOAD(ps, plane * TK_ATT_MAX_T + t2) - CUBERT_UNIT(mx));
          CUBERT_STORE(ps, plane * TK_ATT_MAX_T + t2, p);
          s += p;
        }
      }
      CUBERT_UNIT(sum) = s;
    }
    CUBERT_PLANE_SUM(sum, sum);
    CUBERT_PHASE { /* 3: the output, a lane per line of channels */
      const uint32_t plane = (uint32_t)(UNIT_POS / PLANE_DIM), lane = (uint32_t)UNIT_POS_PLANE;
      const uint32_t pu_ = (uint32_t)CUBE_DIM - plane * (uint32_t)PLANE_DIM;
      const uint32_t pu = pu_ < PLANE_DIM ? pu_ : (uint32_t)PLANE_DIM;
      const uint64_t t = q0 + plane;
      if (plane < planes && t < last) {
        const float inv = 1.0f / CUBERT_UNIT(sum);
        uint32_t d, l, t2;
        for (d = lane; d < TK_HS / 4; d += pu) {
          cubert_line_f32x4_t o;
          for (l = 0; l < 4; l++) o.v[l] = 0.0f;
          for (t2 = 0; t2 <= (uint32_t)t; t2++) {
            const float p = CUBERT_LOAD(ps, plane * TK_ATT_MAX_T + t2);
            const cubert_line_f32x4_t vv = CUBERT_LOAD(vs, t2 * (TK_HS / 4) + d);
            for (l = 0; l < 4; l++) o.v[l] += p * vv.v[l];
          }
          for (l = 0; l < 4; l++) o.v[l] *= inv;
          CUBERT_STORE(out, (b * T + t) * c4 + h4 + d, o);
        }
      }
    }
  }
}

/* ---- softmax ------------------------------------------------------------------------ */

/* probs[row, j] = exp(x_j - max) / sum for j < V, 0 for V <= j < Vp (llm.c's
 * softmax_forward); one cube per row of Vp = 4 * vp4 values, any cube size.
 * Two algorithms, picked by the scalar `online` (uniform), both tested on
 * every driver:
 *   online = 1: one pass over the row for the max and the sum together
 *     (each lane keeps a running max and a sum rescaled when the max grows:
 *     one exp per value), the units' (max, sum) pairs combined with
 *     CUBERT_CUBE_MAX and CUBERT_CUBE_SUM, then a pass that writes: the row
 *     is read twice and written once;
 *   online = 2 (a GPU): the same, the first pass also keeping the row in
 *     dynamic shared memory (CUBERT_SHARED_DYNAMIC, the launch gives Vp * 4
 *     bytes: 201 KB here, above CUDA's 48 KB static limit), which the second
 *     pass reads: the row is read once from memory and written once (with
 *     fewer bytes it runs as online = 1);
 *   online = 0 (the CPU): llm.c's three passes (max; exp stored and summed;
 *     scaled), each a plain loop the compiler vectorizes (a running max
 *     updated by a select is a loop-carried dependence gcc cannot vectorize),
 *     one exp per value; the row stays in the core's cache between passes.
 * The lines below V need no mask (`whole`); the line holding V and the
 * padding take a second, masked loop. Buffers: logits, probs (B*T*Vp);
 * scalars: vp4, V, online. Dynamic shared memory: Vp * 4 bytes for online = 2.
 * Cube count: B*T (x). */
CUBERT_KERNEL(tk_softmax) {
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, logits, 0);
  CUBERT_BUFFER_LINES(cubert_line_f32x4_t, probs, 1);
  CUBERT_SCALAR_U32(vp4, 0);
  CUBERT_SCALAR_U32(V, 1);
  CUBERT_SCALAR_U32(online, 2);
  CUBERT_SHARED(float, scratch, TK_MAX_PLANES);
  CUBERT_UNIT_VAR(float, m);
  CUBERT_UNIT_VAR(float, s);
  CUBERT_UNIT_VAR(float, mall);
  CUBERT_SHARED_DYNAMIC(cubert_line_f32x4_t, keep); /* online = 2: the row */
  const uint64_t row = CUBE_POS * vp4, whole = V / 4u < vp4 ? V / 4u : vp4; /* lines all below V */
  const int staged = online == 2 && CUBERT_LEN(keep) >= vp4;
  CUBERT_CUBE_BOUND(logits, row + vp4);
  CUBERT_CUBE_BOUND(probs, row + vp4);
  CUBERT_CUBE_BOUNDS_DONE;
  if (online) {
    CUBERT_PHASE {
      float lm[4], ls[4] = {0, 0, 0, 0}, mu;
      uint32_t l;
      for (l = 0; l < 4; l++) lm[l] = -TK_FLT_MAX;
      CUBERT_UNIT_FOR(i, 0, vp4) {
        const cubert_line_f32x4_t x = CUBERT_LOAD(logits, row + i);
        if (staged) CUBERT_STORE(keep, i, x);
        for (l = 0; l < 4; l++) {
          const float d = x.v[l] - lm[l], e = tk_expf(-__builtin_fabsf(d));
          if (i >= whole && 4u * i + l >= V) continue;
          ls[l] = d > 0.0f ? ls[l] * e + 1.0f : ls[l] + e;
          lm[l] = d > 0.0f ? x.v[l] : lm[l];
        }
      }
      mu = lm[0];
      for (l = 1; l < 4; l++) mu = lm[l] > mu ? lm[l] : mu;
      CUBERT_UNIT(m) = mu;
      CUBERT_UNIT(s) = 0.0f;
      for (l = 0; l < 4; l++) CUBERT_UNIT(s) += ls[l] * tk_expf(lm[l] - mu);
    }
    CUBERT_CUBE_MAX(mall, m, scratch);
    CUBERT_PHASE { CUBERT_UNIT(s) *= tk_expf(CUBERT_UNIT(m) - CUBERT_UNIT(mall)); }
    CUBERT_CUBE_SUM(s, s, scratch);
    CUBERT_PHASE {
      const float mu = CUBERT_UNIT(mall), inv = 1.0f / CUBERT_UNIT(s);
      CUBERT_UNIT_FOR(i, 0, whole) { /* each unit reads back what it kept (the same share) */
        const cubert_line_f32x4_t x = staged ? CUBERT_LOAD(keep, i) : CUBERT_LOAD(logits, row + i);
        cubert_line_f32x4_t o;
        uint32_t l;
        for (l = 0; l < 4; l++) o.v[l] = tk_expf(x.v[l] - mu) * inv;
        CUBERT_STORE(probs, row + i, o);
      }
      CUBERT_UNIT_FOR(i, whole, vp4) {
        const cubert_line_f32x4_t x = staged ? CUBERT_LOAD(keep, i) : CUBERT_LOAD(logits, row + i);
        cubert_line_f32x4_t o;
        uint32_t l;
        for (l = 0; l < 4; l++) o.v[l] = 4u * i + l < V ? tk_expf(x.v[l] - mu) * inv : 0.0f;
        CUBERT_STORE(probs, row + i, o);
      }
    }
  } else {
    CUBERT_PHASE { /* pass 1: the max */
      float lm[4], mu;
      uint32_t l;
      for (l = 0; l < 4; l++) lm[l] = -TK_FLT_MAX;
      CUBERT_UNIT_FOR(i, 0, vp4) {
        const cubert_line_f32x4_t x = CUBERT_LOAD(logits, row + i);
        for (l = 0; l < 4; l++) lm[l] = tk_select(x.v[l] > lm[l] && 4u * i + l < V, x.v[l], lm[l]);
      }
      mu = lm[0];
      for (l = 1; l < 4; l++) mu = lm[l] > mu ? lm[l] : mu;
      CUBERT_UNIT(m) = mu;
    }
    CUBERT_CUBE_MAX(mall, m, scratch);
    CUBERT_PHASE { /* pass 2: exp stored and summed */
      const float mu = CUBERT_UNIT(mall);
      float ls[4] = {0, 0, 0, 0};
      uint32_t l;
      CUBERT_UNIT_FOR(i, 0, whole) {
        const cubert_line_f32x4_t x = CUBERT_LOAD(logits, row + i);
        cubert_line_f32x4_t o;
        for (l = 0; l < 4; l++) {
          o.v[l] = tk_expf(x.v[l] - mu);
          ls[l] += o.v[l];
        }
        CUBERT_STORE(probs, row + i, o);
      }
      CUBERT_UNIT_FOR(i, whole, vp4) {
        const cubert_line_f32x4_t x = CUBERT_LOAD(logits, row + i);
        cubert_line_f32x4_t o;
        for (l = 0; l < 4; l++) {
          o.v[l] = 4u * i + l < V ? tk_expf(x.v[l] - mu) : 0.0f;
          ls[l] += o.v[l];
        }
        CUBERT_STORE(probs, row + i, o);
      }
      CUBERT_UNIT(s) = (ls[0] + ls[1]) + (ls[2] + ls[3]);
    }
    CUBERT_CUBE_SUM(s, s, scratch);
    CUBERT_PHASE { /* pass 3: scaled (each unit its own values: the same share as pass 2) */
      const float inv = 1.0f / CUBERT_UNIT(s);
      CUBERT_UNIT_FOR(i, 0, vp4) {
        cubert_line_f32x4_t o = CUBERT_LOAD(probs, row + i);
        uint32_t l;
        for (l = 0; l < 4; l++) o.v[l] *= inv;
        CUBERT_STORE(probs, row + i, o);
      }
    }
  }
}

/* ---- descriptors (host side; the launch gives the cube dim) -------------------------- */

CUBERT_KERNEL_DESCRIPTOR_RO(tk_encoder_kernel, tk_encoder, 4, 2, 0, 64, 1, 1, 0x7u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_residual_kernel, tk_residual, 3, 1, 0, 256, 1, 1, 0x3u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_gelu_kernel, tk_gelu, 2, 1, 0, 256, 1, 1, 0x1u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_layernorm_kernel, tk_layernorm, 6, 1, 0, 128, 1, 1, 0x7u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_matmul_kernel, tk_matmul, 4, 3, 0, TK_MM_UNITS, 1, 1, 0x7u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_matmul_128x128_kernel, tk_matmul_128x128, 4, 3, 0, 256, 1, 1, 0x7u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_matmul_128x64_kernel, tk_matmul_128x64, 4, 3, 0, 128, 1, 1, 0x7u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_matmul_64x64s_kernel, tk_matmul_64x64s, 4, 3, 0, 256, 1, 1, 0x7u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_matmul_32x64_kernel, tk_matmul_32x64, 4, 3, 0, 128, 1, 1, 0x7u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_matmul_64x64k32_kernel, tk_matmul_64x64k32, 4, 3, 0, 128, 1, 1, 0x7u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_matmul_64x128_kernel, tk_matmul_64x128, 4, 3, 0, 256, 1, 1, 0x7u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_matmul_128x64t84_kernel, tk_matmul_128x64t84, 4, 3, 0, 256, 1, 1, 0x7u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_matmul_bias_rows_kernel, tk_matmul_bias_rows, 2, 2, 0, 256, 1, 1, 0x1u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_attention_kernel, tk_attention, 2, 3, 0, 32, 1, 1, 0x1u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_attention_planes_kernel, tk_attention_planes, 2, 3, 0, 256, 1, 1, 0x1u);
CUBERT_KERNEL_DESCRIPTOR_RO(tk_softmax_kernel, tk_softmax, 2, 3, 0, 1024, 1, 1, 0x1u);

#endif /* CUBERT_EXAMPLES_TRANSFORMER_KERNELS_H */

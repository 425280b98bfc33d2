/* SPDX-License-Identifier: MIT */
/*
 * examples/transformer/transformer_matmul.h: the register-tiled matmul of
 * examples/transformer/transformer_kernels.h as a template: each inclusion
 * defines one kernel, TK_MMT_NAME, for one tile shape (docs/kernels.md,
 * "A register-tiled matmul"). Define before including:
 *
 *   TK_MMT_NAME       the kernel's name
 *   TK_MMT_BM, _BN    the cube's block of out: BM rows x BN columns (multiples of 8 x TM/4, 8 x TN/4)
 *   TK_MMT_BK         channels staged per step (a multiple of 4)
 *   TK_MMT_TM, _TN    each unit's block of out: TM x TN, each 4 or 8
 *
 * The cube has (BM / TM) x (BN / TN) units. A unit's rows are 4 ty + i and,
 * for TM = 8, BM / 2 + 4 ty + i; its columns 4 tx + j and, for TN = 8,
 * BN / 2 + 4 tx + j (ty = unit / (BN / TN), tx = unit % (BN / TN)): the units
 * of a plane read consecutive lines of the staged tiles (no bank conflicts).
 *
 * out (m x n) = inp (m x k) . weight (n x k)^T + bias (n) (llm.c's
 * matmul_forward; weight rows are output channels). Each step stages BK
 * channels of inp's and weight's rows into shared memory as lines transposed
 * (4 rows of one channel per line: a unit turns 4 x 4 blocks), then every
 * unit multiplies its block in registers. The tiles are double-buffered: a
 * step fetches the next step's blocks into a per-unit variable, multiplies
 * from this step's tiles, then stages what it fetched into the other tiles:
 * one barrier a step, the loads' latency hidden behind the multiply. Rows and columns past m and n, channels past k are zeros;
 * k % 4 == 0.
 *
 * Split over k: the cube count's z (CUBE_COUNT_Z = s) splits k into s runs of
 * whole steps; with s = 1 the cube stores acc + bias; with s > 1 every cube
 * atomically adds its partial sums into out, which must hold the bias before
 * the launch (tk_matmul_bias_rows), so the order of the s additions is
 * unspecified (the sum is within float rounding of the one-pass result).
 *
 * Buffers: inp, weight, bias, out; scalars: m, k, n. Launch with the cube's
 * unit count, cube count (ceil(n / BN), ceil(m / BM), s).
 */
#if !defined(TK_MMT_NAME) || !defined(TK_MMT_BM) || !defined(TK_MMT_BN) || !defined(TK_MMT_BK) || \
    !defined(TK_MMT_TM) || !defined(TK_MMT_TN)
#error "define TK_MMT_NAME, TK_MMT_BM, TK_MMT_BN, TK_MMT_BK, TK_MMT_TM and TK_MMT_TN first"
#endif

#define TK_MMT_GX_ (TK_MMT_BN / TK_MMT_TN) /* units along a row of out */
#define TK_MMT_UNITS_ ((TK_MMT_BM / TK_MMT_TM) * TK_MMT_GX_)
#define TK_MMT_AROW4_ (TK_MMT_BM / 4 + TK_MM_PAD) /* lines per staged channel of inp */
#define TK_MMT_WROW4_ (TK_MMT_BN / 4 + TK_MM_PAD)
#define TK_MMT_KQ_ (TK_MMT_BK / 4)                 /* 4 x 4 blocks along a step's channels */
#define TK_MMT_NA_ ((TK_MMT_BM / 4) * TK_MMT_KQ_)  /* blocks of inp per step */
#define TK_MMT_NB_ (TK_MMT_NA_ + (TK_MMT_BN / 4) * TK_MMT_KQ_) /* of inp and weight */
#define TK_MMT_FPU_ ((TK_MMT_NB_ + TK_MMT_UNITS_ - 1) / TK_MMT_UNITS_) /* blocks per unit */

#define TK_MMT_CAT2_(a, b) a##b
#define TK_MMT_CAT_(a, b) TK_MMT_CAT2_(a, b)
/* The unit's fetched blocks, transposed, into tile `buf` (0 or 1). */
#define TK_MMT_STAGE_(buf)                                                                   \
  do {                                                                                       \
    const uint32_t ab_ = (buf) * (TK_MMT_BK * TK_MMT_AROW4_);                                \
    const uint32_t wb_ = (buf) * (TK_MMT_BK * TK_MMT_WROW4_);                                \
    uint32_t f_, i_, e_;                                                                     \
    TK_UNROLL                                                                                \
    for (f_ = 0; f_ < TK_MMT_FPU_; f_++) {                                                   \
      const uint32_t b_ = (uint32_t)UNIT_POS + f_ * TK_MMT_UNITS_;                           \
      const int isa_ = b_ < TK_MMT_NA_;                                                      \
      const uint32_t bb_ = isa_ ? b_ : b_ - TK_MMT_NA_;                                      \
      const uint32_t rq_ = bb_ / TK_MMT_KQ_, kq_ = bb_ % TK_MMT_KQ_;                         \
      if (b_ >= TK_MMT_NB_) break;                                                           \
      TK_UNROLL                                                                              \
      for (e_ = 0; e_ < 4; e_++) {                                                           \
        cubert_line_f32x4_t o_;                                                              \
        TK_UNROLL                                                                            \
        for (i_ = 0; i_ < 4; i_++) o_.v[i_] = CUBERT_UNIT(st).r[f_][i_].v[e_];               \
        if (isa_)                                                                            \
          CUBERT_STORE(as, ab_ + (4u * kq_ + e_) * TK_MMT_AROW4_ + rq_, o_);                 \
        else                                                                                 \
          CUBERT_STORE(ws, wb_ + (4u * kq_ + e_) * TK_MMT_WROW4_ + rq_, o_);                 \
      }                                                                                      \
    }                                                                                        \
  } while (0)

#define TK_MMT_KERNEL_(name) CUBERT_KERNEL(name) /* expands TK_MMT_NAME first */
#define TK_MMT_ACC_T_ TK_MMT_CAT_(TK_MMT_NAME, _acc_t)
#define TK_MMT_STAGE_T_ TK_MMT_CAT_(TK_MMT_NAME, _stage_t)

typedef struct {
  float v[TK_MMT_TM][TK_MMT_TN];
} TK_MMT_ACC_T_;
typedef struct {
  cubert_line_f32x4_t r[TK_MMT_FPU_][4];
} TK_MMT_STAGE_T_;

/* The unit's blocks of the step at channel tt into CUBERT_UNIT(st); zeros
 * outside the matrices. */
#define TK_MMT_FETCH_(tt)                                                                    \
  do {                                                                                       \
    uint32_t f_, i_, e_;                                                                     \
    TK_UNROLL                                                                                \
    for (f_ = 0; f_ < TK_MMT_FPU_; f_++) {                                                   \
      const uint32_t b_ = (uint32_t)UNIT_POS + f_ * TK_MMT_UNITS_;                           \
      const int isa_ = b_ < TK_MMT_NA_;                                                      \
      const uint32_t bb_ = isa_ ? b_ : b_ - TK_MMT_NA_;                                      \
      const uint32_t kl_ = (uint32_t)(tt) / 4u + bb_ % TK_MMT_KQ_;                           \
      const uint64_t base_ = (isa_ ? row0 : col0) + 4u * (bb_ / TK_MMT_KQ_);                 \
      const uint64_t limit_ = isa_ ? m : n;                                                  \
      if (b_ >= TK_MMT_NB_) break;                                                           \
      TK_UNROLL                                                                              \
      for (i_ = 0; i_ < 4; i_++) {                                                           \
        const uint64_t row_ = base_ + i_;                                                    \
        if (full || (row_ < limit_ && kl_ < k4)) {                                           \
          CUBERT_UNIT(st).r[f_][i_] =                                                        \
              isa_ ? CUBERT_LOAD(inp, row_ * k4 + kl_) : CUBERT_LOAD(weight, row_ * k4 + kl_); \
        } else {                                                                             \
          TK_UNROLL                                                                          \
          for (e_ = 0; e_ < 4; e_++) CUBERT_UNIT(st).r[f_][i_].v[e_] = 0.0f;                 \
        }                                                                                    \
      }                                                                                      \
    }                                                                                        \
  } while (0)

TK_MMT_KERNEL_(TK_MMT_NAME) {
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, inp, 0);
  CUBERT_BUFFER_LINES(const cubert_line_f32x4_t, weight, 1);
  CUBERT_BUFFER(const float, bias, 2);
  CUBERT_BUFFER(float, out, 3);
  CUBERT_SCALAR_U32(m, 0);
  CUBERT_SCALAR_U32(k, 1);
  CUBERT_SCALAR_U32(n, 2);
  CUBERT_SHARED(cubert_line_f32x4_t, as, 2 * TK_MMT_BK * TK_MMT_AROW4_); /* two steps' tiles */
  CUBERT_SHARED(cubert_line_f32x4_t, ws, 2 * TK_MMT_BK * TK_MMT_WROW4_);
  CUBERT_UNIT_VAR(TK_MMT_ACC_T_, acc);
  CUBERT_UNIT_VAR(TK_MMT_STAGE_T_, st);
  const uint32_t k4 = k / 4u, splits = (uint32_t)CUBE_COUNT_Z;
  const uint32_t steps = (k + TK_MMT_BK - 1u) / TK_MMT_BK;
  const uint32_t per_split = (steps + splits - 1u) / splits;
  const uint32_t t_begin = (uint32_t)CUBE_POS_Z * per_split * TK_MMT_BK;
  const uint32_t t_end_ = t_begin + per_split * TK_MMT_BK, t_end = t_end_ < k ? t_end_ : k;
  const uint64_t row0 = (uint64_t)CUBE_POS_Y * TK_MMT_BM, col0 = (uint64_t)CUBE_POS_X * TK_MMT_BN;
  const int full = row0 + TK_MMT_BM <= m && col0 + TK_MMT_BN <= n && k % TK_MMT_BK == 0;
  uint32_t t;
  CUBERT_CUBE_BOUND(inp, (uint64_t)m * k4);
  CUBERT_CUBE_BOUND(weight, (uint64_t)n * k4);
  CUBERT_CUBE_BOUND(bias, n);
  CUBERT_CUBE_BOUND(out, (uint64_t)m * n);
  CUBERT_CUBE_BOUNDS_DONE;
  CUBERT_PHASE { /* zero the block; the first step into tile 0 */
    uint32_t i, j;
    if (UNIT_POS >= TK_MMT_UNITS_) CUBERT_UNIT_DONE;
    TK_UNROLL
    for (i = 0; i < TK_MMT_TM; i++) {
      TK_UNROLL
      for (j = 0; j < TK_MMT_TN; j++) CUBERT_UNIT(acc).v[i][j] = 0.0f;
    }
    if (t_begin < t_end) {
      TK_MMT_FETCH_(t_begin);
      TK_MMT_STAGE_(0u);
    }
  }
  /* One phase a step: fetch the next step's blocks (into registers), multiply
   * the unit's block from this step's tiles, then stage the fetched blocks
   * into the other tiles (read by the step after the barrier): one barrier a
   * step, the global loads' latency hidden behind the multiply. */
  for (t = t_begin; t < t_end; t += TK_MMT_BK) {
    CUBERT_PHASE {
      const uint32_t tx = (uint32_t)UNIT_POS % TK_MMT_GX_, ty = (uint32_t)UNIT_POS / TK_MMT_GX_;
      const uint32_t cur = ((t - t_begin) / TK_MMT_BK) & 1u, more = t + TK_MMT_BK < t_end;
      const uint32_t abase = cur * (TK_MMT_BK * TK_MMT_AROW4_), wbase = cur * (TK_MMT_BK * TK_MMT_WROW4_);
      TK_MMT_ACC_T_ r;
      uint32_t kk, i, j, g, h;
      if (UNIT_POS >= TK_MMT_UNITS_) CUBERT_UNIT_DONE;
      if (more) TK_MMT_FETCH_(t + TK_MMT_BK);
      r = CUBERT_UNIT(acc);
      for (kk = 0; kk < TK_MMT_BK; kk++) {
        cubert_line_f32x4_t a[TK_MMT_TM / 4], b[TK_MMT_TN / 4];
        TK_UNROLL
        for (g = 0; g < TK_MMT_TM / 4; g++)
          a[g] = CUBERT_LOAD(as, abase + kk * TK_MMT_AROW4_ + g * (TK_MMT_BM / 8) + ty);
        TK_UNROLL
        for (h = 0; h < TK_MMT_TN / 4; h++)
          b[h] = CUBERT_LOAD(ws, wbase + kk * TK_MMT_WROW4_ + h * (TK_MMT_BN / 8) + tx);
        TK_UNROLL
        for (i = 0; i < TK_MMT_TM; i++) {
          TK_UNROLL
          for (j = 0; j < TK_MMT_TN; j++) r.v[i][j] += a[i / 4].v[i % 4] * b[j / 4].v[j % 4];
        }
      }
      CUBERT_UNIT(acc) = r;
      if (more) TK_MMT_STAGE_(cur ^ 1u);
    }
  }
  CUBERT_PHASE { /* out: acc + bias (one run over k), or acc added to out (split) */
    const uint32_t tx = (uint32_t)UNIT_POS % TK_MMT_GX_, ty = (uint32_t)UNIT_POS / TK_MMT_GX_;
    uint32_t i, j;
    if (UNIT_POS >= TK_MMT_UNITS_) CUBERT_UNIT_DONE;
    TK_UNROLL
    for (i = 0; i < TK_MMT_TM; i++) {
      const uint64_t row = row0 + (i / 4u) * (TK_MMT_BM / 2) + 4u * ty + i % 4u;
      TK_UNROLL
      for (j = 0; j < TK_MMT_TN; j++) {
        const uint64_t col = col0 + (j / 4u) * (TK_MMT_BN / 2) + 4u * tx + j % 4u;
        if (!full && (row >= m || col >= n)) continue;
        if (splits == 1u)
          CUBERT_STORE(out, row * n + col, CUBERT_UNIT(acc).v[i][j] + CUBERT_LOAD(bias, col));
        else
          (void)CUBERT_ATOMIC_ADD(out, row * n + col, CUBERT_UNIT(acc).v[i][j]);
      }
    }
  }
}

#undef TK_MMT_FETCH_
#undef TK_MMT_STAGE_
#undef TK_MMT_ACC_T_
#undef TK_MMT_KERNEL_
#undef TK_MMT_STAGE_T_
#undef TK_MMT_CAT_
#undef TK_MMT_CAT2_
#undef TK_MMT_FPU_
#undef TK_MMT_NB_
#undef TK_MMT_NA_
#undef TK_MMT_KQ_
#undef TK_MMT_WROW4_
#undef TK_MMT_AROW4_
#undef TK_MMT_UNITS_
#undef TK_MMT_GX_
#undef TK_MMT_NAME
#undef TK_MMT_BM
#undef TK_MMT_BN
#undef TK_MMT_BK
#undef TK_MMT_TM
#undef TK_MMT_TN

/* SPDX-License-Identifier: MIT */
/*
 * examples/transformer/transformer_ref.h: the plain C reference of the
 * forward layers (llm.c's train_gpt2.c forward functions, same loops, same
 * arguments), what examples/transformer/transformer_kernels.h is checked and
 * measured against. Hosted C99 (expf, tanhf, sqrtf).
 *
 * The header has no include guard on purpose: it is included once per
 * flavour, named by TF_REF(name) (default tf_ref_##name), with OpenMP
 * `parallel for` on each layer's outer loop when TF_REF_OPENMP is 1 and the
 * compiler has OpenMP (_OPENMP; llm.c parallelizes matmul, attention and
 * softmax; here every layer is, the stronger peer). bench/bench_transformer.c
 * includes it twice: single-threaded (tf_ref_*) and OpenMP (tf_omp_*).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifndef TF_FN_
#if defined(__GNUC__) || defined(__clang__)
#define TF_FN_ static __attribute__((unused))
#else
#define TF_FN_ static
#endif
#endif
#ifndef TF_REF
#define TF_REF(name) tf_ref_##name
#endif
#ifndef TF_REF_OPENMP
#define TF_REF_OPENMP 0
#endif
#undef TF_REF_PRAGMA_
#undef TF_REF_PRAGMA2_
#undef TF_REF_PRAGMA3_
#if TF_REF_OPENMP && defined(_OPENMP)
#define TF_REF_PRAGMA_ _Pragma("omp parallel for")
#define TF_REF_PRAGMA2_ _Pragma("omp parallel for collapse(2)")
#define TF_REF_PRAGMA3_ _Pragma("omp parallel for collapse(3)")
#else
#define TF_REF_PRAGMA_
#define TF_REF_PRAGMA2_
#define TF_REF_PRAGMA3_
#endif

#ifndef TF_GELU_SCALING_FACTOR
#define TF_GELU_SCALING_FACTOR 0.7978845608028654f /* sqrtf(2.0f / M_PI) */
#endif

/* out (B,T,C) = wte[inp[b,t]] + wpe[t]. */
TF_FN_ void TF_REF(encoder)(float *out, const int32_t *inp, const float *wte, const float *wpe,
                            int B, int T, int C) {
  int b, t;
  TF_REF_PRAGMA2_
  for (b = 0; b < B; b++) {
    for (t = 0; t < T; t++) {
      float *out_bt = out + (size_t)b * T * C + (size_t)t * C;
      const float *wte_ix = wte + (size_t)inp[b * T + t] * C, *wpe_t = wpe + (size_t)t * C;
      int i;
      for (i = 0; i < C; i++) out_bt[i] = wte_ix[i] + wpe_t[i];
    }
  }
}

/* out = (x - mean) * rstd * weight + bias per row of C; mean, rstd (B,T). */
TF_FN_ void TF_REF(layernorm)(float *out, float *mean, float *rstd, const float *inp,
                              const float *weight, const float *bias, int B, int T, int C) {
  const float eps = 1e-5f;
  int b, t;
  TF_REF_PRAGMA2_
  for (b = 0; b < B; b++) {
    for (t = 0; t < T; t++) {
      const float *x = inp + (size_t)b * T * C + (size_t)t * C;
      float *out_bt = out + (size_t)b * T * C + (size_t)t * C;
      float m = 0.0f, v = 0.0f, s;
      int i;
      for (i = 0; i < C; i++) m += x[i];
      m = m / C;
      for (i = 0; i < C; i++) {
        float xshift = x[i] - m;
        v += xshift * xshift;
      }
      v = v / C;
      s = 1.0f / sqrtf(v + eps);
      for (i = 0; i < C; i++) out_bt[i] = (s * (x[i] - m)) * weight[i] + bias[i];
      mean[b * T + t] = m;
      rstd[b * T + t] = s;
    }
  }
}

/* out (B*T, OC) = inp (B*T, C) . weight (OC, C)^T + bias (OC): llm.c's
 * matmul_forward (8 rows share each weight load; the naive loop when B*T is
 * not a multiple of 8). */
TF_FN_ void TF_REF(matmul)(float *out, const float *inp, const float *weight, const float *bias,
                           int B, int T, int C, int OC) {
  enum { UNROLL = 8 };
  int obt;
  if ((B * T) % UNROLL != 0) {
    int bt;
    TF_REF_PRAGMA_
    for (bt = 0; bt < B * T; bt++) {
      int o;
      for (o = 0; o < OC; o++) {
        float val = bias ? bias[o] : 0.0f;
        int i;
        for (i = 0; i < C; i++) val += inp[(size_t)bt * C + i] * weight[(size_t)o * C + i];
        out[(size_t)bt * OC + o] = val;
      }
    }
    return;
  }
  TF_REF_PRAGMA_
  for (obt = 0; obt < B * T; obt += UNROLL) {
    int o;
    for (o = 0; o < OC; o++) {
      float result[UNROLL];
      int ibt, i;
      for (ibt = 0; ibt < UNROLL; ibt++) result[ibt] = bias ? bias[o] : 0.0f;
      for (i = 0; i < C; i++) {
        float w = weight[i + (size_t)o * C];
        for (ibt = 0; ibt < UNROLL; ibt++) result[ibt] += inp[(size_t)(obt + ibt) * C + i] * w;
      }
      for (ibt = 0; ibt < UNROLL; ibt++) out[(size_t)(obt + ibt) * OC + o] = result[ibt];
    }
  }
}

/* Causal attention: inp (B,T,3C) = q, k, v; preatt, att (B,NH,T,T); out (B,T,C). */
TF_FN_ void TF_REF(attention)(float *out, float *preatt, float *att, const float *inp, int B,
                              int T, int C, int NH) {
  const int C3 = C * 3, hs = C / NH;
  const float scale = 1.0f / sqrtf((float)hs);
  int b, t, h;
  TF_REF_PRAGMA3_
  for (b = 0; b < B; b++) {
    for (t = 0; t < T; t++) {
      for (h = 0; h < NH; h++) {
        const float *query_t = inp + (size_t)b * T * C3 + (size_t)t * C3 + h * hs;
        float *preatt_bth = preatt + (size_t)b * NH * T * T + (size_t)h * T * T + (size_t)t * T;
        float *att_bth = att + (size_t)b * NH * T * T + (size_t)h * T * T + (size_t)t * T;
        float *out_bth = out + (size_t)b * T * C + (size_t)t * C + h * hs;
        float maxval = -10000.0f, expsum = 0.0f, expsum_inv;
        int t2, i;
        for (t2 = 0; t2 <= t; t2++) {
          const float *key_t2 = inp + (size_t)b * T * C3 + (size_t)t2 * C3 + h * hs + C;
          float val = 0.0f;
          for (i = 0; i < hs; i++) val += query_t[i] * key_t2[i];
          val *= scale;
          if (val > maxval) maxval = val;
          preatt_bth[t2] = val;
        }
        for (t2 = 0; t2 <= t; t2++) {
          float expv = expf(preatt_bth[t2] - maxval);
          expsum += expv;
          att_bth[t2] = expv;
        }
        expsum_inv = expsum == 0.0f ? 0.0f : 1.0f / expsum;
        for (t2 = 0; t2 < T; t2++) att_bth[t2] = t2 <= t ? att_bth[t2] * expsum_inv : 0.0f;
        for (i = 0; i < hs; i++) out_bth[i] = 0.0f;
        for (t2 = 0; t2 <= t; t2++) {
          const float *value_t2 = inp + (size_t)b * T * C3 + (size_t)t2 * C3 + h * hs + C * 2;
          const float a = att_bth[t2];
          for (i = 0; i < hs; i++) out_bth[i] += a * value_t2[i];
        }
      }
    }
  }
}

/* out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
TF_FN_ void TF_REF(gelu)(float *out, const float *inp, int N) {
  int i;
  TF_REF_PRAGMA_
  for (i = 0; i < N; i++) {
    float x = inp[i], cube = 0.044715f * x * x * x;
    out[i] = 0.5f * x * (1.0f + tanhf(TF_GELU_SCALING_FACTOR * (x + cube)));
  }
}

/* out = inp1 + inp2. */
TF_FN_ void TF_REF(residual)(float *out, const float *inp1, const float *inp2, int N) {
  int i;
  TF_REF_PRAGMA_
  for (i = 0; i < N; i++) out[i] = inp1[i] + inp2[i];
}

/* probs (B,T,Vp) = softmax over the first V of each row of logits; 0 past V. */
TF_FN_ void TF_REF(softmax)(float *probs, const float *logits, int B, int T, int V, int Vp) {
  int b, t;
  TF_REF_PRAGMA2_
  for (b = 0; b < B; b++) {
    for (t = 0; t < T; t++) {
      const float *logits_bt = logits + (size_t)b * T * Vp + (size_t)t * Vp;
      float *probs_bt = probs + (size_t)b * T * Vp + (size_t)t * Vp;
      float maxval = -10000.0f, sum = 0.0f;
      int i;
      for (i = 0; i < V; i++)
        if (logits_bt[i] > maxval) maxval = logits_bt[i];
      for (i = 0; i < V; i++) {
        probs_bt[i] = expf(logits_bt[i] - maxval);
        sum += probs_bt[i];
      }
      for (i = 0; i < V; i++) probs_bt[i] /= sum;
      for (i = V; i < Vp; i++) probs_bt[i] = 0.0f;
    }
  }
}

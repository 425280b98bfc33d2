/* SPDX-License-Identifier: MIT */
/*
 * examples/transformer/transformer_host.h: the host side of the transformer
 * kernels (transformer_kernels.h): the launch of each layer through the
 * client, the cube shape each kind of device gets (a plan), and a harness
 * the example program, the tests and the benchmarks share: the inputs of
 * every layer at one shape, on the host and on a device, each layer's launch,
 * its plain C reference (transformer_ref.h) and the comparison.
 *
 * Hosted C99. Every function returns the first failing status (and fills
 * err), or OK. Not thread-safe: one harness per thread.
 */
#ifndef CUBERT_EXAMPLES_TRANSFORMER_HOST_H
#define CUBERT_EXAMPLES_TRANSFORMER_HOST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/inline.h"
#include "cubert/record.h"
#include "transformer_kernels.h"

#if defined(__GNUC__) || defined(__clang__)
#define TF_FN_ static __attribute__((unused))
#else
#define TF_FN_ static
#endif
#include "transformer_ref.h"

/* ---- plans: the cube size of each layer ------------------------------------------------ */

/* Units per cube of each kernel (the matmul's are its tile's), and
 * the lines per cube of the elementwise kernels. */
/* The matmul's tiles (tf_mm_tiles, below). */
enum {
  TF_MM_64X64,
  TF_MM_128X128,
  TF_MM_128X64,
  TF_MM_64X64S,
  TF_MM_32X64,
  TF_MM_64X64K32,
  TF_MM_64X128,
  TF_MM_128X64T84,
  TF_MM_TILES
};
typedef struct tf_plan_t {
  const char *name;
  uint32_t encoder, layernorm, elementwise, per_cube, attention, softmax;
  uint32_t softmax_online; /* tk_softmax's algorithm: 2 online with the row in shared memory
                              (GPU), 1 online, 0 three passes (CPU) */
  uint32_t attention_online; /* tk_attention's: 1 online (GPU), 0 transposed keys (CPU) */
  uint32_t unchecked; /* 1: launch_unchecked (a GPU: no bounds test per access); 0: CHECKED,
                         whose full cubes run unchecked on the CPU (declared cube bounds) */
  uint32_t matmul_tile; /* the matmul's tile (TF_MM_*) unless tf_matmul_pick picks by shape */
  uint32_t attention_per_cube; /* > 0: tk_attention_planes, this many queries a cube (`attention`
                                  units); 0: tk_attention */
  uint32_t matmul_waves; /* > 0: split k for about this many matmul cubes per multiprocessor */
  uint32_t matmul_tile_large; /* the tile of matmuls with many cubes (TF_MM_TILES: none) */
} tf_plan_t;

/* The CPU: one unit per row walks it as a plain loop (vectorized); the
 * elementwise kernels take 2048 lines a cube; attention: a cube per
 * (batch, head), a unit per query. */
TF_FN_ tf_plan_t tf_plan_cpu(void) {
  tf_plan_t p = {"cpu", 1, 1, 1, 2048, 64, 1, 0, 0, 0, TF_MM_64X64, 0, 0, TF_MM_TILES};
  return p;
}
/* A GPU: a unit per line (coalesced), large cubes for the long rows, the
 * online softmax (row in shared memory) and attention, unchecked launches. */
TF_FN_ tf_plan_t tf_plan_gpu(void) {
  tf_plan_t p = {"gpu", 192, 192, 256, 256, 256, 1024, 2, 1, 1, TF_MM_64X64, 8, 3, TF_MM_128X64};
  return p;
}
/* Odd sizes everywhere (the tests: partial planes, units without work). */
TF_FN_ tf_plan_t tf_plan_odd(void) {
  tf_plan_t p = {"odd", 37, 37, 37, 50, 5, 37, 0, 0, 0, TF_MM_32X64, 3, 5, TF_MM_128X128};
  return p;
}
/* The GPU plan's other ways: the online softmax without shared memory, 16-unit cubes. */
TF_FN_ tf_plan_t tf_plan_gpu_online(void) {
  tf_plan_t p = {"gpu-online", 64, 96, 128, 512, 16, 256, 1, 1, 0, TF_MM_64X128, 0, 0, TF_MM_TILES};
  return p;
}
/* The plan for `client`'s device: the GPU plan on a CUDA device, else the CPU one. */
TF_FN_ tf_plan_t tf_plan_for(cubert_client_t *client) {
  return cubert_client_device(client).type_id == CUBERT_CPU_DEVICE_TYPE ||
                 cubert_client_device(client).type_id == CUBERT_INLINE_DEVICE_TYPE
             ? tf_plan_cpu()
             : tf_plan_gpu();
}

/* ---- launches ------------------------------------------------------------------------------ */

TF_FN_ uint32_t tf_ceil_div(uint64_t a, uint64_t b) { return (uint32_t)((a + b - 1u) / b); }

/* CHECKED (cubert_client_launch) unless the plan says unchecked
 * (cubert_client_launch_unchecked: UNCHECKED on a device whose bounds-check
 * mode is AUTO; a VALIDATE or RACECHECK device still checks it). */
TF_FN_ cubert_status_t tf_launch_(cubert_client_t *c, const tf_plan_t *p, const cubert_kernel_t *k,
                                  uint32_t cx, uint32_t cy, uint32_t cz, uint32_t units,
                                  cubert_launch_arguments_t *a, cubert_error_t *e) {
  cubert_cube_count_t count = cubert_cube_count_new_3d(cx, cy, cz);
  cubert_status_t st = cubert_launch_arguments_set_cube_dim(a, units, 1, 1);
  if (st != CUBERT_STATUS_OK) return st;
  if (p->unchecked) return cubert_client_launch_unchecked(c, k, &count, a, e);
  return cubert_client_launch(c, k, &count, a, e);
}

/* out (rows, C) = wte[tokens] + wpe[t]. */
TF_FN_ cubert_status_t tf_encoder(cubert_client_t *c, const tf_plan_t *p, const cubert_handle_t *out,
                                  const cubert_handle_t *tokens, const cubert_handle_t *wte,
                                  const cubert_handle_t *wpe, uint32_t B, uint32_t T, uint32_t C,
                                  cubert_error_t *e) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  (void)cubert_launch_arguments_set_buffer(&a, 0, tokens);
  (void)cubert_launch_arguments_set_buffer(&a, 1, wte);
  (void)cubert_launch_arguments_set_buffer(&a, 2, wpe);
  (void)cubert_launch_arguments_set_buffer(&a, 3, out);
  (void)cubert_launch_arguments_set_u32(&a, 0, T);
  (void)cubert_launch_arguments_set_u32(&a, 1, C / 4u);
  return tf_launch_(c, p, &tk_encoder_kernel, B * T, 1, 1, p->encoder, &a, e);
}

TF_FN_ cubert_status_t tf_layernorm(cubert_client_t *c, const tf_plan_t *p, const cubert_handle_t *out,
                                    const cubert_handle_t *mean, const cubert_handle_t *rstd,
                                    const cubert_handle_t *inp, const cubert_handle_t *weight,
                                    const cubert_handle_t *bias, uint32_t rows, uint32_t C,
                                    cubert_error_t *e) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  (void)cubert_launch_arguments_set_buffer(&a, 0, inp);
  (void)cubert_launch_arguments_set_buffer(&a, 1, weight);
  (void)cubert_launch_arguments_set_buffer(&a, 2, bias);
  (void)cubert_launch_arguments_set_buffer(&a, 3, out);
  (void)cubert_launch_arguments_set_buffer(&a, 4, mean);
  (void)cubert_launch_arguments_set_buffer(&a, 5, rstd);
  (void)cubert_launch_arguments_set_u32(&a, 0, C / 4u);
  return tf_launch_(c, p, &tk_layernorm_kernel, rows, 1, 1, p->layernorm, &a, e);
}

/* The matmul's tiles (transformer_kernels.h): the kernel, its block of out
 * (bm x bn) and its units. */
typedef struct tf_mm_tile_t {
  const char *name;
  const cubert_kernel_t *kernel;
  uint32_t bm, bn, units;
} tf_mm_tile_t;
static const tf_mm_tile_t tf_mm_tiles[TF_MM_TILES] = {
    {"64x64 (4x8)", &tk_matmul_kernel, TK_MM_BM, TK_MM_BN, TK_MM_UNITS},
    {"128x128 (8x8)", &tk_matmul_128x128_kernel, 128, 128, 256},
    {"128x64 (8x8)", &tk_matmul_128x64_kernel, 128, 64, 128},
    {"64x64 (4x4)", &tk_matmul_64x64s_kernel, 64, 64, 256},
    {"32x64 (4x4)", &tk_matmul_32x64_kernel, 32, 64, 128},
    {"64x64k32 (4x8)", &tk_matmul_64x64k32_kernel, 64, 64, 128},
    {"64x128 (4x8)", &tk_matmul_64x128_kernel, 64, 128, 256},
    {"128x64 (8x4)", &tk_matmul_128x64t84_kernel, 128, 64, 256}};

/* out (m, n) = inp (m, k) . weight (n, k)^T + bias (n) with tile `tile`,
 * k split in `splits` runs (> 1: a launch of tk_matmul_bias_rows first, then
 * the split cubes add into out). */
TF_FN_ cubert_status_t tf_matmul_tiled(cubert_client_t *c, const tf_plan_t *p, uint32_t tile,
                                       uint32_t splits, const cubert_handle_t *out,
                                       const cubert_handle_t *inp, const cubert_handle_t *weight,
                                       const cubert_handle_t *bias, uint32_t m, uint32_t k,
                                       uint32_t n, cubert_error_t *e) {
  const tf_mm_tile_t *t = &tf_mm_tiles[tile < TF_MM_TILES ? tile : 0];
  cubert_launch_arguments_t a;
  if (splits > 1u) {
    cubert_status_t st;
    cubert_launch_arguments_initialize(&a);
    (void)cubert_launch_arguments_set_buffer(&a, 0, bias);
    (void)cubert_launch_arguments_set_buffer(&a, 1, out);
    (void)cubert_launch_arguments_set_u32(&a, 0, m);
    (void)cubert_launch_arguments_set_u32(&a, 1, n);
    st = tf_launch_(c, p, &tk_matmul_bias_rows_kernel, tf_ceil_div((uint64_t)m * n, 256u), 1, 1,
                    256u, &a, e);
    if (st != CUBERT_STATUS_OK) return st;
  }
  cubert_launch_arguments_initialize(&a);
  (void)cubert_launch_arguments_set_buffer(&a, 0, inp);
  (void)cubert_launch_arguments_set_buffer(&a, 1, weight);
  (void)cubert_launch_arguments_set_buffer(&a, 2, bias);
  (void)cubert_launch_arguments_set_buffer(&a, 3, out);
  (void)cubert_launch_arguments_set_u32(&a, 0, m);
  (void)cubert_launch_arguments_set_u32(&a, 1, k);
  (void)cubert_launch_arguments_set_u32(&a, 2, n);
  return tf_launch_(c, p, t->kernel, tf_ceil_div(n, t->bn), tf_ceil_div(m, t->bm), splits ? splits : 1u,
                    t->units, &a, e);
}

/* The tile and split a plan takes for an (m, k, n) matmul. Without
 * matmul_waves (the CPU): the plan's tile, one run over k. With matmul_waves
 * (a GPU), by the number of the plan tile's cubes against the device's
 * multiprocessors (SMs):
 *   - at least 4 x matmul_waves cubes per SM (the 50,304-wide head): the
 *     plan's large tile (more work per unit), one run over k;
 *   - else the plan's tile with k split so that the cubes fill about
 *     matmul_waves cubes per SM (at most 8 runs of at least 4 steps each):
 *     a matmul whose out has few blocks (m = 256 rows: the block's
 *     projections) gets the cubes its device needs.
 * Measured on an H200 (docs/benchmarks.md, "The transformer's layers":
 * bench_transformer --tune prints every tile and split). */
TF_FN_ void tf_matmul_pick(cubert_client_t *c, const tf_plan_t *p, uint32_t m, uint32_t k, uint32_t n,
                           uint32_t *tile, uint32_t *splits) {
  const tf_mm_tile_t *t = &tf_mm_tiles[p->matmul_tile < TF_MM_TILES ? p->matmul_tile : 0];
  *tile = p->matmul_tile;
  *splits = 1u;
  if (p->matmul_waves) {
    cubert_device_properties_t props;
    const uint64_t cubes = (uint64_t)tf_ceil_div(n, t->bn) * tf_ceil_div(m, t->bm);
    const uint32_t steps = tf_ceil_div(k, 16u);
    uint64_t target, s;
    cubert_client_properties(c, &props);
    target = (uint64_t)p->matmul_waves *
             (props.hardware.num_streaming_multiprocessors ? props.hardware.num_streaming_multiprocessors : 1u);
    if (p->matmul_tile_large < TF_MM_TILES && cubes >= 4u * target) {
      *tile = p->matmul_tile_large;
      return;
    }
    s = cubes ? (target + cubes / 2u) / cubes : 1u;
    if (s > 8u) s = 8u;
    while (s > 1u && steps / s < 4u) s--;
    *splits = s ? (uint32_t)s : 1u;
  }
}

/* out (m, n) = inp (m, k) . weight (n, k)^T + bias (n): the plan's tile. */
TF_FN_ cubert_status_t tf_matmul(cubert_client_t *c, const tf_plan_t *p, const cubert_handle_t *out,
                                 const cubert_handle_t *inp, const cubert_handle_t *weight,
                                 const cubert_handle_t *bias, uint32_t m, uint32_t k, uint32_t n,
                                 cubert_error_t *e) {
  uint32_t tile, splits;
  tf_matmul_pick(c, p, m, k, n, &tile, &splits);
  return tf_matmul_tiled(c, p, tile, splits, out, inp, weight, bias, m, k, n, e);
}

TF_FN_ cubert_status_t tf_attention(cubert_client_t *c, const tf_plan_t *p, const cubert_handle_t *out,
                                    const cubert_handle_t *qkv, uint32_t B, uint32_t T, uint32_t C,
                                    uint32_t NH, cubert_error_t *e) {
  cubert_launch_arguments_t a;
  uint32_t units = p->attention < T ? p->attention : T;
  cubert_launch_arguments_initialize(&a);
  if (p->attention_per_cube) { /* a plane per query */
    (void)cubert_launch_arguments_set_buffer(&a, 0, qkv);
    (void)cubert_launch_arguments_set_buffer(&a, 1, out);
    (void)cubert_launch_arguments_set_u32(&a, 0, T);
    (void)cubert_launch_arguments_set_u32(&a, 1, C);
    (void)cubert_launch_arguments_set_u32(&a, 2, p->attention_per_cube);
    return tf_launch_(c, p, &tk_attention_planes_kernel, tf_ceil_div(T, p->attention_per_cube), NH, B,
                      p->attention, &a, e);
  }
  (void)cubert_launch_arguments_set_buffer(&a, 0, qkv);
  (void)cubert_launch_arguments_set_buffer(&a, 1, out);
  (void)cubert_launch_arguments_set_u32(&a, 0, T);
  (void)cubert_launch_arguments_set_u32(&a, 1, C);
  (void)cubert_launch_arguments_set_u32(&a, 2, p->attention_online);
  return tf_launch_(c, p, &tk_attention_kernel, tf_ceil_div(T, units), NH, B, units, &a, e);
}

TF_FN_ cubert_status_t tf_gelu(cubert_client_t *c, const tf_plan_t *p, const cubert_handle_t *out,
                               const cubert_handle_t *in, uint64_t n, cubert_error_t *e) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  (void)cubert_launch_arguments_set_buffer(&a, 0, in);
  (void)cubert_launch_arguments_set_buffer(&a, 1, out);
  (void)cubert_launch_arguments_set_u32(&a, 0, p->per_cube);
  return tf_launch_(c, p, &tk_gelu_kernel, tf_ceil_div(n / 4u, p->per_cube), 1, 1, p->elementwise,
                    &a, e);
}

TF_FN_ cubert_status_t tf_residual(cubert_client_t *c, const tf_plan_t *p, const cubert_handle_t *out,
                                   const cubert_handle_t *x, const cubert_handle_t *y, uint64_t n,
                                   cubert_error_t *e) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  (void)cubert_launch_arguments_set_buffer(&a, 0, x);
  (void)cubert_launch_arguments_set_buffer(&a, 1, y);
  (void)cubert_launch_arguments_set_buffer(&a, 2, out);
  (void)cubert_launch_arguments_set_u32(&a, 0, p->per_cube);
  return tf_launch_(c, p, &tk_residual_kernel, tf_ceil_div(n / 4u, p->per_cube), 1, 1, p->elementwise,
                    &a, e);
}

TF_FN_ cubert_status_t tf_softmax(cubert_client_t *c, const tf_plan_t *p, const cubert_handle_t *probs,
                                  const cubert_handle_t *logits, uint32_t rows, uint32_t V,
                                  uint32_t Vp, cubert_error_t *e) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  (void)cubert_launch_arguments_set_buffer(&a, 0, logits);
  (void)cubert_launch_arguments_set_buffer(&a, 1, probs);
  (void)cubert_launch_arguments_set_u32(&a, 0, Vp / 4u);
  (void)cubert_launch_arguments_set_u32(&a, 1, V);
  (void)cubert_launch_arguments_set_u32(&a, 2, p->softmax_online);
  if (p->softmax_online == 2) { /* the row in dynamic shared memory, when the device has room */
    cubert_device_properties_t props;
    cubert_client_properties(c, &props);
    if ((uint64_t)Vp * 4u <= props.hardware.max_shared_memory_size)
      (void)cubert_launch_arguments_set_shared_memory_bytes(&a, (uint64_t)Vp * 4u);
    else
      (void)cubert_launch_arguments_set_u32(&a, 2, 1u);
  }
  return tf_launch_(c, p, &tk_softmax_kernel, rows, 1, 1, p->softmax, &a, e);
}

/* ---- the harness: every layer's inputs at one shape ------------------------------------ */

/* The layers (and the matmul's two shapes: the qkv projection, 3C wide,
 * and the language-model head, Vp wide). */
enum {
  TF_ENCODER,
  TF_LAYERNORM,
  TF_MATMUL_QKV,
  TF_ATTENTION,
  TF_GELU,
  TF_RESIDUAL,
  TF_SOFTMAX,
  TF_MATMUL_HEAD,
  TF_LAYERS
};
static const char *const tf_layer_names[TF_LAYERS] = {
    "encoder", "layernorm", "matmul qkv", "attention", "gelu", "residual", "softmax", "matmul head"};

typedef struct tf_shape_t {
  uint32_t B, T, C, NH, V, Vp;
} tf_shape_t;

/* GPT-2 small's block at B=4, T=64 (the benchmarks' shape). */
TF_FN_ tf_shape_t tf_shape_gpt2(void) {
  tf_shape_t s = {4, 64, 768, 12, 50257, 50304};
  return s;
}

/* Host arrays: inputs, then each layer's output from the device and from the reference. */
typedef struct tf_data_t {
  tf_shape_t s;
  int32_t *tokens;
  float *wte, *wpe, *x, *y, *ln_w, *ln_b, *w_qkv, *b_qkv, *qkv, *fc, *logits, *b_head;
  float *out[TF_LAYERS], *ref[TF_LAYERS];
  float *mean, *rstd, *ref_mean, *ref_rstd, *preatt, *att;
  size_t out_len[TF_LAYERS];
  /* device copies (valid after tf_data_upload) */
  cubert_client_t *client;
  cubert_handle_t h_tokens, h_wte, h_wpe, h_x, h_y, h_ln_w, h_ln_b, h_w_qkv, h_b_qkv, h_qkv, h_fc,
      h_logits, h_b_head, h_mean, h_rstd;
  cubert_handle_t h_out[TF_LAYERS];
  int uploaded;
} tf_data_t;

static uint32_t tf_rand_state_;
TF_FN_ float tf_randf_(float lo, float hi) { /* a fixed LCG: the same data everywhere */
  tf_rand_state_ = tf_rand_state_ * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)(tf_rand_state_ >> 8) * (1.0f / 16777216.0f);
}

TF_FN_ float *tf_fill_(size_t n, float lo, float hi) {
  float *p = (float *)malloc((n ? n : 1) * sizeof(float));
  size_t i;
  if (p)
    for (i = 0; i < n; i++) p[i] = tf_randf_(lo, hi);
  return p;
}

TF_FN_ void tf_data_free(tf_data_t *d);

/* Host data of shape s (C % 4 == 0, Vp % 4 == 0, C / NH == TK_HS, T <= TK_ATT_MAX_T).
 * with_head: also the head's inputs (Vp x C weights) and output. 0 on success. */
TF_FN_ int tf_data_init(tf_data_t *d, tf_shape_t s, int with_head) {
  const size_t BT = (size_t)s.B * s.T, C = s.C;
  int l;
  memset(d, 0, sizeof *d);
  d->s = s;
  if (C % 4 || s.Vp % 4 || s.NH == 0 || C / s.NH != TK_HS || C % s.NH || s.T > TK_ATT_MAX_T ||
      s.V > s.Vp)
    return -1;
  tf_rand_state_ = 12345u;
  d->tokens = (int32_t *)malloc(BT * sizeof(int32_t));
  if (d->tokens)
    for (l = 0; l < (int)BT; l++) d->tokens[l] = (int32_t)((uint32_t)l * 7919u % s.V);
  d->wte = tf_fill_((size_t)s.Vp * C, -1.0f, 1.0f); /* also the head's weight (tied) */
  d->wpe = tf_fill_((size_t)s.T * C, -1.0f, 1.0f);
  d->x = tf_fill_(BT * C, -2.0f, 3.0f);
  d->y = tf_fill_(BT * C, -1.0f, 1.0f);
  d->ln_w = tf_fill_(C, 0.5f, 1.5f);
  d->ln_b = tf_fill_(C, -0.5f, 0.5f);
  d->w_qkv = tf_fill_(3 * C * C, -0.1f, 0.1f);
  d->b_qkv = tf_fill_(3 * C, -0.5f, 0.5f);
  d->qkv = tf_fill_(BT * 3 * C, -1.0f, 1.0f);
  d->fc = tf_fill_(BT * 4 * C, -4.0f, 4.0f);
  d->logits = tf_fill_(BT * s.Vp, -6.0f, 6.0f);
  d->b_head = tf_fill_(s.Vp, -0.1f, 0.1f);
  d->mean = tf_fill_(BT, 0, 0);
  d->rstd = tf_fill_(BT, 0, 0);
  d->ref_mean = tf_fill_(BT, 0, 0);
  d->ref_rstd = tf_fill_(BT, 0, 0);
  d->preatt = tf_fill_((size_t)s.B * s.NH * s.T * s.T, 0, 0);
  d->att = tf_fill_((size_t)s.B * s.NH * s.T * s.T, 0, 0);
  d->out_len[TF_ENCODER] = BT * C;
  d->out_len[TF_LAYERNORM] = BT * C;
  d->out_len[TF_MATMUL_QKV] = BT * 3 * C;
  d->out_len[TF_ATTENTION] = BT * C;
  d->out_len[TF_GELU] = BT * 4 * C;
  d->out_len[TF_RESIDUAL] = BT * C;
  d->out_len[TF_SOFTMAX] = BT * s.Vp;
  d->out_len[TF_MATMUL_HEAD] = with_head ? BT * s.Vp : 0;
  for (l = 0; l < TF_LAYERS; l++) {
    d->out[l] = tf_fill_(d->out_len[l], 0, 0);
    d->ref[l] = tf_fill_(d->out_len[l], 0, 0);
    if (!d->out[l] || !d->ref[l]) break;
  }
  if (l < TF_LAYERS || !d->tokens || !d->wte || !d->wpe || !d->x || !d->y || !d->ln_w ||
      !d->ln_b || !d->w_qkv || !d->b_qkv || !d->qkv || !d->fc || !d->logits || !d->b_head ||
      !d->mean || !d->rstd || !d->ref_mean || !d->ref_rstd || !d->preatt || !d->att) {
    tf_data_free(d);
    return -1;
  }
  return 0;
}

/* Release the device copies (when uploaded); the host arrays stay. */
TF_FN_ void tf_data_release_device(tf_data_t *d) {
  int l;
  if (d->uploaded) {
    cubert_handle_t *hs[] = {&d->h_tokens, &d->h_wte, &d->h_wpe,  &d->h_x,     &d->h_y,
                             &d->h_ln_w,   &d->h_ln_b, &d->h_w_qkv, &d->h_b_qkv, &d->h_qkv,
                             &d->h_fc,     &d->h_logits, &d->h_b_head, &d->h_mean, &d->h_rstd};
    size_t i;
    for (i = 0; i < sizeof hs / sizeof hs[0]; i++) (void)cubert_client_handle_release(d->client, hs[i], NULL);
    for (l = 0; l < TF_LAYERS; l++)
      if (d->out_len[l]) (void)cubert_client_handle_release(d->client, &d->h_out[l], NULL);
    d->uploaded = 0;
  }
}

/* Release the device copies (when uploaded) and the host arrays. */
TF_FN_ void tf_data_free(tf_data_t *d) {
  int l;
  tf_data_release_device(d);
  free(d->tokens);
  free(d->wte);
  free(d->wpe);
  free(d->x);
  free(d->y);
  free(d->ln_w);
  free(d->ln_b);
  free(d->w_qkv);
  free(d->b_qkv);
  free(d->qkv);
  free(d->fc);
  free(d->logits);
  free(d->b_head);
  free(d->mean);
  free(d->rstd);
  free(d->ref_mean);
  free(d->ref_rstd);
  free(d->preatt);
  free(d->att);
  for (l = 0; l < TF_LAYERS; l++) {
    free(d->out[l]);
    free(d->ref[l]);
  }
  memset(d, 0, sizeof *d);
}

/* Copy the inputs to `client`'s device and make the output buffers. */
TF_FN_ cubert_status_t tf_data_upload(tf_data_t *d, cubert_client_t *client, cubert_error_t *e) {
  const tf_shape_t s = d->s;
  const size_t BT = (size_t)s.B * s.T, C = s.C, F = sizeof(float);
  cubert_status_t st = CUBERT_STATUS_OK;
  int l;
#define TF_UP_(h, ptr, bytes)                                                                \
  if (st == CUBERT_STATUS_OK) st = cubert_client_create_from_slice(client, (ptr), (bytes), &(h), e)
  d->client = client;
  TF_UP_(d->h_tokens, d->tokens, BT * sizeof(int32_t));
  TF_UP_(d->h_wte, d->wte, (size_t)s.Vp * C * F);
  TF_UP_(d->h_wpe, d->wpe, (size_t)s.T * C * F);
  TF_UP_(d->h_x, d->x, BT * C * F);
  TF_UP_(d->h_y, d->y, BT * C * F);
  TF_UP_(d->h_ln_w, d->ln_w, C * F);
  TF_UP_(d->h_ln_b, d->ln_b, C * F);
  TF_UP_(d->h_w_qkv, d->w_qkv, 3 * C * C * F);
  TF_UP_(d->h_b_qkv, d->b_qkv, 3 * C * F);
  TF_UP_(d->h_qkv, d->qkv, BT * 3 * C * F);
  TF_UP_(d->h_fc, d->fc, BT * 4 * C * F);
  TF_UP_(d->h_logits, d->logits, BT * s.Vp * F);
  TF_UP_(d->h_b_head, d->b_head, (size_t)s.Vp * F);
  TF_UP_(d->h_mean, d->mean, BT * F);
  TF_UP_(d->h_rstd, d->rstd, BT * F);
  for (l = 0; l < TF_LAYERS; l++)
    if (d->out_len[l]) TF_UP_(d->h_out[l], d->out[l], d->out_len[l] * F);
#undef TF_UP_
  if (st == CUBERT_STATUS_OK) st = cubert_client_sync(client, e);
  d->uploaded = 1; /* what was made is released by tf_data_free */
  return st;
}

/* Launch layer `l` on the uploaded data (no wait); INVALID_ARGUMENT for a layer
 * the data lack (the head without with_head). */
TF_FN_ cubert_status_t tf_layer_launch(tf_data_t *d, const tf_plan_t *p, int l, cubert_error_t *e) {
  const tf_shape_t s = d->s;
  const uint32_t BT = s.B * s.T;
  cubert_client_t *c = d->client;
  if (l < 0 || l >= TF_LAYERS || !d->out_len[l] || !d->uploaded) return CUBERT_STATUS_INVALID_ARGUMENT;
  switch (l) {
  case TF_ENCODER:
    return tf_encoder(c, p, &d->h_out[l], &d->h_tokens, &d->h_wte, &d->h_wpe, s.B, s.T, s.C, e);
  case TF_LAYERNORM:
    return tf_layernorm(c, p, &d->h_out[l], &d->h_mean, &d->h_rstd, &d->h_x, &d->h_ln_w, &d->h_ln_b,
                        BT, s.C, e);
  case TF_MATMUL_QKV:
    return tf_matmul(c, p, &d->h_out[l], &d->h_x, &d->h_w_qkv, &d->h_b_qkv, BT, s.C, 3 * s.C, e);
  case TF_ATTENTION:
    return tf_attention(c, p, &d->h_out[l], &d->h_qkv, s.B, s.T, s.C, s.NH, e);
  case TF_GELU:
    return tf_gelu(c, p, &d->h_out[l], &d->h_fc, (uint64_t)BT * 4 * s.C, e);
  case TF_RESIDUAL:
    return tf_residual(c, p, &d->h_out[l], &d->h_x, &d->h_y, (uint64_t)BT * s.C, e);
  case TF_SOFTMAX:
    return tf_softmax(c, p, &d->h_out[l], &d->h_logits, BT, s.V, s.Vp, e);
  default:
    return tf_matmul(c, p, &d->h_out[l], &d->h_x, &d->h_wte, &d->h_b_head, BT, s.C, s.Vp, e);
  }
}

/* The single-threaded reference of layer `l` into d->ref[l]. */
TF_FN_ void tf_layer_reference(tf_data_t *d, int l) {
  const tf_shape_t s = d->s;
  const int B = (int)s.B, T = (int)s.T, C = (int)s.C;
  switch (l) {
  case TF_ENCODER: tf_ref_encoder(d->ref[l], d->tokens, d->wte, d->wpe, B, T, C); break;
  case TF_LAYERNORM:
    tf_ref_layernorm(d->ref[l], d->ref_mean, d->ref_rstd, d->x, d->ln_w, d->ln_b, B, T, C);
    break;
  case TF_MATMUL_QKV: tf_ref_matmul(d->ref[l], d->x, d->w_qkv, d->b_qkv, B, T, C, 3 * C); break;
  case TF_ATTENTION: tf_ref_attention(d->ref[l], d->preatt, d->att, d->qkv, B, T, C, (int)s.NH); break;
  case TF_GELU: tf_ref_gelu(d->ref[l], d->fc, B * T * 4 * C); break;
  case TF_RESIDUAL: tf_ref_residual(d->ref[l], d->x, d->y, B * T * C); break;
  case TF_SOFTMAX: tf_ref_softmax(d->ref[l], d->logits, B, T, (int)s.V, (int)s.Vp); break;
  default: tf_ref_matmul(d->ref[l], d->x, d->wte, d->b_head, B, T, C, (int)s.Vp); break;
  }
}

/* Tolerance of layer l: |out - ref| <= atol + rtol |ref| (summation orders,
 * one-pass variance, tk_expf / tk_tanhf, FMA contraction on a GPU). */
TF_FN_ void tf_tolerance(int l, double *atol, double *rtol) {
  static const double a[TF_LAYERS] = {0, 2e-5, 2e-4, 2e-5, 2e-6, 0, 1e-9, 2e-4};
  static const double r[TF_LAYERS] = {0, 2e-5, 2e-4, 2e-4, 2e-5, 0, 2e-4, 2e-4};
  *atol = a[l];
  *rtol = r[l];
}

/* Read layer l's output back and compare it with d->ref[l] (the reference
 * must have run). Returns the mismatches; *worst: the largest
 * |out - ref| / (atol + rtol |ref|) (<= 1: within tolerance), *at its index. */
TF_FN_ size_t tf_layer_compare(tf_data_t *d, int l, double *worst, size_t *at, cubert_status_t *st,
                               cubert_error_t *e) {
  double atol, rtol, w = 0;
  size_t i, bad = 0, n = d->out_len[l];
  *st = cubert_client_read_one(d->client, &d->h_out[l], d->out[l], n * sizeof(float), e);
  *at = 0;
  if (*st != CUBERT_STATUS_OK) {
    *worst = INFINITY;
    return n ? n : 1;
  }
  tf_tolerance(l, &atol, &rtol);
  for (i = 0; i < n; i++) {
    double diff = fabs((double)d->out[l][i] - (double)d->ref[l][i]);
    double lim = atol + rtol * fabs((double)d->ref[l][i]), q = lim > 0 ? diff / lim : (diff > 0 ? INFINITY : 0);
    if (!(diff <= lim)) bad++;
    if (!(q <= w)) {
      w = q;
      *at = i;
    }
  }
  *worst = w;
  return bad;
}

/* ---- the whole block: ten launches, one sync ------------------------------------------------
 * llm.c's block forward: ln1 = layernorm(x); qkv = ln1 . Wqkv^T + b; atty = attention(qkv);
 * attproj = atty . Wproj^T + b; res2 = x + attproj; ln2 = layernorm(res2);
 * fch = ln2 . Wfc^T + b; fchg = gelu(fch); fcproj = fchg . Wfcproj^T + b;
 * out = res2 + fcproj. The inputs are the harness's (x, ln_w, ln_b, w_qkv, b_qkv) and
 * the block's own weights. */
enum { TF_B_LN1, TF_B_QKV, TF_B_ATTY, TF_B_ATTPROJ, TF_B_RES2, TF_B_LN2, TF_B_FCH, TF_B_FCHG,
       TF_B_FCPROJ, TF_B_OUT, TF_B_ACTS };
typedef struct tf_block_t {
  float *w_proj, *b_proj, *w_fc, *b_fc, *w_fcproj, *b_fcproj;
  float *act[TF_B_ACTS], *out; /* the reference's activations; the device's output */
  size_t act_len[TF_B_ACTS];
  cubert_handle_t h_w_proj, h_b_proj, h_w_fc, h_b_fc, h_w_fcproj, h_b_fcproj;
  cubert_handle_t h_act[TF_B_ACTS];
  int uploaded;
} tf_block_t;

TF_FN_ void tf_block_free(tf_block_t *k, tf_data_t *d) {
  int i;
  if (k->uploaded) {
    cubert_handle_t *hs[] = {&k->h_w_proj, &k->h_b_proj, &k->h_w_fc, &k->h_b_fc, &k->h_w_fcproj,
                             &k->h_b_fcproj};
    size_t j;
    for (j = 0; j < sizeof hs / sizeof hs[0]; j++) (void)cubert_client_handle_release(d->client, hs[j], NULL);
    for (i = 0; i < TF_B_ACTS; i++) (void)cubert_client_handle_release(d->client, &k->h_act[i], NULL);
  }
  free(k->w_proj);
  free(k->b_proj);
  free(k->w_fc);
  free(k->b_fc);
  free(k->w_fcproj);
  free(k->b_fcproj);
  free(k->out);
  for (i = 0; i < TF_B_ACTS; i++) free(k->act[i]);
  memset(k, 0, sizeof *k);
}

/* Host data of the block for d's shape. 0 on success. */
TF_FN_ int tf_block_init(tf_block_t *k, const tf_data_t *d) {
  const size_t BT = (size_t)d->s.B * d->s.T, C = d->s.C;
  static const int wide[TF_B_ACTS] = {1, 3, 1, 1, 1, 1, 4, 4, 1, 1};
  int i, ok = 1;
  memset(k, 0, sizeof *k);
  k->w_proj = tf_fill_(C * C, -0.05f, 0.05f);
  k->b_proj = tf_fill_(C, -0.1f, 0.1f);
  k->w_fc = tf_fill_(4 * C * C, -0.05f, 0.05f);
  k->b_fc = tf_fill_(4 * C, -0.1f, 0.1f);
  k->w_fcproj = tf_fill_(4 * C * C, -0.03f, 0.03f);
  k->b_fcproj = tf_fill_(C, -0.1f, 0.1f);
  k->out = tf_fill_(BT * C, 0, 0);
  for (i = 0; i < TF_B_ACTS; i++) {
    k->act_len[i] = BT * C * (size_t)wide[i];
    k->act[i] = tf_fill_(k->act_len[i], 0, 0);
    ok = ok && k->act[i];
  }
  if (!ok || !k->w_proj || !k->b_proj || !k->w_fc || !k->b_fc || !k->w_fcproj || !k->b_fcproj || !k->out) {
    tf_block_free(k, NULL);
    return -1;
  }
  return 0;
}

TF_FN_ cubert_status_t tf_block_upload(tf_block_t *k, tf_data_t *d, cubert_error_t *e) {
  const size_t C = d->s.C, F = sizeof(float);
  cubert_status_t st = CUBERT_STATUS_OK;
  int i;
#define TF_UP_(h, ptr, bytes)                                                                \
  if (st == CUBERT_STATUS_OK) st = cubert_client_create_from_slice(d->client, (ptr), (bytes), &(h), e)
  TF_UP_(k->h_w_proj, k->w_proj, C * C * F);
  TF_UP_(k->h_b_proj, k->b_proj, C * F);
  TF_UP_(k->h_w_fc, k->w_fc, 4 * C * C * F);
  TF_UP_(k->h_b_fc, k->b_fc, 4 * C * F);
  TF_UP_(k->h_w_fcproj, k->w_fcproj, 4 * C * C * F);
  TF_UP_(k->h_b_fcproj, k->b_fcproj, C * F);
  for (i = 0; i < TF_B_ACTS; i++) TF_UP_(k->h_act[i], k->act[i], k->act_len[i] * F);
#undef TF_UP_
  if (st == CUBERT_STATUS_OK) st = cubert_client_sync(d->client, e);
  k->uploaded = 1;
  return st;
}

/* The block's ten launches (no wait). */
TF_FN_ cubert_status_t tf_block_launch(tf_block_t *k, tf_data_t *d, const tf_plan_t *p, cubert_error_t *e) {
  const tf_shape_t s = d->s;
  const uint32_t BT = s.B * s.T, C = s.C;
  cubert_client_t *c = d->client;
  cubert_handle_t *a = k->h_act;
  cubert_status_t st;
#define TF_DO_(call)                                                                         \
  if ((st = (call)) != CUBERT_STATUS_OK) return st
  TF_DO_(tf_layernorm(c, p, &a[TF_B_LN1], &d->h_mean, &d->h_rstd, &d->h_x, &d->h_ln_w, &d->h_ln_b, BT, C, e));
  TF_DO_(tf_matmul(c, p, &a[TF_B_QKV], &a[TF_B_LN1], &d->h_w_qkv, &d->h_b_qkv, BT, C, 3 * C, e));
  TF_DO_(tf_attention(c, p, &a[TF_B_ATTY], &a[TF_B_QKV], s.B, s.T, C, s.NH, e));
  TF_DO_(tf_matmul(c, p, &a[TF_B_ATTPROJ], &a[TF_B_ATTY], &k->h_w_proj, &k->h_b_proj, BT, C, C, e));
  TF_DO_(tf_residual(c, p, &a[TF_B_RES2], &d->h_x, &a[TF_B_ATTPROJ], (uint64_t)BT * C, e));
  TF_DO_(tf_layernorm(c, p, &a[TF_B_LN2], &d->h_mean, &d->h_rstd, &a[TF_B_RES2], &d->h_ln_w, &d->h_ln_b, BT, C, e));
  TF_DO_(tf_matmul(c, p, &a[TF_B_FCH], &a[TF_B_LN2], &k->h_w_fc, &k->h_b_fc, BT, C, 4 * C, e));
  TF_DO_(tf_gelu(c, p, &a[TF_B_FCHG], &a[TF_B_FCH], (uint64_t)BT * 4 * C, e));
  TF_DO_(tf_matmul(c, p, &a[TF_B_FCPROJ], &a[TF_B_FCHG], &k->h_w_fcproj, &k->h_b_fcproj, BT, 4 * C, C, e));
  TF_DO_(tf_residual(c, p, &a[TF_B_OUT], &a[TF_B_RES2], &a[TF_B_FCPROJ], (uint64_t)BT * C, e));
#undef TF_DO_
  return CUBERT_STATUS_OK;
}

/* The block's ten launches recorded once (cubert/record.h, nothing runs): replay it with
 * cubert_client_replay, then a sync. *out: the caller's (cubert_recording_destroy). */
TF_FN_ cubert_status_t tf_block_record(tf_block_t *k, tf_data_t *d, const tf_plan_t *p,
                                       cubert_recording_t **out, cubert_error_t *e) {
  cubert_recording_t *rec = NULL;
  cubert_status_t st = cubert_client_record_begin(d->client, e), end;
  if (st != CUBERT_STATUS_OK) return st;
  st = tf_block_launch(k, d, p, e);
  end = cubert_client_record_end(d->client, &rec, st == CUBERT_STATUS_OK ? e : NULL);
  if (st == CUBERT_STATUS_OK) st = end;
  if (st != CUBERT_STATUS_OK) {
    if (rec) cubert_recording_destroy(rec);
    return st;
  }
  *out = rec;
  return CUBERT_STATUS_OK;
}

/* The block on the host with the single-threaded reference (into k->act). */
TF_FN_ void tf_block_reference(tf_block_t *k, tf_data_t *d) {
  const int B = (int)d->s.B, T = (int)d->s.T, C = (int)d->s.C, NH = (int)d->s.NH;
  float **a = k->act;
  tf_ref_layernorm(a[TF_B_LN1], d->ref_mean, d->ref_rstd, d->x, d->ln_w, d->ln_b, B, T, C);
  tf_ref_matmul(a[TF_B_QKV], a[TF_B_LN1], d->w_qkv, d->b_qkv, B, T, C, 3 * C);
  tf_ref_attention(a[TF_B_ATTY], d->preatt, d->att, a[TF_B_QKV], B, T, C, NH);
  tf_ref_matmul(a[TF_B_ATTPROJ], a[TF_B_ATTY], k->w_proj, k->b_proj, B, T, C, C);
  tf_ref_residual(a[TF_B_RES2], d->x, a[TF_B_ATTPROJ], B * T * C);
  tf_ref_layernorm(a[TF_B_LN2], d->ref_mean, d->ref_rstd, a[TF_B_RES2], d->ln_w, d->ln_b, B, T, C);
  tf_ref_matmul(a[TF_B_FCH], a[TF_B_LN2], k->w_fc, k->b_fc, B, T, C, 4 * C);
  tf_ref_gelu(a[TF_B_FCHG], a[TF_B_FCH], B * T * 4 * C);
  tf_ref_matmul(a[TF_B_FCPROJ], a[TF_B_FCHG], k->w_fcproj, k->b_fcproj, B, T, 4 * C, C);
  tf_ref_residual(a[TF_B_OUT], a[TF_B_RES2], a[TF_B_FCPROJ], B * T * C);
}

/* Read the block's output and compare it with the reference's (which must have run):
 * |out - ref| <= 1e-3 + 1e-3 |ref| (ten layers of rounding). Returns the mismatches. */
TF_FN_ size_t tf_block_compare(tf_block_t *k, tf_data_t *d, double *worst, cubert_status_t *st,
                               cubert_error_t *e) {
  size_t i, bad = 0, n = k->act_len[TF_B_OUT];
  *worst = 0;
  *st = cubert_client_read_one(d->client, &k->h_act[TF_B_OUT], k->out, n * sizeof(float), e);
  if (*st != CUBERT_STATUS_OK) return n;
  for (i = 0; i < n; i++) {
    double diff = fabs((double)k->out[i] - (double)k->act[TF_B_OUT][i]);
    double q = diff / (1e-3 + 1e-3 * fabs((double)k->act[TF_B_OUT][i]));
    if (!(q <= 1.0)) bad++;
    if (q > *worst) *worst = q;
  }
  return bad;
}

#endif /* CUBERT_EXAMPLES_TRANSFORMER_HOST_H */

/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_transformer.c: the forward layers of a GPT-2 block
 * (examples/transformer/transformer_kernels.h) at B=4 T=64 C=768 NH=12
 * (V=50257, Vp=50304 for the softmax and the head), each launch + sync, next
 * to peers measured in the same run:
 *
 *  cpu  the CPU server against the plain C reference
 *       (examples/transformer/transformer_ref.h: llm.c's forward functions)
 *       on one thread and with OpenMP (`parallel for` on every layer's outer
 *       loop, one thread per CPU); the three alternate run by run, the ratio
 *       is the median of the per-run ratios. Goal: >= 1.0x OpenMP.
 *  gpu  (a CUDA=1 build with a GPU) the CUDA device against PyTorch eager on
 *       the same GPU: tools/transformer_torch.py measures the same ops
 *       (float32, TF32 off, launch + torch.cuda.synchronize per op) and
 *       writes their medians to a file this program reads (--torch FILE), so
 *       one `bash tools/gpu-run.sh` gives the ratios. Goals: every layer
 *       >= 1.0x PyTorch, the matmuls >= 0.6x.
 * And the whole block (ten launches, one sync: examples/transformer's
 * tf_block_launch) against the same peers (PyTorch: the same ten ops, one
 * synchronize), and that block recorded once (cubert/record.h: the CPU
 * driver's pre-planned task list, a CUDA graph on the GPU) and replayed: one
 * replay + one sync against the ten launches + sync measured in turn with it
 * (and, on the GPU, against PyTorch eager's block). Every result is checked
 * against the reference first (exit status 1 when one differs). Rows in the table and CSV of bench/bench_util.h.
 *
 *   build/bench/bench_transformer [--runs R] [--quick] [--head] [--only LAYER]
 *                                 [--gpu] [--torch FILE] [--tune]
 *     --tune  instead of the rows (GPU only): every matmul tile and split
 *             of transformer_host.h at the block's and the head's shapes,
 *             each checked, then timed (launch + sync, median of 15)
 *     --head  also the 50,304-wide head matmul on the CPU (20 GFLOP a run;
 *             always on the GPU)
 *     --gpu   the GPU rows only (a CUDA=1 build)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/os.h"
#if defined(CUBERT_HAVE_BACKEND_CUDA)
#include "cubert/cuda.h"
#endif
#include "bench_util.h"
#include "transformer_host.h"
/* The OpenMP flavour of the reference (tf_omp_*). */
#undef TF_REF
#undef TF_REF_OPENMP
#define TF_REF(name) tf_omp_##name
#define TF_REF_OPENMP 1
#include "transformer_ref.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

#define OPTIONS "[--runs R] [--quick] [--head] [--only LAYER] [--gpu] [--torch FILE] [--tune] [-h|--help]"

/* The pause after the OpenMP reference's run, before cubert's next one. libgomp's idle
 * threads spin after a parallel region (its default wait policy: milliseconds; measured on
 * the 16-core host, 2026-11-28: with a 2 ms pause its 15 spinning threads still held the
 * cores through cubert's next run, and the small layers took 0.25-1.0 ms instead of
 * 0.07-0.09), so each side's run must start with the other side's threads asleep. cubert's
 * own workers spin at most 50 us (os/os_thread.c, the backoff), hence the 2 ms after its
 * run. */
#define OMP_SETTLE_US 100000

typedef struct cfg_t {
  int runs, head, gpu_only, tune;
  const char *only, *torch;
} cfg_t;

static int failures;

static void die(const char *what, cubert_status_t st, const cubert_error_t *e) {
  char msg[256];
  msg[0] = 0;
  if (e) cubert_error_format(e, msg, sizeof msg);
  fprintf(stderr, "bench_transformer: %s: %s %s\n", what, cubert_status_name(st), msg);
  exit(1);
}

/* The OpenMP reference of layer l (into d->ref[l]). */
static void omp_layer(tf_data_t *d, int l) {
  const tf_shape_t s = d->s;
  const int B = (int)s.B, T = (int)s.T, C = (int)s.C;
  switch (l) {
  case TF_ENCODER: tf_omp_encoder(d->ref[l], d->tokens, d->wte, d->wpe, B, T, C); break;
  case TF_LAYERNORM:
    tf_omp_layernorm(d->ref[l], d->ref_mean, d->ref_rstd, d->x, d->ln_w, d->ln_b, B, T, C);
    break;
  case TF_MATMUL_QKV: tf_omp_matmul(d->ref[l], d->x, d->w_qkv, d->b_qkv, B, T, C, 3 * C); break;
  case TF_ATTENTION: tf_omp_attention(d->ref[l], d->preatt, d->att, d->qkv, B, T, C, (int)s.NH); break;
  case TF_GELU: tf_omp_gelu(d->ref[l], d->fc, B * T * 4 * C); break;
  case TF_RESIDUAL: tf_omp_residual(d->ref[l], d->x, d->y, B * T * C); break;
  case TF_SOFTMAX: tf_omp_softmax(d->ref[l], d->logits, B, T, (int)s.V, (int)s.Vp); break;
  default: tf_omp_matmul(d->ref[l], d->x, d->wte, d->b_head, B, T, C, (int)s.Vp); break;
  }
}

/* The block with the OpenMP reference (into k->act). */
static void omp_block(tf_block_t *k, tf_data_t *d) {
  const int B = (int)d->s.B, T = (int)d->s.T, C = (int)d->s.C, NH = (int)d->s.NH;
  float **a = k->act;
  tf_omp_layernorm(a[TF_B_LN1], d->ref_mean, d->ref_rstd, d->x, d->ln_w, d->ln_b, B, T, C);
  tf_omp_matmul(a[TF_B_QKV], a[TF_B_LN1], d->w_qkv, d->b_qkv, B, T, C, 3 * C);
  tf_omp_attention(a[TF_B_ATTY], d->preatt, d->att, a[TF_B_QKV], B, T, C, NH);
  tf_omp_matmul(a[TF_B_ATTPROJ], a[TF_B_ATTY], k->w_proj, k->b_proj, B, T, C, C);
  tf_omp_residual(a[TF_B_RES2], d->x, a[TF_B_ATTPROJ], B * T * C);
  tf_omp_layernorm(a[TF_B_LN2], d->ref_mean, d->ref_rstd, a[TF_B_RES2], d->ln_w, d->ln_b, B, T, C);
  tf_omp_matmul(a[TF_B_FCH], a[TF_B_LN2], k->w_fc, k->b_fc, B, T, C, 4 * C);
  tf_omp_gelu(a[TF_B_FCHG], a[TF_B_FCH], B * T * 4 * C);
  tf_omp_matmul(a[TF_B_FCPROJ], a[TF_B_FCHG], k->w_fcproj, k->b_fcproj, B, T, 4 * C, C);
  tf_omp_residual(a[TF_B_OUT], a[TF_B_RES2], a[TF_B_FCPROJ], B * T * C);
}

/* The block through the client: ten launches, one sync (ms). */
static double time_block(tf_block_t *k, tf_data_t *d, const tf_plan_t *p) {
  cubert_error_t e;
  cubert_status_t st;
  double t0 = bench_now_ns();
  if ((st = tf_block_launch(k, d, p, &e)) != CUBERT_STATUS_OK ||
      (st = cubert_client_sync(d->client, &e)) != CUBERT_STATUS_OK)
    die("block", st, &e);
  return (bench_now_ns() - t0) / 1e6;
}

/* The block recorded once (tf_block_record): one replay, one sync (ms). */
static double time_replay(cubert_recording_t *rec, tf_data_t *d) {
  cubert_error_t e;
  cubert_status_t st;
  double t0 = bench_now_ns();
  if ((st = cubert_client_replay(d->client, rec, &e)) != CUBERT_STATUS_OK ||
      (st = cubert_client_sync(d->client, &e)) != CUBERT_STATUS_OK)
    die("block replay", st, &e);
  return (bench_now_ns() - t0) / 1e6;
}

static cubert_recording_t *record_block(tf_block_t *k, tf_data_t *d, const tf_plan_t *p) {
  cubert_recording_t *rec = NULL;
  cubert_error_t e;
  cubert_status_t st = tf_block_record(k, d, p, &rec, &e);
  if (st != CUBERT_STATUS_OK) die("record the block", st, &e);
  return rec;
}

static void check_block(tf_block_t *k, tf_data_t *d, const char *where) {
  double worst;
  cubert_status_t st;
  cubert_error_t e;
  size_t bad = tf_block_compare(k, d, &worst, &st, &e);
  if (st != CUBERT_STATUS_OK) die("read back", st, &e);
  if (bad) {
    printf("%s block: %zu values differ from the reference (worst %g x tolerance)\n", where, bad, worst);
    failures++;
  }
}

static double time_device(tf_data_t *d, const tf_plan_t *p, int l) {
  cubert_error_t e;
  cubert_status_t st;
  double t0 = bench_now_ns();
  if ((st = tf_layer_launch(d, p, l, &e)) != CUBERT_STATUS_OK ||
      (st = cubert_client_sync(d->client, &e)) != CUBERT_STATUS_OK)
    die(tf_layer_names[l], st, &e);
  return (bench_now_ns() - t0) / 1e6;
}

static void check_layer(tf_data_t *d, int l, const char *where) {
  double worst;
  size_t at, bad;
  cubert_status_t st;
  cubert_error_t e;
  bad = tf_layer_compare(d, l, &worst, &at, &st, &e);
  if (st != CUBERT_STATUS_OK) die("read back", st, &e);
  if (bad) {
    printf("%s %s: %zu values differ from the reference (worst %g x tolerance at %zu: %g vs %g)\n",
           where, tf_layer_names[l], bad, worst, at, (double)d->out[l][at], (double)d->ref[l][at]);
    failures++;
  }
}

static int wanted(const cfg_t *cfg, int l) {
  return !cfg->only || strcmp(cfg->only, tf_layer_names[l]) == 0;
}

#if defined(CUBERT_HAVE_BACKEND_CUDA)
/* ---- --tune: every matmul tile and split at the block's and the head's shapes ------------ */

/* Launch + sync of one (tile, splits) matmul (ms). */
static double time_matmul(cubert_client_t *c, const tf_plan_t *p, uint32_t tile, uint32_t splits,
                          const cubert_handle_t *h, uint32_t m, uint32_t k, uint32_t n) {
  cubert_error_t e;
  cubert_status_t st;
  double t0 = bench_now_ns();
  if ((st = tf_matmul_tiled(c, p, tile, splits, &h[3], &h[0], &h[1], &h[2], m, k, n, &e)) !=
          CUBERT_STATUS_OK ||
      (st = cubert_client_sync(c, &e)) != CUBERT_STATUS_OK)
    die("matmul", st, &e);
  return (bench_now_ns() - t0) / 1e6;
}

/* Prints, for each matmul shape of the block and the head, every tile and
 * split: the median launch + sync and TFLOP/s, each checked against the
 * reference first. What tf_matmul_pick's GPU table comes from. */
static void bench_tune(cubert_client_t *client, const char *where) {
  static const uint32_t shapes[5][3] = {
      {256, 768, 2304}, {256, 768, 768}, {256, 768, 3072}, {256, 3072, 768}, {256, 768, 50304}};
  static const char *const names[5] = {"qkv", "attproj", "fc", "fcproj", "head"};
  static const uint32_t splits[] = {1, 2, 3, 4, 6, 8};
  const size_t max_in = 256u * 3072u, max_w = 50304u * 768u, max_out = 256u * 50304u;
  float *inp = tf_fill_(max_in, -1.0f, 1.0f), *w = tf_fill_(max_w, -0.05f, 0.05f);
  float *bias = tf_fill_(50304u, -0.1f, 0.1f), *out = (float *)malloc(max_out * sizeof(float));
  float *ref = (float *)malloc(max_out * sizeof(float));
  tf_plan_t plan = tf_plan_for(client);
  cubert_handle_t h[4];
  cubert_error_t e;
  cubert_status_t st;
  size_t sh, t, sp;
  if (!inp || !w || !bias || !out || !ref) die("tune data", CUBERT_STATUS_RESOURCE_EXHAUSTED, NULL);
  if ((st = cubert_client_create_from_slice(client, inp, max_in * 4u, &h[0], &e)) != CUBERT_STATUS_OK ||
      (st = cubert_client_create_from_slice(client, w, max_w * 4u, &h[1], &e)) != CUBERT_STATUS_OK ||
      (st = cubert_client_create_from_slice(client, bias, 50304u * 4u, &h[2], &e)) != CUBERT_STATUS_OK ||
      (st = cubert_client_empty(client, max_out * 4u, &h[3], &e)) != CUBERT_STATUS_OK)
    die("tune upload", st, &e);
  for (sh = 0; sh < 5; sh++) {
    const uint32_t m = shapes[sh][0], k = shapes[sh][1], n = shapes[sh][2];
    tf_omp_matmul(ref, inp, w, bias, 1, (int)m, (int)k, (int)n);
    for (t = 0; t < TF_MM_TILES; t++)
      for (sp = 0; sp < sizeof splits / sizeof splits[0]; sp++) {
        const uint32_t steps = (k + 15u) / 16u;
        double ms[BENCH_MAX_RUNS], worst = 0;
        size_t i, bad = 0;
        int r;
        bench_stat_t stat;
        if (splits[sp] > 1u && steps / splits[sp] < 4u) continue;
        for (r = 0; r < 3; r++) (void)time_matmul(client, &plan, (uint32_t)t, splits[sp], h, m, k, n);
        if ((st = cubert_client_read_one(client, &h[3], out, max_out * 4u, &e)) != CUBERT_STATUS_OK)
          die("tune read", st, &e);
        for (i = 0; i < (size_t)m * n; i++) {
          double d = fabs((double)out[i] - (double)ref[i]), lim = 2e-4 + 2e-4 * fabs((double)ref[i]);
          if (!(d <= lim)) bad++;
          if (d / lim > worst) worst = d / lim;
        }
        for (r = 0; r < 15; r++) ms[r] = time_matmul(client, &plan, (uint32_t)t, splits[sp], h, m, k, n);
        stat = bench_stat_of(ms, 15);
        printf("%s tune %-8s %ux%ux%u  %-14s split %u: %8.4f ms [%.4f..%.4f]  %6.2f TFLOP/s%s\n", where,
               names[sh], (unsigned)m, (unsigned)k, (unsigned)n, tf_mm_tiles[t].name, (unsigned)splits[sp],
               stat.median, stat.min, stat.max, 2.0 * m * k * n / (stat.median * 1e-3) / 1e12,
               bad ? "  MISMATCH" : "");
        if (bad) {
          printf("  %zu values differ (worst %g x tolerance)\n", bad, worst);
          failures++;
        }
      }
  }
  for (t = 0; t < 4; t++) (void)cubert_client_handle_release(client, &h[t], NULL);
  free(inp);
  free(w);
  free(bias);
  free(out);
  free(ref);
}

#endif

/* ---- CPU: the CPU server vs the C reference, 1 thread and OpenMP ------------------------- */

static void bench_cpu(const cfg_t *cfg) {
  cubert_client_t *client = NULL;
  cubert_error_t e;
  cubert_status_t st;
  tf_data_t d;
  tf_plan_t plan;
  int l, r, threads = 1;
  const char *omp_why = NULL;
#if defined(_OPENMP)
  threads = omp_get_max_threads();
#else
  omp_why = "built without OpenMP (the compiler's -fopenmp probe failed; gcc: libgomp, clang: "
            "Debian libomp-dev)";
#endif
  if ((st = cubert_cpu_client_create(cubert_allocator_libc(), NULL, &client, &e)) != CUBERT_STATUS_OK)
    die("create the CPU device", st, &e);
  plan = tf_plan_for(client);
  if (tf_data_init(&d, tf_shape_gpt2(), cfg->head) != 0) die("data", CUBERT_STATUS_RESOURCE_EXHAUSTED, NULL);
  if ((st = tf_data_upload(&d, client, &e)) != CUBERT_STATUS_OK) die("upload", st, &e);
  for (l = 0; l < TF_LAYERS; l++) {
    double ours[BENCH_MAX_RUNS], one[BENCH_MAX_RUNS], omp[BENCH_MAX_RUNS];
    double r1[BENCH_MAX_RUNS], romp[BENCH_MAX_RUNS];
    char figure[96];
    bench_row_t row;
    const int runs = l == TF_MATMUL_HEAD && cfg->runs > 3 ? 3 : cfg->runs;
    if (!d.out_len[l] || !wanted(cfg, l)) continue;
    tf_layer_reference(&d, l); /* the check, and a warm-up of each */
    (void)time_device(&d, &plan, l);
    check_layer(&d, l, "cpu");
    omp_layer(&d, l);
    for (r = 0; r < runs; r++) { /* alternating, so that the machine's noise hits all three */
      double t0;
      ours[r] = time_device(&d, &plan, l);
      bench_settle(2000);
      t0 = bench_now_ns();
      tf_layer_reference(&d, l);
      one[r] = (bench_now_ns() - t0) / 1e6;
      t0 = bench_now_ns();
      omp_layer(&d, l);
      omp[r] = (bench_now_ns() - t0) / 1e6;
      bench_settle(OMP_SETTLE_US);
      r1[r] = one[r] / ours[r];
      romp[r] = omp[r] / ours[r];
    }
    snprintf(figure, sizeof figure, "cpu %s: launch + sync vs C, 1 thread", tf_layer_names[l]);
    row = bench_row("transformer cpu", figure, "ms", 0, bench_stat_of(ours, runs));
    row.peer = "C 1T";
    row.peer_stat = bench_stat_of(one, runs);
    row.ratio = bench_stat_of(r1, runs).median;
    bench_emit(&row);
    snprintf(figure, sizeof figure, "cpu %s: vs C OpenMP (%d threads)", tf_layer_names[l], threads);
    row = bench_row("transformer cpu", figure, "ms", 0, bench_stat_of(ours, runs));
    row.peer = "C OpenMP";
    row.peer_stat = bench_stat_of(omp, runs);
    row.ratio = bench_stat_of(romp, runs).median;
    row.skipped = omp_why;
    row.goal = 1.0;
    bench_emit(&row);
  }
  if (!cfg->only || strcmp(cfg->only, "block") == 0) { /* the whole block: ten launches, one sync */
    double ours[BENCH_MAX_RUNS], one[BENCH_MAX_RUNS], omp[BENCH_MAX_RUNS];
    double r1[BENCH_MAX_RUNS], romp[BENCH_MAX_RUNS];
    bench_row_t row;
    tf_block_t k;
    char figure[96];
    if (tf_block_init(&k, &d) != 0) die("block data", CUBERT_STATUS_RESOURCE_EXHAUSTED, NULL);
    if ((st = tf_block_upload(&k, &d, &e)) != CUBERT_STATUS_OK) die("upload the block", st, &e);
    tf_block_reference(&k, &d);
    (void)time_block(&k, &d, &plan);
    check_block(&k, &d, "cpu");
    for (r = 0; r < cfg->runs; r++) {
      double t0;
      ours[r] = time_block(&k, &d, &plan);
      bench_settle(2000);
      t0 = bench_now_ns();
      tf_block_reference(&k, &d);
      one[r] = (bench_now_ns() - t0) / 1e6;
      t0 = bench_now_ns();
      omp_block(&k, &d);
      omp[r] = (bench_now_ns() - t0) / 1e6;
      bench_settle(OMP_SETTLE_US);
      r1[r] = one[r] / ours[r];
      romp[r] = omp[r] / ours[r];
    }
    row = bench_row("transformer cpu", "cpu block (10 launches, 1 sync) vs C, 1 thread", "ms", 0,
                    bench_stat_of(ours, cfg->runs));
    row.peer = "C 1T";
    row.peer_stat = bench_stat_of(one, cfg->runs);
    row.ratio = bench_stat_of(r1, cfg->runs).median;
    bench_emit(&row);
    snprintf(figure, sizeof figure, "cpu block: vs C OpenMP (%d threads)", threads);
    row = bench_row("transformer cpu", figure, "ms", 0, bench_stat_of(ours, cfg->runs));
    row.peer = "C OpenMP";
    row.peer_stat = bench_stat_of(omp, cfg->runs);
    row.ratio = bench_stat_of(romp, cfg->runs).median;
    row.skipped = omp_why;
    row.goal = 1.0;
    bench_emit(&row);
    { /* the same block recorded once, replayed: 1 replay + 1 sync, against the launches in turn */
      double rep[BENCH_MAX_RUNS], launched[BENCH_MAX_RUNS], rr[BENCH_MAX_RUNS];
      cubert_recording_t *rec = record_block(&k, &d, &plan);
      (void)time_replay(rec, &d);
      check_block(&k, &d, "cpu replayed");
      for (r = 0; r < cfg->runs; r++) {
        launched[r] = time_block(&k, &d, &plan);
        rep[r] = time_replay(rec, &d);
        rr[r] = launched[r] / rep[r];
      }
      row = bench_row("transformer cpu", "cpu block replayed (1 replay, 1 sync) vs launched", "ms", 0,
                      bench_stat_of(rep, cfg->runs));
      row.peer = "10 launches + sync";
      row.peer_stat = bench_stat_of(launched, cfg->runs);
      row.ratio = bench_stat_of(rr, cfg->runs).median;
      bench_emit(&row);
      cubert_recording_destroy(rec);
    }
    tf_block_free(&k, &d);
  }
  tf_data_free(&d);
  cubert_client_release(client);
}

/* ---- GPU: the CUDA device vs PyTorch eager (tools/transformer_torch.py) ----------------- */

#if defined(CUBERT_HAVE_BACKEND_CUDA)
/* The PyTorch figure `name` from the file (lines: name median_ms min_ms max_ms runs). */
static int torch_figure(const char *path, const char *name, bench_stat_t *out) {
  char line[256], key[64];
  FILE *f = path ? fopen(path, "r") : NULL;
  int found = 0;
  if (!f) return 0;
  while (fgets(line, sizeof line, f)) {
    double med, mn, mx;
    int runs;
    if (sscanf(line, "%63s %lf %lf %lf %d", key, &med, &mn, &mx, &runs) == 5 && strcmp(key, name) == 0) {
      out->median = med;
      out->min = mn;
      out->max = mx;
      out->runs = runs;
      found = 1;
    }
  }
  fclose(f);
  return found;
}

static void bench_gpu(const cfg_t *cfg) {
  static const char *const torch_names[TF_LAYERS] = {"encoder", "layernorm", "matmul_qkv", "attention",
                                                    "gelu",    "residual",  "softmax",    "matmul_head"};
  cubert_client_t *client = NULL;
  cubert_error_t e;
  cubert_status_t st;
  tf_data_t d;
  tf_plan_t plan;
  int l, r, k;
  if (cubert_cuda_client_create(cubert_allocator_libc(), NULL, &client, &e) != CUBERT_STATUS_OK) {
    printf("bench_transformer: gpu rows skipped: CUDA unavailable: %s\n", e.reason);
    return;
  }
  plan = tf_plan_for(client);
  if (cfg->tune) {
    bench_tune(client, "gpu");
    cubert_client_release(client);
    return;
  }
  if (tf_data_init(&d, tf_shape_gpt2(), 1) != 0) die("data", CUBERT_STATUS_RESOURCE_EXHAUSTED, NULL);
  if ((st = tf_data_upload(&d, client, &e)) != CUBERT_STATUS_OK) die("upload", st, &e);
  for (l = 0; l < TF_LAYERS; l++) {
    double ours[BENCH_MAX_RUNS];
    const int runs = cfg->runs < 21 ? 21 : cfg->runs;
    if (!wanted(cfg, l)) continue;
    tf_layer_reference(&d, l);
    for (r = 0; r < 3; r++) (void)time_device(&d, &plan, l); /* warm-up (module load, JIT) */
    check_layer(&d, l, "gpu");
    for (r = 0; r < runs; r++) ours[r] = time_device(&d, &plan, l);
    /* attention: against PyTorch's unfused ops (llm.c's) and its fused SDPA */
    for (k = 0; k < (l == TF_ATTENTION ? 2 : 1); k++) {
      char figure[96], why[160];
      const char *tname = k ? "attention_sdpa" : torch_names[l];
      bench_row_t row;
      snprintf(figure, sizeof figure, "gpu %s: launch + sync vs PyTorch%s", tf_layer_names[l],
               k ? " SDPA" : l == TF_ATTENTION ? " (unfused)" : "");
      row = bench_row("transformer gpu", figure, "ms", 0, bench_stat_of(ours, runs));
      row.peer = "PyTorch eager";
      if (!torch_figure(cfg->torch, tname, &row.peer_stat)) {
        snprintf(why, sizeof why, "no PyTorch figure '%s' (--torch FILE, from tools/transformer_torch.py)",
                 tname);
        row.skipped = why;
      }
      row.goal = l == TF_MATMUL_QKV || l == TF_MATMUL_HEAD ? 0.6 : 1.0;
      bench_emit(&row);
    }
  }
  if (!cfg->only || strcmp(cfg->only, "block") == 0) { /* the whole block: ten launches, one sync */
    double ours[BENCH_MAX_RUNS];
    const int runs = cfg->runs < 21 ? 21 : cfg->runs;
    char why[160];
    bench_row_t row;
    tf_block_t blk;
    if (tf_block_init(&blk, &d) != 0) die("block data", CUBERT_STATUS_RESOURCE_EXHAUSTED, NULL);
    if ((st = tf_block_upload(&blk, &d, &e)) != CUBERT_STATUS_OK) die("upload the block", st, &e);
    tf_block_reference(&blk, &d);
    for (r = 0; r < 3; r++) (void)time_block(&blk, &d, &plan);
    check_block(&blk, &d, "gpu");
    for (r = 0; r < runs; r++) ours[r] = time_block(&blk, &d, &plan);
    row = bench_row("transformer gpu", "gpu block (10 layers, 1 sync) vs PyTorch", "ms", 0,
                    bench_stat_of(ours, runs));
    row.peer = "PyTorch eager";
    if (!torch_figure(cfg->torch, "block", &row.peer_stat)) {
      snprintf(why, sizeof why, "no PyTorch figure 'block' (--torch FILE, from tools/transformer_torch.py)");
      row.skipped = why;
    }
    row.goal = 1.0;
    bench_emit(&row);
    { /* the same block recorded once (a CUDA graph), replayed */
      double rep[BENCH_MAX_RUNS], launched[BENCH_MAX_RUNS], rr[BENCH_MAX_RUNS];
      cubert_recording_t *rec = record_block(&blk, &d, &plan);
      for (r = 0; r < 3; r++) (void)time_replay(rec, &d);
      check_block(&blk, &d, "gpu replayed");
      for (r = 0; r < runs; r++) {
        launched[r] = time_block(&blk, &d, &plan);
        rep[r] = time_replay(rec, &d);
        rr[r] = launched[r] / rep[r];
      }
      row = bench_row("transformer gpu", "gpu block replayed (1 replay, 1 sync) vs launched", "ms", 0,
                      bench_stat_of(rep, runs));
      row.peer = "10 launches + sync";
      row.peer_stat = bench_stat_of(launched, runs);
      row.ratio = bench_stat_of(rr, runs).median;
      bench_emit(&row);
      row = bench_row("transformer gpu", "gpu block replayed vs PyTorch", "ms", 0, bench_stat_of(rep, runs));
      row.peer = "PyTorch eager";
      if (!torch_figure(cfg->torch, "block", &row.peer_stat)) {
        snprintf(why, sizeof why, "no PyTorch figure 'block' (--torch FILE, from tools/transformer_torch.py)");
        row.skipped = why;
      }
      bench_emit(&row);
      row = bench_row("transformer gpu", "gpu block replayed vs PyTorch CUDA graph replay", "ms", 0,
                      bench_stat_of(rep, runs));
      row.peer = "PyTorch graph";
      if (!torch_figure(cfg->torch, "block_graph", &row.peer_stat)) {
        snprintf(why, sizeof why,
                 "no PyTorch figure 'block_graph' (--torch FILE, from tools/transformer_torch.py)");
        row.skipped = why;
      }
      row.goal = 1.0;
      bench_emit(&row);
      cubert_recording_destroy(rec);
    }
    tf_block_free(&blk, &d);
  }
  tf_data_free(&d);
  cubert_client_release(client);
}
#endif

int main(int argc, char **argv) {
  cfg_t cfg;
  int i;
  memset(&cfg, 0, sizeof cfg);
  cfg.runs = 11;
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_transformer", OPTIONS,
                       "The forward layers of a GPT-2 block (B=4 T=64 C=768 NH=12): the CPU server vs "
                       "the plain C reference (1 thread, OpenMP); on a GPU (CUDA=1) vs PyTorch eager.");
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      cfg.runs = atoi(argv[++i]);
      if (cfg.runs < 1 || cfg.runs > BENCH_MAX_RUNS) return bench_bad_option("bench_transformer", argv[i], OPTIONS);
    } else if (strcmp(argv[i], "--quick") == 0) {
      cfg.runs = 3;
    } else if (strcmp(argv[i], "--head") == 0) {
      cfg.head = 1;
    } else if (strcmp(argv[i], "--gpu") == 0) {
      cfg.gpu_only = 1;
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      cfg.only = argv[++i];
    } else if (strcmp(argv[i], "--torch") == 0 && i + 1 < argc) {
      cfg.torch = argv[++i];
    } else if (strcmp(argv[i], "--tune") == 0) {
      cfg.tune = 1;
      cfg.gpu_only = 1;
    } else {
      return bench_bad_option("bench_transformer", argv[i], OPTIONS);
    }
  }
  bench_print_load("before");
  bench_table_begin("bench_transformer");
  if (!cfg.gpu_only) bench_cpu(&cfg);
#if defined(CUBERT_HAVE_BACKEND_CUDA)
  bench_gpu(&cfg);
#else
  if (cfg.gpu_only) printf("bench_transformer: gpu rows skipped: this build has no CUDA driver (make CUDA=1)\n");
#endif
  bench_print_load("after");
  if (failures) printf("bench_transformer: %d layer(s) did not match the reference\n", failures);
  return failures ? 1 : 0;
}

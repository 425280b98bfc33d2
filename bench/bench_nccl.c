/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_nccl.c: all_reduce (Sum, f32) through the client API on the
 * CUDA devices (the driver's NCCL path, cuda_comm.h) next to raw NCCL calls
 * (ncclAllReduce on a CUstream, nccl-tests style) measured in the same run,
 * alternating run by run. docs/benchmarks.md, docs/collectives.md.
 *
 * Sizes 4 KiB to 1 GiB (x4). Each size: out of place, `iters` collectives
 * (10 x iters below 1 MiB) enqueued back to back, then a sync, timed on the
 * host (as nccl-tests does); a run's time per collective is the total /
 * count; medians over --runs runs. algbw = bytes / time, busbw = algbw * 2 (n - 1) / n
 * (nccl-tests' all_reduce factor; 0 for one rank).
 *
 * One GPU: one device, a one-rank communicator (ncclCommInitAll of 1), so
 * the figures are what the client path adds over a raw one-rank NCCL call
 * (no data moves between GPUs; NCCL copies src to dst). N GPUs: N devices
 * in this process, one per GPU; the client posts each device's part, the
 * last one issues the round in one group call; raw NCCL is ncclCommInitAll
 * of N plus one ncclGroupStart / End per collective.
 *
 * Goals (table, and rows in the CSV of bench_util.h): at 1 GiB, client
 * algbw >= 0.95x raw; at 4 KiB, client time within 2 us of raw.
 *
 *   build/cuda/bench/bench_nccl [--runs R (5)] [--iters I (20)] [--gpus N (all)]
 *                               [--max-mib M (1024)]
 * Without CUDA, NCCL or a GPU: one line "bench_nccl: skipped: <reason>",
 * exit 0. Exit 1 when a call failed or the check of the results did not.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#if !defined(CUBERT_HAVE_BACKEND_CUDA)
int main(int argc, char **argv) {
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_nccl", "[--runs R] [--iters I] [--gpus N] [--max-mib M] [-h|--help]",
                       "all_reduce through the client next to raw NCCL (a CUDA=1 build).");
  if (argc > 1 && strcmp(argv[1], "--runs") != 0 && strcmp(argv[1], "--iters") != 0 &&
      strcmp(argv[1], "--gpus") != 0 && strcmp(argv[1], "--max-mib") != 0)
    return bench_bad_option("bench_nccl", argv[1],
                            "[--runs R] [--iters I] [--gpus N] [--max-mib M] [-h|--help]");
  printf("bench_nccl: skipped: CUDA unavailable: this build has no CUDA driver (make CUDA=1)\n");
  return 0;
}
#else

#include "cubert/client.h"
#include "cubert/cuda.h"
#include "cubert/os.h"
#include "comm/cuda_comm.h"
#include "device/cuda_loader.h"

#define MAX_GPUS 8
#define SIZES 10

typedef struct bench_t {
  uint32_t n, runs, iters;
  uint64_t max_bytes;
  const cubert_cuda_loader_t *cu;
  const cubert_nccl_loader_t *nl;
  cubert_client_t *c[MAX_GPUS];
  cubert_device_id_t ids[MAX_GPUS];
  /* raw */
  CUcontext ctx[MAX_GPUS];
  CUstream stream[MAX_GPUS];
  CUdeviceptr src[MAX_GPUS], dst[MAX_GPUS];
  cubert_nccl_comm_t comm[MAX_GPUS];
} bench_t;

static int g_failed;

static int check_cu(CUresult r, const char *what) {
  if (r == CUDA_SUCCESS) return 1;
  fprintf(stderr, "bench_nccl: %s failed: CUresult %d\n", what, (int)r);
  g_failed = 1;
  return 0;
}

static int check_nccl(const bench_t *b, int r, const char *what) {
  if (r == CUBERT_NCCL_SUCCESS) return 1;
  fprintf(stderr, "bench_nccl: %s failed: %s (%s)\n", what, cubert__nccl_result_name(r),
          b->nl->ncclGetErrorString((cubert__nccl_result_t)r));
  g_failed = 1;
  return 0;
}

static int check_ok(cubert_status_t st, const cubert_error_t *err, const char *what) {
  char text[512];
  if (st == CUBERT_STATUS_OK) return 1;
  cubert_error_format(err, text, sizeof text);
  fprintf(stderr, "bench_nccl: %s: %s\n", what, text);
  g_failed = 1;
  return 0;
}

/* ---- raw NCCL --------------------------------------------------------------------------- */

static int raw_open(bench_t *b) {
  int devs[MAX_GPUS], ok;
  CUcontext saved = NULL;
  uint32_t i;
  (void)b->cu->cuCtxGetCurrent(&saved);
  for (i = 0; i < b->n; i++) {
    CUdevice d;
    devs[i] = (int)i;
    if (!check_cu(b->cu->cuDeviceGet(&d, (int)i), "cuDeviceGet") ||
        !check_cu(b->cu->cuDevicePrimaryCtxRetain(&b->ctx[i], d), "cuDevicePrimaryCtxRetain") ||
        !check_cu(b->cu->cuCtxSetCurrent(b->ctx[i]), "cuCtxSetCurrent") ||
        !check_cu(b->cu->cuStreamCreate(&b->stream[i], CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
        !check_cu(b->cu->cuMemAlloc(&b->src[i], b->max_bytes), "cuMemAlloc") ||
        !check_cu(b->cu->cuMemAlloc(&b->dst[i], b->max_bytes), "cuMemAlloc") ||
        !check_cu(b->cu->cuMemsetD8Async(b->src[i], 0, b->max_bytes, b->stream[i]), "cuMemset"))
      break;
  }
  ok = !g_failed &&
       check_nccl(b, (int)b->nl->ncclCommInitAll(b->comm, (int)b->n, devs), "ncclCommInitAll");
  (void)b->cu->cuCtxSetCurrent(saved);
  return ok;
}

static void raw_close(bench_t *b) {
  CUcontext saved = NULL;
  uint32_t i;
  (void)b->cu->cuCtxGetCurrent(&saved);
  for (i = 0; i < b->n; i++) {
    if (b->comm[i]) (void)b->nl->ncclCommDestroy(b->comm[i]);
    if (!b->ctx[i]) continue;
    (void)b->cu->cuCtxSetCurrent(b->ctx[i]);
    if (b->stream[i]) (void)b->cu->cuStreamSynchronize(b->stream[i]);
    if (b->src[i]) (void)b->cu->cuMemFree(b->src[i]);
    if (b->dst[i]) (void)b->cu->cuMemFree(b->dst[i]);
    if (b->stream[i]) (void)b->cu->cuStreamDestroy(b->stream[i]);
    (void)b->cu->cuDevicePrimaryCtxRelease((CUdevice)i);
  }
  (void)b->cu->cuCtxSetCurrent(saved);
}

/* `count` collectives of `bytes`, then every stream synchronized: ns per one. */
static double raw_time(bench_t *b, uint64_t bytes, uint32_t count) {
  double t0 = bench_now_ns(), t;
  CUcontext saved = NULL;
  uint32_t k, i;
  (void)b->cu->cuCtxGetCurrent(&saved); /* the device layer caches what it made current */
  for (k = 0; k < count; k++) {
    if (b->n > 1) (void)b->nl->ncclGroupStart();
    for (i = 0; i < b->n; i++)
      if (!check_nccl(b, (int)b->nl->ncclAllReduce((const void *)(uintptr_t)b->src[i],
                                                   (void *)(uintptr_t)b->dst[i], bytes / 4,
                                                   CUBERT_NCCL_FLOAT32, CUBERT_NCCL_SUM,
                                                   b->comm[i], (struct CUstream_st *)b->stream[i]),
                      "ncclAllReduce"))
        break;
    if (b->n > 1) (void)b->nl->ncclGroupEnd();
  }
  for (i = 0; i < b->n; i++) {
    (void)b->cu->cuCtxSetCurrent(b->ctx[i]);
    (void)check_cu(b->cu->cuStreamSynchronize(b->stream[i]), "cuStreamSynchronize");
  }
  t = (bench_now_ns() - t0) / count;
  (void)b->cu->cuCtxSetCurrent(saved);
  return g_failed ? 0 : t;
}

/* ---- the client ---------------------------------------------------------------------------- */

static double client_time(bench_t *b, const cubert_handle_t *src, const cubert_handle_t *dst,
                          uint32_t count) {
  cubert_error_t err;
  double t0 = bench_now_ns();
  uint32_t k, i;
  for (k = 0; k < count; k++)
    for (i = 0; i < b->n; i++)
      if (!check_ok(cubert_client_all_reduce(b->c[i], &src[i], &dst[i], CUBERT_COMM_DTYPE_F32,
                                             b->ids, b->n, CUBERT_REDUCE_OPERATION_SUM, &err),
                    &err, "all_reduce"))
        return 0;
  for (i = 0; i < b->n; i++)
    if (!check_ok(cubert_client_sync_collective(b->c[i], &err), &err, "sync_collective") ||
        !check_ok(cubert_client_sync(b->c[i], &err), &err, "sync"))
      return 0;
  return (bench_now_ns() - t0) / count;
}

/* The client's result is right: device i holds sum over ranks of (r + 1) x. */
static void client_check(bench_t *b) {
  enum { E = 4096 };
  static float v[E], out[E];
  cubert_handle_t h[MAX_GPUS];
  cubert_error_t err;
  uint32_t i, k;
  for (i = 0; i < b->n; i++) {
    for (k = 0; k < E; k++) v[k] = (float)((i + 1) * (k % 100));
    if (!check_ok(cubert_client_create_from_slice(b->c[i], v, sizeof v, &h[i], &err), &err,
                  "upload"))
      return;
  }
  for (i = 0; i < b->n; i++)
    (void)check_ok(cubert_client_all_reduce(b->c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, b->ids,
                                            b->n, CUBERT_REDUCE_OPERATION_SUM, &err),
                   &err, "all_reduce");
  for (i = 0; i < b->n; i++) {
    if (check_ok(cubert_client_sync_collective(b->c[i], &err), &err, "sync_collective") &&
        check_ok(cubert_client_read_one(b->c[i], &h[i], out, sizeof out, &err), &err, "read"))
      for (k = 0; k < E; k++)
        if (out[k] != (float)((k % 100) * b->n * (b->n + 1) / 2)) {
          fprintf(stderr, "bench_nccl: device %u [%u] = %g\n", (unsigned)i, (unsigned)k,
                  (double)out[k]);
          g_failed = 1;
          break;
        }
    (void)cubert_client_handle_release(b->c[i], &h[i], NULL);
  }
}

/* ---- one size ------------------------------------------------------------------------------- */

typedef struct size_result_t {
  uint64_t bytes;
  bench_stat_t raw, ours, delta; /* ns per collective; client - raw per run */
} size_result_t;

static int measure(bench_t *b, uint64_t bytes, size_result_t *out) {
  double raw[BENCH_MAX_RUNS], ours[BENCH_MAX_RUNS], delta[BENCH_MAX_RUNS];
  cubert_handle_t src[MAX_GPUS], dst[MAX_GPUS];
  cubert_error_t err;
  /* small ones 10x more often: the host clock's resolution and jitter stay small */
  uint32_t i, r, count = bytes < (1u << 20) ? b->iters * 10u : b->iters;
  for (i = 0; i < b->n; i++)
    if (!check_ok(cubert_client_empty(b->c[i], bytes, &src[i], &err), &err, "empty") ||
        !check_ok(cubert_client_empty(b->c[i], bytes, &dst[i], &err), &err, "empty"))
      return 0;
  (void)raw_time(b, bytes, 5); /* warm up both */
  (void)client_time(b, src, dst, 5);
  for (r = 0; r < b->runs && !g_failed; r++) {
    if (r % 2) {
      ours[r] = client_time(b, src, dst, count);
      raw[r] = raw_time(b, bytes, count);
    } else {
      raw[r] = raw_time(b, bytes, count);
      ours[r] = client_time(b, src, dst, count);
    }
    delta[r] = ours[r] - raw[r];
  }
  for (i = 0; i < b->n; i++) {
    (void)cubert_client_handle_release(b->c[i], &src[i], NULL);
    (void)cubert_client_handle_release(b->c[i], &dst[i], NULL);
  }
  if (g_failed) return 0;
  out->bytes = bytes;
  out->raw = bench_stat_of(raw, (int)b->runs);
  out->ours = bench_stat_of(ours, (int)b->runs);
  out->delta = bench_stat_of(delta, (int)b->runs);
  return 1;
}

static void print_size(const bench_t *b, const size_result_t *s) {
  double factor = 2.0 * (b->n - 1) / b->n;
  double raw_alg = (double)s->bytes / s->raw.median, our_alg = (double)s->bytes / s->ours.median;
  char size[32];
  if (s->bytes >= (1ull << 30)) snprintf(size, sizeof size, "%llu GiB", (unsigned long long)(s->bytes >> 30));
  else if (s->bytes >= (1ull << 20)) snprintf(size, sizeof size, "%llu MiB", (unsigned long long)(s->bytes >> 20));
  else snprintf(size, sizeof size, "%llu KiB", (unsigned long long)(s->bytes >> 10));
  printf("| %8s | %11llu | %10.2f | %7.2f | %7.2f | %10.2f | %7.2f | %7.2f | %6.3f | %+8.2f |\n",
         size, (unsigned long long)(s->bytes / 4), s->raw.median / 1e3, raw_alg, raw_alg * factor,
         s->ours.median / 1e3, our_alg, our_alg * factor, our_alg / raw_alg, s->delta.median / 1e3);
}

/* The two goals as rows of bench_util.h (table and CSV). */
static void emit_goals(const bench_t *b, const size_result_t *big, const size_result_t *small) {
  char figure[2][96];
  bench_row_t row;
  bench_stat_t our_bw = bench_stat_rate(big->ours, (double)big->bytes);
  bench_stat_t raw_bw = bench_stat_rate(big->raw, (double)big->bytes);
  bench_stat_t goal;
  printf("\n");
  bench_table_begin("bench_nccl");
  snprintf(figure[0], sizeof figure[0], "all_reduce f32 %llu MiB, %u GPU%s: algbw",
           (unsigned long long)(big->bytes >> 20), (unsigned)b->n, b->n > 1 ? "s" : "");
  row = bench_row("nccl", figure[0], "GB/s", 1, our_bw);
  row.peer = "raw ncclAllReduce";
  row.peer_stat = raw_bw;
  row.goal = 0.95;
  bench_emit(&row);
  snprintf(figure[1], sizeof figure[1], "all_reduce f32 %llu KiB, %u GPU%s: time over raw NCCL",
           (unsigned long long)(small->bytes >> 10), (unsigned)b->n, b->n > 1 ? "s" : "");
  row = bench_row("nccl", figure[1], "us", 0, small->delta);
  row.cubert.median /= 1e3;
  row.cubert.min /= 1e3;
  row.cubert.max /= 1e3;
  goal.median = goal.min = goal.max = 2.0;
  goal.runs = 1;
  row.peer = "goal";
  row.peer_stat = goal;
  row.goal = 1.0;
  if (row.cubert.median <= 0) row.ratio = 1e9; /* no slower than raw */
  bench_emit(&row);
}

static int parse(int argc, char **argv, bench_t *b, uint32_t *gpus) {
  int i;
  b->runs = 5;
  b->iters = 20;
  b->max_bytes = 1ull << 30;
  *gpus = MAX_GPUS;
  for (i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : "";
    if (strcmp(argv[i], "--runs") == 0) b->runs = (uint32_t)atoi(v), i++;
    else if (strcmp(argv[i], "--iters") == 0) b->iters = (uint32_t)atoi(v), i++;
    else if (strcmp(argv[i], "--gpus") == 0) *gpus = (uint32_t)atoi(v), i++;
    else if (strcmp(argv[i], "--max-mib") == 0) b->max_bytes = (uint64_t)atoll(v) << 20, i++;
    else return 0;
  }
  return b->runs >= 1 && b->runs <= BENCH_MAX_RUNS && b->iters >= 1 && *gpus >= 1 &&
         b->max_bytes >= 4096;
}

int main(int argc, char **argv) {
  static bench_t b;
  size_result_t res[SIZES];
  cubert_error_t err;
  uint32_t gpus = 0, want, i, nres = 0;
  uint64_t bytes;
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_nccl", "[--runs R] [--iters I] [--gpus N] [--max-mib M] [-h|--help]",
                       "all_reduce through the client next to raw NCCL.");
  if (!parse(argc, argv, &b, &want)) {
    fprintf(stderr, "usage: %s [--runs R] [--iters I] [--gpus N] [--max-mib M]\n", argv[0]);
    return 2;
  }
  (void)setenv("NCCL_NVLS_ENABLE", "0", 1); /* NVLink multicast stays off (docs/collectives.md) */
  if (cubert__cuda_loader_shared(&b.cu, &err) != CUBERT_STATUS_OK ||
      cubert_cuda_device_count(&gpus, &err) != CUBERT_STATUS_OK ||
      cuda_comm_nccl(&b.nl, &err) != CUBERT_STATUS_OK) {
    printf("bench_nccl: skipped: %s\n", err.reason);
    return 0;
  }
  b.n = gpus < want ? gpus : want;
  if (b.n > MAX_GPUS) b.n = MAX_GPUS;
  for (i = 0; i < b.n; i++) {
    cubert_cuda_options_t o;
    cubert_cuda_options_initialize(&o);
    o.ordinal = i;
    o.device.index = i;
    if (!check_ok(cubert_cuda_client_create(cubert_allocator_libc(), &o, &b.c[i], &err), &err,
                  "create a CUDA device"))
      return 1;
    b.ids[i] = cubert_client_device(b.c[i]);
  }
  {
    char v[32];
    cubert__nccl_version_text(b.nl->version, v, sizeof v);
    printf("bench_nccl: %u GPU%s, NCCL %s, %u runs of %u collectives per size%s\n", (unsigned)b.n,
           b.n > 1 ? "s" : "", v, (unsigned)b.runs, (unsigned)b.iters,
           b.n == 1 ? " (one rank: the client path's overhead over a raw one-rank NCCL call; "
                      "busbw is 0 for one rank)" : "");
  }
  client_check(&b);
  if (!g_failed && raw_open(&b)) {
    printf("| %8s | %11s | %10s | %7s | %7s | %10s | %7s | %7s | %6s | %8s |\n", "size", "count",
           "raw us", "algbw", "busbw", "cubert us", "algbw", "busbw", "ratio", "delta us");
    printf("|----------|-------------|------------|---------|---------|------------|---------|"
           "---------|--------|----------|\n");
    for (bytes = 4096; bytes <= b.max_bytes && nres < SIZES && !g_failed; bytes *= 4)
      if (measure(&b, bytes, &res[nres])) print_size(&b, &res[nres++]);
  }
  raw_close(&b);
  if (nres >= 2) emit_goals(&b, &res[nres - 1], &res[0]);
  for (i = 0; i < b.n; i++) cubert_client_release(b.c[i]);
  if (g_failed) printf("bench_nccl: a call failed or a result did not check\n");
  return g_failed ? 1 : 0;
}

#endif /* CUBERT_HAVE_BACKEND_CUDA */

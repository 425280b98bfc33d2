/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_cuda.c: the CUDA device through the client API
 * (cubert/cuda.h), each figure next to the same operation through the raw
 * Driver API (the same libcuda entry points, kernels and GPU;
 * bench/bench_cuda_raw.h) measured in the same run, alternating run by run.
 * docs/benchmarks.md ("GPU").
 *
 *  1. empty-kernel launches, sustained: N launches (1 cube of 1 unit) then
 *     one sync; launches/s vs a raw cuLaunchKernel loop + cuStreamSynchronize
 *     (goal >= 0.9x);
 *  1b. the same with 8 client threads, each on its own stream (aggregate
 *     launches/s over the wall time of all, then one sync each) vs 8 threads
 *     calling cuLaunchKernel on 8 raw streams (goal >= 0.9x, issue 27: the
 *     client's launches on different streams take no device-wide lock);
 *  2. async launch, client side: bursts of 256 launches into an idle stream,
 *     timed until the last launch returned; ns per launch vs raw
 *     cuLaunchKernel, and the difference (what the client adds; goal
 *     <= 500 ns, a constant peer);
 *  3. a 1024-float add end to end: launch + sync (goal <= 5 us), the
 *     client's sync modes (AUTO: poll, then block; SPIN; BLOCKING) next to
 *     every raw way of waiting (cuStreamSynchronize, cuEventSynchronize, a
 *     spin on cuEventQuery, a spin on cuStreamQuery) and the fastest of them;
 *  4. alloc + free of 1 MiB through the pools (empty + release) vs
 *     cuMemAllocAsync + cuMemFreeAsync on a stream (goal >= 15x), and the
 *     same client path on the CPU device (the share of the pools and the
 *     client, no driver call);
 *  5. a 256 MiB upload from pageable memory (create_bytes of a malloc'd
 *     buffer, then sync: the pinned piece ring) with 1, 2, 4, 8, 12, 16 copy
 *     threads (up to the CPU count) and the default, vs a raw pageable
 *     cuMemcpyHtoDAsync + sync, with the goal >= 20 GB/s as a constant peer;
 *     non-temporal vs plain stores; create() (reads the caller's bytes in
 *     place); raw pinned, raw cuMemHostRegister + copy + cuMemHostUnregister;
 *  6. the same upload from a reserve_staging buffer vs a raw pinned
 *     cuMemcpyHtoDAsync (goal >= 0.9x);
 *  7. a 16M-float add and a 4096^2 matmul (kernel library) through the
 *     client vs the same functions launched raw (goal >= 0.95x), the add
 *     also with the client's SPIN and BLOCKING waits, against a raw spin,
 *     and launched raw on the client's own buffers (memory vs launch + wait);
 *  8. the context's scheduling flags (cuCtxSetFlags: SPIN, YIELD,
 *     BLOCKING_SYNC): the 1024-float add with the client's AUTO and
 *     BLOCKING waits vs raw cuStreamSynchronize under each (the flags are
 *     put back afterwards).
 * Medians over --runs runs (default 11) with [min..max]. Rows in the table
 * and CSV of bench/bench_util.h (CUBERT_BENCH_CSV; `make bench
 * BENCH_EXTRA_CSV=...` joins them to the CPU rows).
 *
 *   build/cuda/bench/bench_cuda [--runs R] [--quick]
 * Without a GPU (or in a build without CUDA) it prints one line
 * "bench_cuda: skipped: CUDA unavailable: <reason>" and exits 0. Exit
 * status 1 when an operation failed or a result did not check.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__GLIBC__) || defined(__linux__)
#include <execinfo.h>
#define BENCH_HAVE_BACKTRACE 1
#endif

#include "bench_util.h"

#if !defined(CUBERT_HAVE_BACKEND_CUDA)
int main(int argc, char **argv) {
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_cuda", "[--runs R] [--quick] [-h|--help]",
                       "GPU launches, copies and an add through the client next to raw Driver API "
                       "loops (a CUDA=1 build).");
  if (argc > 1 && strcmp(argv[1], "--quick") != 0 && strcmp(argv[1], "--runs") != 0)
    return bench_bad_option("bench_cuda", argv[1], "[--runs R] [--quick] [-h|--help]");
  printf("bench_cuda: skipped: CUDA unavailable: this build has no CUDA driver (make CUDA=1)\n");
  return 0;
}
#else

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/cuda.h"
#include "cubert/os.h"
#include "cubert_kernels.h"
#include "bench_cuda_raw.h"

#define MAX_RUNS BENCH_MAX_RUNS
#define BIG (256u << 20)

static int g_failed;

#define MUST(what, expr)                                                                  \
  do {                                                                                    \
    cubert_status_t must_st_ = (expr);                                                    \
    if (must_st_ != CUBERT_STATUS_OK) {                                                   \
      fprintf(stderr, "bench_cuda: %s failed: %s\n", what, cubert_status_name(must_st_)); \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

typedef struct cfg_t {
  int runs;
  int quick;
} cfg_t;

/* ---- the client side ---------------------------------------------------------------------- */

static cubert_client_t *client_make(uint32_t index, uint32_t upload_threads,
                                    cubert_cuda_sync_mode_t sync, cubert_cuda_upload_copy_t copy) {
  cubert_cuda_options_t o;
  cubert_client_t *c = NULL;
  cubert_error_t err;
  cubert_cuda_options_initialize(&o);
  o.device.index = index;
  o.upload_threads = upload_threads;
  o.sync_mode = sync;
  o.upload_copy = copy;
  if (cubert_cuda_client_create(cubert_allocator_libc(), &o, &c, &err) != CUBERT_STATUS_OK) {
    fprintf(stderr, "bench_cuda: cannot create the CUDA device: %s\n", err.reason);
    exit(1);
  }
  return c;
}

static cubert_client_t *client_new(uint32_t index, uint32_t upload_threads) {
  return client_make(index, upload_threads, CUBERT_CUDA_SYNC_AUTO, CUBERT_CUDA_UPLOAD_COPY_AUTO);
}

static cubert_launch_arguments_t args_of(const cubert_binding_t *b, uint32_t nb,
                                         const uint64_t *s, uint32_t ns) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  a.buffers = b;
  a.buffer_count = nb;
  a.scalars = s;
  a.scalar_count = ns;
  return a;
}

static bench_stat_t constant(double v) {
  bench_stat_t s;
  s.median = s.min = s.max = v;
  s.runs = 1;
  return s;
}

static void emit(const char *section, const char *figure, const char *unit, int higher,
                 bench_stat_t ours, const char *peer, bench_stat_t theirs, double goal) {
  bench_row_t row = bench_row(section, figure, unit, higher, ours);
  row.peer = peer;
  row.peer_stat = theirs;
  row.goal = goal;
  bench_emit(&row);
}

static cubert_cuda_client_stats_t stats_of(cubert_client_t *c) {
  cubert_cuda_client_stats_t s;
  MUST("stats", cubert_cuda_client_stats(c, &s));
  return s;
}

/* ---- 1-2: launches ------------------------------------------------------------------------ */

static void bench_launches(const cfg_t *cfg, cubert_client_t *c, raw_t *r) {
  const int n = cfg->quick ? 2000 : 20000, burst = 256;
  double thr_c[MAX_RUNS], thr_r[MAX_RUNS], bur_c[MAX_RUNS], bur_r[MAX_RUNS], diff[MAX_RUNS];
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_launch_arguments_t none = args_of(NULL, 0, NULL, 0);
  cubert_kernel_args_t raw_none;
  cubert_dim3_t d1 = {1, 1, 1};
  CUfunction f_empty = raw_function(r, &ck_empty_kernel);
  int run, i;
  cubert_kernel_args_initialize(&raw_none);
  for (i = 0; i < 100; i++) { /* warm up both */
    MUST("launch", cubert_client_launch(c, &ck_empty_kernel, &one, &none, NULL));
    raw_launch(r, f_empty, &ck_empty_kernel, d1, &raw_none);
  }
  MUST("sync", cubert_client_sync(c, NULL));
  raw_sync(r);
  for (run = 0; run < cfg->runs; run++) {
    double t0, t1;
    /* sustained; who goes first alternates */
    for (i = 0; i < 2; i++) {
      if ((i + run) % 2 == 0) {
        int k;
        t0 = bench_now_ns();
        for (k = 0; k < n; k++) MUST("launch", cubert_client_launch(c, &ck_empty_kernel, &one, &none, NULL));
        MUST("sync", cubert_client_sync(c, NULL));
        thr_c[run] = (bench_now_ns() - t0) / n;
      } else {
        int k;
        t0 = bench_now_ns();
        for (k = 0; k < n; k++) raw_launch(r, f_empty, &ck_empty_kernel, d1, &raw_none);
        raw_sync(r);
        thr_r[run] = (bench_now_ns() - t0) / n;
      }
    }
    /* a burst into an idle stream, until the last launch returned */
    t0 = bench_now_ns();
    for (i = 0; i < burst; i++) MUST("launch", cubert_client_launch(c, &ck_empty_kernel, &one, &none, NULL));
    t1 = bench_now_ns();
    MUST("sync", cubert_client_sync(c, NULL));
    bur_c[run] = (t1 - t0) / burst;
    t0 = bench_now_ns();
    for (i = 0; i < burst; i++) raw_launch(r, f_empty, &ck_empty_kernel, d1, &raw_none);
    t1 = bench_now_ns();
    raw_sync(r);
    bur_r[run] = (t1 - t0) / burst;
    diff[run] = bur_c[run] - bur_r[run];
  }
  emit("gpu launch", "empty kernel, sustained launches (then 1 sync)", "M launches/s", 1,
       bench_stat_rate(bench_stat_of(thr_c, cfg->runs), 1e3), "raw cuLaunchKernel loop",
       bench_stat_rate(bench_stat_of(thr_r, cfg->runs), 1e3), 0.9);
  emit("gpu launch", "async launch, client side (bursts of 256)", "ns", 0,
       bench_stat_of(bur_c, cfg->runs), "raw cuLaunchKernel", bench_stat_of(bur_r, cfg->runs), 0);
  emit("gpu launch", "what the client adds to an async launch", "ns", 0,
       bench_stat_of(diff, cfg->runs), "goal", constant(500), 1.0);
}

/* ---- 1b: launches from 8 threads on 8 streams ---------------------------------------------- */

#define LAUNCH_THREADS 8

typedef struct team_t {
  pthread_barrier_t start, done;
  cubert_client_t *client; /* NULL: raw */
  raw_t *raw;
  CUfunction f_empty;
  int per_thread, runs;
  double began[LAUNCH_THREADS], ended[LAUNCH_THREADS];
} team_t;

typedef struct member_t {
  team_t *team;
  int index;
} member_t;

static void *team_member(void *arg) {
  team_t *t = ((member_t *)arg)->team;
  const int me = ((member_t *)arg)->index;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_launch_arguments_t none = args_of(NULL, 0, NULL, 0);
  cubert_kernel_args_t raw_none;
  cubert_dim3_t d1 = {1, 1, 1};
  cubert_client_t *c = NULL;
  raw_t mine;
  int run, k;
  cubert_kernel_args_initialize(&raw_none);
  if (t->client) {
    MUST("clone", cubert_client_clone(t->client, &c, NULL));
    cubert_client_set_stream(c, 100u + (uint64_t)me); /* slots 100.. of 16: distinct */
    MUST("launch", cubert_client_launch(c, &ck_empty_kernel, &one, &none, NULL)); /* the slot */
    MUST("sync", cubert_client_sync(c, NULL));
  } else {
    mine = *t->raw; /* its own stream in the same context */
    RAW_CU("cuCtxSetCurrent", mine.cu->cuCtxSetCurrent(mine.ctx));
    RAW_CU("cuStreamCreate", mine.cu->cuStreamCreate(&mine.stream, CU_STREAM_NON_BLOCKING));
  }
  for (run = -1; run < t->runs; run++) { /* run -1: warm-up */
    pthread_barrier_wait(&t->start);
    t->began[me] = bench_now_ns();
    if (c) {
      for (k = 0; k < t->per_thread; k++)
        MUST("launch", cubert_client_launch(c, &ck_empty_kernel, &one, &none, NULL));
      MUST("sync", cubert_client_sync(c, NULL));
    } else {
      for (k = 0; k < t->per_thread; k++) raw_launch(&mine, t->f_empty, &ck_empty_kernel, d1, &raw_none);
      raw_sync(&mine);
    }
    t->ended[me] = bench_now_ns();
    pthread_barrier_wait(&t->done);
  }
  if (c) cubert_client_release(c);
  else (void)mine.cu->cuStreamDestroy(mine.stream);
  return NULL;
}

/* ns per launch over all threads (wall / all launches), one value per run. */
static void team_measure(team_t *t, double *out) {
  pthread_t th[LAUNCH_THREADS];
  member_t m[LAUNCH_THREADS];
  int i, run;
  pthread_barrier_init(&t->start, NULL, LAUNCH_THREADS + 1);
  pthread_barrier_init(&t->done, NULL, LAUNCH_THREADS + 1);
  for (i = 0; i < LAUNCH_THREADS; i++) {
    m[i].team = t;
    m[i].index = i;
    if (pthread_create(&th[i], NULL, team_member, &m[i]) != 0) {
      fprintf(stderr, "bench_cuda: pthread_create failed\n");
      exit(1);
    }
  }
  for (run = -1; run < t->runs; run++) {
    double lo, hi;
    pthread_barrier_wait(&t->start);
    pthread_barrier_wait(&t->done);
    lo = t->began[0];
    hi = t->ended[0];
    for (i = 1; i < LAUNCH_THREADS; i++) {
      if (t->began[i] < lo) lo = t->began[i];
      if (t->ended[i] > hi) hi = t->ended[i];
    }
    if (run >= 0) out[run] = (hi - lo) / ((double)t->per_thread * LAUNCH_THREADS);
  }
  for (i = 0; i < LAUNCH_THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&t->start);
  pthread_barrier_destroy(&t->done);
}

/* Raw and client teams alternate run by run (each team's threads start,
 * warm up on their streams, then run once), so a drift of the machine
 * (clocks, the driver's queues) falls on both. */
static void bench_launch_threads(const cfg_t *cfg, cubert_client_t *c, raw_t *r) {
  double ours[MAX_RUNS], theirs[MAX_RUNS];
  team_t t;
  int run;
  memset(&t, 0, sizeof t);
  t.per_thread = cfg->quick ? 500 : 5000;
  t.runs = 1;
  t.raw = r;
  t.f_empty = raw_function(r, &ck_empty_kernel);
  for (run = 0; run < cfg->runs; run++) {
    t.client = NULL;
    team_measure(&t, &theirs[run]);
    t.client = c;
    team_measure(&t, &ours[run]);
  }
  (void)r->cu->cuCtxSetCurrent(r->ctx);
  emit("gpu launch", "empty kernel, 8 threads on 8 streams (aggregate, then 1 sync each)",
       "M launches/s", 1, bench_stat_rate(bench_stat_of(ours, cfg->runs), 1e3),
       "raw cuLaunchKernel, 8 threads on 8 streams",
       bench_stat_rate(bench_stat_of(theirs, cfg->runs), 1e3), 0.9);
}

/* ---- 3 and 8: launch + sync of a 1024-float add ------------------------------------------- */

/* The add's buffers on one client, or on the raw side. */
typedef struct add_t {
  cubert_client_t *c; /* NULL: raw */
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  CUdeviceptr rb[3];
  cubert_kernel_args_t raw_args;
  CUfunction f;
  uint32_t n;
  int foreign; /* raw launches on another add's client buffers (not freed here) */
} add_t;

static void add_open(add_t *a, cubert_client_t *c, raw_t *r, uint32_t n, const float *host) {
  int k;
  memset(a, 0, sizeof *a);
  a->c = c;
  a->n = n;
  if (c) {
    for (k = 0; k < 3; k++)
      MUST("create", cubert_client_create_from_slice(c, host, (uint64_t)n * 4, &a->h[k], NULL));
    a->args = args_of(a->h, 3, NULL, 0);
    return;
  }
  a->f = raw_function(r, &ck_add_f32_kernel);
  cubert_kernel_args_initialize(&a->raw_args);
  for (k = 0; k < 3; k++) {
    a->rb[k] = raw_alloc(r, (size_t)n * 4);
    RAW_CU("cuMemcpyHtoDAsync", r->cu->cuMemcpyHtoDAsync(a->rb[k], host, (size_t)n * 4, r->stream));
    cubert_kernel_args_set_buffer(&a->raw_args, (uint32_t)k, (void *)(uintptr_t)a->rb[k],
                                  (uint64_t)n * 4);
  }
  raw_sync(r);
}

/* Raw launches on the buffers of the client add `from` (its device
 * addresses: cubert_client_get_resource), to tell the client's memory from
 * its launch and wait. */
static void add_open_foreign(add_t *a, const add_t *from, raw_t *r) {
  cubert_resource_t res;
  int k;
  memset(a, 0, sizeof *a);
  a->n = from->n;
  a->foreign = 1;
  a->f = raw_function(r, &ck_add_f32_kernel);
  cubert_kernel_args_initialize(&a->raw_args);
  for (k = 0; k < 3; k++) {
    MUST("get_resource", cubert_client_get_resource(from->c, &from->h[k], &res, NULL));
    a->rb[k] = (CUdeviceptr)res.address;
    cubert_kernel_args_set_buffer(&a->raw_args, (uint32_t)k, (void *)(uintptr_t)res.address,
                                  res.size);
  }
}

static void add_close(add_t *a, raw_t *r) {
  int k;
  if (a->foreign) return;
  for (k = 0; k < 3; k++) {
    if (a->c) MUST("release", cubert_client_handle_release(a->c, &a->h[k], NULL));
    else raw_free(r, a->rb[k]);
  }
  if (!a->c) raw_sync(r);
}

/* Nanoseconds per (launch + wait), over `reps` in a row; raw: `how`. */
static double add_time(add_t *a, raw_t *r, raw_wait_t how, int reps) {
  cubert_cube_count_t count = cubert_cube_count_new_1d((a->n + CK_BLOCK - 1) / CK_BLOCK);
  cubert_dim3_t d = {(a->n + CK_BLOCK - 1) / CK_BLOCK, 1, 1};
  double t0 = bench_now_ns();
  int i;
  for (i = 0; i < reps; i++) {
    if (a->c) {
      MUST("launch", cubert_client_launch(a->c, &ck_add_f32_kernel, &count, &a->args, NULL));
      MUST("sync", cubert_client_sync(a->c, NULL));
    } else {
      raw_launch(r, a->f, &ck_add_f32_kernel, d, &a->raw_args);
      raw_wait(r, how);
    }
  }
  return (bench_now_ns() - t0) / reps;
}

/* out = 2 * host[i] after the adds (h[2] = h[0] + h[1], each host[i]). */
static void add_check(add_t *a, const float *host) {
  float *out;
  uint32_t i;
  if (!a->c) return;
  out = (float *)malloc((size_t)a->n * 4);
  if (!out) exit(1);
  MUST("read", cubert_client_read_one(a->c, &a->h[2], out, (uint64_t)a->n * 4, NULL));
  for (i = 0; i < a->n; i++)
    if (out[i] != 2.0f * host[i]) g_failed = 1;
  free(out);
}

/* Variants of section 3: the client's three modes, then the raw waits. */
#define WAIT_VARIANTS (3 + RAW_WAITS)

static void waits_measure(const cfg_t *cfg, add_t *adds, raw_t *r, int reps,
                          double t[WAIT_VARIANTS][MAX_RUNS]) {
  int run, v;
  for (v = 0; v < WAIT_VARIANTS; v++) (void)add_time(&adds[v < 3 ? v : 3], r, (raw_wait_t)(v < 3 ? 0 : v - 3), 5);
  for (run = 0; run < cfg->runs; run++)
    for (v = 0; v < WAIT_VARIANTS; v++) { /* the order rotates run by run */
      int w = (v + run) % WAIT_VARIANTS;
      t[w][run] = add_time(&adds[w < 3 ? w : 3], r, (raw_wait_t)(w < 3 ? 0 : w - 3), reps);
    }
}

static void bench_waits(const cfg_t *cfg, cubert_client_t *const clients[3], raw_t *r) {
  static double t[WAIT_VARIANTS][MAX_RUNS];
  const int reps = cfg->quick ? 50 : 200;
  float host[1024];
  add_t adds[4];
  bench_stat_t s[WAIT_VARIANTS];
  char figure[96];
  int v, best = 3, i;
  for (i = 0; i < 1024; i++) host[i] = (float)i;
  for (v = 0; v < 3; v++) add_open(&adds[v], clients[v], r, 1024, host);
  add_open(&adds[3], NULL, r, 1024, host);
  waits_measure(cfg, adds, r, reps, t);
  for (v = 0; v < WAIT_VARIANTS; v++) s[v] = bench_stat_of(t[v], cfg->runs);
  for (v = 4; v < WAIT_VARIANTS; v++)
    if (s[v].median < s[best].median) best = v;
  emit("gpu sync", "1024-float add, launch + sync", "ns", 0, s[0], "goal", constant(5000), 1.0);
  emit("gpu sync", "1024-float add, launch + sync (vs raw)", "ns", 0, s[0],
       "raw launch + cuStreamSynchronize", s[3], 0);
  snprintf(figure, sizeof figure, "  vs the fastest raw wait (%s)", raw_wait_names[best - 3] + 6);
  emit("gpu sync", figure, "ns", 0, s[0], raw_wait_names[best - 3], s[best], 0);
  for (v = 4; v < WAIT_VARIANTS; v++)
    emit("gpu sync", "  client (sync AUTO: poll, then block)", "ns", 0, s[0], raw_wait_names[v - 3],
         s[v], 0);
  emit("gpu sync", "  client sync SPIN", "ns", 0, s[1], raw_wait_names[RAW_WAIT_EVENT_SPIN],
       s[3 + RAW_WAIT_EVENT_SPIN], 0);
  emit("gpu sync", "  client sync BLOCKING (cuEventSynchronize)", "ns", 0, s[2],
       raw_wait_names[RAW_WAIT_EVENT_SYNC], s[3 + RAW_WAIT_EVENT_SYNC], 0);
  for (v = 0; v < 3; v++) {
    cubert_cuda_client_stats_t st = stats_of(clients[v]);
    printf("bench_cuda: client %s: %llu waits ended polling, %llu in cuEventSynchronize; %llu "
           "error drains without cuStreamQuery\n",
           v == 0 ? "AUTO" : v == 1 ? "SPIN" : "BLOCKING", (unsigned long long)st.sync_spins,
           (unsigned long long)st.sync_blocks, (unsigned long long)st.stream_queries_skipped);
  }
  for (v = 0; v < 4; v++) {
    add_check(&adds[v], host);
    add_close(&adds[v], r);
  }
}

/* 8: the same under the context's scheduling flags (cuCtxSetFlags). */
static void bench_schedules(const cfg_t *cfg, cubert_client_t *auto_c, cubert_client_t *block_c,
                            raw_t *r) {
  static const unsigned flags[3] = {CU_CTX_SCHED_SPIN, CU_CTX_SCHED_YIELD,
                                    CU_CTX_SCHED_BLOCKING_SYNC};
  static const char *const names[3] = {"SPIN", "YIELD", "BLOCKING_SYNC"};
  const int reps = cfg->quick ? 50 : 200;
  double t[3][MAX_RUNS];
  unsigned before = raw_schedule(r);
  float host[1024];
  add_t adds[3];
  char figure[96];
  int f, run, v, i;
  for (i = 0; i < 1024; i++) host[i] = (float)i;
  add_open(&adds[0], auto_c, r, 1024, host);
  add_open(&adds[1], block_c, r, 1024, host);
  add_open(&adds[2], NULL, r, 1024, host);
  printf("bench_cuda: the primary context's scheduling flags: %u (0 AUTO, 1 SPIN, 2 YIELD, "
         "4 BLOCKING_SYNC)\n", before);
  for (f = 0; f < 3; f++) {
    if (!raw_set_schedule(r, flags[f])) {
      bench_row_t row = bench_row("gpu schedule", "1024-float add under a context schedule", "ns",
                                  0, constant(0));
      row.peer = names[f];
      row.skipped = "cuCtxSetFlags missing or refused";
      bench_emit(&row);
      continue;
    }
    for (v = 0; v < 3; v++) (void)add_time(&adds[v], r, RAW_WAIT_STREAM_SYNC, 5);
    for (run = 0; run < cfg->runs; run++)
      for (v = 0; v < 3; v++) {
        int w = (v + run) % 3;
        t[w][run] = add_time(&adds[w], r, RAW_WAIT_STREAM_SYNC, reps);
      }
    snprintf(figure, sizeof figure, "1024-float add, SCHED_%s: client sync AUTO", names[f]);
    emit("gpu schedule", figure, "ns", 0, bench_stat_of(t[0], cfg->runs),
         "raw launch + cuStreamSynchronize", bench_stat_of(t[2], cfg->runs), 0);
    snprintf(figure, sizeof figure, "1024-float add, SCHED_%s: client sync BLOCKING", names[f]);
    emit("gpu schedule", figure, "ns", 0, bench_stat_of(t[1], cfg->runs),
         "raw launch + cuStreamSynchronize", bench_stat_of(t[2], cfg->runs), 0);
  }
  if (before != 0xFFu) (void)raw_set_schedule(r, before);
  for (v = 0; v < 3; v++) {
    add_check(&adds[v], host);
    add_close(&adds[v], r);
  }
}

/* ---- 4: allocation ------------------------------------------------------------------------ */

static double alloc_time(cubert_client_t *c, int n) {
  cubert_handle_t h;
  double t0 = bench_now_ns();
  int i;
  for (i = 0; i < n; i++) {
    MUST("empty", cubert_client_empty(c, 1u << 20, &h, NULL));
    MUST("release", cubert_client_handle_release(c, &h, NULL));
  }
  return (bench_now_ns() - t0) / n;
}

static void bench_alloc(const cfg_t *cfg, cubert_client_t *c, raw_t *r) {
  const int n = cfg->quick ? 500 : 5000;
  double pool[MAX_RUNS], raw[MAX_RUNS], cpu[MAX_RUNS];
  cubert_cpu_options_t co;
  cubert_client_t *host = NULL;
  int run, i;
  cubert_cpu_options_initialize(&co);
  co.device.index = 40;
  MUST("cpu device", cubert_cpu_client_create(cubert_allocator_libc(), &co, &host, NULL));
  (void)alloc_time(c, 100); /* warm: the pools' pages exist */
  (void)alloc_time(host, 100);
  for (i = 0; i < 100; i++) raw_free(r, raw_alloc(r, 1u << 20));
  MUST("sync", cubert_client_sync(c, NULL));
  raw_sync(r);
  for (run = 0; run < cfg->runs; run++) {
    double t0;
    pool[run] = alloc_time(c, n);
    t0 = bench_now_ns();
    for (i = 0; i < n; i++) raw_free(r, raw_alloc(r, 1u << 20));
    raw[run] = (bench_now_ns() - t0) / n;
    raw_sync(r);
    MUST("sync", cubert_client_sync(c, NULL));
    cpu[run] = alloc_time(host, n);
  }
  emit("gpu memory", "alloc + free 1 MiB (pools: empty + release)", "ns", 0,
       bench_stat_of(pool, cfg->runs), "cuMemAllocAsync + cuMemFreeAsync",
       bench_stat_of(raw, cfg->runs), 15.0);
  emit("gpu memory", "  the same client path on the CPU device", "ns", 0,
       bench_stat_of(pool, cfg->runs), "CPU device empty + release", bench_stat_of(cpu, cfg->runs),
       0);
  cubert_client_release(host);
}

/* ---- 5-6: uploads ---------------------------------------------------------------------------- */

static void no_release(void *owner, void *data, uint64_t size) {
  (void)owner;
  (void)data;
  (void)size;
}

/* One create_bytes of `src` (not owned: released by no_release) + sync. */
static double upload_bytes(cubert_client_t *c, void *src, uint64_t n,
                           cubert_allocation_property_t property) {
  cubert_bytes_t b;
  cubert_handle_t h;
  double t0;
  b.data = src;
  b.size = n;
  b.property = property;
  b.owner = NULL;
  b.release = no_release;
  t0 = bench_now_ns();
  MUST("create_bytes", cubert_client_create_from_bytes(c, b, &h, NULL));
  MUST("sync", cubert_client_sync(c, NULL));
  t0 = bench_now_ns() - t0;
  MUST("release", cubert_client_handle_release(c, &h, NULL));
  return (double)n / t0; /* GB/s */
}

/* Copy-thread counts measured: 1, 2, 4, 8, 12, 16 up to the CPU count; the
 * default client (threads 0) comes last, then the default with plain
 * stores. */
#define UPLOAD_MAX_CONFIGS 8

static uint32_t upload_configs(uint32_t *threads, cubert_cuda_upload_copy_t *copy) {
  static const uint32_t want[6] = {1, 2, 4, 8, 12, 16};
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t n = 0, i;
  for (i = 0; i < 6; i++)
    if (i < 3 || (long)want[i] <= cpus) {
      threads[n] = want[i];
      copy[n++] = CUBERT_CUDA_UPLOAD_COPY_AUTO;
    }
  threads[n] = 0;
  copy[n++] = CUBERT_CUDA_UPLOAD_COPY_AUTO;
  threads[n] = 0;
  copy[n++] = CUBERT_CUDA_UPLOAD_COPY_CACHED;
  return n;
}

static void upload_rows(const cfg_t *cfg, cubert_client_t *const *ct, uint32_t nc,
                        const uint32_t *threads, double up[][MAX_RUNS], bench_stat_t pg,
                        uint64_t n) {
  char figure[96];
  uint32_t t;
  for (t = 0; t + 1 < nc; t++) {
    cubert_cuda_client_stats_t st = stats_of(ct[t]);
    snprintf(figure, sizeof figure, "%u MiB upload from pageable, %u thread(s)%s",
             (unsigned)(n >> 20), (unsigned)st.upload_threads, threads[t] ? "" : " (default)");
    emit("gpu upload", figure, "GB/s", 1, bench_stat_of(up[t], cfg->runs),
         "raw pageable cuMemcpyHtoDAsync", pg, 0);
  }
  emit("gpu upload", "  the same against the goal", "GB/s", 1, bench_stat_of(up[nc - 2], cfg->runs),
       "goal", constant(20.0), 1.0);
  snprintf(figure, sizeof figure, "  non-temporal stores (%s) vs plain memcpy",
           stats_of(ct[nc - 2]).upload_streaming ? "in use" : "unavailable");
  emit("gpu upload", figure, "GB/s", 1, bench_stat_of(up[nc - 2], cfg->runs),
       "the default threads with memcpy", bench_stat_of(up[nc - 1], cfg->runs), 0);
}

static void bench_uploads(const cfg_t *cfg, cubert_client_t *c, raw_t *r) {
  const uint64_t n = cfg->quick ? (64u << 20) : BIG;
  static double up[UPLOAD_MAX_CONFIGS][MAX_RUNS];
  double mk[MAX_RUNS], st[MAX_RUNS], pg[MAX_RUNS], pn[MAX_RUNS], rg[MAX_RUNS];
  uint32_t threads[UPLOAD_MAX_CONFIGS], nc, t;
  cubert_cuda_upload_copy_t copy[UPLOAD_MAX_CONFIGS];
  cubert_client_t *ct[UPLOAD_MAX_CONFIGS];
  unsigned char *src = NULL, *pinned = NULL; /* src page-aligned: cuMemHostRegister wants it */
  CUdeviceptr d;
  int run, registered = 1;
  uint64_t i;
  if (posix_memalign((void **)&src, 4096, n) != 0) exit(1);
  for (i = 0; i < n; i++) src[i] = (unsigned char)(i * 131u);
  nc = upload_configs(threads, copy);
  for (t = 0; t < nc; t++)
    ct[t] = t + 2 == nc ? c : client_make(10u + t, threads[t], CUBERT_CUDA_SYNC_AUTO, copy[t]);
  (void)r->cu->cuCtxSetCurrent(r->ctx);
  RAW_CU("cuMemHostAlloc", r->cu->cuMemHostAlloc((void **)&pinned, n, CU_MEMHOSTALLOC_PORTABLE));
  memcpy(pinned, src, n);
  d = raw_alloc(r, n);
  for (t = 0; t < nc; t++) (void)upload_bytes(ct[t], src, n, CUBERT_ALLOCATION_NATIVE); /* warm */
  for (run = 0; run < cfg->runs; run++) {
    double t0;
    cubert_handle_t h;
    cubert_bytes_t staged;
    for (t = 0; t < nc; t++) {
      uint32_t k = (t + (uint32_t)run) % nc;
      up[k][run] = upload_bytes(ct[k], src, n, CUBERT_ALLOCATION_NATIVE);
    }
    t0 = bench_now_ns();
    MUST("create", cubert_client_create_from_slice(c, src, n, &h, NULL));
    MUST("sync", cubert_client_sync(c, NULL));
    mk[run] = (double)n / (bench_now_ns() - t0);
    MUST("release", cubert_client_handle_release(c, &h, NULL));
    /* a staging buffer (filled before the clock starts) */
    MUST("reserve_staging", cubert_client_reserve_staging(c, &n, 1, &staged, NULL));
    memcpy(staged.data, src, n);
    t0 = bench_now_ns();
    MUST("create_bytes", cubert_client_create_from_bytes(c, staged, &h, NULL));
    MUST("sync", cubert_client_sync(c, NULL));
    st[run] = (double)n / (bench_now_ns() - t0);
    MUST("release", cubert_client_handle_release(c, &h, NULL));
    /* raw: pageable, pinned, registered */
    (void)r->cu->cuCtxSetCurrent(r->ctx);
    t0 = bench_now_ns();
    RAW_CU("cuMemcpyHtoDAsync", r->cu->cuMemcpyHtoDAsync(d, src, n, r->stream));
    raw_sync(r);
    pg[run] = (double)n / (bench_now_ns() - t0);
    t0 = bench_now_ns();
    RAW_CU("cuMemcpyHtoDAsync", r->cu->cuMemcpyHtoDAsync(d, pinned, n, r->stream));
    raw_sync(r);
    pn[run] = (double)n / (bench_now_ns() - t0);
    t0 = bench_now_ns();
    if (registered && r->cu->cuMemHostRegister(src, n, 0) == CUDA_SUCCESS) {
      RAW_CU("cuMemcpyHtoDAsync", r->cu->cuMemcpyHtoDAsync(d, src, n, r->stream));
      raw_sync(r);
      RAW_CU("cuMemHostUnregister", r->cu->cuMemHostUnregister(src));
      rg[run] = (double)n / (bench_now_ns() - t0);
    } else {
      registered = 0; /* the row says so */
      rg[run] = 0;
    }
  }
  upload_rows(cfg, ct, nc, threads, up, bench_stat_of(pg, cfg->runs), n);
  emit("gpu upload", "  create() (reads the caller's bytes in place)", "GB/s", 1,
       bench_stat_of(mk, cfg->runs), "raw pageable cuMemcpyHtoDAsync", bench_stat_of(pg, cfg->runs), 0);
  emit("gpu upload", "  create() vs create_from_bytes (same client)", "GB/s", 1,
       bench_stat_of(mk, cfg->runs), "create_from_bytes", bench_stat_of(up[nc - 2], cfg->runs), 0.9);
  if (registered) {
    emit("gpu upload", "  raw cuMemHostRegister + copy + unregister", "GB/s", 1,
         bench_stat_of(rg, cfg->runs), "raw pinned cuMemcpyHtoDAsync",
         bench_stat_of(pn, cfg->runs), 0);
  } else {
    bench_row_t row = bench_row("gpu upload", "  raw cuMemHostRegister + copy + unregister", "GB/s",
                                1, bench_stat_of(pn, cfg->runs));
    row.peer = "cuMemHostRegister";
    row.skipped = "cuMemHostRegister failed";
    bench_emit(&row);
  }
  emit("gpu upload", "upload from a reserve_staging buffer", "GB/s", 1,
       bench_stat_of(st, cfg->runs), "raw pinned cuMemcpyHtoDAsync", bench_stat_of(pn, cfg->runs), 0.9);
  printf("bench_cuda: create() of %u MiB: %llu uploads read in place\n", (unsigned)(n >> 20),
         (unsigned long long)stats_of(c).uploads_borrowed);
  raw_free(r, d);
  raw_sync(r);
  (void)r->cu->cuMemFreeHost(pinned);
  for (t = 0; t < nc; t++)
    if (ct[t] != c) cubert_client_release(ct[t]);
  free(src);
}

/* ---- 7: compute ---------------------------------------------------------------------------------- */

/* The add variants of section 7: client AUTO, SPIN, BLOCKING (adds 0-2),
 * raw + cuStreamSynchronize (3), raw + a spin on cuEventQuery (3), raw on
 * the client's buffers + cuStreamSynchronize (4). */
static int compute_add(int v) { return v < 4 ? v : v == 4 ? 3 : 4; }
static raw_wait_t compute_wait(int v) { return v == 4 ? RAW_WAIT_EVENT_SPIN : RAW_WAIT_STREAM_SYNC; }

static void bench_compute(const cfg_t *cfg, cubert_client_t *const clients[3], raw_t *r) {
  const uint32_t n = cfg->quick ? (1u << 22) : (1u << 24), m = cfg->quick ? 1024 : 4096;
  double add_t_[6][MAX_RUNS], mm_c[MAX_RUNS], mm_r[MAX_RUNS];
  const uint64_t words = (uint64_t)n > (uint64_t)m * m ? (uint64_t)n : (uint64_t)m * m;
  float *host = (float *)malloc((size_t)words * sizeof(float));
  cubert_client_t *c = clients[0];
  cubert_handle_t hm[3];
  CUdeviceptr rm[3];
  cubert_kernel_args_t raw_mm;
  cubert_launch_arguments_t mm3;
  uint64_t scal[3];
  add_t adds[5];
  cubert_cube_count_t cmm = cubert_cube_count_new_2d(m / CK_TILE, m / CK_TILE);
  cubert_dim3_t dmm = {m / CK_TILE, m / CK_TILE, 1};
  CUfunction f_mm = raw_function(r, &ck_matmul_f32_kernel);
  const double bytes = 3.0 * n * 4;
  /* launch + sync rounds per run and variant (one ~0.1 ms round alone was
   * too noisy to tell 5 % apart) */
  const int add_reps = cfg->quick ? 4 : 20;
  int run, k, v;
  uint64_t i;
  if (!host) exit(1);
  for (i = 0; i < words; i++) host[i] = (float)(i % 7);
  for (v = 0; v < 3; v++) add_open(&adds[v], clients[v], r, n, host);
  add_open(&adds[3], NULL, r, n, host);
  add_open_foreign(&adds[4], &adds[0], r);
  cubert_kernel_args_initialize(&raw_mm);
  for (k = 0; k < 3; k++) {
    MUST("create", cubert_client_create_from_slice(c, host, (uint64_t)m * m * 4, &hm[k], NULL));
    rm[k] = raw_alloc(r, (size_t)m * m * 4);
    cubert_kernel_args_set_buffer(&raw_mm, (uint32_t)k, (void *)(uintptr_t)rm[k], (uint64_t)m * m * 4);
  }
  scal[0] = scal[1] = scal[2] = m;
  for (k = 0; k < 3; k++) cubert_kernel_args_set_u64(&raw_mm, (uint32_t)k, m);
  mm3 = args_of(hm, 3, scal, 3);
  for (v = 0; v < 6; v++) (void)add_time(&adds[compute_add(v)], r, compute_wait(v), 1);
  MUST("launch", cubert_client_launch(c, &ck_matmul_f32_kernel, &cmm, &mm3, NULL)); /* warm */
  MUST("sync", cubert_client_sync(c, NULL));
  raw_launch(r, f_mm, &ck_matmul_f32_kernel, dmm, &raw_mm);
  raw_sync(r);
  for (run = 0; run < cfg->runs; run++) {
    double t0;
    /* the add: client AUTO, SPIN, BLOCKING, raw stream sync, raw event spin,
     * raw on the client's buffers */
    for (v = 0; v < 6; v++) {
      int w = (v + run) % 6;
      add_t_[w][run] = bytes / add_time(&adds[compute_add(w)], r, compute_wait(w), add_reps);
    }
    t0 = bench_now_ns();
    MUST("launch", cubert_client_launch(c, &ck_matmul_f32_kernel, &cmm, &mm3, NULL));
    MUST("sync", cubert_client_sync(c, NULL));
    mm_c[run] = 2.0 * m * m * m / (bench_now_ns() - t0);
    t0 = bench_now_ns();
    raw_launch(r, f_mm, &ck_matmul_f32_kernel, dmm, &raw_mm);
    raw_sync(r);
    mm_r[run] = 2.0 * m * m * m / (bench_now_ns() - t0);
  }
  {
    float row[64];
    double ref = 0;
    uint64_t p;
    /* out[0][j] for j < 64 against the host: the matmul ran on the right data */
    MUST("read", cubert_client_read_one(c, &hm[2], host, (uint64_t)m * m * 4, NULL));
    memcpy(row, host, sizeof row);
    for (p = 0; p < m; p++) ref += (double)(p % 7) * (double)((p * m) % 7);
    if (row[0] != (float)ref) {
      fprintf(stderr, "bench_cuda: matmul out[0][0] = %g, expected %g\n", row[0], ref);
      g_failed = 1;
    }
    for (p = 0; p < words; p++) host[p] = (float)(p % 7);
  }
  emit("gpu compute", cfg->quick ? "4M-float add (client launch + sync)" : "16M-float add (client launch + sync)",
       "GB/s", 1, bench_stat_of(add_t_[0], cfg->runs), "the same function launched raw",
       bench_stat_of(add_t_[3], cfg->runs), 0.95);
  emit("gpu compute", "  the same vs a raw spin on cuEventQuery", "GB/s", 1,
       bench_stat_of(add_t_[0], cfg->runs), raw_wait_names[RAW_WAIT_EVENT_SPIN],
       bench_stat_of(add_t_[4], cfg->runs), 0.95);
  emit("gpu compute", "  client sync SPIN", "GB/s", 1, bench_stat_of(add_t_[1], cfg->runs),
       "the same function launched raw", bench_stat_of(add_t_[3], cfg->runs), 0);
  emit("gpu compute", "  client sync BLOCKING (cuEventSynchronize)", "GB/s", 1,
       bench_stat_of(add_t_[2], cfg->runs), "the same function launched raw",
       bench_stat_of(add_t_[3], cfg->runs), 0);
  emit("gpu compute", "  raw launch + sync on the client's buffers", "GB/s", 1,
       bench_stat_of(add_t_[5], cfg->runs), "the same function launched raw",
       bench_stat_of(add_t_[3], cfg->runs), 0);
  emit("gpu compute", cfg->quick ? "1024^2 matmul (client launch + sync)" : "4096^2 matmul (client launch + sync)",
       "GFLOP/s", 1, bench_stat_of(mm_c, cfg->runs), "the same function launched raw",
       bench_stat_of(mm_r, cfg->runs), 0.95);
  for (v = 0; v < 5; v++) {
    add_check(&adds[v], host);
    add_close(&adds[v], r);
  }
  for (k = 0; k < 3; k++) {
    MUST("release", cubert_client_handle_release(c, &hm[k], NULL));
    raw_free(r, rm[k]);
  }
  raw_sync(r);
  free(host);
}

/* The section running, named if the program dies (a crash in the driver or a
 * benchmark must still say where; stdout is line-buffered for the same reason). */
static const char *volatile g_section = "start";

static void on_fatal_signal(int sig) {
  char line[160];
  int n = snprintf(line, sizeof line, "bench_cuda: died of signal %d in section '%s'\n", sig,
                   g_section);
  if (n > 0) (void)write(2, line, (size_t)n);
#ifdef BENCH_HAVE_BACKTRACE
  { /* the frames, for addr2line -e bench_cuda (no gdb on the GPU machine) */
    void *frames[48];
    int k = backtrace(frames, 48);
    backtrace_symbols_fd(frames, k, 2);
  }
#endif
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(int argc, char **argv) {
  cfg_t cfg;
  cubert_cuda_device_info_t info;
  cubert_client_t *clients[3];
  cubert_error_t err;
  raw_t r;
  int k, only_threads = 0;
  cfg.runs = 11;
  cfg.quick = 0;
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_cuda", "[--runs R] [--quick] [--only-threads] [-h|--help]",
                       "GPU launches, copies and an add through the client next to raw Driver API "
                       "loops (--only-threads: only 8 threads launching on 8 streams).");
  for (k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--quick") == 0) {
      cfg.quick = 1;
      cfg.runs = 5;
    } else if (strcmp(argv[k], "--only-threads") == 0) {
      only_threads = 1;
    } else if (strcmp(argv[k], "--runs") == 0 && k + 1 < argc) {
      cfg.runs = atoi(argv[++k]);
    } else {
      fprintf(stderr, "usage: bench_cuda [--runs R] [--quick] [--only-threads]\n");
      return 2;
    }
  }
  if (cfg.runs < 1 || cfg.runs > MAX_RUNS) {
    fprintf(stderr, "bench_cuda: --runs must be 1..%d\n", MAX_RUNS);
    return 2;
  }
  if (cubert_cuda_available(&err) != CUBERT_STATUS_OK) {
    printf("bench_cuda: skipped: %s\n", err.reason);
    return 0;
  }
  if (!cubert_cuda_image_find(ck_empty_kernel.cuda_entry_name)) {
    printf("bench_cuda: skipped: no kernel images (nvcc was not found when this was built)\n");
    return 0;
  }
  MUST("device info", cubert_cuda_device_info(0, &info, &err));
  printf("bench_cuda: GPU 0 \"%s\" (sm_%u%u, %llu MiB), driver %d.%d, %d runs, %ld CPUs%s\n",
         info.properties.name, info.compute_major, info.compute_minor,
         (unsigned long long)(info.total_memory >> 20), info.driver_version / 1000,
         info.driver_version % 1000 / 10, cfg.runs, sysconf(_SC_NPROCESSORS_ONLN),
         cfg.quick ? " (--quick: not for the record)" : "");
  bench_print_load("before");
  setvbuf(stdout, NULL, _IOLBF, 0);
  signal(SIGSEGV, on_fatal_signal);
  signal(SIGBUS, on_fatal_signal);
  signal(SIGABRT, on_fatal_signal);
  clients[0] = client_new(0, 0); /* the defaults: sync AUTO */
  clients[1] = client_make(1, 1, CUBERT_CUDA_SYNC_SPIN, CUBERT_CUDA_UPLOAD_COPY_AUTO);
  clients[2] = client_make(2, 1, CUBERT_CUDA_SYNC_BLOCKING, CUBERT_CUDA_UPLOAD_COPY_AUTO);
  raw_open(&r);
  bench_table_begin("bench_cuda");
  g_section = "launches";
  if (only_threads) {
    bench_launch_threads(&cfg, clients[0], &r);
    raw_close(&r);
    for (k = 0; k < 3; k++) cubert_client_release(clients[k]);
    return g_failed ? 1 : 0;
  }
  bench_launches(&cfg, clients[0], &r);
  bench_launch_threads(&cfg, clients[0], &r);
  g_section = "waits";
  bench_waits(&cfg, clients, &r);
  g_section = "alloc";
  bench_alloc(&cfg, clients[0], &r);
  g_section = "uploads";
  bench_uploads(&cfg, clients[0], &r);
  g_section = "compute";
  bench_compute(&cfg, clients, &r);
  g_section = "schedules";
  bench_schedules(&cfg, clients[0], clients[2], &r);
  g_section = "raw teardown";
  raw_close(&r);
  g_section = "client release";
  for (k = 0; k < 3; k++) cubert_client_release(clients[k]);
  g_section = "end";
  bench_print_load("after");
  if (g_failed) printf("bench_cuda: a result did not check\n");
  return g_failed ? 1 : 0;
}
#endif /* CUBERT_HAVE_BACKEND_CUDA */

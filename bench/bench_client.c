/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_client.c: the compute client over the threaded CPU server
 * (cubert/client.h + cubert/cpu.h), through the public API only.
 *
 * Every figure is the median over --runs repeated runs (default 15), printed
 * with the spread (min..max of the runs):
 *  1. round trip: one empty-kernel launch (1 cube of 1 unit) + client sync,
 *     on the calling thread's stream; ns per pair (mean of a batch per run);
 *  2. async launches from one thread, sustained: N launches of the empty
 *     kernel then one sync, time / N (ns per launch, launches/s); the stream
 *     ring (512 ops) fills, so this is the rate the stream worker keeps up;
 *  2b. async launch, client-side cost: bursts of 256 launches (less than the
 *     ring) into an idle stream, timed until the last launch returned (the
 *     drain after each burst is not timed);
 *  2c. alloc + free of 1 MiB through the pools (empty + release: the
 *     memory manager's reservation, the device lock, the handle), next to
 *     malloc + free of 1 MiB;
 *  3. elementwise f32 add a + b -> out over three 64 MiB buffers (CHECKED
 *     mode): launch + sync, GB/s counting bytes read + written (3 x 64 MiB),
 *     next to memcpy of 64 MiB (2 x 64 MiB moved) timed in the same run, right
 *     after each add; ratio = add GB/s / memcpy GB/s (median of the per-run
 *     ratios). Once with the default worker count (online CPUs - 1) and once
 *     with workers = 1 (skipped when the default is 1: the same configuration). The stream's worker thread also runs cubes, so a
 *     device runs kernels on workers + 1 threads.
 * Context rows: the bare executor (backend-cpu/cpu/cpu_executor.h) launch + wait
 * of the same empty kernel, i.e. the floor under figure 1 without the client,
 * the device handle and the stream thread; a 2-thread memcpy (each thread
 * half of the 64 MiB) as the machine's parallel copy bandwidth.
 *
 * Goals (issue text, for a 2-core machine): round trip <= 5 us, >= 5 M async
 * launches/s, add >= 80% of memcpy bandwidth; an absolute goal is printed as
 * a constant peer ("goal") with a goal ratio of 1. Every other ratio is
 * between two figures measured in this run (GPU figures measured elsewhere
 * are quoted in docs/benchmarks.md, never as a ratio here). The rows go to the table
 * and the CSV of bench/bench_util.h; bench/bench_peers.c has the peers
 * measured in the same run.
 *
 *   make BUILD=build bench   or   build/bench/bench_client [--runs R] [--quick]
 * --quick: 5 runs and smaller batches (a smoke run, not for the record).
 * Exit status 0 when every operation succeeded and every result checked
 * (missed goals do not fail the run: this is not a timed test).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "bench_util.h"
#include "cpu/cpu_executor.h"
#include "cubert_kernels.h"

#define MAX_RUNS BENCH_MAX_RUNS
#define BURST 256

/* goals (issue text) */
#define GOAL_ROUND_TRIP_NS 5000.0
#define GOAL_LAUNCHES_PER_S 5e6
#define GOAL_BANDWIDTH_RATIO 0.80

typedef struct config_t {
  int runs;
  long round_trips; /* per run */
  long async_n;     /* per run */
  int bursts;       /* per run */
  const char *only; /* --only rt|async|burst|add: that part alone (for profiling) */
} config_t;

static void die(const char *what, cubert_status_t status, const cubert_error_t *err) {
  char msg[256];
  msg[0] = 0;
  if (err) cubert_error_format(err, msg, sizeof msg);
  fprintf(stderr, "bench_client: %s failed: %s %s\n", what, cubert_status_name(status), msg);
  exit(1);
}

#define MUST(what, expr)                                  \
  do {                                                    \
    cubert_status_t st_ = (expr);                         \
    if (st_ != CUBERT_STATUS_OK) die((what), st_, &err); \
  } while (0)

static cubert_client_t *device_create(uint32_t workers) {
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  cubert_cpu_options_initialize(&o);
  o.workers = workers;
  MUST("cubert_cpu_client_create", cubert_cpu_client_create(cubert_allocator_libc(), &o, &client, &err));
  return client;
}

static cubert_launch_arguments_t args_of(const cubert_binding_t *buffers, uint32_t count) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  a.buffers = buffers;
  a.buffer_count = count;
  a.scalars = NULL;
  a.scalar_count = 0;
  return a;
}

/* ---- 1. launch + sync round trip ---------------------------------------------------- */

static bench_stat_t bench_round_trip(cubert_client_t *client, const config_t *cfg) {
  double t[MAX_RUNS];
  cubert_launch_arguments_t args = args_of(NULL, 0);
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  long i;
  int r;
  for (r = -1; r < cfg->runs; r++) { /* r = -1: warm-up */
    double t0 = bench_now_ns();
    for (i = 0; i < cfg->round_trips; i++) {
      MUST("launch", cubert_client_launch(client, &ck_empty_kernel, &count, &args, &err));
      MUST("sync", cubert_client_sync(client, &err));
    }
    if (r >= 0) t[r] = (bench_now_ns() - t0) / (double)cfg->round_trips;
  }
  return bench_stat_of(t, cfg->runs);
}

/* ---- 2. async launches ---------------------------------------------------------------- */

static bench_stat_t bench_async_sustained(cubert_client_t *client, const config_t *cfg) {
  double t[MAX_RUNS];
  cubert_launch_arguments_t args = args_of(NULL, 0);
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  long i;
  int r;
  for (r = -1; r < cfg->runs; r++) {
    double t0 = bench_now_ns();
    for (i = 0; i < cfg->async_n; i++)
      MUST("launch", cubert_client_launch(client, &ck_empty_kernel, &count, &args, &err));
    MUST("sync", cubert_client_sync(client, &err));
    if (r >= 0) t[r] = (bench_now_ns() - t0) / (double)cfg->async_n;
  }
  return bench_stat_of(t, cfg->runs);
}

static bench_stat_t bench_async_burst(cubert_client_t *client, const config_t *cfg) {
  double t[MAX_RUNS];
  cubert_launch_arguments_t args = args_of(NULL, 0);
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  int r, b, i;
  for (r = -1; r < cfg->runs; r++) {
    double total = 0;
    for (b = 0; b < cfg->bursts; b++) {
      double t0;
      MUST("sync", cubert_client_sync(client, &err)); /* idle stream, empty ring */
      t0 = bench_now_ns();
      for (i = 0; i < BURST; i++)
        MUST("launch", cubert_client_launch(client, &ck_empty_kernel, &count, &args, &err));
      total += bench_now_ns() - t0;
    }
    if (r >= 0) t[r] = total / ((double)cfg->bursts * BURST);
  }
  MUST("sync", cubert_client_sync(client, &err));
  return bench_stat_of(t, cfg->runs);
}

/* ---- 2c. alloc + free through the pools ------------------------------------------------ */

/* empty(1 MiB) + release, and (*out_malloc) malloc + free of 1 MiB with the
 * same pattern (glibc maps a block that size and unmaps it on free). */
static bench_stat_t bench_alloc(cubert_client_t *client, const config_t *cfg,
                                bench_stat_t *out_malloc) {
  double t[MAX_RUNS], m[MAX_RUNS];
  const long n = cfg->async_n / 10 + 100;
  cubert_handle_t h;
  cubert_error_t err;
  long i;
  int r;
  for (r = -1; r < cfg->runs; r++) {
    double t0 = bench_now_ns();
    for (i = 0; i < n; i++) {
      MUST("empty", cubert_client_empty(client, 1u << 20, &h, &err));
      MUST("release", cubert_client_handle_release(client, &h, &err));
    }
    if (r >= 0) t[r] = (bench_now_ns() - t0) / (double)n;
    t0 = bench_now_ns();
    for (i = 0; i < n; i++) {
      void *p = malloc(1u << 20);
      BENCH_CLOBBER(p);
      free(p);
    }
    if (r >= 0) m[r] = (bench_now_ns() - t0) / (double)n;
  }
  *out_malloc = bench_stat_of(m, cfg->runs);
  return bench_stat_of(t, cfg->runs);
}

/* ---- the bare executor (context) ------------------------------------------------------ */

static bench_stat_t bench_executor_floor(const config_t *cfg, uint32_t workers) {
  double t[MAX_RUNS];
  cubert_cpu_executor_t *ex = NULL;
  cubert_kernel_args_t args;
  cubert_dim3_t one;
  cubert_error_t err;
  long i;
  int r;
  one.x = one.y = one.z = 1;
  cubert_kernel_args_initialize(&args);
  MUST("executor create", cubert__cpu_executor_create(cubert_allocator_libc(), workers, &ex, &err));
  for (r = -1; r < cfg->runs; r++) {
    double t0 = bench_now_ns();
    for (i = 0; i < cfg->round_trips; i++)
      MUST("executor run", cubert__cpu_executor_run(ex, &ck_empty_kernel, one, one, &args,
                                                    CUBERT_EXECUTION_CHECKED, NULL, &err));
    if (r >= 0) t[r] = (bench_now_ns() - t0) / (double)cfg->round_trips;
  }
  cubert__cpu_executor_destroy(ex);
  return bench_stat_of(t, cfg->runs);
}

/* ---- 3. elementwise add vs memcpy ------------------------------------------------------ */

typedef struct copy_part_t {
  unsigned char *dst;
  const unsigned char *src;
  size_t bytes;
} copy_part_t;

static void *copy_part(void *arg) {
  copy_part_t *p = (copy_part_t *)arg;
  memcpy(p->dst, p->src, p->bytes);
  return NULL;
}

/* One memcpy of `bytes`, on 1 or 2 threads; returns ns. */
static double timed_memcpy(void *dst, const void *src, size_t bytes, int threads) {
  double t0 = bench_now_ns(), t1;
  if (threads == 1) {
    memcpy(dst, src, bytes);
  } else {
    pthread_t th;
    copy_part_t a, b;
    a.dst = (unsigned char *)dst;
    a.src = (const unsigned char *)src;
    a.bytes = bytes / 2;
    b.dst = a.dst + a.bytes;
    b.src = a.src + a.bytes;
    b.bytes = bytes - a.bytes;
    if (pthread_create(&th, NULL, copy_part, &b) != 0) {
      fprintf(stderr, "bench_client: pthread_create failed\n");
      exit(1);
    }
    copy_part(&a);
    pthread_join(th, NULL);
  }
  t1 = bench_now_ns();
  __asm__ __volatile__("" : : "r"(dst) : "memory");
  return t1 - t0;
}

typedef struct bandwidth_t {
  bench_stat_t add_gbs, exec_gbs, memcpy_gbs, memcpy2_gbs, ratio, ratio2, ratio_exec;
} bandwidth_t;

/* Per run: the add through the client (launch + sync), the same add on a
 * bare executor with the same worker count (over host buffers), memcpy on 1
 * and on 2 threads. */
static bandwidth_t bench_add(uint32_t workers, const config_t *cfg, const float *a, const float *b,
                             float *host_out, void *copy_dst, size_t n) {
  const size_t bytes = n * sizeof(float);
  double add[MAX_RUNS], ex_add[MAX_RUNS], mc[MAX_RUNS], mc2[MAX_RUNS];
  double ratio[MAX_RUNS], ratio2[MAX_RUNS], ratio_exec[MAX_RUNS];
  cubert_client_t *client = device_create(workers);
  cubert_cpu_executor_t *ex = NULL;
  cubert_kernel_args_t kargs;
  cubert_dim3_t grid;
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d((uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK));
  cubert_error_t err;
  bandwidth_t out;
  size_t i, bad = 0;
  int r;
  MUST("executor create",
       cubert__cpu_executor_create(cubert_allocator_libc(), workers, &ex, &err));
  cubert_kernel_args_initialize(&kargs);
  cubert_kernel_args_set_buffer(&kargs, 0, (void *)(uintptr_t)a, bytes);
  cubert_kernel_args_set_buffer(&kargs, 1, (void *)(uintptr_t)b, bytes);
  cubert_kernel_args_set_buffer(&kargs, 2, host_out, bytes);
  grid.x = (uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK);
  grid.y = grid.z = 1;
  MUST("create a", cubert_client_create_from_slice(client, a, bytes, &h[0], &err));
  MUST("create b", cubert_client_create_from_slice(client, b, bytes, &h[1], &err));
  MUST("empty out", cubert_client_empty(client, bytes, &h[2], &err));
  MUST("sync", cubert_client_sync(client, &err));
  args = args_of(h, 3);
  for (r = -1; r < cfg->runs; r++) { /* r = -1: warm-up */
    double t0 = bench_now_ns(), ta, te, tm, tm2;
    MUST("add launch", cubert_client_launch(client, &ck_add_f32_kernel, &count, &args, &err));
    MUST("sync", cubert_client_sync(client, &err));
    ta = bench_now_ns() - t0;
    t0 = bench_now_ns();
    MUST("executor add", cubert__cpu_executor_run(ex, &ck_add_f32_kernel, grid,
                                                  ck_add_f32_kernel.cube_dim, &kargs,
                                                  CUBERT_EXECUTION_CHECKED, NULL, &err));
    te = bench_now_ns() - t0;
    tm = timed_memcpy(copy_dst, a, bytes, 1);
    tm2 = timed_memcpy(copy_dst, b, bytes, 2);
    if (r < 0) continue;
    add[r] = 3.0 * (double)bytes / ta;
    ex_add[r] = 3.0 * (double)bytes / te;
    mc[r] = 2.0 * (double)bytes / tm;
    mc2[r] = 2.0 * (double)bytes / tm2;
    ratio[r] = add[r] / mc[r];
    ratio2[r] = add[r] / mc2[r];
    ratio_exec[r] = ex_add[r] / mc[r];
  }
  for (i = 0; i < n; i++) /* the executor's result */
    if (host_out[i] != a[i] + b[i]) bad++;
  memset(host_out, 0, bytes);
  MUST("read out", cubert_client_read_one(client, &h[2], host_out, bytes, &err));
  for (i = 0; i < n; i++)
    if (host_out[i] != a[i] + b[i]) bad++;
  if (bad) {
    fprintf(stderr, "bench_client: add: %lu wrong results\n", (unsigned long)bad);
    exit(1);
  }
  for (i = 0; i < 3; i++) MUST("release", cubert_client_handle_release(client, &h[i], NULL));
  cubert_client_release(client);
  cubert__cpu_executor_destroy(ex);
  out.add_gbs = bench_stat_of(add, cfg->runs);
  out.exec_gbs = bench_stat_of(ex_add, cfg->runs);
  out.memcpy_gbs = bench_stat_of(mc, cfg->runs);
  out.memcpy2_gbs = bench_stat_of(mc2, cfg->runs);
  out.ratio = bench_stat_of(ratio, cfg->runs);
  out.ratio2 = bench_stat_of(ratio2, cfg->runs);
  out.ratio_exec = bench_stat_of(ratio_exec, cfg->runs);
  return out;
}

/* ---- report -------------------------------------------------------------------------- */

/* A row against a peer (NULL: none), with a goal on the ratio (0: none);
 * ratio > 0: report it instead of the ratio of the medians. */
static void emit_ratio(const char *section, const char *figure, const char *unit, int higher,
                       bench_stat_t ours, const char *peer, bench_stat_t theirs, double goal,
                       double ratio) {
  bench_row_t row = bench_row(section, figure, unit, higher, ours);
  row.peer = peer;
  row.peer_stat = theirs;
  row.goal = goal;
  row.ratio = ratio;
  bench_emit(&row);
}

static void emit(const char *section, const char *figure, const char *unit, int higher,
                 bench_stat_t ours, const char *peer, bench_stat_t theirs, double goal) {
  emit_ratio(section, figure, unit, higher, ours, peer, theirs, goal, 0);
}

/* A constant (a goal) as a peer: its row says met or missed. */
static bench_stat_t constant(double v) {
  bench_stat_t s;
  s.median = s.min = s.max = v;
  s.runs = 1;
  return s;
}

/* --only: one part, its median printed (for perf / callgrind). */
static int run_only(const config_t *cfg) {
  const size_t bytes = (size_t)64 << 20, n = bytes / sizeof(float);
  cubert_client_t *client;
  bench_stat_t s;
  if (strcmp(cfg->only, "add") == 0) {
    float *a = (float *)calloc(n, sizeof(float)), *b = (float *)calloc(n, sizeof(float));
    float *o = (float *)malloc(bytes);
    void *d = calloc(1, bytes);
    bandwidth_t bw;
    if (!a || !b || !o || !d) return 1;
    bw = bench_add(0, cfg, a, b, o, d, n);
    printf("add: client %.2f GB/s, executor %.2f GB/s, memcpy %.2f GB/s, ratio %.2f (executor "
           "%.2f)\n",
           bw.add_gbs.median, bw.exec_gbs.median, bw.memcpy_gbs.median, bw.ratio.median,
           bw.ratio_exec.median);
    free(a);
    free(b);
    free(o);
    free(d);
    return 0;
  }
  client = device_create(0);
  if (strcmp(cfg->only, "rt") == 0)
    s = bench_round_trip(client, cfg);
  else if (strcmp(cfg->only, "async") == 0)
    s = bench_async_sustained(client, cfg);
  else if (strcmp(cfg->only, "burst") == 0)
    s = bench_async_burst(client, cfg);
  else {
    fprintf(stderr, "bench_client: --only takes rt, async, burst or add\n");
    cubert_client_release(client);
    return 2;
  }
  printf("%s: %.0f ns (min %.0f, max %.0f)\n", cfg->only, s.median, s.min, s.max);
  cubert_client_release(client);
  return 0;
}

#define CLIENT_OPTIONS "[--runs R] [--quick] [--only rt|async|burst|add] [-h|--help]"

int main(int argc, char **argv) {
  config_t cfg;
  const size_t bytes = (size_t)64 << 20, n = bytes / sizeof(float);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t cpus = online > 0 ? (uint32_t)online : 1u;
  uint32_t default_workers = cpus > 1 ? cpus - 1 : 1;
  cubert_client_t *client;
  bench_stat_t rt, floor_rt, sustained, burst, alloc, alloc_malloc;
  bandwidth_t bw_default, bw_one;
  float *a, *b, *host_out;
  void *copy_dst;
  size_t i;
  int k;
  cfg.runs = 15;
  cfg.round_trips = 2000;
  cfg.async_n = 100000;
  cfg.bursts = 40;
  cfg.only = NULL;
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_client", CLIENT_OPTIONS,
                       "The client's round trip, async launches, bursts and a 64 MiB add next to "
                       "memcpy/malloc measured in the same run.");
  for (k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--quick") == 0) {
      cfg.runs = 5;
      cfg.round_trips = 200;
      cfg.async_n = 10000;
      cfg.bursts = 5;
    } else if (strcmp(argv[k], "--only") == 0 && k + 1 < argc) {
      cfg.only = argv[++k];
    } else if (strcmp(argv[k], "--runs") == 0 && k + 1 < argc) {
      cfg.runs = atoi(argv[++k]);
    } else {
      return bench_bad_option("bench_client", argv[k], CLIENT_OPTIONS);
    }
  }
  if (cfg.runs < 1 || cfg.runs > MAX_RUNS) {
    fprintf(stderr, "bench_client: --runs must be 1..%d\n", MAX_RUNS);
    return 2;
  }

  printf("bench_client: CPU server through the client API; %u online CPUs; default workers %u "
         "(+ the stream thread); median of %d runs, spread = min..max of the runs\n",
         cpus, default_workers, cfg.runs);
  printf("  per run: %ld round trips | %ld async launches + 1 sync | %d bursts of %d launches | "
         "1 add + 1 memcpy (1 thread) + 1 memcpy (2 threads)\n\n",
         cfg.round_trips, cfg.async_n, cfg.bursts, BURST);

  bench_print_load("before");
  if (cfg.only) return run_only(&cfg);
  client = device_create(0);
  rt = bench_round_trip(client, &cfg);
  sustained = bench_async_sustained(client, &cfg);
  burst = bench_async_burst(client, &cfg);
  alloc = bench_alloc(client, &cfg, &alloc_malloc);
  cubert_client_release(client);
  floor_rt = bench_executor_floor(&cfg, default_workers);

  a = (float *)malloc(bytes);
  b = (float *)malloc(bytes);
  host_out = (float *)malloc(bytes);
  copy_dst = malloc(bytes);
  if (!a || !b || !host_out || !copy_dst) {
    fprintf(stderr, "bench_client: out of host memory\n");
    return 1;
  }
  for (i = 0; i < n; i++) {
    a[i] = (float)(i & 1023);
    b[i] = 0.25f;
  }
  memset(host_out, 0, bytes);
  memset(copy_dst, 0, bytes);
  bw_default = bench_add(0, &cfg, a, b, host_out, copy_dst, n);
  /* workers = 1 is a second configuration only when the default is not 1 */
  if (default_workers != 1) bw_one = bench_add(1, &cfg, a, b, host_out, copy_dst, n);

  bench_table_begin("bench_client");
  emit("client", "empty launch + sync round trip", "ns", 0, rt, "goal", constant(5000), 1.0);
  emit("client", "  same, vs the bare executor (run + wait, floor)", "ns", 0, rt, "executor", floor_rt,
       0);
  emit("client", "async launch, sustained (N launches + 1 sync)", "ns", 0, sustained,
       "goal (5 M/s)", constant(1e9 / GOAL_LAUNCHES_PER_S), 1.0);
  emit("client", "  same, as launches/s", "M/s", 1, bench_stat_rate(sustained, 1e3), NULL,
       constant(0), 0);
  emit("client", "async launch, client side (bursts of 256)", "ns", 0, burst, NULL, constant(0), 0);
  emit("client", "alloc + free 1 MiB (pools: empty + release)", "ns", 0, alloc,
       "malloc + free 1 MiB", alloc_malloc, 0);
  for (k = 0; k < (default_workers != 1 ? 2 : 1); k++) {
    const bandwidth_t *bw = k == 0 ? &bw_default : &bw_one;
    char what[80];
    if (k == 0)
      snprintf(what, sizeof what, "add f32 64 MiB, default workers (%u), launch + sync",
               default_workers);
    else
      snprintf(what, sizeof what, "add f32 64 MiB, workers = 1, launch + sync");
    /* median of the per-run ratios: memcpy's bandwidth swings between runs */
    emit_ratio("client", what, "GB/s", 1, bw->add_gbs, "memcpy", bw->memcpy_gbs,
               GOAL_BANDWIDTH_RATIO, bw->ratio.median);
    emit_ratio("client", "  same, vs memcpy on 2 threads", "GB/s", 1, bw->add_gbs, "memcpy x2",
               bw->memcpy2_gbs, 0, bw->ratio2.median);
    emit("client", "  same, vs the bare executor (same add, workers)", "GB/s", 1, bw->add_gbs,
         "executor", bw->exec_gbs, 0);
  }
  printf("\nGB/s = bytes read + written / time (add: 3 x 64 MiB, memcpy: 2 x 64 MiB), 1 GB = 1e9 B.\n"
         "4. (runner-thread device handle round trip): not measured, cubert_cpu_client_create has "
         "no option for it.\n");
  bench_print_load("after");
  free(a);
  free(b);
  free(host_out);
  free(copy_dst);
  return 0;
}

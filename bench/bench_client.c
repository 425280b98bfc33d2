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
 *  3. elementwise f32 add a + b -> out over three 64 MiB buffers (CHECKED
 *     mode): launch + sync, GB/s counting bytes read + written (3 x 64 MiB),
 *     next to memcpy of 64 MiB (2 x 64 MiB moved) timed in the same run, right
 *     after each add; ratio = add GB/s / memcpy GB/s (median of the per-run
 *     ratios). Once with the default worker count (online CPUs - 1) and once
 *     with workers = 1. The stream's worker thread also runs cubes, so a
 *     device runs kernels on workers + 1 threads.
 * Context rows: the bare executor (backend-cpu/cpu/cpu_executor.h) launch + wait
 * of the same empty kernel, i.e. the floor under figure 1 without the client,
 * the device handle and the stream thread; a 2-thread memcpy (each thread
 * half of the 64 MiB) as the machine's parallel copy bandwidth.
 *
 * Goals (issue text, for a 2-core machine): round trip <= 5 us, >= 5 M async
 * launches/s, add >= 80% of memcpy bandwidth. Peers (spec/perf-anchors.md,
 * H100 + driver 580, C over the Driver API): cuLaunchKernel + stream sync
 * round trip 10.2 us; cuLaunchKernel back to back 3.89 us per launch.
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
#include "cubert/host.h"
#include "cpu/cpu_executor.h"
#include "cubert_kernels.h"

#define MAX_RUNS 101
#define BURST 256

/* peers (spec/perf-anchors.md, "Measured on an H100") */
#define PEER_ROUND_TRIP_NS 10200.0
#define PEER_LAUNCH_NS 3890.0
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

typedef struct stat_t {
  double median, min, max;
} stat_t;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static stat_t stat_of(const double *v, int n) {
  double s[MAX_RUNS];
  stat_t r;
  memcpy(s, v, (size_t)n * sizeof(*v));
  qsort(s, (size_t)n, sizeof(*s), cmp_double);
  r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  r.min = s[0];
  r.max = s[n - 1];
  return r;
}

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
  memset(&a, 0, sizeof a);
  a.buffers = buffers;
  a.buffer_count = count;
  a.scalars = NULL;
  a.scalar_count = 0;
  return a;
}

/* ---- 1. launch + sync round trip ---------------------------------------------------- */

static stat_t bench_round_trip(cubert_client_t *client, const config_t *cfg) {
  double t[MAX_RUNS];
  cubert_launch_arguments_t args = args_of(NULL, 0);
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  long i;
  int r;
  for (r = -1; r < cfg->runs; r++) { /* r = -1: warm-up */
    double t0 = now_ns();
    for (i = 0; i < cfg->round_trips; i++) {
      MUST("launch", cubert_client_launch(client, &ck_empty_kernel, &count, &args, &err));
      MUST("sync", cubert_client_sync(client, &err));
    }
    if (r >= 0) t[r] = (now_ns() - t0) / (double)cfg->round_trips;
  }
  return stat_of(t, cfg->runs);
}

/* ---- 2. async launches ---------------------------------------------------------------- */

static stat_t bench_async_sustained(cubert_client_t *client, const config_t *cfg) {
  double t[MAX_RUNS];
  cubert_launch_arguments_t args = args_of(NULL, 0);
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  long i;
  int r;
  for (r = -1; r < cfg->runs; r++) {
    double t0 = now_ns();
    for (i = 0; i < cfg->async_n; i++)
      MUST("launch", cubert_client_launch(client, &ck_empty_kernel, &count, &args, &err));
    MUST("sync", cubert_client_sync(client, &err));
    if (r >= 0) t[r] = (now_ns() - t0) / (double)cfg->async_n;
  }
  return stat_of(t, cfg->runs);
}

static stat_t bench_async_burst(cubert_client_t *client, const config_t *cfg) {
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
      t0 = now_ns();
      for (i = 0; i < BURST; i++)
        MUST("launch", cubert_client_launch(client, &ck_empty_kernel, &count, &args, &err));
      total += now_ns() - t0;
    }
    if (r >= 0) t[r] = total / ((double)cfg->bursts * BURST);
  }
  MUST("sync", cubert_client_sync(client, &err));
  return stat_of(t, cfg->runs);
}

/* ---- the bare executor (context) ------------------------------------------------------ */

static stat_t bench_executor_floor(const config_t *cfg, uint32_t workers) {
  double t[MAX_RUNS];
  cubert_cpu_executor_t *ex = NULL;
  cubert_kernel_args_t args;
  cubert_dim3_t one;
  cubert_error_t err;
  long i;
  int r;
  one.x = one.y = one.z = 1;
  cubert_kernel_args_initialize(&args);
  MUST("executor create", cubert_cpu_executor_create(cubert_allocator_libc(), workers, &ex, &err));
  for (r = -1; r < cfg->runs; r++) {
    double t0 = now_ns();
    for (i = 0; i < cfg->round_trips; i++)
      MUST("executor run", cubert_cpu_executor_run(ex, &ck_empty_kernel, one, one, &args,
                                                   CUBERT_EXECUTION_CHECKED, NULL, &err));
    if (r >= 0) t[r] = (now_ns() - t0) / (double)cfg->round_trips;
  }
  cubert_cpu_executor_destroy(ex);
  return stat_of(t, cfg->runs);
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
  double t0 = now_ns(), t1;
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
  t1 = now_ns();
  __asm__ __volatile__("" : : "r"(dst) : "memory");
  return t1 - t0;
}

typedef struct bandwidth_t {
  stat_t add_gbs, exec_gbs, memcpy_gbs, memcpy2_gbs, ratio, ratio2, ratio_exec;
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
       cubert_cpu_executor_create(cubert_allocator_libc(), workers, &ex, &err));
  cubert_kernel_args_initialize(&kargs);
  cubert_kernel_args_set_buffer(&kargs, 0, (void *)(uintptr_t)a, bytes);
  cubert_kernel_args_set_buffer(&kargs, 1, (void *)(uintptr_t)b, bytes);
  cubert_kernel_args_set_buffer(&kargs, 2, host_out, bytes);
  grid.x = (uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK);
  grid.y = grid.z = 1;
  MUST("create a", cubert_client_create(client, a, bytes, &h[0], &err));
  MUST("create b", cubert_client_create(client, b, bytes, &h[1], &err));
  MUST("empty out", cubert_client_empty(client, bytes, &h[2], &err));
  MUST("sync", cubert_client_sync(client, &err));
  args = args_of(h, 3);
  for (r = -1; r < cfg->runs; r++) { /* r = -1: warm-up */
    double t0 = now_ns(), ta, te, tm, tm2;
    MUST("add launch", cubert_client_launch(client, &ck_add_f32_kernel, &count, &args, &err));
    MUST("sync", cubert_client_sync(client, &err));
    ta = now_ns() - t0;
    t0 = now_ns();
    MUST("executor add", cubert_cpu_executor_run(ex, &ck_add_f32_kernel, grid,
                                                 ck_add_f32_kernel.cube_dim, &kargs,
                                                 CUBERT_EXECUTION_CHECKED, NULL, &err));
    te = now_ns() - t0;
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
  for (i = 0; i < 3; i++) MUST("release", cubert_client_handle_release(client, &h[i]));
  cubert_client_release(client);
  cubert_cpu_executor_destroy(ex);
  out.add_gbs = stat_of(add, cfg->runs);
  out.exec_gbs = stat_of(ex_add, cfg->runs);
  out.memcpy_gbs = stat_of(mc, cfg->runs);
  out.memcpy2_gbs = stat_of(mc2, cfg->runs);
  out.ratio = stat_of(ratio, cfg->runs);
  out.ratio2 = stat_of(ratio2, cfg->runs);
  out.ratio_exec = stat_of(ratio_exec, cfg->runs);
  return out;
}

/* ---- report -------------------------------------------------------------------------- */

static void row_ns(const char *what, stat_t s, const char *goal, const char *peer) {
  printf("| %-46s | %9.0f ns | %7.0f..%-7.0f | %-20s | %s\n", what, s.median, s.min, s.max, goal,
         peer);
}

static void row_gbs(const char *what, stat_t s, const char *goal, const char *peer) {
  printf("| %-46s | %7.2f GB/s | %7.2f..%-7.2f | %-20s | %s\n", what, s.median, s.min, s.max,
         goal, peer);
}

/* --only: one part, its median printed (for perf / callgrind). */
static int run_only(const config_t *cfg) {
  const size_t bytes = (size_t)64 << 20, n = bytes / sizeof(float);
  cubert_client_t *client;
  stat_t s;
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

/* The machine's load average (Linux /proc/loadavg), for the record. */
static void print_load(const char *when) {
  char text[128];
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f) return;
  if (fgets(text, sizeof text, f)) printf("load average %s: %s", when, text);
  fclose(f);
}

static const char *verdict(int met) { return met ? "met" : "MISSED"; }

int main(int argc, char **argv) {
  config_t cfg;
  const size_t bytes = (size_t)64 << 20, n = bytes / sizeof(float);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  uint32_t cpus = online > 0 ? (uint32_t)online : 1u;
  uint32_t default_workers = cpus > 1 ? cpus - 1 : 1;
  cubert_client_t *client;
  stat_t rt, floor_rt, sustained, burst, launches_per_s;
  bandwidth_t bw_default, bw_one;
  float *a, *b, *host_out;
  void *copy_dst;
  char peer[128], goal[64];
  size_t i;
  int k;
  cfg.runs = 15;
  cfg.round_trips = 2000;
  cfg.async_n = 100000;
  cfg.bursts = 40;
  cfg.only = NULL;
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
      fprintf(stderr, "bench_client: ignoring argument '%s' (usage: [--runs R] [--quick] [--only rt|async|burst|add])\n",
              argv[k]);
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

  print_load("before");
  if (cfg.only) return run_only(&cfg);
  client = device_create(0);
  rt = bench_round_trip(client, &cfg);
  sustained = bench_async_sustained(client, &cfg);
  burst = bench_async_burst(client, &cfg);
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
  bw_one = bench_add(1, &cfg, a, b, host_out, copy_dst, n);

  launches_per_s.median = 1e9 / sustained.median;
  launches_per_s.min = 1e9 / sustained.max;
  launches_per_s.max = 1e9 / sustained.min;

  printf("| %-46s | %12s | %-16s | %-20s | %s\n", "figure", "median", "spread", "goal",
         "peer (ratio = ours / peer)");
  printf("|%s|\n", "------------------------------------------------------------------------"
                   "---------------------------------------------------------------");
  snprintf(peer, sizeof peer, "H100 cuLaunchKernel+cuStreamSynchronize 10.2 us (%.2fx)",
           rt.median / PEER_ROUND_TRIP_NS);
  snprintf(goal, sizeof goal, "<= 5000 %s", verdict(rt.median <= GOAL_ROUND_TRIP_NS));
  row_ns("1. empty launch + sync round trip", rt, goal, peer);
  snprintf(peer, sizeof peer, "client+server+stream add %.0f ns over it",
           rt.median - floor_rt.median);
  row_ns("   (executor alone: run + wait, no client)", floor_rt, "-", peer);
  snprintf(peer, sizeof peer, "H100 cuLaunchKernel back to back 3.89 us (%.2fx)",
           sustained.median / PEER_LAUNCH_NS);
  snprintf(goal, sizeof goal, "<= 200 %s", verdict(sustained.median <= 1e9 / GOAL_LAUNCHES_PER_S));
  row_ns("2. async launch, sustained (N then 1 sync)", sustained, goal, peer);
  printf("| %-46s | %7.2f M/s  | %5.2f..%-9.2f | %-20s | %s\n", "   = launches/s from one thread",
         launches_per_s.median / 1e6, launches_per_s.min / 1e6, launches_per_s.max / 1e6,
         sustained.median <= 1e9 / GOAL_LAUNCHES_PER_S ? ">= 5 M met" : ">= 5 M MISSED",
         "H100 0.26 M/s");
  snprintf(peer, sizeof peer, "H100 3.89 us (%.2fx); = %.2f M/s", burst.median / PEER_LAUNCH_NS,
           1e3 / burst.median);
  row_ns("2b. async launch, client side (bursts of 256)", burst, "-", peer);
  for (k = 0; k < 2; k++) {
    const bandwidth_t *bw = k == 0 ? &bw_default : &bw_one;
    char what[64];
    snprintf(what, sizeof what, "3. add f32 64 MiB, workers=%u%s", k == 0 ? default_workers : 1u,
             k == 0 ? " (default)" : "");
    snprintf(goal, sizeof goal, ">= 0.80 x mc %s", verdict(bw->ratio.median >= GOAL_BANDWIDTH_RATIO));
    snprintf(peer, sizeof peer, "memcpy 1 thread: %.2fx [%.2f..%.2f]; 2 threads: %.2fx",
             bw->ratio.median, bw->ratio.min, bw->ratio.max, bw->ratio2.median);
    row_gbs(what, bw->add_gbs, goal, peer);
    snprintf(peer, sizeof peer, "same add, no client/stream: %.2fx memcpy", bw->ratio_exec.median);
    row_gbs("   (executor alone, same workers, same run)", bw->exec_gbs, "context", peer);
    row_gbs("   memcpy 64 MiB, 1 thread (same run)", bw->memcpy_gbs, "peer", "");
    row_gbs("   memcpy 64 MiB, 2 threads (same run)", bw->memcpy2_gbs, "context", "");
  }
  printf("\nGB/s = bytes read + written / time (add: 3 x 64 MiB, memcpy: 2 x 64 MiB), 1 GB = 1e9 B.\n"
         "4. (runner-thread device handle round trip): not measured, cubert_cpu_client_create has "
         "no option for it.\n");
  print_load("after");
  free(a);
  free(b);
  free(host_out);
  free(copy_dst);
  return 0;
}

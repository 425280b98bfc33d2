/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_scaling.c: how the cost of a launch and of a pool reserve
 * through the compute client grows with the load, on the threaded CPU
 * server (public API only). Three curves, each point the median [min..max]
 * over --runs runs:
 *
 *  live handles  1k, 10k, 100k, 1M handles of 64 bytes alive on the device
 *                (created with cubert_client_empty before the point, released
 *                after it), one stream;
 *  streams       1, 4, 16, 64 streams driven from one thread: clients pinned
 *                to the streams (cubert_client_set_stream), the operations
 *                dealt round robin over them;
 *  threads       1, 2, 4, 8 client threads, each on its own stream (the
 *                thread's default stream id), started together; the figure
 *                is wall time / all operations of all threads (the
 *                aggregate cost; 1 / throughput).
 *
 * At each point two operations are timed: a launch (ns per launch: N async
 * launches of the empty kernel with one bound buffer, then a sync of every
 * stream used) and a pool reserve + release (ns per pair:
 * cubert_client_empty of a size from a fixed 256 B..64 KiB mix, then
 * cubert_client_handle_release, N times, then the syncs). Each stream's
 * bound buffer was created on that stream, so no launch waits across
 * streams (one context row compares the bound launch with a launch of no
 * buffer). Rows compare each point with the curve's first point ("baseline:
 * ..."): x better = baseline / point (1.0: flat, below 1: dearer). The pool
 * reserve vs live handles has the goal "flat from 1k to 1M" (here:
 * at most 1.5x the 1k figure, ratio >= 0.67); the other curves have none.
 *
 * The device: default workers, 64 stream slots (max_streams), a handle
 * table of 2^21. On a 2-core machine 8 client threads, their 8 stream
 * workers and the kernel workers share the two cores: the threads curve
 * shows what that oversubscription costs. Run it on a larger machine too
 * (docs/benchmarks.md).
 *
 *   make bench   or   build/bench/bench_scaling [--runs R] [--quick] [--ops N]
 *                                               [--only handles|streams|threads]
 *                                               [--threads 1|2|4|8] [--streams 1|4|16|64]
 * (--ops: operations per run, default 20000 for the live-handles curve and
 * 400000 for the streams and threads curves (sustained rates): 20,000
 * lasted about 1 ms at 8 threads, so the threads' start-up skew was part of
 * the figure, and over 64 streams they were 312 launches per stream, so the
 * 64 first launches (each wakes a worker that slept between runs) and the
 * 64 syncs ending each run were a tenth to a third of it; --threads /
 * --streams: that point of the curve only, e.g. to attach a debugger to a
 * long run of it)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "bench_util.h"
#include "cubert_kernels.h"

#define MAX_STREAMS 64
#define MAX_THREADS 8
#define STREAM_BASE 1000u /* pinned stream ids: STREAM_BASE + i (slots distinct mod 64) */
#define LIVE_SIZE 64

/* OP_LAUNCH_BARE: a launch with no buffer (a context row only) */
typedef enum op_e { OP_LAUNCH = 0, OP_RESERVE = 1, OP_LAUNCH_BARE = 2 } op_t;

typedef struct config_t {
  int runs;
  long ops; /* operations per run (live handles) */
  long sustained_ops; /* the streams and threads curves' per run (threads: split over them) */
  const char *only;
  int threads; /* the threads curve at this count only (0: 1, 2, 4 and 8) */
  int streams; /* the streams curve at this count only (0: 1, 4, 16 and 64) */
  int big_host; /* 16 or more online CPUs: issue 27's goals apply (else the goal column is "-") */
} config_t;

static void die(const char *what, cubert_status_t status, const cubert_error_t *err) {
  char msg[256];
  msg[0] = 0;
  if (err) cubert_error_format(err, msg, sizeof msg);
  fprintf(stderr, "bench_scaling: %s failed: %s %s\n", what, cubert_status_name(status), msg);
  exit(1);
}

#define MUST(what, expr)                                  \
  do {                                                    \
    cubert_status_t st_ = (expr);                         \
    if (st_ != CUBERT_STATUS_OK) die((what), st_, &err); \
  } while (0)

/* The reserve sizes: 256 B .. 64 KiB, a fixed mix. */
static uint64_t reserve_size(long i) {
  static const uint64_t sizes[16] = {256,  4096, 1024,  65536, 512,  16384, 2048,  8192,
                                     768,  32768, 3072, 49152, 1536, 12288, 24576, 6144};
  return sizes[i & 15];
}

/* One stream's operations: a client (pinned or the thread's) and the buffer
 * its launches bind (created on that stream). */
typedef struct lane_t {
  cubert_client_t *client;
  cubert_handle_t buffer;
} lane_t;

static void lane_open(lane_t *lane, cubert_client_t *client) {
  cubert_error_t err;
  lane->client = client;
  MUST("empty (bound buffer)", cubert_client_empty(client, LIVE_SIZE, &lane->buffer, &err));
  MUST("sync", cubert_client_sync(client, &err));
}

static void lane_close(lane_t *lane) {
  cubert_error_t err;
  MUST("release", cubert_client_handle_release(lane->client, &lane->buffer, NULL));
  MUST("sync", cubert_client_sync(lane->client, &err));
}

/* n operations dealt round robin over lanes[0..count), then a sync of each. */
static void run_ops(lane_t *lanes, int count, op_t op, long n) {
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_launch_arguments_t args;
  cubert_error_t err;
  cubert_handle_t h;
  long i;
  int l = 0;
  cubert_launch_arguments_initialize(&args);
  args.buffer_count = op == OP_LAUNCH_BARE ? 0 : 1;
  for (i = 0; i < n; i++) {
    lane_t *lane = &lanes[l];
    if (++l == count) l = 0;
    if (op != OP_RESERVE) {
      cubert_launch_arguments_initialize(&args);
      args.buffers = op == OP_LAUNCH_BARE ? NULL : &lane->buffer;
      MUST("launch", cubert_client_launch(lane->client, &ck_empty_kernel, &one, &args, &err));
    } else {
      MUST("empty", cubert_client_empty(lane->client, reserve_size(i), &h, &err));
      MUST("release", cubert_client_handle_release(lane->client, &h, NULL));
    }
  }
  for (l = 0; l < count; l++) MUST("sync", cubert_client_sync(lanes[l].client, &err));
}

/* runs (+ 1 warm-up) of n operations over the lanes; ns per operation. */
static bench_stat_t measure(lane_t *lanes, int count, op_t op, long n, int runs) {
  double t[BENCH_MAX_RUNS];
  int r;
  for (r = -1; r < runs; r++) {
    double t0 = bench_now_ns();
    run_ops(lanes, count, op, n);
    if (r >= 0) t[r] = (bench_now_ns() - t0) / (double)n;
  }
  return bench_stat_of(t, runs);
}

static const char *op_name(op_t op) { return op == OP_LAUNCH ? "launch" : "reserve + release"; }

/* A point of a curve; the first point of a curve is its baseline. */
static void emit_point(const char *series, const char *figure, op_t op, bench_stat_t s,
                       const bench_stat_t *baseline, const char *baseline_name, double x,
                       double goal) {
  bench_row_t row = bench_row(series, figure, "ns", 0, s);
  row.series = series;
  row.x = x;
  if (baseline) {
    row.peer = baseline_name;
    row.peer_stat = *baseline;
    row.goal = goal;
  }
  (void)op;
  bench_emit(&row);
}

/* ---- live handles --------------------------------------------------------------------- */

static void curve_live_handles(cubert_client_t *client, const config_t *cfg) {
  static const long counts[] = {1000, 10000, 100000, 1000000};
  const int points = (int)(sizeof counts / sizeof counts[0]);
  cubert_handle_t *live = (cubert_handle_t *)malloc((size_t)counts[points - 1] * sizeof *live);
  bench_stat_t first[2];
  cubert_error_t err;
  lane_t lane;
  int p, op;
  long i;
  if (!live) {
    fprintf(stderr, "bench_scaling: out of host memory\n");
    exit(1);
  }
  lane_open(&lane, client);
  for (p = 0; p < points; p++) {
    for (i = 0; i < counts[p]; i++)
      MUST("empty (live handle)", cubert_client_empty(client, LIVE_SIZE, &live[i], &err));
    MUST("sync", cubert_client_sync(client, &err));
    for (op = 0; op < 2; op++) {
      char series[96], figure[96];
      bench_stat_t s = measure(&lane, 1, (op_t)op, cfg->ops, cfg->runs);
      snprintf(series, sizeof series, "scaling: %s vs live handles", op_name((op_t)op));
      snprintf(figure, sizeof figure, "%s, %ld live handles", op_name((op_t)op), counts[p]);
      if (p == 0) first[op] = s;
      emit_point(series, figure, (op_t)op, s, p ? &first[op] : NULL, "baseline: 1000 live",
                 (double)counts[p], op == OP_RESERVE ? 1.0 / 1.5 : 0);
      if (p == 0 && op == OP_LAUNCH) { /* what the bound buffer costs */
        bench_row_t row = bench_row("scaling: context", "  same, vs a launch with no buffer", "ns",
                                    0, s);
        row.peer = "no buffer";
        row.peer_stat = measure(&lane, 1, OP_LAUNCH_BARE, cfg->ops, cfg->runs);
        bench_emit(&row);
      }
    }
    for (i = 0; i < counts[p]; i++)
      MUST("release (live handle)", cubert_client_handle_release(client, &live[i], NULL));
    MUST("sync", cubert_client_sync(client, &err));
  }
  lane_close(&lane);
  free(live);
}

/* ---- streams -------------------------------------------------------------------------- */

static void curve_streams(cubert_client_t *client, const config_t *cfg) {
  static const int counts[] = {1, 4, 16, 64};
  lane_t lanes[MAX_STREAMS];
  bench_stat_t first[2];
  int p, op, i;
  for (i = 0; i < MAX_STREAMS; i++) {
    cubert_client_t *c = NULL;
    if (cubert_client_clone(client, &c, NULL) != CUBERT_STATUS_OK) {
      fprintf(stderr, "bench_scaling: cubert_client_clone failed\n");
      exit(1);
    }
    cubert_client_set_stream(c, STREAM_BASE + (uint64_t)i);
    lane_open(&lanes[i], c);
  }
  for (p = 0; p < (int)(sizeof counts / sizeof counts[0]); p++)
    for (op = 0; op < 2; op++) {
      char series[96], figure[96];
      bench_stat_t s;
      if (cfg->streams && counts[p] != cfg->streams) continue;
      s = measure(lanes, counts[p], (op_t)op, cfg->sustained_ops, cfg->runs);
      snprintf(series, sizeof series, "scaling: %s vs streams (one thread)", op_name((op_t)op));
      snprintf(figure, sizeof figure, "%s, %d stream%s, one thread", op_name((op_t)op),
               counts[p], counts[p] > 1 ? "s" : "");
      if (p == 0) first[op] = s;
      emit_point(series, figure, (op_t)op, s, p && !cfg->streams ? &first[op] : NULL,
                 "baseline: 1 stream", (double)counts[p],
                 cfg->big_host && op == OP_LAUNCH && counts[p] == 64 ? 0.8 : 0);
    }
  for (i = 0; i < MAX_STREAMS; i++) {
    lane_close(&lanes[i]);
    cubert_client_release(lanes[i].client);
  }
}

/* ---- client threads ------------------------------------------------------------------- */

typedef struct team_t {
  pthread_barrier_t start, done;
  cubert_client_t *client; /* cloned by each thread */
  op_t op;
  long ops_per_thread;
  int runs;
  double began[MAX_THREADS], ended[MAX_THREADS]; /* this run, per thread */
} team_t;

typedef struct member_t {
  team_t *team;
  int index;
} member_t;

static void *team_member(void *arg) {
  team_t *team = ((member_t *)arg)->team;
  const int me = ((member_t *)arg)->index;
  cubert_client_t *c = NULL;
  lane_t lane;
  int r;
  if (cubert_client_clone(team->client, &c, NULL) != CUBERT_STATUS_OK) {
    fprintf(stderr, "bench_scaling: cubert_client_clone failed\n");
    exit(1);
  }
  lane_open(&lane, c); /* on this thread's own stream */
  for (r = -1; r < team->runs; r++) {
    pthread_barrier_wait(&team->start);
    team->began[me] = bench_now_ns();
    run_ops(&lane, 1, team->op, team->ops_per_thread);
    team->ended[me] = bench_now_ns();
    pthread_barrier_wait(&team->done);
  }
  lane_close(&lane);
  cubert_client_release(c);
  return NULL;
}

static bench_stat_t measure_threads(cubert_client_t *client, int threads, op_t op,
                                    const config_t *cfg) {
  double t[BENCH_MAX_RUNS];
  pthread_t th[MAX_THREADS];
  member_t members[MAX_THREADS];
  team_t team;
  int i, r;
  team.client = client;
  team.op = op;
  team.ops_per_thread = cfg->sustained_ops / threads;
  team.runs = cfg->runs;
  pthread_barrier_init(&team.start, NULL, (unsigned)threads + 1);
  pthread_barrier_init(&team.done, NULL, (unsigned)threads + 1);
  for (i = 0; i < threads; i++) {
    members[i].team = &team;
    members[i].index = i;
    if (pthread_create(&th[i], NULL, team_member, &members[i]) != 0) {
      fprintf(stderr, "bench_scaling: pthread_create failed\n");
      exit(1);
    }
  }
  for (r = -1; r < cfg->runs; r++) {
    double first, last;
    pthread_barrier_wait(&team.start);
    pthread_barrier_wait(&team.done);
    /* wall = first start .. last end, as the threads saw them (the main
     * thread may not run between the barriers) */
    first = team.began[0];
    last = team.ended[0];
    for (i = 1; i < threads; i++) {
      if (team.began[i] < first) first = team.began[i];
      if (team.ended[i] > last) last = team.ended[i];
    }
    if (r >= 0) t[r] = (last - first) / (double)(team.ops_per_thread * threads);
  }
  for (i = 0; i < threads; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&team.start);
  pthread_barrier_destroy(&team.done);
  return bench_stat_of(t, cfg->runs);
}

static void curve_threads(cubert_client_t *client, const config_t *cfg) {
  static const int counts[] = {1, 2, 4, 8};
  bench_stat_t first[2];
  int p, op;
  for (p = 0; p < (int)(sizeof counts / sizeof counts[0]); p++)
    for (op = 0; op < 2; op++) {
      char series[96], figure[96];
      bench_stat_t s;
      if (cfg->threads && counts[p] != cfg->threads) continue;
      s = measure_threads(client, counts[p], (op_t)op, cfg);
      snprintf(series, sizeof series, "scaling: %s vs client threads", op_name((op_t)op));
      snprintf(figure, sizeof figure, "%s, %d client thread%s (wall / all ops)",
               op_name((op_t)op), counts[p], counts[p] > 1 ? "s" : "");
      if (p == 0) first[op] = s;
      emit_point(series, figure, (op_t)op, s, p && !cfg->threads ? &first[op] : NULL,
                 "baseline: 1 thread", (double)counts[p],
                 cfg->big_host && counts[p] == 8 ? (op == OP_LAUNCH ? 5.0 : 4.0) : 0);
    }
}

#define SCALING_OPTIONS                                                                    \
  "[--runs R] [--quick] [--ops N] [--only handles|streams|threads] [--threads 1|2|4|8] "  \
  "[--streams 1|4|16|64] [-h|--help]"

int main(int argc, char **argv) {
  config_t cfg;
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int k;
  cfg.runs = 7;
  cfg.ops = 20000;
  cfg.sustained_ops = 400000;
  cfg.only = NULL;
  cfg.threads = 0;
  cfg.streams = 0;
  cfg.big_host = online >= 16;
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_scaling", SCALING_OPTIONS,
                       "How the client's operations scale with live handles, streams and "
                       "threads.");
  for (k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--quick") == 0) {
      cfg.runs = 3;
      cfg.ops = 4000;
      cfg.sustained_ops = 40000;
    } else if (strcmp(argv[k], "--runs") == 0 && k + 1 < argc) {
      cfg.runs = atoi(argv[++k]);
    } else if (strcmp(argv[k], "--ops") == 0 && k + 1 < argc) {
      cfg.sustained_ops = cfg.ops = atol(argv[++k]);
    } else if (strcmp(argv[k], "--streams") == 0 && k + 1 < argc) {
      cfg.streams = atoi(argv[++k]);
    } else if (strcmp(argv[k], "--threads") == 0 && k + 1 < argc) {
      cfg.threads = atoi(argv[++k]);
    } else if (strcmp(argv[k], "--only") == 0 && k + 1 < argc) {
      cfg.only = argv[++k];
    } else {
      return bench_bad_option("bench_scaling", argv[k], SCALING_OPTIONS);
    }
  }
  if (cfg.ops < 8 || (cfg.threads != 0 && cfg.threads != 1 && cfg.threads != 2 &&
                      cfg.threads != 4 && cfg.threads != 8) ||
      (cfg.streams != 0 && cfg.streams != 1 && cfg.streams != 4 && cfg.streams != 16 &&
       cfg.streams != 64)) {
    fprintf(stderr, "bench_scaling: --ops must be 8 or more, --threads 1, 2, 4 or 8, --streams 1, "
                    "4, 16 or 64\n");
    return 2;
  }
  if (cfg.runs < 1 || cfg.runs > BENCH_MAX_RUNS) {
    fprintf(stderr, "bench_scaling: --runs must be 1..%d\n", BENCH_MAX_RUNS);
    return 2;
  }
  cubert_cpu_options_initialize(&o);
  o.device.max_streams = MAX_STREAMS;
  o.device.max_handles = 1u << 21;
  MUST("cubert_cpu_client_create",
       cubert_cpu_client_create(cubert_allocator_libc(), &o, &client, &err));
  printf("bench_scaling: %ld online CPUs; CPU server, default workers, %d stream slots; median of "
         "%d runs [min..max] of %ld operations each (streams and threads curves: %ld, the threads' "
         "split over them)\n\n",
         online, MAX_STREAMS, cfg.runs, cfg.ops, cfg.sustained_ops);
  bench_print_load("before");
  bench_table_begin("bench_scaling");
  if (!cfg.only || strcmp(cfg.only, "handles") == 0) curve_live_handles(client, &cfg);
  if (!cfg.only || strcmp(cfg.only, "streams") == 0) curve_streams(client, &cfg);
  if (!cfg.only || strcmp(cfg.only, "threads") == 0) curve_threads(client, &cfg);
  printf("\nx better = baseline / point (1.0: flat; below 1: the point costs more).\n");
  bench_print_load("after");
  cubert_client_release(client);
  return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_oversubscribed.c: the launch + sync round trip (one empty-kernel
 * launch of 1 cube of 1 unit, then a client sync, on the calling thread's
 * stream; the figure 1 of bench/bench_client.c) measured quiet, then again
 * with N busy background threads (default 4) spinning without sleeping for
 * the whole measurement: on this project's 2-core machine the device's stream
 * thread and kernel workers then share the cores with threads that never
 * yield (oversubscribed). Median of --runs runs (default 15), spread min..max;
 * the row's peer is the quiet figure, so "x better" reads quiet / busy (below
 * 1: slower under load; no goal: a report, docs/benchmarks.md).
 *
 *   build/bench/bench_oversubscribed [--runs R] [--busy N] [--quick]
 * --quick: 5 runs, fewer round trips (a smoke run, not for the record).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "bench_util.h"
#include "cubert_kernels.h"

#define MAX_BUSY 64

static volatile int g_stop;

static void *busy_main(void *arg) {
  volatile unsigned long x = 0;
  (void)arg;
  while (!g_stop) x++;
  return NULL;
}

static void die(const char *what, cubert_status_t status, const cubert_error_t *err) {
  char msg[256];
  cubert_error_format(err, msg, sizeof msg);
  fprintf(stderr, "bench_oversubscribed: %s: %s: %s\n", what, cubert_status_name(status), msg);
  exit(1);
}

/* ns per launch + sync pair: the mean of `n` pairs, per run */
static bench_stat_t round_trip(cubert_client_t *client, int runs, long n) {
  double t[BENCH_MAX_RUNS];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  cubert_status_t s;
  long i;
  int r;
  cubert_launch_arguments_initialize(&args);
  for (r = -1; r < runs; r++) { /* r = -1: warm-up */
    double t0 = bench_now_ns();
    for (i = 0; i < n; i++) {
      if ((s = cubert_client_launch(client, &ck_empty_kernel, &count, &args, &err)) !=
          CUBERT_STATUS_OK)
        die("launch", s, &err);
      if ((s = cubert_client_sync(client, &err)) != CUBERT_STATUS_OK) die("sync", s, &err);
    }
    if (r >= 0) t[r] = (bench_now_ns() - t0) / (double)n;
  }
  return bench_stat_of(t, runs);
}

int main(int argc, char **argv) {
  int runs = 15, busy = 4, i;
  long n = 2000;
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  cubert_status_t s;
  pthread_t threads[MAX_BUSY];
  bench_stat_t quiet, loaded;
  bench_row_t row;
  char figure[96];
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_oversubscribed", "[--runs R] [--busy N] [--quick] [-h|--help]",
                       "Launch round trips with N spinning threads beside the CPU server.");
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--busy") == 0 && i + 1 < argc) busy = atoi(argv[++i]);
    else if (strcmp(argv[i], "--trips") == 0 && i + 1 < argc) n = atol(argv[++i]);
    else if (strcmp(argv[i], "--quick") == 0) {
      runs = 5;
      n = 200;
    } else {
      return bench_bad_option("bench_oversubscribed", argv[i],
                              "[--runs R] [--busy N] [--quick] [-h|--help]");
    }
  }
  if (runs < 1 || runs > BENCH_MAX_RUNS) runs = 15;
  if (busy < 0 || busy > MAX_BUSY) busy = 4;

  cubert_cpu_options_initialize(&o); /* default workers: online CPUs - 1 */
  if ((s = cubert_cpu_client_create(cubert_allocator_libc(), &o, &client, &err)) !=
      CUBERT_STATUS_OK)
    die("cubert_cpu_client_create", s, &err);
  printf("bench_oversubscribed: threaded CPU server (default workers), %ld round trips per run, "
         "median of %d runs; %d busy spinning threads in the loaded case\n\n",
         n, runs, busy);
  bench_print_load("before");
  quiet = round_trip(client, runs, n);
  g_stop = 0;
  for (i = 0; i < busy; i++)
    if (pthread_create(&threads[i], NULL, busy_main, NULL) != 0) {
      fprintf(stderr, "bench_oversubscribed: pthread_create failed\n");
      return 1;
    }
  loaded = round_trip(client, runs, n);
  g_stop = 1;
  for (i = 0; i < busy; i++) pthread_join(threads[i], NULL);
  cubert_client_release(client);

  bench_table_begin("bench_oversubscribed");
  row = bench_row("oversubscribed", "empty launch + sync round trip, quiet", "ns", 0, quiet);
  bench_emit(&row);
  snprintf(figure, sizeof figure, "  same, with %d busy threads spinning", busy);
  row = bench_row("oversubscribed", figure, "ns", 0, loaded);
  row.peer = "quiet";
  row.peer_stat = quiet;
  bench_emit(&row);
  bench_print_load("after");
  return 0;
}

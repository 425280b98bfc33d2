/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_record.c: recorded launch sequences (cubert/record.h) on the
 * threaded CPU server, through the public API, next to the same launches made
 * one by one in the same run (the peer).
 *
 * The sequence: 10 small kernels (ck_add_scalar_u32, 1 cube of 64 units over
 * 64 u32, each launch with its own scalar), the shape of a small layer's
 * launches. Every figure is the median over --runs runs (default 15):
 *  1. sustained, per kernel: R replays of the recording then one sync,
 *     time / (10 R); peer: the 10 launches made R times then one sync;
 *  2. 10 kernels + sync, per sequence: one replay + sync; peer: 10 launches +
 *     sync;
 *  3. client-side cost per kernel: bursts of 20 replays (200 kernels: less than
 *     the stream's ring) timed until the last call returned; peer: 200 launches.
 * Goal (issue 27): per kernel <= 0.5x launching them one by one, i.e. ratio >= 2
 * on row 1. Results are checked (each element got the sum of the scalars).
 *
 *   build/bench/bench_record [--runs R] [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "cubert/record.h"
#include "bench_util.h"
#include "cubert_kernels.h"

#define OPTIONS "[--runs R] [--quick]"
#define KERNELS 10
#define ELEMS 64
#define BURST_REPLAYS 20

static void die(const char *what, cubert_status_t status, const cubert_error_t *err) {
  char msg[256];
  msg[0] = 0;
  if (err) cubert_error_format(err, msg, sizeof msg);
  fprintf(stderr, "bench_record: %s failed: %s %s\n", what, cubert_status_name(status), msg);
  exit(1);
}

#define MUST(what, expr)                                  \
  do {                                                    \
    cubert_status_t st_ = (expr);                         \
    if (st_ != CUBERT_STATUS_OK) die((what), st_, &err); \
  } while (0)

typedef struct bench_t {
  cubert_client_t *client;
  cubert_handle_t buf;
  cubert_launch_arguments_t args[KERNELS];
  cubert_recording_t *rec;
  uint64_t expected; /* what each element holds now */
} bench_t;

static void launch_all(bench_t *b) {
  cubert_error_t err;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  int k;
  for (k = 0; k < KERNELS; k++)
    MUST("launch", cubert_client_launch(b->client, &ck_add_scalar_u32_kernel, &one, &b->args[k], &err));
  b->expected += KERNELS * (KERNELS + 1) / 2;
}

static void replay(bench_t *b) {
  cubert_error_t err;
  MUST("replay", cubert_client_replay(b->client, b->rec, &err));
  b->expected += KERNELS * (KERNELS + 1) / 2;
}

static void sync_check(bench_t *b) {
  cubert_error_t err;
  uint32_t v[ELEMS];
  MUST("sync", cubert_client_sync(b->client, &err));
  MUST("read", cubert_client_read_one(b->client, &b->buf, v, sizeof v, &err));
  if (v[ELEMS - 1] != (uint32_t)b->expected) {
    fprintf(stderr, "bench_record: wrong result %u, expected %u\n", v[ELEMS - 1], (uint32_t)b->expected);
    exit(1);
  }
}

int main(int argc, char **argv) {
  int runs = 15, reps = 2000, rts = 400, bursts = 20, k, run, i;
  double t_rep[BENCH_MAX_RUNS], t_dir[BENCH_MAX_RUNS], rt_rep[BENCH_MAX_RUNS], rt_dir[BENCH_MAX_RUNS],
      b_rep[BENCH_MAX_RUNS], b_dir[BENCH_MAX_RUNS];
  bench_t b;
  cubert_cpu_options_t o;
  cubert_error_t err;
  uint32_t zero[ELEMS];
  bench_row_t row;
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_record", OPTIONS,
                       "10 small kernels replayed from a recording (cubert/record.h) vs launched "
                       "one by one, on the CPU server, in the same run.");
  for (k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--quick") == 0) {
      runs = 5;
      reps = 200;
      rts = 50;
      bursts = 4;
    } else if (strcmp(argv[k], "--runs") == 0 && k + 1 < argc) {
      runs = atoi(argv[++k]);
    } else {
      return bench_bad_option("bench_record", argv[k], OPTIONS);
    }
  }
  if (runs < 1 || runs > BENCH_MAX_RUNS) {
    fprintf(stderr, "bench_record: --runs must be 1..%d\n", BENCH_MAX_RUNS);
    return 2;
  }
  printf("bench_record: CPU server, %d kernels (ck_add_scalar_u32, 1 cube x 64 units) replayed vs "
         "launched one by one; median of %d runs\n\n", KERNELS, runs);
  cubert_cpu_options_initialize(&o);
  MUST("cubert_cpu_client_create", cubert_cpu_client_create(cubert_allocator_libc(), &o, &b.client, &err));
  memset(zero, 0, sizeof zero);
  MUST("create", cubert_client_create_from_slice(b.client, zero, sizeof zero, &b.buf, &err));
  for (k = 0; k < KERNELS; k++) {
    cubert_launch_arguments_initialize(&b.args[k]);
    cubert_launch_arguments_set_buffer(&b.args[k], 0, &b.buf);
    cubert_launch_arguments_set_u32(&b.args[k], 0, (uint32_t)k + 1u);
  }
  b.expected = 0;
  MUST("record_begin", cubert_client_record_begin(b.client, &err));
  launch_all(&b);
  b.expected = 0;
  MUST("record_end", cubert_client_record_end(b.client, &b.rec, &err));
  /* warm up both paths */
  for (i = 0; i < 50; i++) {
    launch_all(&b);
    replay(&b);
  }
  sync_check(&b);
  for (run = 0; run < runs; run++) {
    double t0, t1;
    t0 = bench_now_ns();
    for (i = 0; i < reps; i++) replay(&b);
    MUST("sync", cubert_client_sync(b.client, &err));
    t1 = bench_now_ns();
    t_rep[run] = (t1 - t0) / (reps * KERNELS);
    t0 = bench_now_ns();
    for (i = 0; i < reps; i++) launch_all(&b);
    MUST("sync", cubert_client_sync(b.client, &err));
    t1 = bench_now_ns();
    t_dir[run] = (t1 - t0) / (reps * KERNELS);
    t0 = bench_now_ns();
    for (i = 0; i < rts; i++) {
      replay(&b);
      MUST("sync", cubert_client_sync(b.client, &err));
    }
    t1 = bench_now_ns();
    rt_rep[run] = (t1 - t0) / rts;
    t0 = bench_now_ns();
    for (i = 0; i < rts; i++) {
      launch_all(&b);
      MUST("sync", cubert_client_sync(b.client, &err));
    }
    t1 = bench_now_ns();
    rt_dir[run] = (t1 - t0) / rts;
    b_rep[run] = b_dir[run] = 0;
    for (i = 0; i < bursts; i++) {
      int j;
      t0 = bench_now_ns();
      for (j = 0; j < BURST_REPLAYS; j++) replay(&b);
      t1 = bench_now_ns();
      b_rep[run] += t1 - t0;
      MUST("sync", cubert_client_sync(b.client, &err));
      t0 = bench_now_ns();
      for (j = 0; j < BURST_REPLAYS; j++) launch_all(&b);
      t1 = bench_now_ns();
      b_dir[run] += t1 - t0;
      MUST("sync", cubert_client_sync(b.client, &err));
    }
    b_rep[run] /= (double)bursts * BURST_REPLAYS * KERNELS;
    b_dir[run] /= (double)bursts * BURST_REPLAYS * KERNELS;
  }
  sync_check(&b);
  bench_table_begin("bench_record");
  row = bench_row("record", "10 small kernels replayed, sustained, per kernel", "ns", 0,
                  bench_stat_of(t_rep, runs));
  row.peer = "launched one by one";
  row.peer_stat = bench_stat_of(t_dir, runs);
  row.goal = 2.0; /* <= 0.5x */
  bench_emit(&row);
  row = bench_row("record", "10 small kernels replayed + sync, per sequence", "ns", 0,
                  bench_stat_of(rt_rep, runs));
  row.peer = "10 launches + sync";
  row.peer_stat = bench_stat_of(rt_dir, runs);
  bench_emit(&row);
  row = bench_row("record", "replay, client-side cost per kernel (bursts of 200)", "ns", 0,
                  bench_stat_of(b_rep, runs));
  row.peer = "launch, client-side";
  row.peer_stat = bench_stat_of(b_dir, runs);
  bench_emit(&row);
  cubert_recording_destroy(b.rec);
  MUST("release", cubert_client_handle_release(b.client, &b.buf, &err));
  cubert_client_release(b.client);
  return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_peers.c: cubert's CPU server next to the CPU runtimes a user
 * would pick instead, each measured in the same run, on the same operation:
 *
 *  launch   1. empty-kernel launch + sync round trip (1 cube of 1 unit):
 *              cubert_client_launch + cubert_client_sync, against PoCL
 *              (clEnqueueNDRangeKernel of 1 work-item + clFinish), and
 *              against the floors of any cross-thread round trip: a pthread
 *              condvar hand-off and a spin hand-off between two threads;
 *           2. async launches from one thread: N launches of the empty
 *              kernel then one sync (ns per launch), against N PoCL enqueues
 *              then one clFinish;
 *  compute  3. f32 vector add over 16M floats (a + b -> out, three 64 MiB
 *              buffers, already resident): launch + sync, GB/s counting
 *              bytes read + written, against PoCL (same kernel in OpenCL C,
 *              256 work-items a group), OpenMP `parallel for` and memcpy of
 *              64 MiB (one thread; the bandwidth floor);
 *           4. 512 x 512 x 512 f32 matmul (16 x 16 shared tiles, the same
 *              algorithm in OpenCL C), GFLOP/s (2 m n k / time), against
 *              PoCL and the OpenMP row-parallel i-k-j loop.
 * cubert's kernels are examples/kernels/cubert_kernels.h's (the dialect of
 * cubert/kernel.h), launched with cubert_client_launch_unchecked (the
 * device's bounds-check mode AUTO: no bounds checks, as in OpenCL and
 * OpenMP); --checked launches them with cubert_client_launch (CHECKED).
 * Each runtime runs its own block of runs (a warm-up run first), one
 * runtime after the other in this process (cubert, PoCL, OpenMP, memcpy),
 * with a pause between blocks so the previous runtime's spinning threads go
 * to sleep; each figure is the median over its runs, with min..max. Results are
 * checked (all inputs are small multiples of 0.5, so every summation order
 * gives the exact result).
 *
 * Goals (issue "Benchmarks against the peers", CPU): round trip >= 10x
 * faster than PoCL; async launches >= 5x PoCL's enqueue rate; add and matmul
 * >= 1.0x PoCL and >= 0.9x OpenMP.
 *
 *   make bench   or   build/bench/bench_peers [--runs R] [--quick] [--checked]
 *                                               [--only launch|add|matmul]
 * A peer that is not installed / not built in prints "skipped: <reason>".
 * Exit status 0 when every operation succeeded and every result checked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "bench_util.h"
#include "peer_handoff.h"
#include "peer_opencl.h"
#include "peer_openmp.h"
#include "cubert_kernels.h"

#define SETTLE_US 20000 /* between runtimes: past every runtime's spin-before-sleep */

typedef struct config_t {
  int runs;
  long round_trips; /* per run */
  long async_n;     /* per run */
  size_t add_n;     /* floats */
  uint32_t mm;      /* matmul edge */
  int checked;      /* cubert_client_launch instead of launch_unchecked */
  const char *only; /* --only launch|add|matmul: that section alone (for profiling) */
} config_t;

static void die(const char *what, cubert_status_t status, const cubert_error_t *err) {
  char msg[256];
  msg[0] = 0;
  if (err) cubert_error_format(err, msg, sizeof msg);
  fprintf(stderr, "bench_peers: %s failed: %s %s\n", what, cubert_status_name(status), msg);
  exit(1);
}

#define MUST(what, expr)                                  \
  do {                                                    \
    cubert_status_t st_ = (expr);                         \
    if (st_ != CUBERT_STATUS_OK) die((what), st_, &err); \
  } while (0)

static void fail(const char *what) {
  fprintf(stderr, "bench_peers: %s\n", what);
  exit(1);
}

static cubert_launch_arguments_t args_of(const cubert_binding_t *buffers, uint32_t count,
                                         const uint64_t *scalars, uint32_t scalar_count) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  a.buffers = buffers;
  a.buffer_count = count;
  a.scalars = scalars;
  a.scalar_count = scalar_count;
  return a;
}

static cubert_status_t launch(cubert_client_t *client, const config_t *cfg,
                              const cubert_kernel_t *kernel, const cubert_cube_count_t *count,
                              const cubert_launch_arguments_t *args, cubert_error_t *err) {
  return cfg->checked ? cubert_client_launch(client, kernel, count, args, err)
                      : cubert_client_launch_unchecked(client, kernel, count, args, err);
}

/* A row against a peer; `why` non-NULL: the peer was skipped. */
static void emit_vs(const char *section, const char *figure, const char *unit, int higher,
                    bench_stat_t ours, const char *peer, bench_stat_t theirs, const char *why,
                    double goal) {
  bench_row_t row = bench_row(section, figure, unit, higher, ours);
  row.peer = peer;
  row.peer_stat = theirs;
  row.skipped = why;
  row.goal = goal;
  bench_emit(&row);
}

/* ---- launch: round trip and async ------------------------------------------------------ */

static void bench_launch(cubert_client_t *client, peer_cl_t *cl, const config_t *cfg) {
  double rt[BENCH_MAX_RUNS], rt_cl[BENCH_MAX_RUNS], as[BENCH_MAX_RUNS], as_cl[BENCH_MAX_RUNS];
  cubert_launch_arguments_t args = args_of(NULL, 0, NULL, 0);
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_error_t err;
  bench_stat_t s_rt, s_as, none;
  const char *cl_why = cl->ok ? NULL : cl->why;
  long i;
  int r;
  memset(&none, 0, sizeof none);
  for (r = -1; r < cfg->runs; r++) { /* r = -1: warm-up */
    double t0 = bench_now_ns(), t;
    for (i = 0; i < cfg->round_trips; i++) {
      MUST("launch", cubert_client_launch(client, &ck_empty_kernel, &one, &args, &err));
      MUST("sync", cubert_client_sync(client, &err));
    }
    t = (bench_now_ns() - t0) / (double)cfg->round_trips;
    if (r >= 0) rt[r] = t;
    t0 = bench_now_ns();
    for (i = 0; i < cfg->async_n; i++)
      MUST("launch", cubert_client_launch(client, &ck_empty_kernel, &one, &args, &err));
    MUST("sync", cubert_client_sync(client, &err));
    t = (bench_now_ns() - t0) / (double)cfg->async_n;
    if (r >= 0) as[r] = t;
  }
  bench_settle(SETTLE_US);
  for (r = -1; cl->ok && r < cfg->runs; r++) {
    double t = peer_cl_round_trips(cl, cfg->round_trips);
    if (t < 0) fail("PoCL round trip failed");
    if (r >= 0) rt_cl[r] = t;
    t = peer_cl_async(cl, cfg->async_n);
    if (t < 0) fail("PoCL async enqueue failed");
    if (r >= 0) as_cl[r] = t;
  }
  bench_settle(SETTLE_US);
  s_rt = bench_stat_of(rt, cfg->runs);
  s_as = bench_stat_of(as, cfg->runs);
  emit_vs("launch", "empty launch + sync round trip", "ns", 0, s_rt, "PoCL",
          cl->ok ? bench_stat_of(rt_cl, cfg->runs) : none, cl_why, 10.0);
  emit_vs("launch", "  same, vs condvar hand-off (2 threads)", "ns", 0, s_rt, "condvar",
          peer_handoff_measure(0, cfg->runs, cfg->round_trips), NULL, 0);
  emit_vs("launch", "  same, vs spin hand-off (2 threads)", "ns", 0, s_rt, "spin",
          peer_handoff_measure(1, cfg->runs, cfg->round_trips), NULL, 0);
  emit_vs("launch", "async launch, one thread (N launches + 1 sync)", "ns", 0, s_as, "PoCL",
          cl->ok ? bench_stat_of(as_cl, cfg->runs) : none, cl_why, 5.0);
}

/* ---- compute: vector add --------------------------------------------------------------- */

static double timed_memcpy(void *dst, const void *src, size_t bytes) {
  double t0 = bench_now_ns(), t;
  memcpy(dst, src, bytes);
  t = bench_now_ns() - t0;
  BENCH_CLOBBER(dst);
  return t;
}

static void check_add(const char *who, const float *a, const float *b, const float *out,
                      size_t n) {
  size_t i, bad = 0;
  for (i = 0; i < n; i++)
    if (out[i] != a[i] + b[i]) bad++;
  if (bad) {
    fprintf(stderr, "bench_peers: %s add: %lu wrong results\n", who, (unsigned long)bad);
    exit(1);
  }
}

static void bench_add(cubert_client_t *client, peer_cl_t *cl, const config_t *cfg) {
  const size_t n = cfg->add_n, bytes = n * sizeof(float);
  double ours[BENCH_MAX_RUNS], ocl[BENCH_MAX_RUNS], omp[BENCH_MAX_RUNS], mc[BENCH_MAX_RUNS];
  float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *out = (float *)malloc(bytes);
  void *copy = malloc(bytes);
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d((uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK));
  cubert_error_t err;
  bench_stat_t s_ours, none;
  const char *cl_why = cl->ok ? NULL : cl->why, *omp_why = peer_omp_unavailable();
  size_t i;
  int r;
  memset(&none, 0, sizeof none);
  if (!a || !b || !out || !copy) fail("out of host memory");
  for (i = 0; i < n; i++) {
    a[i] = (float)(i & 1023) * 0.5f;
    b[i] = 0.25f;
  }
  memset(out, 0, bytes);
  memset(copy, 0, bytes);
  MUST("create a", cubert_client_create_from_slice(client, a, bytes, &h[0], &err));
  MUST("create b", cubert_client_create_from_slice(client, b, bytes, &h[1], &err));
  MUST("empty out", cubert_client_empty(client, bytes, &h[2], &err));
  MUST("sync", cubert_client_sync(client, &err));
  args = args_of(h, 3, NULL, 0);
  if (cl->ok && peer_cl_upload(cl, a, bytes, b, bytes, bytes) != 0) cl_why = cl->why;
  for (r = -1; r < cfg->runs; r++) { /* each runtime in its own block of runs */
    double t0 = bench_now_ns(), t;
    MUST("add launch", launch(client, cfg, &ck_add_f32_kernel, &count, &args, &err));
    MUST("sync", cubert_client_sync(client, &err));
    t = bench_now_ns() - t0;
    if (r >= 0) ours[r] = 3.0 * (double)bytes / t;
  }
  bench_settle(SETTLE_US);
  for (r = -1; !cl_why && r < cfg->runs; r++) {
    double t = peer_cl_add(cl, n);
    if (t < 0) fail("PoCL add failed");
    if (r >= 0) ocl[r] = 3.0 * (double)bytes / t;
  }
  bench_settle(SETTLE_US);
  for (r = -1; !omp_why && r < cfg->runs; r++) {
    double t0 = bench_now_ns(), t;
    peer_omp_add(a, b, out, n);
    t = bench_now_ns() - t0;
    BENCH_CLOBBER(out);
    if (r >= 0) omp[r] = 3.0 * (double)bytes / t;
  }
  bench_settle(SETTLE_US);
  for (r = -1; r < cfg->runs; r++) {
    double t = timed_memcpy(copy, a, bytes);
    if (r >= 0) mc[r] = 2.0 * (double)bytes / t;
  }
  if (!omp_why) check_add("OpenMP", a, b, out, n);
  if (!cl_why) {
    memset(out, 0, bytes);
    if (peer_cl_read(cl, out, bytes) != 0) fail("PoCL read failed");
    check_add("PoCL", a, b, out, n);
  }
  memset(out, 0, bytes);
  MUST("read out", cubert_client_read_one(client, &h[2], out, bytes, &err));
  check_add("cubert", a, b, out, n);
  for (i = 0; i < 3; i++) MUST("release", cubert_client_handle_release(client, &h[i], NULL));
  MUST("sync", cubert_client_sync(client, &err));
  s_ours = bench_stat_of(ours, cfg->runs);
  emit_vs("compute", "add f32 16M (3 x 64 MiB), launch + sync", "GB/s", 1, s_ours, "PoCL",
          cl_why ? none : bench_stat_of(ocl, cfg->runs), cl_why, 1.0);
  emit_vs("compute", "  same, vs OpenMP parallel for", "GB/s", 1, s_ours, "OpenMP",
          omp_why ? none : bench_stat_of(omp, cfg->runs), omp_why, 0.9);
  emit_vs("compute", "  same, vs memcpy 64 MiB (1 thread, floor)", "GB/s", 1, s_ours, "memcpy",
          bench_stat_of(mc, cfg->runs), NULL, 0);
  free(a);
  free(b);
  free(out);
  free(copy);
}

/* ---- compute: matmul ------------------------------------------------------------------- */

static void check_matmul(const char *who, const float *a, const float *b, const float *c,
                         uint32_t m, uint32_t k, uint32_t n) {
  uint32_t i, j, p;
  unsigned long bad = 0;
  for (i = 0; i < m; i += 7)
    for (j = 0; j < n; j++) {
      double ref = 0;
      for (p = 0; p < k; p++) ref += (double)a[(size_t)i * k + p] * b[(size_t)p * n + j];
      if ((double)c[(size_t)i * n + j] != ref) bad++;
    }
  if (bad) {
    fprintf(stderr, "bench_peers: %s matmul: %lu wrong results\n", who, bad);
    exit(1);
  }
}

static void bench_matmul(cubert_client_t *client, peer_cl_t *cl, const config_t *cfg) {
  const uint32_t m = cfg->mm, k = cfg->mm, n = cfg->mm;
  const size_t bytes_a = (size_t)m * k * sizeof(float), bytes_b = (size_t)k * n * sizeof(float);
  const size_t bytes_c = (size_t)m * n * sizeof(float);
  const double flop = 2.0 * m * (double)n * k;
  double ours[BENCH_MAX_RUNS], ocl[BENCH_MAX_RUNS], omp[BENCH_MAX_RUNS];
  float *a = (float *)malloc(bytes_a), *b = (float *)malloc(bytes_b), *c = (float *)malloc(bytes_c);
  cubert_handle_t h[3];
  uint64_t scalars[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_2d((n + CK_TILE - 1) / CK_TILE,
                                                       (m + CK_TILE - 1) / CK_TILE);
  cubert_error_t err;
  bench_stat_t s_ours, none;
  const char *cl_why = cl->ok ? NULL : cl->why, *omp_why = peer_omp_unavailable();
  size_t i;
  int r;
  memset(&none, 0, sizeof none);
  if (!a || !b || !c) fail("out of host memory");
  for (i = 0; i < (size_t)m * k; i++) a[i] = (float)((i * 7) % 13) - 6.0f;
  for (i = 0; i < (size_t)k * n; i++) b[i] = (float)((i * 5) % 11) * 0.5f;
  scalars[0] = m;
  scalars[1] = k;
  scalars[2] = n;
  MUST("create a", cubert_client_create_from_slice(client, a, bytes_a, &h[0], &err));
  MUST("create b", cubert_client_create_from_slice(client, b, bytes_b, &h[1], &err));
  MUST("empty c", cubert_client_empty(client, bytes_c, &h[2], &err));
  MUST("sync", cubert_client_sync(client, &err));
  args = args_of(h, 3, scalars, 3);
  if (cl->ok && peer_cl_upload(cl, a, bytes_a, b, bytes_b, bytes_c) != 0) cl_why = cl->why;
  for (r = -1; r < cfg->runs; r++) {
    double t0 = bench_now_ns(), t;
    MUST("matmul launch", launch(client, cfg, &ck_matmul_f32_kernel, &count, &args, &err));
    MUST("sync", cubert_client_sync(client, &err));
    t = bench_now_ns() - t0;
    if (r >= 0) ours[r] = flop / t;
  }
  bench_settle(SETTLE_US);
  for (r = -1; !cl_why && r < cfg->runs; r++) {
    double t = peer_cl_matmul(cl, m, k, n);
    if (t < 0) fail("PoCL matmul failed");
    if (r >= 0) ocl[r] = flop / t;
  }
  bench_settle(SETTLE_US);
  for (r = -1; !omp_why && r < cfg->runs; r++) {
    double t0 = bench_now_ns(), t;
    peer_omp_matmul(a, b, c, m, k, n);
    t = bench_now_ns() - t0;
    BENCH_CLOBBER(c);
    if (r >= 0) omp[r] = flop / t;
  }
  bench_settle(SETTLE_US);
  if (!omp_why) check_matmul("OpenMP", a, b, c, m, k, n);
  if (!cl_why) {
    memset(c, 0, bytes_c);
    if (peer_cl_read(cl, c, bytes_c) != 0) fail("PoCL read failed");
    check_matmul("PoCL", a, b, c, m, k, n);
  }
  memset(c, 0, bytes_c);
  MUST("read c", cubert_client_read_one(client, &h[2], c, bytes_c, &err));
  check_matmul("cubert", a, b, c, m, k, n);
  for (i = 0; i < 3; i++) MUST("release", cubert_client_handle_release(client, &h[i], NULL));
  MUST("sync", cubert_client_sync(client, &err));
  s_ours = bench_stat_of(ours, cfg->runs);
  emit_vs("compute", "matmul f32 512x512x512, launch + sync", "GFLOP/s", 1, s_ours, "PoCL",
          cl_why ? none : bench_stat_of(ocl, cfg->runs), cl_why, 1.0);
  emit_vs("compute", "  same, vs OpenMP parallel for (i-k-j)", "GFLOP/s", 1, s_ours, "OpenMP",
          omp_why ? none : bench_stat_of(omp, cfg->runs), omp_why, 0.9);
  free(a);
  free(b);
  free(c);
}

#define PEERS_OPTIONS "[--runs R] [--quick] [--checked] [--only launch|add|matmul] [-h|--help]"

int main(int argc, char **argv) {
  config_t cfg;
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  peer_cl_t cl;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  int k;
  cfg.runs = 15;
  cfg.round_trips = 2000;
  cfg.async_n = 20000;
  cfg.add_n = (size_t)16 << 20;
  cfg.mm = 512;
  cfg.checked = 0;
  cfg.only = NULL;
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_peers", PEERS_OPTIONS,
                       "Launch round trips, an f32 add and a matmul on the CPU server next to "
                       "PoCL and OpenMP measured in the same run.");
  for (k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--quick") == 0) {
      cfg.runs = 5;
      cfg.round_trips = 200;
      cfg.async_n = 2000;
    } else if (strcmp(argv[k], "--runs") == 0 && k + 1 < argc) {
      cfg.runs = atoi(argv[++k]);
    } else if (strcmp(argv[k], "--checked") == 0) {
      cfg.checked = 1;
    } else if (strcmp(argv[k], "--only") == 0 && k + 1 < argc) {
      cfg.only = argv[++k];
    } else {
      return bench_bad_option("bench_peers", argv[k], PEERS_OPTIONS);
    }
  }
  if (cfg.runs < 1 || cfg.runs > BENCH_MAX_RUNS) {
    fprintf(stderr, "bench_peers: --runs must be 1..%d\n", BENCH_MAX_RUNS);
    return 2;
  }
  cubert_cpu_options_initialize(&o);
  MUST("cubert_cpu_client_create",
       cubert_cpu_client_create(cubert_allocator_libc(), &o, &client, &err));
  peer_cl_open(&cl);
  printf("bench_peers: %ld online CPUs; cubert: CPU server, default workers (+ the stream "
         "thread), kernels launched %s; PoCL: %s; OpenMP: %s (%d threads)\n",
         online, cfg.checked ? "CHECKED" : "unchecked", cl.ok ? cl.device : cl.why,
         peer_omp_unavailable() ? "no" : "yes", peer_omp_threads());
  printf("  median of %d runs [min..max]; per run: %ld round trips, %ld async launches, 1 add of "
         "%lu floats, 1 matmul %ux%u\n\n",
         cfg.runs, cfg.round_trips, cfg.async_n, (unsigned long)cfg.add_n, cfg.mm, cfg.mm);
  bench_print_load("before");
  bench_table_begin("bench_peers");
  if (!cfg.only || strcmp(cfg.only, "launch") == 0) bench_launch(client, &cl, &cfg);
  if (!cfg.only || strcmp(cfg.only, "add") == 0) bench_add(client, &cl, &cfg);
  if (!cfg.only || strcmp(cfg.only, "matmul") == 0) bench_matmul(client, &cl, &cfg);
  printf("\nx better: peer / cubert for times, cubert / peer for rates (above 1: cubert ahead).\n"
         "GB/s = bytes read + written / time (add: 3 x 64 MiB, memcpy: 2 x 64 MiB), 1 GB = 1e9 B;"
         " GFLOP/s = 2 m n k / time.\n");
  bench_print_load("after");
  peer_cl_close(&cl);
  cubert_client_release(client);
  return 0;
}

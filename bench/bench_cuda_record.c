/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_cuda_record.c: recorded sequences (cubert/record.h) on the CUDA
 * device, next to the raw Driver API in the same run (the same libcuda entry
 * points, kernel and GPU; bench/bench_cuda_raw.h), alternating run by run.
 * docs/recording.md, docs/benchmarks.md ("GPU").
 *
 * The sequence: 10 adds of 1024 floats (ck_add_f32, c = a + b, 4 cubes of
 * 256 units), recorded once on the client's stream.
 *  1. sustained, per kernel: R replays then one sync, time / (10 R), vs a
 *     raw cuLaunchKernel loop of the same 10 R launches + cuStreamSynchronize
 *     (goal <= 0.3x: ratio >= 3.3);
 *  2. the same vs a raw CUDA graph of the same 10 kernel nodes, R cuGraphLaunch
 *     + cuStreamSynchronize (goal <= 1.1x: ratio >= 0.91);
 *  3. 10 kernels + sync: one replay + cubert_client_sync vs one raw
 *     cuGraphLaunch + cuStreamSynchronize (goal <= 1.1x), and vs the 10 launches
 *     made one by one through the client + sync (context);
 *  4. an update + replay + sync: a new scalar-free buffer in a slot each
 *     time (cuGraphExecKernelNodeSetParams on every node) vs a raw
 *     SetParams of the 10 nodes + cuGraphLaunch + sync.
 * Medians over --runs runs (default 11) with [min..max]; results checked.
 * tools/bench_torch_graph.py measures PyTorch's CUDA graphs on the same shape.
 *
 *   build/cuda/bench/bench_cuda_record [--runs R] [--quick]
 * Without a GPU (or in a build without CUDA) it prints one line
 * "bench_cuda_record: skipped: ..." and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"

#define OPTIONS "[--runs R] [--quick] [-h|--help]"
#define WHAT \
  "10 adds of 1024 floats replayed from a recording on the GPU vs a raw cuLaunchKernel loop and a raw CUDA graph."

#if !defined(CUBERT_HAVE_BACKEND_CUDA)
int main(int argc, char **argv) {
  if (bench_wants_help(argc, argv)) return bench_usage(stdout, "bench_cuda_record", OPTIONS, WHAT);
  if (argc > 1 && strcmp(argv[1], "--quick") != 0 && strcmp(argv[1], "--runs") != 0)
    return bench_bad_option("bench_cuda_record", argv[1], OPTIONS);
  printf("bench_cuda_record: skipped: CUDA unavailable: this build has no CUDA driver (make CUDA=1)\n");
  return 0;
}
#else

#include "cubert/client.h"
#include "cubert/cube.h"
#include "cubert/cuda.h"
#include "cubert/os.h"
#include "cubert/record.h"
#include "cubert_kernels.h"
#include "bench_cuda_raw.h"

#define MAX_RUNS BENCH_MAX_RUNS
#define KERNELS 10
#define N 1024

#define MUST(what, expr)                                                                         \
  do {                                                                                           \
    cubert_status_t must_st_ = (expr);                                                           \
    if (must_st_ != CUBERT_STATUS_OK) {                                                          \
      fprintf(stderr, "bench_cuda_record: %s failed: %s\n", what, cubert_status_name(must_st_)); \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

static void emit(const char *figure, bench_stat_t ours, const char *peer, bench_stat_t theirs,
                 double goal) {
  bench_row_t row = bench_row("gpu record", figure, "ns", 0, ours);
  row.peer = peer;
  row.peer_stat = theirs;
  row.goal = goal;
  bench_emit(&row);
}

/* The raw side: buffers, the argument block, the function and a graph of 10 nodes. */
typedef struct raw_seq_t {
  CUdeviceptr rb[4]; /* a, b, c, c2 */
  cubert_kernel_args_t args[2]; /* c = a + b, c2 = a + b */
  CUfunction f;
  CUgraph graph;
  CUgraphExec exec;
  CUgraphNode nodes[KERNELS];
} raw_seq_t;

static void raw_node_params(raw_seq_t *q, int which, void **params, uint32_t *mode, CUdeviceptr *report,
                            CUDA_KERNEL_NODE_PARAMS *p) {
  *mode = CUBERT_KERNEL_MODE_CHECKED;
  *report = 0;
  params[0] = &q->args[which];
  params[1] = mode;
  params[2] = report;
  memset(p, 0, sizeof *p);
  p->func = q->f;
  p->gridDimX = N / CK_BLOCK;
  p->gridDimY = 1;
  p->gridDimZ = 1;
  p->blockDimX = CK_BLOCK;
  p->blockDimY = 1;
  p->blockDimZ = 1;
  p->kernelParams = params;
}

static void raw_seq_open(raw_seq_t *q, raw_t *r, const float *host) {
  void *params[3];
  uint32_t mode;
  CUdeviceptr report;
  CUDA_KERNEL_NODE_PARAMS p;
  int k;
  memset(q, 0, sizeof *q);
  q->f = raw_function(r, &ck_add_f32_kernel);
  for (k = 0; k < 4; k++) {
    q->rb[k] = raw_alloc(r, N * 4);
    RAW_CU("cuMemcpyHtoDAsync", r->cu->cuMemcpyHtoDAsync(q->rb[k], host, N * 4, r->stream));
  }
  for (k = 0; k < 2; k++) {
    cubert_kernel_args_initialize(&q->args[k]);
    cubert_kernel_args_set_buffer(&q->args[k], 0, (void *)(uintptr_t)q->rb[0], N * 4);
    cubert_kernel_args_set_buffer(&q->args[k], 1, (void *)(uintptr_t)q->rb[1], N * 4);
    cubert_kernel_args_set_buffer(&q->args[k], 2, (void *)(uintptr_t)q->rb[2 + k], N * 4);
  }
  raw_sync(r);
  RAW_CU("cuGraphCreate", r->cu->cuGraphCreate(&q->graph, 0));
  for (k = 0; k < KERNELS; k++) {
    raw_node_params(q, 0, params, &mode, &report, &p);
    RAW_CU("cuGraphAddKernelNode", r->cu->cuGraphAddKernelNode(&q->nodes[k], q->graph,
                                                                 k ? &q->nodes[k - 1] : NULL,
                                                                 k ? 1u : 0u, &p));
  }
  RAW_CU("cuGraphInstantiateWithFlags", r->cu->cuGraphInstantiateWithFlags(&q->exec, q->graph, 0));
}

static void raw_seq_close(raw_seq_t *q, raw_t *r) {
  int k;
  RAW_CU("cuGraphExecDestroy", r->cu->cuGraphExecDestroy(q->exec));
  RAW_CU("cuGraphDestroy", r->cu->cuGraphDestroy(q->graph));
  for (k = 0; k < 4; k++) raw_free(r, q->rb[k]);
  raw_sync(r);
}

static void raw_loop(raw_seq_t *q, raw_t *r) {
  cubert_dim3_t d = {N / CK_BLOCK, 1, 1};
  int k;
  for (k = 0; k < KERNELS; k++) raw_launch(r, q->f, &ck_add_f32_kernel, d, &q->args[0]);
}

static void raw_graph(raw_seq_t *q, raw_t *r) {
  RAW_CU("cuGraphLaunch", r->cu->cuGraphLaunch(q->exec, r->stream));
}

/* every node's output to c (which 0) or c2 (which 1) */
static void raw_retarget(raw_seq_t *q, raw_t *r, int which) {
  void *params[3];
  uint32_t mode;
  CUdeviceptr report;
  CUDA_KERNEL_NODE_PARAMS p;
  int k;
  for (k = 0; k < KERNELS; k++) {
    raw_node_params(q, which, params, &mode, &report, &p);
    RAW_CU("cuGraphExecKernelNodeSetParams",
           r->cu->cuGraphExecKernelNodeSetParams(q->exec, q->nodes[k], &p));
  }
}

static int check(cubert_client_t *c, const cubert_handle_t *h, const float *host) {
  static float out[N];
  int i;
  MUST("read", cubert_client_read_one(c, h, out, sizeof out, NULL));
  for (i = 0; i < N; i++)
    if (out[i] != 2.0f * host[i]) {
      fprintf(stderr, "bench_cuda_record: element %d is %g, expected %g\n", i, (double)out[i],
              2.0 * host[i]);
      return 0;
    }
  return 1;
}

int main(int argc, char **argv) {
  int runs = 11, reps = 2000, rts = 500, k, run, i;
  double rep_c[MAX_RUNS], loop_r[MAX_RUNS], graph_r[MAX_RUNS], rt_c[MAX_RUNS], rt_g[MAX_RUNS],
      rt_d[MAX_RUNS], up_c[MAX_RUNS], up_g[MAX_RUNS];
  static float host[N];
  cubert_cuda_device_info_t info;
  cubert_cuda_options_t o;
  cubert_client_t *c = NULL;
  cubert_handle_t h[4];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(N / CK_BLOCK);
  cubert_recording_t *rec = NULL;
  cubert_error_t err;
  raw_t r;
  raw_seq_t q;
  int failed = 0;
  (void)raw_wait; /* bench_cuda_raw.h's helpers this program does not use */
  (void)raw_set_schedule;
  (void)raw_schedule;
  if (bench_wants_help(argc, argv)) return bench_usage(stdout, "bench_cuda_record", OPTIONS, WHAT);
  for (k = 1; k < argc; k++) {
    if (strcmp(argv[k], "--quick") == 0) {
      runs = 5;
      reps = 200;
      rts = 50;
    } else if (strcmp(argv[k], "--runs") == 0 && k + 1 < argc) {
      runs = atoi(argv[++k]);
    } else {
      return bench_bad_option("bench_cuda_record", argv[k], OPTIONS);
    }
  }
  if (runs < 1 || runs > MAX_RUNS) {
    fprintf(stderr, "bench_cuda_record: --runs must be 1..%d\n", MAX_RUNS);
    return 2;
  }
  if (cubert_cuda_available(&err) != CUBERT_STATUS_OK) {
    printf("bench_cuda_record: skipped: %s\n", err.reason);
    return 0;
  }
  if (!cubert_cuda_image_find(ck_add_f32_kernel.cuda_entry_name)) {
    printf("bench_cuda_record: skipped: no kernel images (nvcc was not found when this was built)\n");
    return 0;
  }
  MUST("device info", cubert_cuda_device_info(0, &info, &err));
  printf("bench_cuda_record: GPU 0 \"%s\" (sm_%u%u), driver %d.%d, %d x %d-float adds, %d runs%s\n",
         info.properties.name, info.compute_major, info.compute_minor, info.driver_version / 1000,
         info.driver_version % 1000 / 10, KERNELS, N, runs, reps < 2000 ? " (--quick)" : "");
  for (i = 0; i < N; i++) host[i] = (float)(i % 97) * 0.5f;
  cubert_cuda_options_initialize(&o);
  if (cubert_cuda_client_create(cubert_allocator_libc(), &o, &c, &err) != CUBERT_STATUS_OK) {
    fprintf(stderr, "bench_cuda_record: cannot create the CUDA device: %s\n", err.reason);
    return 1;
  }
  for (k = 0; k < 4; k++) MUST("create", cubert_client_create_from_slice(c, host, N * 4, &h[k], NULL));
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, &h[0]);
  cubert_launch_arguments_set_buffer(&args, 1, &h[1]);
  cubert_launch_arguments_set_buffer(&args, 2, &h[2]);
  MUST("record_begin", cubert_client_record_begin(c, &err));
  for (k = 0; k < KERNELS; k++) MUST("launch", cubert_client_launch(c, &ck_add_f32_kernel, &count, &args, &err));
  MUST("record_end", cubert_client_record_end(c, &rec, &err));
  raw_open(&r);
  raw_seq_open(&q, &r, host);
  for (i = 0; i < 50; i++) { /* warm up: the graph is built at the first replay */
    MUST("replay", cubert_client_replay(c, rec, &err));
    raw_loop(&q, &r);
    raw_graph(&q, &r);
  }
  MUST("sync", cubert_client_sync(c, &err));
  raw_sync(&r);
  failed |= !check(c, &h[2], host);
  for (run = 0; run < runs; run++) {
    double t0;
    for (i = 0; i < 3; i++) {
      switch ((i + run) % 3) {
        case 0:
          t0 = bench_now_ns();
          for (k = 0; k < reps; k++) MUST("replay", cubert_client_replay(c, rec, &err));
          MUST("sync", cubert_client_sync(c, &err));
          rep_c[run] = (bench_now_ns() - t0) / ((double)reps * KERNELS);
          break;
        case 1:
          t0 = bench_now_ns();
          for (k = 0; k < reps; k++) raw_loop(&q, &r);
          raw_sync(&r);
          loop_r[run] = (bench_now_ns() - t0) / ((double)reps * KERNELS);
          break;
        default:
          t0 = bench_now_ns();
          for (k = 0; k < reps; k++) raw_graph(&q, &r);
          raw_sync(&r);
          graph_r[run] = (bench_now_ns() - t0) / ((double)reps * KERNELS);
          break;
      }
    }
    t0 = bench_now_ns();
    for (k = 0; k < rts; k++) {
      MUST("replay", cubert_client_replay(c, rec, &err));
      MUST("sync", cubert_client_sync(c, &err));
    }
    rt_c[run] = (bench_now_ns() - t0) / rts;
    t0 = bench_now_ns();
    for (k = 0; k < rts; k++) {
      raw_graph(&q, &r);
      raw_sync(&r);
    }
    rt_g[run] = (bench_now_ns() - t0) / rts;
    t0 = bench_now_ns();
    for (k = 0; k < rts; k++) {
      for (i = 0; i < KERNELS; i++) MUST("launch", cubert_client_launch(c, &ck_add_f32_kernel, &count, &args, &err));
      MUST("sync", cubert_client_sync(c, &err));
    }
    rt_d[run] = (bench_now_ns() - t0) / rts;
    /* an update of every node (the output buffer alternates) + replay + sync */
    t0 = bench_now_ns();
    for (k = 0; k < rts; k++) {
      MUST("set_buffer", cubert_recording_set_buffer(rec, 2, &h[2 + (k + 1) % 2], &err));
      MUST("replay", cubert_client_replay(c, rec, &err));
      MUST("sync", cubert_client_sync(c, &err));
    }
    up_c[run] = (bench_now_ns() - t0) / rts;
    t0 = bench_now_ns();
    for (k = 0; k < rts; k++) {
      raw_retarget(&q, &r, (k + 1) % 2);
      raw_graph(&q, &r);
      raw_sync(&r);
    }
    up_g[run] = (bench_now_ns() - t0) / rts;
  }
  failed |= !check(c, &h[2], host);
  failed |= !check(c, &h[3], host);
  bench_table_begin("bench_cuda_record");
  emit("10 adds replayed, sustained, per kernel", bench_stat_of(rep_c, runs),
       "raw cuLaunchKernel loop", bench_stat_of(loop_r, runs), 1.0 / 0.3);
  emit("10 adds replayed, sustained, per kernel (vs graph)", bench_stat_of(rep_c, runs),
       "raw CUDA graph replay", bench_stat_of(graph_r, runs), 1.0 / 1.1);
  emit("10 adds replayed + sync", bench_stat_of(rt_c, runs), "raw cuGraphLaunch + sync",
       bench_stat_of(rt_g, runs), 1.0 / 1.1);
  emit("10 adds replayed + sync (vs launched one by one)", bench_stat_of(rt_c, runs),
       "10 client launches + sync", bench_stat_of(rt_d, runs), 0);
  emit("new buffer in a slot + replay + sync (10 nodes updated)", bench_stat_of(up_c, runs),
       "raw 10 x SetParams + cuGraphLaunch + sync", bench_stat_of(up_g, runs), 0);
  cubert_recording_destroy(rec);
  raw_seq_close(&q, &r);
  raw_close(&r);
  for (k = 0; k < 4; k++) MUST("release", cubert_client_handle_release(c, &h[k], NULL));
  cubert_client_release(c);
  if (failed) printf("bench_cuda_record: a result did not check\n");
  return failed ? 1 : 0;
}
#endif /* CUBERT_HAVE_BACKEND_CUDA */

/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_checked.c: what the default launch mode (CHECKED) costs against
 * UNCHECKED on the CPU server, on the kernels of the kernel library
 * (examples/kernels/cubert_kernels.h), each launch + sync:
 *   - ck_add_f32 over 16M floats (and 1M), GB/s counting bytes read + written;
 *   - ck_matmul_f32 512 x 512 x 512 (every cube full) and 500 x 500 x 500
 *     (edge cubes run checked), GFLOP/s.
 * The kernels declare their cube bounds (cubert/kernel_bounds.h), so a full
 * cube of a CHECKED launch runs the unchecked copy of the body. CHECKED and
 * UNCHECKED runs alternate (run i of each, then run i + 1), so both see the
 * same machine; the row's "peer" is UNCHECKED and the ratio is the median of
 * the per-run ratios (above 1: CHECKED faster). Goal (issue 22): CHECKED within
 * 1.2x of UNCHECKED, i.e. a ratio >= 0.83. Results are checked.
 *
 *   build/bench/bench_checked [--runs R] [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "bench_util.h"
#include "cubert_kernels.h"

static void die(const char *what, cubert_status_t status, const cubert_error_t *err) {
  char msg[256];
  msg[0] = 0;
  if (err) cubert_error_format(err, msg, sizeof msg);
  fprintf(stderr, "bench_checked: %s failed: %s %s\n", what, cubert_status_name(status), msg);
  exit(1);
}

#define MUST(what, expr)                                  \
  do {                                                    \
    cubert_status_t st_ = (expr);                         \
    if (st_ != CUBERT_STATUS_OK) die((what), st_, &err); \
  } while (0)

/* Time one launch + sync in each mode, alternately, `runs` times (after a
 * warm-up of each); rates = scale / ns. */
static void alternate(cubert_client_t *client, const cubert_kernel_t *kernel,
                      const cubert_cube_count_t *count, const cubert_launch_arguments_t *args,
                      int runs, double scale, double *checked, double *unchecked, double *ratio) {
  cubert_error_t err;
  int r, mode;
  for (r = -1; r < runs; r++)
    for (mode = 0; mode < 2; mode++) {
      double t0 = bench_now_ns(), t;
      if (mode == 0)
        MUST("launch", cubert_client_launch(client, kernel, count, args, &err));
      else
        MUST("launch", cubert_client_launch_unchecked(client, kernel, count, args, &err));
      MUST("sync", cubert_client_sync(client, &err));
      t = bench_now_ns() - t0;
      if (r < 0) continue;
      if (mode == 0)
        checked[r] = scale / t;
      else {
        unchecked[r] = scale / t;
        ratio[r] = checked[r] / unchecked[r];
      }
    }
}

static void emit(const char *figure, const char *unit, const double *checked,
                 const double *unchecked, const double *ratio, int runs) {
  bench_row_t row = bench_row("checked", figure, unit, 1, bench_stat_of(checked, runs));
  row.peer = "UNCHECKED";
  row.peer_stat = bench_stat_of(unchecked, runs);
  row.ratio = bench_stat_of(ratio, runs).median;
  row.goal = 1.0 / 1.2;
  bench_emit(&row);
}

static void bench_add(cubert_client_t *client, size_t n, int runs, const char *figure) {
  const size_t bytes = n * sizeof(float);
  double c[BENCH_MAX_RUNS], u[BENCH_MAX_RUNS], q[BENCH_MAX_RUNS];
  float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *out = (float *)malloc(bytes);
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d((uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK));
  cubert_error_t err;
  size_t i, bad = 0;
  if (!a || !b || !out) die("malloc", CUBERT_STATUS_RESOURCE_EXHAUSTED, NULL);
  for (i = 0; i < n; i++) {
    a[i] = (float)(i & 1023) * 0.5f;
    b[i] = 0.25f;
  }
  MUST("create a", cubert_client_create_from_slice(client, a, bytes, &h[0], &err));
  MUST("create b", cubert_client_create_from_slice(client, b, bytes, &h[1], &err));
  MUST("empty out", cubert_client_empty(client, bytes, &h[2], &err));
  cubert_launch_arguments_initialize(&args);
  for (i = 0; i < 3; i++)
    MUST("set buffer", cubert_launch_arguments_set_buffer(&args, (uint32_t)i, &h[i]));
  alternate(client, &ck_add_f32_kernel, &count, &args, runs, 3.0 * (double)bytes, c, u, q);
  MUST("read", cubert_client_read_one(client, &h[2], out, bytes, &err));
  for (i = 0; i < n; i++)
    if (out[i] != a[i] + b[i]) bad++;
  if (bad) {
    fprintf(stderr, "bench_checked: add: %lu wrong results\n", (unsigned long)bad);
    exit(1);
  }
  for (i = 0; i < 3; i++) MUST("release", cubert_client_handle_release(client, &h[i], &err));
  emit(figure, "GB/s", c, u, q, runs);
  free(a);
  free(b);
  free(out);
}

static void bench_matmul(cubert_client_t *client, uint32_t e, int runs, const char *figure) {
  const size_t bytes = (size_t)e * e * sizeof(float);
  double c[BENCH_MAX_RUNS], u[BENCH_MAX_RUNS], q[BENCH_MAX_RUNS];
  float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *out = (float *)malloc(bytes);
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count =
      cubert_cube_count_new_2d((e + CK_TILE - 1) / CK_TILE, (e + CK_TILE - 1) / CK_TILE);
  cubert_error_t err;
  size_t i, j, p, bad = 0;
  if (!a || !b || !out) die("malloc", CUBERT_STATUS_RESOURCE_EXHAUSTED, NULL);
  for (i = 0; i < (size_t)e * e; i++) {
    a[i] = (float)(i % 7) * 0.5f;
    b[i] = (float)(i % 5) * 0.5f;
  }
  MUST("create a", cubert_client_create_from_slice(client, a, bytes, &h[0], &err));
  MUST("create b", cubert_client_create_from_slice(client, b, bytes, &h[1], &err));
  MUST("empty c", cubert_client_empty(client, bytes, &h[2], &err));
  cubert_launch_arguments_initialize(&args);
  for (i = 0; i < 3; i++)
    MUST("set buffer", cubert_launch_arguments_set_buffer(&args, (uint32_t)i, &h[i]));
  MUST("set m", cubert_launch_arguments_set_u32(&args, 0, e));
  MUST("set k", cubert_launch_arguments_set_u32(&args, 1, e));
  MUST("set n", cubert_launch_arguments_set_u32(&args, 2, e));
  alternate(client, &ck_matmul_f32_kernel, &count, &args, runs, 2.0 * e * (double)e * e, c, u, q);
  MUST("read", cubert_client_read_one(client, &h[2], out, bytes, &err));
  for (i = 0; i < e; i += 13)
    for (j = 0; j < e; j++) {
      double ref = 0;
      for (p = 0; p < e; p++) ref += (double)a[i * e + p] * b[p * e + j];
      if ((double)out[i * e + j] != ref) bad++;
    }
  if (bad) {
    fprintf(stderr, "bench_checked: matmul: %lu wrong results\n", (unsigned long)bad);
    exit(1);
  }
  for (i = 0; i < 3; i++) MUST("release", cubert_client_handle_release(client, &h[i], &err));
  emit(figure, "GFLOP/s", c, u, q, runs);
  free(a);
  free(b);
  free(out);
}

int main(int argc, char **argv) {
  cubert_client_t *client;
  cubert_error_t err;
  int runs = 11, quick = 0, i;
  static const char k_options[] = "[--runs N] [--quick] [-h|--help]";
  if (bench_wants_help(argc, argv))
    return bench_usage(stdout, "bench_checked", k_options,
                       "CHECKED vs UNCHECKED launches on the CPU server (add f32, matmul f32):\n"
                       "the ratio of their medians, in one run (docs/benchmarks.md).");
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (strcmp(argv[i], "--quick") == 0)
      quick = 1;
    else
      return bench_bad_option("bench_checked", argv[i], k_options);
  }
  if (quick) runs = 3;
  if (runs < 1 || runs > BENCH_MAX_RUNS) runs = 11;
  MUST("client", cubert_cpu_client_create(cubert_allocator_libc(), NULL, &client, &err));
  bench_table_begin("bench_checked");
  bench_print_load("before");
  bench_add(client, quick ? ((size_t)1 << 20) : ((size_t)1 << 24), runs,
            quick ? "add f32 1M, CHECKED vs UNCHECKED" : "add f32 16M, CHECKED vs UNCHECKED");
  bench_add(client, ((size_t)1 << 20) + 3, runs, "add f32 1M+3 (partial last cube)");
  bench_matmul(client, quick ? 128 : 512, runs,
               quick ? "matmul f32 128^3, CHECKED vs UNCHECKED" : "matmul f32 512^3, CHECKED vs UNCHECKED");
  bench_matmul(client, quick ? 120 : 500, runs,
               quick ? "matmul f32 120^3 (edge cubes)" : "matmul f32 500^3 (edge cubes)");
  bench_print_load("after");
  cubert_client_release(client);
  return 0;
}

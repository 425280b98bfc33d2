/* SPDX-License-Identifier: MIT */
/*
 * examples/trace.c: record a timeline trace (cubert/trace.h) of a small
 * two-stream program on the CPU device and write it as Chrome / Perfetto
 * trace-event JSON.
 *
 *   build/examples/trace [trace.json]
 *   python3 tools/trace-to-svg.py trace.json trace.svg     (an SVG timeline)
 *
 * or open trace.json in https://ui.perfetto.dev or chrome://tracing.
 * Stream 1 uploads two vectors and adds them (a few launches); stream 2
 * scales the sum, which stream 1 wrote, so the server makes stream 2 wait for
 * stream 1 (a cross-stream wait); both results are read back. The same
 * trace without code: CUBERT_TRACE=trace.json any-program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "cubert/trace.h"
#include "cubert_kernels.h"

#define N (1u << 18)

static int failed(cubert_status_t status, const cubert_error_t *err, const char *what) {
  char text[512];
  if (status == CUBERT_STATUS_OK) return 0;
  cubert_error_format(err, text, sizeof text);
  fprintf(stderr, "%s: %s\n", what, text);
  return 1;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "trace.json";
  cubert_trace_options_t topts;
  cubert_trace_stats_t stats;
  cubert_cpu_options_t o;
  cubert_client_t *s1 = NULL, *s2 = NULL;
  cubert_handle_t a, b, sum, scaled;
  cubert_binding_t bufs[3];
  uint64_t scalars[1];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d((N + CK_BLOCK - 1) / CK_BLOCK);
  cubert_error_t err;
  float *host = (float *)malloc(N * sizeof(float)), *out = (float *)malloc(N * sizeof(float));
  uint32_t i;
  int bad = 0, rc = 1;
  if (argc > 2 || (argc > 1 && argv[1][0] == '-')) {
    int help = argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0);
    fprintf(help ? stdout : stderr, "usage: trace [PATH (default trace.json)] [-h|--help]\n"
                                    "Writes a timeline trace of two CPU devices' work to PATH.\n");
    free(host);
    free(out);
    return help ? 0 : 2;
  }
  if (!host || !out) return 1;
  for (i = 0; i < N; i++) host[i] = (float)(i % 100);

  cubert_trace_options_initialize(&topts);
  topts.path = path;
  if (failed(cubert_trace_start(&topts, &err), &err, "cubert_trace_start")) return 1;

  cubert_cpu_options_initialize(&o);
  o.workers = 3;
  if (failed(cubert_cpu_client_create(cubert_allocator_libc(), &o, &s1, &err), &err, "create"))
    goto stop;
  if (failed(cubert_client_clone(s1, &s2, &err), &err, "clone")) goto release;
  cubert_client_set_stream(s1, 1);
  cubert_client_set_stream(s2, 2);

  /* stream 1: uploads and a few additions */
  if (failed(cubert_client_create_from_slice(s1, host, N * sizeof(float), &a, &err), &err, "a") ||
      failed(cubert_client_create_from_slice(s1, host, N * sizeof(float), &b, &err), &err, "b") ||
      failed(cubert_client_empty(s1, N * sizeof(float), &sum, &err), &err, "sum") ||
      failed(cubert_client_empty(s2, N * sizeof(float), &scaled, &err), &err, "scaled"))
    goto release;
  bufs[0] = a;
  bufs[1] = b;
  bufs[2] = sum;
  cubert_launch_arguments_initialize(&args);
  args.buffers = bufs;
  args.buffer_count = 3;
  args.scalars = NULL;
  args.scalar_count = 0;
  for (i = 0; i < 4; i++)
    if (failed(cubert_client_launch(s1, &ck_add_f32_kernel, &count, &args, &err), &err, "add"))
      goto release;

  /* stream 2: scaled = 2 * sum + b reads what stream 1 wrote (a cross-stream wait) */
  bufs[0] = sum;
  bufs[1] = b;
  bufs[2] = scaled;
  scalars[0] = cubert_kernel_f32_bits(2.0f);
  args.scalars = scalars;
  args.scalar_count = 1;
  if (failed(cubert_client_launch(s2, &ck_axpy_f32_kernel, &count, &args, &err), &err, "axpy") ||
      failed(cubert_client_read_one(s2, &scaled, out, N * sizeof(float), &err), &err, "read") ||
      failed(cubert_client_sync(s1, &err), &err, "sync"))
    goto release;
  for (i = 0; i < N; i++)
    if (out[i] != 2.0f * (host[i] + host[i]) + host[i]) bad++;
  (void)cubert_client_handle_release(s1, &a, NULL);
  (void)cubert_client_handle_release(s1, &b, NULL);
  (void)cubert_client_handle_release(s1, &sum, NULL);
  (void)cubert_client_handle_release(s2, &scaled, NULL);
  rc = bad != 0;
release:
  cubert_client_release(s2);
  cubert_client_release(s1);
stop:
  if (failed(cubert_trace_stop(&stats, &err), &err, "cubert_trace_stop")) rc = 1;
  printf("trace: %s (%llu events, %llu dropped); results %s\n", path,
         (unsigned long long)stats.recorded, (unsigned long long)stats.dropped,
         bad ? "WRONG" : "ok");
  free(host);
  free(out);
  return rc;
}

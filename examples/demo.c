/* SPDX-License-Identifier: MIT */
/*
 * examples/demo.c: the main demo (`make run`; `make run CUDA=1` runs it on
 * the GPU when there is one, else on the CPU with a line saying why). A
 * device runs, from
 * several host threads (each on its own stream), elementwise kernels, a
 * shared-memory reduction and a tiled matmul; one stream consumes data
 * another stream produced. Every result is checked against plain C, and the
 * device's memory usage is printed. Exit status 0 only when all match.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cubert.h"
#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "cubert/memory.h"
#if defined(CUBERT_HAVE_BACKEND_CUDA)
#include "cubert/cuda.h"
#endif
#include "cubert_kernels.h"

#define THREADS 4
#define N (1u << 18)

static cubert_client_t *g_client;
static int g_failures;
static pthread_mutex_t g_print = PTHREAD_MUTEX_INITIALIZER;

static void report(const char *what, int ok, const char *detail) {
  pthread_mutex_lock(&g_print);
  printf("  %-44s %s %s\n", what, ok ? "ok  " : "FAIL", detail ? detail : "");
  if (!ok) g_failures++;
  pthread_mutex_unlock(&g_print);
}

static int check(cubert_status_t status, const cubert_error_t *err, const char *what) {
  char msg[256];
  if (status == CUBERT_STATUS_OK) return 1;
  cubert_error_format(err, msg, sizeof msg);
  report(what, 0, msg);
  return 0;
}

static uint32_t cubes_for(uint64_t n) { return (uint32_t)((n + CK_BLOCK - 1) / CK_BLOCK); }

/* out = a * alpha + b on this thread's stream, then read back and compare. */
static void *elementwise_worker(void *arg) {
  int id = (int)(intptr_t)arg;
  float *a = (float *)malloc(N * sizeof(float)), *b = (float *)malloc(N * sizeof(float));
  float *out = (float *)malloc(N * sizeof(float));
  float alpha = 0.5f + (float)id;
  cubert_handle_t ha, hb, hout;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count;
  cubert_error_t err;
  uint32_t i, bad = 0;
  char label[64], detail[96];
  for (i = 0; i < N; i++) {
    a[i] = (float)(i % 1000) * 0.25f;
    b[i] = (float)id - (float)(i % 7);
  }
  snprintf(label, sizeof label, "thread %d, stream %llu: axpy over %u floats", id,
           (unsigned long long)cubert_client_stream(g_client), N);
  if (!check(cubert_client_create_from_slice(g_client, a, N * sizeof(float), &ha, &err), &err, label) ||
      !check(cubert_client_create_from_slice(g_client, b, N * sizeof(float), &hb, &err), &err, label) ||
      !check(cubert_client_empty(g_client, N * sizeof(float), &hout, &err), &err, label))
    goto done;
  /* typed arguments: buffers by handle, scalars by type (docs/kernels.md, "Arguments") */
  cubert_launch_arguments_initialize(&args);
  (void)cubert_launch_arguments_set_buffer(&args, 0, &ha);
  (void)cubert_launch_arguments_set_buffer(&args, 1, &hb);
  (void)cubert_launch_arguments_set_buffer(&args, 2, &hout);
  (void)cubert_launch_arguments_set_f32(&args, 0, alpha); /* a failed setter fails the launch */
  count = cubert_cube_count_new_1d(cubes_for(N));
  if (check(cubert_client_launch(g_client, &ck_axpy_f32_kernel, &count, &args, &err), &err, label) &&
      check(cubert_client_read_one(g_client, &hout, out, N * sizeof(float), &err), &err, label)) {
    for (i = 0; i < N; i++)
      if (out[i] != a[i] * alpha + b[i]) bad++;
    snprintf(detail, sizeof detail, "(%u mismatches)", bad);
    report(label, bad == 0, detail);
  }
  cubert_client_handle_release(g_client, &ha, NULL);
  cubert_client_handle_release(g_client, &hb, NULL);
  cubert_client_handle_release(g_client, &hout, NULL);
done:
  free(a);
  free(b);
  free(out);
  return NULL;
}

/* Producer on one stream, consumer on another: the consumer's launch must
 * wait for the producer's write without any explicit sync by the user. */
static cubert_handle_t g_shared;
static void *producer(void *arg) {
  float *data = (float *)malloc(N * sizeof(float));
  cubert_error_t err;
  uint32_t i;
  (void)arg;
  for (i = 0; i < N; i++) data[i] = 1.0f;
  check(cubert_client_create_from_slice(g_client, data, N * sizeof(float), &g_shared, &err), &err,
        "producer create");
  free(data);
  return NULL;
}

static void reduction(void) {
  uint32_t cubes = cubes_for(N), i;
  float *partial = (float *)malloc(cubes * sizeof(float));
  cubert_handle_t hpartial;
  cubert_binding_t bufs[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count;
  cubert_error_t err;
  double sum = 0;
  char detail[96];
  pthread_t t;
  pthread_create(&t, NULL, producer, NULL); /* a different thread: a different stream */
  pthread_join(t, NULL);
  if (!check(cubert_client_empty(g_client, cubes * sizeof(float), &hpartial, &err), &err,
             "reduction"))
    return;
  bufs[0] = g_shared;
  bufs[1] = hpartial;
  cubert_launch_arguments_initialize(&args);
  args.buffers = bufs;
  args.buffer_count = 2;
  args.scalars = NULL;
  args.scalar_count = 0;
  count = cubert_cube_count_new_1d(cubes);
  if (check(cubert_client_launch(g_client, &ck_reduce_sum_f32_kernel, &count, &args, &err), &err,
            "reduction launch") &&
      check(cubert_client_read_one(g_client, &hpartial, partial, cubes * sizeof(float), &err),
            &err, "reduction read")) {
    for (i = 0; i < cubes; i++) sum += partial[i];
    snprintf(detail, sizeof detail, "(sum %.0f, expected %u)", sum, N);
    report("cross-stream shared-memory tree reduction", sum == (double)N, detail);
  }
  cubert_client_handle_release(g_client, &hpartial, NULL);
  cubert_client_handle_release(g_client, &g_shared, NULL);
  free(partial);
}

/* A contiguous f32 matrix of shape s (data NULL: empty). */
static cubert_status_t contiguous_tensor(const float *data, const uint64_t s[2],
                                         cubert_memory_layout_t *out, cubert_error_t *err) {
  cubert_layout_descriptor_t d;
  const void *datas[1];
  memset(&d, 0, sizeof d);
  d.strategy = CUBERT_LAYOUT_CONTIGUOUS;
  d.rank = 2;
  d.shape[0] = s[0];
  d.shape[1] = s[1];
  d.elem_size = sizeof(float);
  datas[0] = data;
  return data ? cubert_client_create_tensors_from_slices(g_client, &d, datas, 1, out, err)
              : cubert_client_empty_tensors(g_client, &d, 1, out, err);
}

static void matmul(void) {
  const uint32_t m = 200, k = 150, n = 180;
  float *a = (float *)malloc(m * k * sizeof(float)), *b = (float *)malloc(k * n * sizeof(float));
  float *c = (float *)malloc(m * n * sizeof(float));
  uint64_t sa[2], sb[2], sc[2], scalars[3];
  cubert_memory_layout_t la, lb, lc;
  cubert_binding_t bufs[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count;
  cubert_error_t err;
  double max_err = 0;
  uint32_t i, j, p;
  char detail[96];
  for (i = 0; i < m * k; i++) a[i] = (float)((i * 7) % 13) - 6.0f;
  for (i = 0; i < k * n; i++) b[i] = (float)((i * 5) % 11) * 0.5f;
  sa[0] = m; sa[1] = k;
  sb[0] = k; sb[1] = n;
  sc[0] = m; sc[1] = n;
  /* ck_matmul_f32 indexes contiguous rows: contiguous tensors (an optimized
   * one is pitched on a GPU) */
  if (!check(contiguous_tensor(a, sa, &la, &err), &err, "matmul") ||
      !check(contiguous_tensor(b, sb, &lb, &err), &err, "matmul") ||
      !check(contiguous_tensor(NULL, sc, &lc, &err), &err, "matmul"))
    return;
  bufs[0] = la.memory;
  bufs[1] = lb.memory;
  bufs[2] = lc.memory;
  scalars[0] = m;
  scalars[1] = k;
  scalars[2] = n;
  cubert_launch_arguments_initialize(&args);
  args.buffers = bufs;
  args.buffer_count = 3;
  args.scalars = scalars;
  args.scalar_count = 3;
  count = cubert_cube_count_new_2d((n + CK_TILE - 1) / CK_TILE, (m + CK_TILE - 1) / CK_TILE);
  if (check(cubert_client_launch(g_client, &ck_matmul_f32_kernel, &count, &args, &err), &err,
            "matmul launch") &&
      check(cubert_client_read_one(g_client, &lc.memory, c, m * n * sizeof(float), &err), &err,
            "matmul read")) {
    for (i = 0; i < m; i++)
      for (j = 0; j < n; j++) {
        double ref = 0;
        for (p = 0; p < k; p++) ref += (double)a[i * k + p] * b[p * n + j];
        if (fabs(ref - c[i * n + j]) > max_err) max_err = fabs(ref - c[i * n + j]);
      }
    snprintf(detail, sizeof detail, "(max abs error %.2g)", max_err);
    report("tiled matmul 200x150 . 150x180", max_err < 1e-2, detail);
  }
  cubert_client_handle_release(g_client, &la.memory, NULL);
  cubert_client_handle_release(g_client, &lb.memory, NULL);
  cubert_client_handle_release(g_client, &lc.memory, NULL);
  free(a);
  free(b);
  free(c);
}

#if defined(CUBERT_HAVE_BACKEND_CUDA)
/* A CUDA=1 build runs on GPU 0 when there is one (and says why not). */
static int create_gpu_device(void) {
  cubert_error_t err;
  cubert_device_properties_t p;
  if (cubert_cuda_client_create(cubert_allocator_libc(), NULL, &g_client, &err) != CUBERT_STATUS_OK) {
    printf("not on the GPU (%s): running on the CPU server\n", err.reason);
    return 0;
  }
  cubert_client_properties(g_client, &p);
  printf("cubert %d.%d.%d demo on the GPU: CUDA device 0 \"%s\"\n", CUBERT_VERSION_MAJOR,
         CUBERT_VERSION_MINOR, CUBERT_VERSION_PATCH, p.name);
  return 1;
}
#else
static int create_gpu_device(void) { return 0; }
#endif

int main(int argc, char **argv) {
  cubert_cpu_options_t options;
  cubert_memory_usage_t usage;
  cubert_error_t err;
  pthread_t threads[THREADS];
  char text[256];
  int i;
  if (argc > 1) { /* -h / --help: the usage on stdout; anything else is an error */
    int help = strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0;
    fprintf(help ? stdout : stderr, "usage: %s [-h|--help]\n%s\n", "demo", "The main demo: an elementwise add, a reduction and a matmul on the CPU server (and a GPU in a CUDA=1 build), from several threads.");
    return help ? 0 : 2;
  }
  if (!create_gpu_device()) {
    cubert_cpu_options_initialize(&options);
    if (!check(cubert_cpu_client_create(cubert_allocator_libc(), &options, &g_client, &err), &err,
               "create the CPU device"))
      return 1;
    printf("cubert %d.%d.%d demo on the CPU server (%u stream slots)\n", CUBERT_VERSION_MAJOR,
           CUBERT_VERSION_MINOR, CUBERT_VERSION_PATCH, options.device.max_streams);
  }
  for (i = 0; i < THREADS; i++)
    pthread_create(&threads[i], NULL, elementwise_worker, (void *)(intptr_t)i);
  for (i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
  reduction();
  matmul();
  if (check(cubert_client_memory_usage(g_client, &usage, &err), &err, "memory usage")) {
    cubert_memory_usage_format(&usage, text, sizeof text);
    printf("memory usage before cleanup: %s\n", text);
  }
  check(cubert_client_sync(g_client, &err), &err, "sync");
  check(cubert_client_memory_cleanup(g_client, &err), &err, "cleanup");
  if (check(cubert_client_memory_usage(g_client, &usage, &err), &err, "memory usage")) {
    cubert_memory_usage_format(&usage, text, sizeof text);
    printf("memory usage after cleanup:  %s\n", text);
  }
  cubert_client_release(g_client);
  printf("%s\n", g_failures ? "demo FAILED" : "demo ok: every result matches the C reference");
  return g_failures ? 1 : 0;
}

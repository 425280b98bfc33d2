/* SPDX-License-Identifier: MIT */
/* A program outside the tree (tests/build/consumer-cmake, consumer-pkgconfig):
 * only the installed headers and library. Adds two vectors of 1,000,003
 * floats with the kernel library's ck_add_f32 on a CPU device and checks
 * every element. Prints "kernel consumer: ok ..." and exits 0. */
#include <stdio.h>
#include <stdlib.h>

#include <cubert/cubert.h>
#include <cubert/cpu.h>
#include <cubert/cube.h>
#include <cubert/os.h>
#include <cubert/cubert_kernels.h>

#define N 1000003u

static int failed(cubert_status_t status, const cubert_error_t *err, const char *what) {
  char text[512];
  if (status == CUBERT_STATUS_OK) return 0;
  cubert_error_format(err, text, sizeof text);
  fprintf(stderr, "kernel consumer: %s: %s\n", what, text);
  return 1;
}

int main(void) {
  cubert_client_t *client = NULL;
  cubert_handle_t h[3];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d((N + CK_BLOCK - 1) / CK_BLOCK);
  cubert_error_t err;
  float *a = (float *)malloc(N * sizeof(float)), *b = (float *)malloc(N * sizeof(float));
  float *out = (float *)malloc(N * sizeof(float));
  uint32_t i, bad = 0;
  int k;
  if (!a || !b || !out) return 1;
  for (i = 0; i < N; i++) {
    a[i] = (float)(i % 1000);
    b[i] = 0.5f;
  }
  if (failed(cubert_cpu_client_create(cubert_allocator_libc(), NULL, &client, &err), &err,
             "cubert_cpu_client_create"))
    return 1;
  if (failed(cubert_client_create_from_slice(client, a, N * sizeof(float), &h[0], &err), &err,
             "upload a") ||
      failed(cubert_client_create_from_slice(client, b, N * sizeof(float), &h[1], &err), &err,
             "upload b") ||
      failed(cubert_client_empty(client, N * sizeof(float), &h[2], &err), &err, "empty"))
    return 1;
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 3;
  args.scalars = NULL;
  args.scalar_count = 0;
  if (failed(cubert_client_launch(client, &ck_add_f32_kernel, &count, &args, &err), &err,
             "launch") ||
      failed(cubert_client_read_one(client, &h[2], out, N * sizeof(float), &err), &err, "read"))
    return 1;
  for (i = 0; i < N; i++)
    if (out[i] != (float)(i % 1000) + 0.5f) bad++;
  for (k = 0; k < 3; k++) cubert_client_handle_release(client, &h[k], NULL);
  cubert_client_release(client);
  free(a);
  free(b);
  free(out);
  if (bad) {
    fprintf(stderr, "kernel consumer: %u of %u elements wrong\n", bad, N);
    return 1;
  }
  printf("kernel consumer: ok (cubert %s, %u elements added by ck_add_f32)\n", cubert_version(), N);
  return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * examples/cuda_fake.c: a program built for the CUDA server, run without a
 * GPU against the fake libcuda (docs/cuda.md, "The CUDA driver without a
 * GPU"), its kernels' results compared byte for byte with the CPU server's.
 *
 *   make CUDA=1 examples
 *   CUBERT_LIBCUDA=$PREFIX/lib/libcubert-fakecuda.so build/cuda/examples/cuda_fake
 *
 * On a machine with a GPU (CUBERT_LIBCUDA unset) it runs on the GPU instead;
 * there the float kernels may differ from the CPU in the last bits (the GPU
 * contracts a * b + c into one rounding), so only the integer kernels must
 * match; with the fake every byte must. The same work runs on a CPU client
 * and on a CUDA client: elementwise kernels, a shared-memory reduction, a
 * tiled matmul, a kernel with dynamic shared memory, an order-sensitive
 * integer kernel fed across two streams (stream 2 reads what stream 1
 * wrote: the server orders them), uploads, device copies and reads.
 * Exit status 0 when every compared result matches; 2 when no CUDA
 * driver is available (the reason is printed).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/cubert.h"
#include "cubert/os.h"
#if defined(CUBERT_HAVE_BACKEND_CUDA)
#include "cubert/cuda.h"
#endif
#include "cubert_kernels.h"

#if defined(CUBERT_HAVE_BACKEND_CUDA)
#define N 70000u       /* elements of the 1-D kernels (not a multiple of a cube) */
#define M 45u          /* matmul: c (M x NN) = a (M x K) . b (K x NN) */
#define K 64u
#define NN 37u
#define RN (128u * 40u) /* ck_reverse_u32: 40 cubes of 128 */

typedef struct results_t {
  float add[N], axpy[N], partial[(N + CK_BLOCK - 1) / CK_BLOCK], matmul[M * NN];
  uint32_t reverse[RN], mix[N], copy[N];
} results_t;

static int g_failed;

static int ok(cubert_status_t st, const cubert_error_t *e, const char *what) {
  char text[256];
  if (st == CUBERT_STATUS_OK) return 1;
  cubert_error_format(e, text, sizeof text);
  fprintf(stderr, "%s: %s\n", what, text);
  g_failed = 1;
  return 0;
}

static cubert_status_t launch(cubert_client_t *c, const cubert_kernel_t *k, cubert_cube_count_t n,
                              cubert_launch_arguments_t *args, cubert_error_t *e) {
  return cubert_client_launch(c, k, &n, args, e);
}

/* Run every kernel on `c` into *r. 1 on success. */
static int run_all(cubert_client_t *c, results_t *r) {
  static float a[N], b[N], ma[M * K], mb[K * NN];
  static uint32_t u[N], v[RN];
  cubert_handle_t ha, hb, hout, hpart, hma, hmb, hmc, hu, hv, hrev, hmix, hcopy;
  cubert_launch_arguments_t args;
  cubert_error_t e;
  uint32_t i;
  cubert_status_t st;
  for (i = 0; i < N; i++) {
    a[i] = (float)(i % 977) * 0.37f - 11.0f;
    b[i] = 1.0f / (float)(1 + i % 113);
    u[i] = i * 2654435761u;
  }
  for (i = 0; i < M * K; i++) ma[i] = (float)((i * 7) % 19) * 0.125f - 1.0f;
  for (i = 0; i < K * NN; i++) mb[i] = (float)((i * 5) % 23) * 0.0625f;
  for (i = 0; i < RN; i++) v[i] = i ^ 0x5a5a5a5au;
  cubert_client_set_stream(c, 1); /* producer stream */
  st = cubert_client_create_from_slice(c, a, sizeof a, &ha, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_create_from_slice(c, b, sizeof b, &hb, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_empty(c, sizeof r->add, &hout, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_empty(c, sizeof r->partial, &hpart, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_create_from_slice(c, ma, sizeof ma, &hma, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_create_from_slice(c, mb, sizeof mb, &hmb, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_empty(c, sizeof r->matmul, &hmc, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_create_from_slice(c, u, sizeof u, &hu, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_create_from_slice(c, v, sizeof v, &hv, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_empty(c, sizeof r->reverse, &hrev, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_create_from_slice(c, u, sizeof u, &hmix, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_empty(c, sizeof r->copy, &hcopy, &e);
  if (!ok(st, &e, "uploads")) return 0;
  /* add, axpy, reduce, matmul, reverse on stream 1 */
  cubert_launch_arguments_initialize(&args);
  (void)cubert_launch_arguments_set_buffer(&args, 0, &ha);
  (void)cubert_launch_arguments_set_buffer(&args, 1, &hb);
  (void)cubert_launch_arguments_set_buffer(&args, 2, &hout);
  st = launch(c, &ck_add_f32_kernel, cubert_cube_count_new_1d((N + CK_BLOCK - 1) / CK_BLOCK), &args, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_read_one(c, &hout, r->add, sizeof r->add, &e);
  (void)cubert_launch_arguments_set_f32(&args, 0, 0.75f);
  if (st == CUBERT_STATUS_OK)
    st = launch(c, &ck_axpy_f32_kernel, cubert_cube_count_new_1d((N + CK_BLOCK - 1) / CK_BLOCK), &args, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_read_one(c, &hout, r->axpy, sizeof r->axpy, &e);
  if (!ok(st, &e, "add / axpy")) return 0;
  cubert_launch_arguments_initialize(&args);
  (void)cubert_launch_arguments_set_buffer(&args, 0, &hout);
  (void)cubert_launch_arguments_set_buffer(&args, 1, &hpart);
  st = launch(c, &ck_reduce_sum_f32_kernel, cubert_cube_count_new_1d((N + CK_BLOCK - 1) / CK_BLOCK), &args, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_read_one(c, &hpart, r->partial, sizeof r->partial, &e);
  if (!ok(st, &e, "reduce")) return 0;
  cubert_launch_arguments_initialize(&args);
  (void)cubert_launch_arguments_set_buffer(&args, 0, &hma);
  (void)cubert_launch_arguments_set_buffer(&args, 1, &hmb);
  (void)cubert_launch_arguments_set_buffer(&args, 2, &hmc);
  (void)cubert_launch_arguments_set_u32(&args, 0, M);
  (void)cubert_launch_arguments_set_u32(&args, 1, K);
  (void)cubert_launch_arguments_set_u32(&args, 2, NN);
  st = launch(c, &ck_matmul_f32_kernel,
              cubert_cube_count_new_2d((NN + CK_TILE - 1) / CK_TILE, (M + CK_TILE - 1) / CK_TILE), &args, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_read_one(c, &hmc, r->matmul, sizeof r->matmul, &e);
  if (!ok(st, &e, "matmul")) return 0;
  cubert_launch_arguments_initialize(&args);
  (void)cubert_launch_arguments_set_buffer(&args, 0, &hv);
  (void)cubert_launch_arguments_set_buffer(&args, 1, &hrev);
  st = launch(c, &ck_reverse_u32_kernel, cubert_cube_count_new_1d(RN / 128u), &args, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_read_one(c, &hrev, r->reverse, sizeof r->reverse, &e);
  if (!ok(st, &e, "reverse (dynamic shared memory)")) return 0;
  /* stream 1 writes hu (u*2 into hcopy, then mix), stream 2 reads them: the
   * server makes stream 2 wait for stream 1's writes */
  cubert_launch_arguments_initialize(&args);
  (void)cubert_launch_arguments_set_buffer(&args, 0, &hu);
  (void)cubert_launch_arguments_set_buffer(&args, 1, &hcopy);
  st = launch(c, &ck_double_u32_kernel, cubert_cube_count_new_1d((N + CK_SMALL_BLOCK - 1) / CK_SMALL_BLOCK), &args, &e);
  cubert_client_set_stream(c, 2); /* consumer stream */
  cubert_launch_arguments_initialize(&args);
  (void)cubert_launch_arguments_set_buffer(&args, 0, &hcopy);
  (void)cubert_launch_arguments_set_buffer(&args, 1, &hmix);
  for (i = 0; i < 3 && st == CUBERT_STATUS_OK; i++) /* mix = mix * 3 + copy, three times */
    st = launch(c, &ck_mix_u32_kernel, cubert_cube_count_new_1d((N + CK_SMALL_BLOCK - 1) / CK_SMALL_BLOCK), &args, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_read_one(c, &hmix, r->mix, sizeof r->mix, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_read_one(c, &hcopy, r->copy, sizeof r->copy, &e);
  if (st == CUBERT_STATUS_OK) st = cubert_client_sync(c, &e);
  if (!ok(st, &e, "double / mix across streams")) return 0;
  cubert_client_unpin(c);
  cubert_client_handle_release(c, &ha, NULL);
  cubert_client_handle_release(c, &hb, NULL);
  cubert_client_handle_release(c, &hout, NULL);
  cubert_client_handle_release(c, &hpart, NULL);
  cubert_client_handle_release(c, &hma, NULL);
  cubert_client_handle_release(c, &hmb, NULL);
  cubert_client_handle_release(c, &hmc, NULL);
  cubert_client_handle_release(c, &hu, NULL);
  cubert_client_handle_release(c, &hv, NULL);
  cubert_client_handle_release(c, &hrev, NULL);
  cubert_client_handle_release(c, &hmix, NULL);
  cubert_client_handle_release(c, &hcopy, NULL);
  return 1;
}

static void compare(const char *what, const void *x, const void *y, size_t n, int must) {
  int same = memcmp(x, y, n) == 0;
  printf("  %-34s %s\n", what, same ? "bit-identical" : (must ? "DIFFERENT" : "differs (allowed)"));
  if (!same && must) g_failed = 1;
}

static int run_example(void) {
  static results_t cpu, gpu;
  cubert_client_t *cc = NULL, *gc = NULL;
  cubert_cuda_device_info_t info;
  cubert_error_t e;
  const char *lib = getenv("CUBERT_LIBCUDA");
  int fake = lib && strstr(lib, "fakecuda") != NULL;
  if (cubert_cuda_available(&e) != CUBERT_STATUS_OK) {
    printf("cuda_fake: %s (point CUBERT_LIBCUDA at libcubert-fakecuda.so)\n", e.reason);
    return 2;
  }
  if (!ok(cubert_cuda_device_info(0, &info, &e), &e, "device info")) return 1;
  printf("CUDA device 0: compute %u.%u, %s\n", (unsigned)info.compute_major,
         (unsigned)info.compute_minor, fake ? "the fake libcuda (kernels run their CPU bodies)" : "a GPU");
  if (!ok(cubert_cpu_client_create(cubert_allocator_libc(), NULL, &cc, &e), &e, "CPU client")) return 1;
  if (!ok(cubert_cuda_client_create(cubert_allocator_libc(), NULL, &gc, &e), &e, "CUDA client")) {
    cubert_client_release(cc);
    return 1;
  }
  if (run_all(cc, &cpu) && run_all(gc, &gpu)) {
    printf("CPU server vs CUDA server (%s):\n", fake ? "fake libcuda" : "GPU");
    compare("ck_add_f32", cpu.add, gpu.add, sizeof cpu.add, fake);
    compare("ck_axpy_f32", cpu.axpy, gpu.axpy, sizeof cpu.axpy, fake);
    compare("ck_reduce_sum_f32", cpu.partial, gpu.partial, sizeof cpu.partial, fake);
    compare("ck_matmul_f32", cpu.matmul, gpu.matmul, sizeof cpu.matmul, fake);
    compare("ck_reverse_u32 (dynamic shared)", cpu.reverse, gpu.reverse, sizeof cpu.reverse, 1);
    compare("ck_double_u32 (stream 1)", cpu.copy, gpu.copy, sizeof cpu.copy, 1);
    compare("ck_mix_u32 x3 (stream 2)", cpu.mix, gpu.mix, sizeof cpu.mix, 1);
  }
  cubert_client_release(gc);
  cubert_client_release(cc);
  printf("%s\n", g_failed ? "cuda_fake: FAILED" : "cuda_fake: ok");
  return g_failed ? 1 : 0;
}
#endif /* CUBERT_HAVE_BACKEND_CUDA */

int main(int argc, char **argv) {
  if (argc > 1) { /* -h / --help: the usage on stdout; anything else is an error */
    int help = strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0;
    fprintf(help ? stdout : stderr, "usage: %s [-h|--help]\n%s\n", "cuda_fake",
            "The same kernels on a CPU client and a CUDA client, results compared byte for byte;\n"
            "without a GPU: CUBERT_LIBCUDA=<libdir>/libcubert-fakecuda.so "
            "[CUBERT_FAKE_CUDA_SEED=n] cuda_fake");
    return help ? 0 : 2;
  }
#if defined(CUBERT_HAVE_BACKEND_CUDA)
  (void)argv;
  return run_example();
#else
  (void)argv;
  printf("cuda_fake: needs a CUDA=1 build (make CUDA=1 examples)\n");
  return 2;
#endif
}

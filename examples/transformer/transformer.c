/* SPDX-License-Identifier: MIT */
/*
 * examples/transformer/transformer.c: the forward layers of a GPT-2 block
 * (examples/transformer/transformer_kernels.h) on a device, each checked
 * against the plain C reference (transformer_ref.h, llm.c's forward
 * functions) and timed: launch + sync per layer, median of the runs, next
 * to the reference on one thread.
 *
 *   make transformer              (the CPU server; `make CUDA=1 transformer`: GPU 0 when
 *                                  there is one, else the CPU with a line saying why)
 *   build/examples/transformer [--small] [--head] [--runs N] [--cpu] [--only LAYER]
 *     --small  B=2 T=13 C=128 NH=2 V=1000 (a quick check)
 *     --head   also the 50,304-wide head matmul (slow on a CPU: 20 GFLOP)
 *     --cpu    the CPU server even in a CUDA=1 build
 *     --only   one layer ("encoder", "layernorm", "matmul qkv", ..., "block": the whole
 *              block, ten launches and one sync)
 * Exit status 0 when every layer matched the reference.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cubert/cubert.h"
#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/os.h"
#if defined(CUBERT_HAVE_BACKEND_CUDA)
#include "cubert/cuda.h"
#endif
#include "transformer_host.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what, cubert_status_t st, const cubert_error_t *e) {
  char msg[256];
  cubert_error_format(e, msg, sizeof msg);
  fprintf(stderr, "transformer: %s: %s %s\n", what, cubert_status_name(st), msg);
  exit(1);
}

int main(int argc, char **argv) {
  tf_shape_t s = tf_shape_gpt2();
  tf_plan_t plan;
  tf_data_t d;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  cubert_status_t st;
  int runs = 7, head = 0, cpu = 0, failures = 0, i, l;
  const char *where = "the CPU server", *only = NULL;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--small") == 0) {
      s.B = 2, s.T = 13, s.C = 128, s.NH = 2, s.V = 1000, s.Vp = 1024;
    } else if (strcmp(argv[i], "--head") == 0) {
      head = 1;
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (strcmp(argv[i], "--cpu") == 0) {
      cpu = 1;
    } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = atoi(argv[++i]);
      if (runs < 1 || runs > 101) runs = 7;
    } else {
      int help = strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0;
      fprintf(help ? stdout : stderr, "usage: transformer [--small] [--head] [--runs N] [--cpu] [--only LAYER]\n%s\n",
              "The forward layers of a GPT-2 block on a device (the GPU of a CUDA=1 build, else the "
              "CPU server), each checked against the plain C reference and timed.");
      return help ? 0 : 2;
    }
  }
  (void)cpu;
#if defined(CUBERT_HAVE_BACKEND_CUDA)
  if (!cpu) {
    if (cubert_cuda_client_create(cubert_allocator_libc(), NULL, &client, &err) != CUBERT_STATUS_OK) {
      printf("not on the GPU (%s): running on the CPU server\n", err.reason);
      client = NULL;
    } else {
      where = "the GPU (CUDA device 0)";
    }
  }
#endif
  if (!client && (st = cubert_cpu_client_create(cubert_allocator_libc(), NULL, &client, &err)) !=
                     CUBERT_STATUS_OK)
    die("create the CPU device", st, &err);
  plan = tf_plan_for(client);
  if (tf_data_init(&d, s, head) != 0) {
    fprintf(stderr, "transformer: out of memory for the data\n");
    return 1;
  }
  if ((st = tf_data_upload(&d, client, &err)) != CUBERT_STATUS_OK) die("upload", st, &err);
  printf("GPT-2 block layers on %s: B=%u T=%u C=%u NH=%u V=%u (Vp %u), plan \"%s\", median of %d "
         "runs (launch + sync)\n",
         where, s.B, s.T, s.C, s.NH, s.V, s.Vp, plan.name, runs);
  printf("  %-12s %-6s %12s %14s %9s   %s\n", "layer", "check", "cubert ms", "C ref 1T ms", "x ref",
         "worst error / tolerance");
  for (l = 0; l < TF_LAYERS; l++) {
    double t[101], tr[3], ours, ref, worst;
    size_t at, bad;
    int r;
    if (!d.out_len[l] || (only && strcmp(only, tf_layer_names[l]) != 0)) continue;
    for (r = 0; r < 3 && r < runs; r++) { /* the reference: a few runs (it is slow) */
      double t0 = now_ms();
      tf_layer_reference(&d, l);
      tr[r] = now_ms() - t0;
    }
    ref = median(tr, r);
    for (r = 0; r <= runs; r++) { /* the first run warms up */
      double t0 = now_ms();
      if ((st = tf_layer_launch(&d, &plan, l, &err)) != CUBERT_STATUS_OK ||
          (st = cubert_client_sync(client, &err)) != CUBERT_STATUS_OK)
        die(tf_layer_names[l], st, &err);
      if (r) t[r - 1] = now_ms() - t0;
    }
    ours = median(t, runs);
    bad = tf_layer_compare(&d, l, &worst, &at, &st, &err);
    if (st != CUBERT_STATUS_OK) die("read back", st, &err);
    if (bad) failures++;
    printf("  %-12s %-6s %12.3f %14.3f %8.2fx   %.3g (at %zu: %g vs %g)\n", tf_layer_names[l],
           bad ? "FAIL" : "ok", ours, ref, ref / ours, worst, at, (double)d.out[l][at],
           (double)d.ref[l][at]);
  }
  if (!only || strcmp(only, "block") == 0) { /* the whole block: ten launches, one sync */
    tf_block_t k;
    double t[101], tr[3], worst;
    size_t bad;
    int r;
    if (tf_block_init(&k, &d) != 0) {
      fprintf(stderr, "transformer: out of memory for the block\n");
      return 1;
    }
    if ((st = tf_block_upload(&k, &d, &err)) != CUBERT_STATUS_OK) die("upload the block", st, &err);
    for (r = 0; r < 3 && r < runs; r++) {
      double t0 = now_ms();
      tf_block_reference(&k, &d);
      tr[r] = now_ms() - t0;
    }
    for (r = 0; r <= runs; r++) {
      double t0 = now_ms();
      if ((st = tf_block_launch(&k, &d, &plan, &err)) != CUBERT_STATUS_OK ||
          (st = cubert_client_sync(client, &err)) != CUBERT_STATUS_OK)
        die("block", st, &err);
      if (r) t[r - 1] = now_ms() - t0;
    }
    bad = tf_block_compare(&k, &d, &worst, &st, &err);
    if (st != CUBERT_STATUS_OK) die("read back", st, &err);
    if (bad) failures++;
    {
      const double ours = median(t, runs), ref = median(tr, r < 3 ? r : 3);
      printf("  %-12s %-6s %12.3f %14.3f %8.2fx   %.3g (10 launches, one sync)\n", "block",
             bad ? "FAIL" : "ok", ours, ref, ref / ours, worst);
    }
    tf_block_free(&k, &d);
  }
  tf_data_free(&d);
  cubert_client_release(client);
  printf("%s\n", failures ? "some layers did not match the reference" : "every layer matches the reference");
  return failures ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * examples/cuda_multiprocess.c: all_reduce across processes through NCCL
 * (docs/collectives.md). Starts N processes (fork), one CUDA device each
 * (device index r on GPU r), makes them the ranks of one process
 * communicator (cubert_cuda_comm_init_rank, the NCCL id handed over
 * through a file in a fresh mkdtemp directory), runs an all_reduce (Sum,
 * f32) of E elements (rank r contributes (r + 1) * i at i) and checks
 * every element on every rank. With N = 1 the single process uses its
 * device's one-rank communicator (no process communicator needed).
 *
 *   build/cuda/examples/cuda_multiprocess [N (default 2)] [E (default 1048576)]
 *
 * Prints one line per rank and "ok: ..." (exit 0), or "skipped: <reason>"
 * (exit 0: no CUDA, no NCCL, fewer GPUs than processes: NCCL takes one rank
 * per GPU), or the failure (exit 1). No process waits for more than 120 s.
 * The parent never touches CUDA itself (a process that initialized CUDA
 * must not fork and use it in the child): a first child counts the GPUs.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cubert/cubert.h"
#include "cubert/os.h"

#if defined(CUBERT_HAVE_BACKEND_CUDA)
#include "cubert/cuda.h"

#define EXIT_SKIP 77

static int fail(const char *what, const cubert_error_t *err) {
  char text[512];
  cubert_error_format(err, text, sizeof text);
  fprintf(stderr, "%s: %s\n", what, text);
  return 1;
}

/* Exit status: the GPU count (at most 64), or EXIT_SKIP with the reason. */
static int count_gpus(void) {
  uint32_t n = 0;
  cubert_error_t err;
  if (cubert_cuda_device_count(&n, &err) != CUBERT_STATUS_OK) {
    printf("skipped: %s\n", err.reason);
    return EXIT_SKIP;
  }
  return n > 64 ? 64 : (int)n;
}

static int run_rank(uint32_t rank, uint32_t nranks, const char *id_file, size_t elems) {
  cubert_cuda_options_t o;
  cubert_cuda_comm_options_t co;
  cubert_client_t *c = NULL;
  cubert_device_id_t ids[64];
  cubert_handle_t h;
  cubert_error_t err;
  float *v = (float *)malloc(elems * sizeof(float));
  size_t i, bad = 0;
  uint32_t r;
  if (!v) return 1;
  cubert_cuda_options_initialize(&o);
  o.ordinal = rank;
  o.device.index = rank; /* rank r = the r-th smallest index of the device list */
  if (cubert_cuda_client_create(cubert_allocator_libc(), &o, &c, &err) != CUBERT_STATUS_OK)
    return fail("create the CUDA device", &err);
  if (nranks > 1) {
    cubert_cuda_comm_options_initialize(&co);
    co.rank = rank;
    co.nranks = nranks;
    co.id_file = id_file;
    co.timeout_ms = 60000;
    if (cubert_cuda_comm_init_rank(c, &co, &err) != CUBERT_STATUS_OK) {
      if (err.status == CUBERT_STATUS_UNSUPPORTED) {
        printf("skipped: %s\n", err.reason);
        cubert_client_release(c);
        free(v);
        return EXIT_SKIP;
      }
      return fail("cubert_cuda_comm_init_rank", &err);
    }
  }
  for (r = 0; r < nranks; r++) {
    ids[r].type_id = CUBERT_CUDA_DEVICE_TYPE;
    ids[r].index_id = r;
  }
  for (i = 0; i < elems; i++) v[i] = (float)((rank + 1) * (i % 1024));
  if (cubert_client_create_from_slice(c, v, elems * sizeof(float), &h, &err) != CUBERT_STATUS_OK)
    return fail("upload", &err);
  if (cubert_client_all_reduce(c, &h, &h, CUBERT_COMM_DTYPE_F32, ids, nranks,
                               CUBERT_REDUCE_OPERATION_SUM, &err) != CUBERT_STATUS_OK) {
    if (err.status == CUBERT_STATUS_UNSUPPORTED) {
      printf("skipped: %s\n", err.reason);
      return EXIT_SKIP;
    }
    return fail("all_reduce", &err);
  }
  if (cubert_client_sync_collective(c, &err) != CUBERT_STATUS_OK)
    return fail("sync_collective", &err);
  if (cubert_client_read_one(c, &h, v, elems * sizeof(float), &err) != CUBERT_STATUS_OK)
    return fail("read", &err);
  for (i = 0; i < elems; i++) /* sum over ranks of (r + 1) * x = x * n (n + 1) / 2 */
    bad += v[i] != (float)((i % 1024) * nranks * (nranks + 1) / 2);
  printf("rank %u of %u (GPU %u): all_reduce of %zu f32: %s (v[1023] = %g)\n", (unsigned)rank,
         (unsigned)nranks, (unsigned)rank, elems, bad ? "WRONG" : "right",
         (double)v[elems > 1023 ? 1023 : elems - 1]);
  (void)cubert_client_handle_release(c, &h, NULL);
  cubert_client_release(c); /* its process communicator goes with it */
  free(v);
  return bad ? 1 : 0;
}

/* Wait for pid until the deadline; kill it past that. Its exit status, or -1. */
static int wait_child(pid_t pid, time_t deadline) {
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    struct timespec ts = {0, 10000000};
    if (time(NULL) > deadline) {
      kill(pid, SIGKILL);
      (void)waitpid(pid, &status, 0);
      fprintf(stderr, "process %ld did not finish in time: killed\n", (long)pid);
      return -1;
    }
    nanosleep(&ts, NULL);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv) {
  uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 2;
  size_t elems = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : (size_t)1 << 20;
  char dir[] = "/tmp/cubert-multiprocess-XXXXXX", id_file[64];
  pid_t pids[64];
  time_t deadline = time(NULL) + 120;
  int gpus, failed = 0, skipped = 0;
  uint32_t r;
  pid_t probe;
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("usage: %s [processes 1..64] [elements >= 1] [-h|--help]\nall_reduce across N "
           "processes through NCCL, one GPU each.\n", argv[0]);
    return 0;
  }
  if (n < 1 || n > 64 || elems < 1) {
    fprintf(stderr, "usage: %s [processes 1..64] [elements >= 1]\n", argv[0]);
    return 2;
  }
  fflush(stdout);
  probe = fork();
  if (probe == 0) {
    int st = count_gpus();
    fflush(stdout); /* _exit does not */
    _exit(st);
  }
  gpus = wait_child(probe, deadline);
  if (gpus == EXIT_SKIP) return 0; /* the child said why */
  if (gpus < 0) return 1;
  if ((uint32_t)gpus < n) {
    printf("skipped: %u processes need %u GPUs (NCCL takes one rank per GPU), this machine has "
           "%d\n", (unsigned)n, (unsigned)n, gpus);
    return 0;
  }
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(id_file, sizeof id_file, "%s/nccl-id", dir);
  for (r = 0; r < n; r++) {
    fflush(stdout);
    pids[r] = fork();
    if (pids[r] < 0) {
      perror("fork");
      return 1;
    }
    if (pids[r] == 0) {
      int st = run_rank(r, n, id_file, elems);
      fflush(stdout);
      fflush(stderr);
      _exit(st);
    }
  }
  for (r = 0; r < n; r++) {
    int st = wait_child(pids[r], deadline);
    if (st == EXIT_SKIP) skipped = 1;
    else if (st != 0) failed = 1;
  }
  (void)remove(id_file);
  (void)rmdir(dir);
  if (failed) {
    printf("FAILED: %u processes, all_reduce of %zu f32\n", (unsigned)n, elems);
    return 1;
  }
  if (!skipped)
    printf("ok: %u process%s, all_reduce (Sum, f32) of %zu elements right on every rank\n",
           (unsigned)n, n == 1 ? "" : "es", elems);
  return 0;
}

#else /* a build without the CUDA driver */

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("usage: cuda_multiprocess [N] [E] [-h|--help]\nall_reduce across N processes through "
           "NCCL (a CUDA=1 build).\n");
    return 0;
  }
  if (argc > 3 || (argc > 1 && argv[1][0] == '-') || (argc > 2 && argv[2][0] == '-')) {
    fprintf(stderr, "usage: cuda_multiprocess [N] [E] [-h|--help]\n");
    return 2;
  }
  printf("skipped: this build has no CUDA driver (make CUDA=1)\n");
  return 0;
}

#endif

/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_fake_user.c: the installed fake libcuda as a user
 * runs it (libcubert-fakecuda.so, built next to the test binary; docs/cuda.md,
 * "The CUDA driver without a GPU"): libcubert runs each launched kernel's CPU
 * body, in linear cube order or, with CUBERT_FAKE_CUDA_SEED, in a seeded
 * permutation that is the same in every run; a kernel with no CPU body fails
 * its launch (CUDA_ERROR_NOT_SUPPORTED) unless CUBERT_FAKE_CUDA_UNKNOWN_KERNELS
 * is "skip". examples/cuda_fake.c (make CUDA=1 check-fakecuda) compares a
 * user program's results with the CPU server's.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_test.h"
#include "cubert/cube.h"
#include "cubert/cuda.h"
#include "cubert/os.h"
#include "cuda_test_kernels.h"

#define INSTALLED_FAKE CUBERT_TEST_BUILD_DIR "/libcubert-fakecuda.so"
#define CUBES 64u

CUBERT_KERNEL_DESCRIPTOR(g_ticket, cuda_test_ticket_u32, 2, 0, 0, 32, 1, 1);

static void use_installed_fake(void) {
  fake_knob("CUBERT_LIBCUDA", INSTALLED_FAKE);
  if (!CUBERT_TEST_HAVE_IMAGES) TEST_SKIP("no kernel images (nvcc was not found when this was built)");
}

/* The order the CUBES cubes of one ticket launch ran in, on a fresh client. */
static void ticket_order(uint32_t order[CUBES]) {
  counting_allocator_t counting;
  cubert_allocator_t a = counting_allocator_initialize(&counting);
  cubert_client_t *c = NULL;
  cubert_handle_t counter, out;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(CUBES);
  uint32_t zero = 0;
  CHECK_OK(cubert_cuda_client_create(a, NULL, &c, NULL));
  CHECK_OK(cubert_client_create_from_slice(c, &zero, sizeof zero, &counter, NULL));
  CHECK_OK(cubert_client_empty(c, CUBES * sizeof(uint32_t), &out, NULL));
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &counter));
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 1, &out));
  CHECK_OK(cubert_client_launch(c, &g_ticket, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(c, &out, order, CUBES * sizeof(uint32_t), NULL));
  CHECK_OK(cubert_client_handle_release(c, &counter, NULL));
  CHECK_OK(cubert_client_handle_release(c, &out, NULL));
  cubert_client_release(c);
  CHECK_EQ_I64(counting.live_blocks, 0);
  counting_allocator_destroy(&counting);
}

/* Every ticket 0..CUBES-1 once; returns how many cubes ran in linear place. */
static uint32_t check_permutation(const uint32_t order[CUBES]) {
  uint32_t seen[CUBES], i, in_place = 0;
  memset(seen, 0, sizeof seen);
  for (i = 0; i < CUBES; i++) {
    CHECK_MSG(order[i] < CUBES, "cube %u got ticket %u", (unsigned)i, (unsigned)order[i]);
    seen[order[i]]++;
    in_place += order[i] == i;
  }
  for (i = 0; i < CUBES; i++) CHECK_EQ_U64(seen[i], 1);
  return in_place;
}

TEST(cuda_fakecuda_runs_cubes_in_linear_order_by_default) {
  uint32_t order[CUBES];
  use_installed_fake();
  ticket_order(order);
  CHECK_EQ_U64(check_permutation(order), CUBES);
}

/* The order of a seeded run, computed in a child process (a fresh process:
 * the seed's sequence starts over), through a pipe. */
static void seeded_order_in_child(const char *seed, uint32_t order[CUBES]) {
  int fd[2], st = 0;
  pid_t pid;
  ssize_t got = 0;
  CHECK(pipe(fd) == 0);
  pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    uint32_t mine[CUBES];
    close(fd[0]);
    fake_knob("CUBERT_FAKE_CUDA_SEED", seed);
    ticket_order(mine);
    _exit(write(fd[1], mine, sizeof mine) == (ssize_t)sizeof mine ? 0 : 3);
  }
  close(fd[1]);
  while (got < (ssize_t)(CUBES * sizeof(uint32_t))) {
    ssize_t n = read(fd[0], (char *)order + got, CUBES * sizeof(uint32_t) - (size_t)got);
    if (n <= 0) break;
    got += n;
  }
  close(fd[0]);
  CHECK(waitpid(pid, &st, 0) == pid);
  CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (status %d)", st);
  CHECK_EQ_U64((uint64_t)got, CUBES * sizeof(uint32_t));
}

TEST(cuda_fakecuda_seed_permutes_cubes_the_same_in_every_run) {
  uint32_t a[CUBES], b[CUBES], c[CUBES];
  use_installed_fake();
  seeded_order_in_child("12345", a);
  seeded_order_in_child("12345", b);
  seeded_order_in_child("777", c);
  CHECK(check_permutation(a) < CUBES / 2); /* not the linear order */
  CHECK(memcmp(a, b, sizeof a) == 0);      /* the same seed: the same order */
  CHECK(memcmp(a, c, sizeof a) != 0);      /* another seed: another order */
}

/* A kernel with no CPU body: the installed fake cannot run it and says so
 * (the launch's CUresult, mapped); "skip" makes it a no-op. */
static void unknown_kernel_body(const char *mode, cubert_status_t want) {
  static const char image[] = ".visible .entry fake_no_cpu_body(\n)\n{\n}\n";
  counting_allocator_t counting;
  cubert_allocator_t a = counting_allocator_initialize(&counting);
  cubert_client_t *c = NULL;
  cubert_kernel_t k = fake_kernel("fake_no_cpu_body", image, 32, 0, 0);
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(2);
  cubert_error_t err;
  cubert_status_t st;
  use_installed_fake();
  if (mode) fake_knob("CUBERT_FAKE_CUDA_UNKNOWN_KERNELS", mode);
  CHECK_OK(cubert_cuda_client_create(a, NULL, &c, NULL));
  cubert_launch_arguments_initialize(&args);
  st = cubert_client_launch(c, &k, &count, &args, &err);
  if (st == CUBERT_STATUS_OK) st = cubert_client_sync(c, &err);
  CHECK_STATUS(st, want);
  if (want != CUBERT_STATUS_OK) /* queued by the server, returned by the sync */
    CHECK_REASON_HAS(err, "Driver code: 801"); /* CUDA_ERROR_NOT_SUPPORTED */
  cubert_client_release(c);
  CHECK_EQ_I64(counting.live_blocks, 0);
  counting_allocator_destroy(&counting);
}

TEST(cuda_fakecuda_kernel_without_cpu_body_fails_its_launch) {
  unknown_kernel_body(NULL, CUBERT_STATUS_SERVER_UNHEALTHY);
}
TEST(cuda_fakecuda_kernel_without_cpu_body_skipped_when_asked) {
  unknown_kernel_body("skip", CUBERT_STATUS_OK);
}

/* ---- the asynchronous mode (CUBERT_FAKE_CUDA_ASYNC=1) ------------------------------------ */

static int all_are(const void *p, unsigned char v, size_t n) {
  const unsigned char *c = (const unsigned char *)p;
  size_t i;
  for (i = 0; i < n; i++)
    if (c[i] != v) return 0;
  return 1;
}

/* Work waits in its stream's queue until someone asks for it: a stream that
 * reads what another one writes without waiting for it sees the old bytes
 * (the missing wait is caught), with the wait it sees the new ones; a copy
 * into pinned memory lands at the sync, one into pageable memory at once.
 * (The fake's device pointers are host addresses: the test peeks.) */
TEST(cuda_fakecuda_async_runs_work_when_asked) {
  const cubert_cuda_loader_t *cu = NULL;
  CUcontext ctx = NULL;
  CUstream a = NULL, b = NULL;
  CUevent ev = NULL;
  CUdeviceptr x = 0, y = 0, z = 0, y2 = 0, z2 = 0;
  unsigned char *pinned = NULL, pageable[64];
  fake_cuda_stats_t s;
  use_installed_fake();
  fake_knob("CUBERT_FAKE_CUDA_ASYNC", "1");
  CHECK_OK(cubert__cuda_loader_shared(&cu, NULL));
  CHECK(cu->cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
  CHECK(cu->cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
  CHECK(cu->cuStreamCreate(&a, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(cu->cuStreamCreate(&b, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(cu->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
  CHECK(cu->cuMemAlloc(&x, 64) == CUDA_SUCCESS);
  CHECK(cu->cuMemAlloc(&y, 64) == CUDA_SUCCESS);
  CHECK(cu->cuMemAlloc(&z, 64) == CUDA_SUCCESS);
  CHECK(cu->cuMemAlloc(&y2, 64) == CUDA_SUCCESS);
  CHECK(cu->cuMemAlloc(&z2, 64) == CUDA_SUCCESS);
  CHECK(cu->cuMemHostAlloc((void **)&pinned, 64, 0) == CUDA_SUCCESS);
  memset((void *)(uintptr_t)x, 7, 64);
  memset((void *)(uintptr_t)y, 0, 64);
  memset((void *)(uintptr_t)z, 0, 64);
  memset((void *)(uintptr_t)y2, 0, 64);
  memset((void *)(uintptr_t)z2, 0, 64);
  memset(pinned, 0, 64);
  /* queued, not run */
  CHECK(cu->cuMemcpyDtoDAsync(y, x, 64, a) == CUDA_SUCCESS);
  CHECK(all_are((void *)(uintptr_t)y, 0, 64));
  /* b reads y without waiting for a: the old bytes */
  CHECK(cu->cuMemcpyDtoDAsync(z, y, 64, b) == CUDA_SUCCESS);
  CHECK(cu->cuStreamSynchronize(b) == CUDA_SUCCESS);
  CHECK(all_are((void *)(uintptr_t)z, 0, 64));
  CHECK(cu->cuStreamSynchronize(a) == CUDA_SUCCESS);
  CHECK(all_are((void *)(uintptr_t)y, 7, 64));
  /* with the wait: the new bytes */
  CHECK(cu->cuMemcpyDtoDAsync(y2, x, 64, a) == CUDA_SUCCESS);
  CHECK(cu->cuEventRecord(ev, a) == CUDA_SUCCESS);
  CHECK(cu->cuStreamWaitEvent(b, ev, 0) == CUDA_SUCCESS);
  CHECK(cu->cuMemcpyDtoDAsync(z2, y2, 64, b) == CUDA_SUCCESS);
  CHECK(cu->cuStreamSynchronize(b) == CUDA_SUCCESS);
  CHECK(all_are((void *)(uintptr_t)z2, 7, 64));
  /* into pinned memory: at the event's sync; into pageable memory: at once */
  CHECK(cu->cuMemsetD8Async(x, 9, 64, a) == CUDA_SUCCESS);
  CHECK(cu->cuMemcpyDtoHAsync(pinned, x, 64, a) == CUDA_SUCCESS);
  CHECK(cu->cuEventRecord(ev, a) == CUDA_SUCCESS);
  CHECK(all_are(pinned, 0, 64));
  CHECK(cu->cuEventSynchronize(ev) == CUDA_SUCCESS);
  CHECK(all_are(pinned, 9, 64));
  CHECK(cu->cuMemsetD8Async(x, 5, 64, a) == CUDA_SUCCESS);
  CHECK(cu->cuMemcpyDtoHAsync(pageable, x, 64, a) == CUDA_SUCCESS);
  CHECK(all_are(pageable, 5, 64));
  CHECK(cu->cuMemFreeHost(pinned) == CUDA_SUCCESS);
  CHECK(cu->cuMemFree(x) == CUDA_SUCCESS);
  CHECK(cu->cuMemFree(y) == CUDA_SUCCESS);
  CHECK(cu->cuMemFree(z) == CUDA_SUCCESS);
  CHECK(cu->cuMemFree(y2) == CUDA_SUCCESS);
  CHECK(cu->cuMemFree(z2) == CUDA_SUCCESS);
  CHECK(cu->cuEventDestroy(ev) == CUDA_SUCCESS);
  CHECK(cu->cuStreamDestroy(a) == CUDA_SUCCESS);
  CHECK(cu->cuStreamDestroy(b) == CUDA_SUCCESS);
  CHECK(cu->cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
  s = fake_stats(cu);
  CHECK_EQ_U64(s.events_created, s.events_destroyed);
  CHECK_EQ_I64(s.device_allocs_live, 0);
}

/* A cubert launch is queued too (the runner copies the descriptor and the
 * arguments): its output is still the old bytes until the client syncs. */
TEST(cuda_fakecuda_async_queues_cubert_launches) {
  counting_allocator_t counting;
  cubert_allocator_t al = counting_allocator_initialize(&counting);
  cubert_client_t *c = NULL;
  cubert_handle_t counter, out;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(CUBES);
  cubert_resource_t res;
  uint32_t zero = 0, order[CUBES];
  use_installed_fake();
  fake_knob("CUBERT_FAKE_CUDA_ASYNC", "1");
  CHECK_OK(cubert_cuda_client_create(al, NULL, &c, NULL));
  CHECK_OK(cubert_client_create_from_slice(c, &zero, sizeof zero, &counter, NULL));
  CHECK_OK(cubert_client_empty(c, CUBES * sizeof(uint32_t), &out, NULL));
  CHECK_OK(cubert_client_get_resource(c, &counter, &res, NULL));
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &counter));
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 1, &out));
  CHECK_OK(cubert_client_launch(c, &g_ticket, &count, &args, NULL));
  CHECK_EQ_U64(*(volatile uint32_t *)(uintptr_t)res.address, 0); /* not run yet */
  CHECK_OK(cubert_client_sync(c, NULL));
  CHECK_EQ_U64(*(volatile uint32_t *)(uintptr_t)res.address, CUBES);
  CHECK_OK(cubert_client_read_one(c, &out, order, sizeof order, NULL));
  CHECK_EQ_U64(check_permutation(order), CUBES);
  CHECK_OK(cubert_client_handle_release(c, &counter, NULL));
  CHECK_OK(cubert_client_handle_release(c, &out, NULL));
  cubert_client_release(c);
  CHECK_EQ_I64(counting.live_blocks, 0);
  counting_allocator_destroy(&counting);
}

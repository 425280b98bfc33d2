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

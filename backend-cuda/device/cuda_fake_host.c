/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_fake_host.c: kernels' CPU bodies under the fake
 * libcuda (libcubert-fakecuda.so, backend-cuda/fake/; docs/cuda.md, "The CUDA
 * driver without a GPU").
 *
 * The fake runs no PTX. When the loader opens a library that exports
 * cubert_fake_cuda_set_kernel_host (only the fake does), it installs
 * cubert__cuda_fake_host_run there, and every launch of the device layer
 * names its descriptor in a thread-local variable around cuLaunchKernel
 * (the fake runs a launch on the calling thread, inside cuLaunchKernel).
 * The runner then runs the descriptor's cpu_entry over the launch's grid
 * with the CPU kernel runner (backend-cpu/kernel), one cube after another
 * on that thread, and adds its bounds-check report at the launch's report
 * address as a GPU kernel does.
 *
 * Cube order: linear (x fastest) by default; with CUBERT_FAKE_CUDA_SEED=n
 * (n != 0) each launch's cubes run in a permutation drawn from n and the
 * launch's number (the same for the same n and the same sequence of
 * launches: deterministic), as a GPU gives no order among the cubes of a
 * launch.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/os.h"
#include "device/cuda_device.h"
#include "kernel/cpu_kernel.h"

static __thread const cubert_kernel_t *t_launching;

/* Kernels a graph node launches (cuda_plan.c names them when it builds the
 * graph: the fake runs a graph's nodes inside cuGraphLaunch, where no
 * launch names its kernel), by CUDA entry name; copies, kept for the
 * process (descriptors may live on the caller's stack). */
#define FAKE_HOST_KNOWN 256
static pthread_mutex_t g_known_mutex = PTHREAD_MUTEX_INITIALIZER;
static cubert_kernel_t g_known[FAKE_HOST_KNOWN];
static uint32_t g_known_count;

void cubert__cuda_fake_launching(const cubert_kernel_t *kernel) { t_launching = kernel; }

void cubert__cuda_fake_known(const cubert_kernel_t *kernel) {
  uint32_t i;
  if (!kernel || !kernel->cuda_entry_name || !kernel->cpu_entry) return;
  pthread_mutex_lock(&g_known_mutex);
  for (i = 0; i < g_known_count; i++)
    if (strcmp(g_known[i].cuda_entry_name, kernel->cuda_entry_name) == 0) break;
  if (i < FAKE_HOST_KNOWN) {
    g_known[i] = *kernel; /* the newest descriptor of that entry */
    if (i == g_known_count) g_known_count++;
  }
  pthread_mutex_unlock(&g_known_mutex);
}

static pthread_mutex_t g_run_mutex = PTHREAD_MUTEX_INITIALIZER;
/* One context for the process (its blocks come from libc and are kept:
 * the fake's kernels may run after every device is gone). */
static cpu_kernel_context_t g_context;
static uint64_t g_launches; /* under g_run_mutex: the seed's stream */

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

static uint64_t gcd64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Run the cubes in the order i -> (a * i + b) mod total, a coprime with
 * total (a permutation of the cubes). */
static void run_permuted(const cubert_kernel_t *k, const cubert_kernel_args_t *args,
                         uint64_t total, uint64_t seed) {
  uint64_t r = mix64(seed ^ mix64(++g_launches));
  uint64_t a = total > 1 ? 1 + mix64(r) % (total - 1) : 1, b = total ? r % total : 0, i;
  while (gcd64(a, total) != 1) a = a + 1 < total ? a + 1 : 1;
  if (total > 0xFFFFFFFFull) { /* a * i would overflow: linear (4G cubes on a CPU...) */
    cpu_kernel_run_range(&g_context, k, args, 0, total);
    return;
  }
  for (i = 0; i < total && !g_context.scratch_failed; i++) {
    uint64_t pos = (a * i + b) % total; /* a, i < 2^32: no overflow */
    cpu_kernel_run_range(&g_context, k, args, pos, pos + 1);
  }
}

/* Run kernel k over the launch's grid with its argument block (the caller's
 * copy), mode and report address: a CUresult. */
static int run_kernel(const cubert_kernel_t *k, const cubert_kernel_args_t *args, uint32_t mode,
                      CUdeviceptr report, const unsigned grid[3], const unsigned block[3],
                      unsigned shared_bytes) {
  cubert_dim3_t count, dim;
  cpu_kernel_grid_t g;
  cubert_error_t e;
  const char *seed_text;
  uint64_t seed;
  count.x = grid[0];
  count.y = grid[1];
  count.z = grid[2];
  dim.x = block[0];
  dim.y = block[1];
  dim.z = block[2];
  if (cpu_kernel_grid(k, count, dim, args, (cubert_execution_mode_t)mode, &g, &e) !=
      CUBERT_STATUS_OK)
    return CUDA_ERROR_INVALID_VALUE;
  cpu_kernel_grid_set_shared(&g, shared_bytes); /* the launch's dynamic shared bytes */
  seed_text = getenv("CUBERT_FAKE_CUDA_SEED");
  seed = seed_text ? strtoull(seed_text, NULL, 0) : 0;
  pthread_mutex_lock(&g_run_mutex);
  if (cpu_kernel_context_reserve(&g_context, cubert_allocator_libc(), g.shared_bytes) !=
      CUBERT_STATUS_OK) {
    pthread_mutex_unlock(&g_run_mutex);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (seed == 0) {
    cpu_kernel_run_all(&g_context, k, args, &g);
  } else {
    cpu_kernel_context_begin(&g_context, k, &g);
    run_permuted(k, args, g.total, seed);
  }
  if (g_context.scratch_failed) {
    pthread_mutex_unlock(&g_run_mutex);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (report) { /* as the GPU kernel records it: counts add up, the first claim wins */
    cubert_kernel_report_t *r = (cubert_kernel_report_t *)(uintptr_t)report;
    r->oob_count += g_context.report.oob_count;
    if (g_context.report.has_violation && !r->has_violation) {
      r->has_violation = 1;
      r->buffer_index = g_context.report.buffer_index;
      r->element_index = g_context.report.element_index;
      r->buffer_length = g_context.report.buffer_length;
      r->is_write = g_context.report.is_write;
      r->cube_pos = g_context.report.cube_pos;
      r->cube_linear = g_context.report.cube_linear;
    }
  }
  pthread_mutex_unlock(&g_run_mutex);
  return CUDA_SUCCESS;
}

/* The kernel this thread is launching, when it is `entry` and has a CPU
 * body, else a graph node's kernel of that entry: a copy in *out. */
static const cubert_kernel_t *launching(const char *entry, cubert_kernel_t *out) {
  const cubert_kernel_t *k = t_launching;
  uint32_t i;
  if (!entry) return NULL;
  if (k && k->cuda_entry_name && strcmp(k->cuda_entry_name, entry) == 0) {
    if (!k->cpu_entry) return NULL;
    *out = *k;
    return out;
  }
  pthread_mutex_lock(&g_known_mutex);
  for (i = 0; i < g_known_count; i++)
    if (strcmp(g_known[i].cuda_entry_name, entry) == 0) break;
  if (i < g_known_count) *out = g_known[i];
  pthread_mutex_unlock(&g_known_mutex);
  return i < g_known_count ? out : NULL;
}

int cubert__cuda_fake_host_run(const char *entry, const unsigned grid[3], const unsigned block[3],
                               unsigned shared_bytes, void **params) {
  cubert_kernel_t kernel;
  const cubert_kernel_t *k = launching(entry, &kernel);
  cubert_kernel_args_t args;
  uint32_t mode;
  CUdeviceptr report;
  if (!k) return CUDA_ERROR_NOT_FOUND; /* not launched by the device layer, or no CPU body */
  memcpy(&args, params[0], sizeof args);
  memcpy(&mode, params[1], sizeof mode);
  memcpy(&report, params[2], sizeof report);
  return run_kernel(k, &args, mode, report, grid, block, shared_bytes);
}

/* The fake's asynchronous mode (CUBERT_FAKE_CUDA_ASYNC=1): a launch to run
 * later keeps copies of its descriptor and argument block. */
typedef struct captured_t {
  cubert_kernel_t kernel;
  cubert_kernel_args_t args;
  uint32_t mode;
  CUdeviceptr report;
} captured_t;

void *cubert__cuda_fake_capture(const char *entry, void **params) {
  cubert_kernel_t kernel;
  const cubert_kernel_t *k = launching(entry, &kernel);
  captured_t *c;
  if (!k) return NULL;
  c = (captured_t *)malloc(sizeof *c);
  if (!c) return NULL; /* the launch then runs at once */
  c->kernel = *k;
  memcpy(&c->args, params[0], sizeof c->args);
  memcpy(&c->mode, params[1], sizeof c->mode);
  memcpy(&c->report, params[2], sizeof c->report);
  return c;
}

int cubert__cuda_fake_run_captured(void *token, const unsigned grid[3], const unsigned block[3],
                                   unsigned shared_bytes) {
  captured_t *c = (captured_t *)token;
  return run_kernel(&c->kernel, &c->args, c->mode, c->report, grid, block, shared_bytes);
}

void cubert__cuda_fake_release(void *token) { free(token); }

/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_cts_support.c: what the conformance suite and the
 * CUDA client tests need of the CUDA driver (no tests here):
 *  - cts_cuda_prepare: is there a CUDA driver to test? (else the reason to
 *    skip); on the fake driver, the host runner below is installed;
 *  - the host runner: the fake runs no PTX, so a kernel launched on it is
 *    run by its CPU entry point, found by its entry name among the
 *    kernels the tests use (the kernel library, tests/cts/cts_kernels.h),
 *    with the CPU kernel runner (backend-cpu/kernel). Its bounds-check
 *    report lands at the launch's report address as a GPU kernel's would.
 *    When the build has no kernel images (no nvcc), a stand-in image
 *    listing those entries is registered so that the CUDA device finds
 *    them (the fake loads PTX text by its .entry lines);
 *  - the CUDA driver's conformance run (tests/cts/cts.h): "cuda", on the GPU
 *    or on the fake libcuda named by CUBERT_LIBCUDA; without a CUDA driver
 *    every test prints "skipped: CUDA unavailable: <reason>".
 */
#include <pthread.h>
#include <stdlib.h>

#include "comm/cuda_comm.h"
#include "cuda_test.h"
#include "cubert/cuda.h"
#include "cubert/os.h"
#include "cubert_kernels.h"
#include "kernel/cpu_kernel.h"
#include "cts_kernels.h"
#include "cts.h"
#include "cts_kernels_launch.h"
#include "cts_dialect_kernels.h"
#include "transformer_kernels.h"

/* Declared here and in tests/cts/cts.c / cts_multi.c (the CUDA build's hooks). */
int cts_cuda_prepare(char *skip, size_t size);
int cts_cuda_collectives(char *why, size_t size);
uint32_t cts_cuda_gpus(void);
uint32_t cts_cuda_live_communicators(void);
const cubert_kernel_t *cuda_test_kernel_by_entry(const char *entry);

/* The conformance suite's descriptors of its own kernels (the ones it
 * launches; the test files make their variants). */
CUBERT_KERNEL_DESCRIPTOR(g_cts_sleep, cts_sleep_u32, 1, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_oob_rw, cts_oob_rw_u32, 2, 0, 0, 4, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_nop, cts_nop, 1, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_scalars_typed, cts_scalars_typed, 1, 6, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_shape_probe, cts_shape_probe, 2, 0, 16, 4, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_line_axpy, cts_line_axpy_f32x4, 2, 2, 0, 7, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_line_inc_u8x2, cts_line_inc_u8x2, 2, 0, 0, 5, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_line_inc_u16x2, cts_line_inc_u16x2, 2, 0, 0, 5, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_line_inc_u32x2, cts_line_inc_u32x2, 2, 0, 0, 5, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_line_inc_u8x16, cts_line_inc_u8x16, 2, 0, 0, 5, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_line_inc_f64x2, cts_line_inc_f64x2, 2, 0, 0, 5, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_line_edges, cts_line_edges_u32x4, 2, 0, 0, 1, 1, 1);
/* tests/cts/cts_dialect_kernels.h (the tests' descriptors differ in cube dim
 * only: the host runner takes the launch's) */
CUBERT_KERNEL_DESCRIPTOR(g_cts_atomic_u32, cts_atomic_u32, 3, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_atomic_i32, cts_atomic_i32, 3, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_atomic_u64, cts_atomic_u64, 3, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_atomic_i64, cts_atomic_i64, 3, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_atomic_f32, cts_atomic_f32, 3, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_plane_u32, cts_plane_u32, 2, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_plane_f32, cts_plane_f32, 2, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_barrier_u32, cts_barrier_u32, 2, 0, 0, 1, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(g_cts_math_f32, cts_math_f32, 2, 1, 0, 1, 1, 1);

static const cubert_kernel_t *const k_kernels[] = {
    &ck_add_f32_kernel,      &ck_axpy_f32_kernel,  &ck_axpy_offset_f32_kernel,
    &ck_reduce_sum_f32_kernel, &ck_matmul_f32_kernel, &ck_add_u8_kernel,
    &ck_add_scalar_u32_kernel, &ck_double_u32_kernel, &ck_copy_u32_kernel,
    &ck_mix_u32_kernel,      &ck_sum_u32_kernel,   &ck_empty_kernel,
    &ck_positions_kernel,    &ck_reverse_u32_kernel, &ck_oob_copy_f32_kernel,
    &ck_oob_write_u32_kernel, &g_cts_sleep,        &g_cts_oob_rw,
    &g_cts_nop,              &g_cts_scalars_typed, &g_cts_shape_probe,
    &g_cts_line_axpy,        &g_cts_line_inc_u8x2, &g_cts_line_inc_u16x2,
    &g_cts_line_inc_u32x2,   &g_cts_line_inc_u8x16, &g_cts_line_inc_f64x2,
    &g_cts_line_edges,
    &g_cts_atomic_u32,       &g_cts_atomic_i32,    &g_cts_atomic_u64,
    &g_cts_atomic_i64,       &g_cts_atomic_f32,    &g_cts_plane_u32,
    &g_cts_plane_f32,        &g_cts_barrier_u32,   &g_cts_math_f32,
    /* examples/transformer/transformer_kernels.h (tests/cts/test_cts_transformer.c) */
    &tk_encoder_kernel,      &tk_layernorm_kernel, &tk_matmul_kernel,
    &tk_attention_kernel,    &tk_gelu_kernel,      &tk_residual_kernel,
    &tk_softmax_kernel,      &tk_matmul_128x128_kernel, &tk_matmul_128x64_kernel,
    &tk_matmul_64x64s_kernel, &tk_matmul_32x64_kernel, &tk_matmul_bias_rows_kernel,
    &tk_attention_planes_kernel, &tk_matmul_64x64k32_kernel, &tk_matmul_64x128_kernel,
    &tk_matmul_128x64t84_kernel,
};
#define KERNEL_COUNT (sizeof k_kernels / sizeof k_kernels[0])

const cubert_kernel_t *cuda_test_kernel_by_entry(const char *entry) {
  size_t i;
  uint32_t dtype;
  for (i = 0; i < KERNEL_COUNT; i++)
    if (strcmp(k_kernels[i]->cuda_entry_name, entry) == 0) return k_kernels[i];
  for (dtype = 0; dtype < 8; dtype++) { /* the CUDA driver's own (all_reduce Mean) */
    const cubert_kernel_t *k = cuda_comm_mean_kernel(dtype);
    if (k && strcmp(k->cuda_entry_name, entry) == 0) return k;
  }
  return NULL;
}

/* ---- the host runner ------------------------------------------------------------------- */

static pthread_mutex_t g_run_mutex = PTHREAD_MUTEX_INITIALIZER;
/* Cubes run one after another (under g_run_mutex) in one context, kept for
 * the process: it outlives every device (its memory comes from libc). */
static cpu_kernel_context_t g_context;

static int host_run(const char *entry, const unsigned grid[3], const unsigned block[3],
                    unsigned shared_bytes, void **params) {
  const cubert_kernel_t *k = cuda_test_kernel_by_entry(entry);
  cubert_kernel_args_t args;
  uint32_t mode;
  CUdeviceptr report;
  cubert_dim3_t count, dim;
  cpu_kernel_grid_t g;
  cubert_error_t e;
  if (!k) return CUDA_ERROR_NOT_FOUND;
  memcpy(&args, params[0], sizeof args);
  memcpy(&mode, params[1], sizeof mode);
  memcpy(&report, params[2], sizeof report);
  count.x = grid[0];
  count.y = grid[1];
  count.z = grid[2];
  dim.x = block[0];
  dim.y = block[1];
  dim.z = block[2];
  if (cpu_kernel_grid(k, count, dim, &args, (cubert_execution_mode_t)mode, &g, &e) !=
      CUBERT_STATUS_OK)
    return CUDA_ERROR_INVALID_VALUE;
  cpu_kernel_grid_set_shared(&g, shared_bytes); /* the launch's dynamic shared bytes */
  pthread_mutex_lock(&g_run_mutex);
  if (cpu_kernel_context_reserve(&g_context, cubert_allocator_libc(), g.shared_bytes) !=
      CUBERT_STATUS_OK) {
    pthread_mutex_unlock(&g_run_mutex);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  cpu_kernel_report_reset(&g_context.report);
  cpu_kernel_run_all(&g_context, k, &args, &g);
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

/* ---- a stand-in image (no nvcc at build time) --------------------------------------------- */

static char g_ptx[4096];
static const char *g_entries[KERNEL_COUNT];
static cubert_cuda_image_t g_image;

static void register_stand_in_image(void) {
  size_t i, n = 0;
  n += (size_t)snprintf(g_ptx + n, sizeof g_ptx - n, "// stand-in for the fake driver\n");
  for (i = 0; i < KERNEL_COUNT; i++) {
    g_entries[i] = k_kernels[i]->cuda_entry_name;
    n += (size_t)snprintf(g_ptx + n, sizeof g_ptx - n, ".visible .entry %s(\n)\n{\n}\n",
                          g_entries[i]);
  }
  CHECK(n < sizeof g_ptx);
  g_image.name = "cuda_test_stand_in";
  g_image.ptx = g_ptx;
  g_image.ptx_size = n + 1;
  g_image.entries = g_entries;
  g_image.entry_count = (uint32_t)KERNEL_COUNT;
  CHECK_OK(cubert_cuda_image_register(&g_image, NULL));
}

int cts_cuda_prepare(char *skip, size_t size) {
  static int prepared;
  const cubert_cuda_loader_t *cu = NULL;
  cubert_error_t err;
  void *sym;
  if (prepared) return 0;
  /* NVLink multicast stays off for every NCCL a test starts (a shared
   * host's GPUs can go out of service): before NCCL is loaded */
  (void)setenv("NCCL_NVLS_ENABLE", "0", 1);
  if (cubert__cuda_loader_shared(&cu, &err) != CUBERT_STATUS_OK) {
    snprintf(skip, size, "%s", err.reason);
    return 1;
  }
  sym = cubert__cuda_loader_symbol(cu, "cubert_fake_cuda_set_kernel_host");
  if (sym) {
    /* the fake: the loader installed libcubert's runner (cuda_fake_host.c),
     * which runs the launched descriptor's CPU body; CUBERT_TEST_HOST_RUNNER=1
     * installs this file's runner instead (kernels found by entry name) */
    const char *own = getenv("CUBERT_TEST_HOST_RUNNER");
    if (own && strcmp(own, "1") == 0) {
      fake_cuda_set_kernel_host_fn set;
      memcpy(&set, &sym, sizeof sym);
      set(host_run);
    }
    if (!CUBERT_TEST_HAVE_IMAGES) register_stand_in_image();
  } else if (!CUBERT_TEST_HAVE_IMAGES) {
    snprintf(skip, size, "no kernel images (nvcc was not found when this was built)");
    return 1;
  }
  prepared = 1;
  return 0;
}

/* ---- collectives -------------------------------------------------------------------------- */

/* 1 when the CUDA devices can all_reduce (NCCL loads), else 0 and why. */
int cts_cuda_collectives(char *why, size_t size) {
  const cubert_nccl_loader_t *nl = NULL;
  cubert_error_t err;
  if (cuda_comm_nccl(&nl, &err) == CUBERT_STATUS_OK) return 1;
  if (why && size) snprintf(why, size, "collectives: %s", err.reason);
  return 0;
}

uint32_t cts_cuda_gpus(void) {
  uint32_t n = 0;
  if (cubert_cuda_device_count(&n, NULL) != CUBERT_STATUS_OK) return 0;
  return n;
}

uint32_t cts_cuda_live_communicators(void) { return cuda_comm_live(); }

/* ---- the conformance run ------------------------------------------------------------------ */

/* A CUDA device (a test without a CUDA driver to run on is skipped, with
 * the reason). Device indexes share the GPUs there are (index mod count). */
static cubert_status_t cts_cuda_create(cubert_allocator_t a, const cts_options_t *o,
                                       cubert_client_t **out, cubert_error_t *err) {
  static char skip[CUBERT_ERROR_REASON_SIZE + 16];
  cubert_cuda_options_t co;
  uint32_t gpus = 1;
  if (cts_cuda_prepare(skip, sizeof skip) != 0) test_skip(__FILE__, __LINE__, skip);
  if (o->memory_config) /* the CUDA driver takes no memory configuration */
    test_skip(__FILE__, __LINE__, "the CUDA driver has no memory_config option");
  if (cubert_cuda_device_count(&gpus, NULL) != CUBERT_STATUS_OK || gpus == 0) gpus = 1;
  cubert_cuda_options_initialize(&co);
  co.device = cts_device_options(o);
  co.ordinal = o->device_index % gpus;
  co.collective_timeout_ms = o->collective_timeout_ms;
  return cubert_cuda_client_create(a, &co, out, err);
}

static int cts_cuda_has_collectives(cubert_client_t *client) {
  (void)client;
  return cts_cuda_collectives(NULL, 0); /* NCCL loads */
}

/* The CUDA devices' collectives need NCCL, and NCCL one GPU per rank: a
 * test of n devices (index mod GPU count) skips with the reason otherwise. */
static void cts_cuda_require_collectives(uint32_t n) {
  static char why[CUBERT_ERROR_REASON_SIZE + 64];
  uint32_t gpus;
  if (cts_cuda_prepare(why, sizeof why) != 0) TEST_SKIP(why); /* no CUDA at all */
  if (!cts_cuda_collectives(why, sizeof why)) TEST_SKIP(why);
  gpus = cts_cuda_gpus();
  if (n > gpus) {
    snprintf(why, sizeof why,
             "collectives of %u devices need %u GPUs, this machine has %u: NCCL takes one rank "
             "per GPU (\"Duplicate GPU detected\", ncclInvalidUsage)",
             (unsigned)n, (unsigned)n, (unsigned)gpus);
    TEST_SKIP(why);
  }
}

static int cts_cuda_available(char *why, size_t why_size) {
  return cts_cuda_prepare(why, why_size) == 0;
}

static const cts_unsupported_t k_cts_cuda_unsupported[] = {
    {"cts_fault_*", "the CUDA driver does not inject run-time faults (fail_launch, fail_copy: "
                    "core/server/server_faults.h)"},
    {NULL, NULL}};

static const cts_driver_t g_cts_cuda = {
    "cuda", "the CUDA driver: the GPU, or the fake libcuda named by CUBERT_LIBCUDA",
    0, CUBERT_CUDA_DEVICE_TYPE, {CUBERT_LAYOUT_POLICY_PITCHED, 512},
    cts_cuda_create, cts_cuda_has_collectives, cts_cuda_require_collectives,
    cts_cuda_live_communicators, NULL, NULL, k_cts_cuda_unsupported, cts_cuda_available};

CTS_DRIVER_REGISTER(g_cts_cuda)

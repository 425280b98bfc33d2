/* SPDX-License-Identifier: MIT */
/*
 * bench/bench_cuda_raw.h: the raw Driver API side of bench/bench_cuda.c:
 * the same libcuda entry points, kernels and GPU as the client, used the
 * way a careful hand-written program would. Each way of waiting for the GPU
 * a program might pick is here, so that the client is compared with the
 * best of them (measured in the same run):
 *
 *   RAW_WAIT_STREAM_SYNC   cuStreamSynchronize
 *   RAW_WAIT_EVENT_SYNC    cuEventRecord + cuEventSynchronize
 *   RAW_WAIT_EVENT_SPIN    cuEventRecord + cuEventQuery in a loop
 *   RAW_WAIT_STREAM_SPIN   cuStreamQuery in a loop
 *
 * and the current context's scheduling flags can be changed (cuCtxSetFlags,
 * CUDA 12.1; looked up by name, absent: not changed). Header-only, included
 * once by bench_cuda.c; exits on a failed call.
 */
#ifndef CUBERT_BENCH_CUDA_RAW_H
#define CUBERT_BENCH_CUDA_RAW_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cuda.h"
#include "device/cuda_loader.h"

#define RAW_CU(what, expr)                                                               \
  do {                                                                                   \
    CUresult cu_r_ = (expr);                                                             \
    if (cu_r_ != CUDA_SUCCESS) {                                                         \
      fprintf(stderr, "bench_cuda: %s failed: CUresult %d\n", what, (int)cu_r_);         \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

typedef enum raw_wait_e {
  RAW_WAIT_STREAM_SYNC = 0,
  RAW_WAIT_EVENT_SYNC = 1,
  RAW_WAIT_EVENT_SPIN = 2,
  RAW_WAIT_STREAM_SPIN = 3,
  RAW_WAITS = 4
} raw_wait_t;

static const char *const raw_wait_names[RAW_WAITS] = {
    "raw + cuStreamSynchronize", "raw + cuEventRecord + cuEventSynchronize",
    "raw + cuEventRecord + spin on cuEventQuery", "raw + spin on cuStreamQuery"};

#define RAW_MAX_MODULES 16

typedef struct raw_t {
  const cubert_cuda_loader_t *cu;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CUevent event;
  CUmodule modules[RAW_MAX_MODULES]; /* one per kernel: raw_function caches */
  const cubert_kernel_t *module_kernels[RAW_MAX_MODULES];
  CUfunction functions[RAW_MAX_MODULES];
  int nmodules;
  CUresult (*ctx_set_flags)(unsigned int);
  CUresult (*ctx_get_flags)(unsigned int *);
} raw_t;

static void raw_open(raw_t *r) {
  void *set, *get;
  memset(r, 0, sizeof *r);
  if (cubert__cuda_loader_shared(&r->cu, NULL) != CUBERT_STATUS_OK) exit(1);
  RAW_CU("cuDeviceGet", r->cu->cuDeviceGet(&r->dev, 0));
  RAW_CU("cuDevicePrimaryCtxRetain", r->cu->cuDevicePrimaryCtxRetain(&r->ctx, r->dev));
  RAW_CU("cuCtxSetCurrent", r->cu->cuCtxSetCurrent(r->ctx));
  RAW_CU("cuStreamCreate", r->cu->cuStreamCreate(&r->stream, CU_STREAM_NON_BLOCKING));
  RAW_CU("cuEventCreate", r->cu->cuEventCreate(&r->event, CU_EVENT_DISABLE_TIMING));
  set = cubert__cuda_loader_symbol(r->cu, "cuCtxSetFlags");
  get = cubert__cuda_loader_symbol(r->cu, "cuCtxGetFlags");
  if (set && get) {
    memcpy(&r->ctx_set_flags, &set, sizeof set);
    memcpy(&r->ctx_get_flags, &get, sizeof get);
  }
}

static void raw_close(raw_t *r) {
  int i;
  (void)r->cu->cuCtxSetCurrent(r->ctx);
  for (i = 0; i < r->nmodules; i++) (void)r->cu->cuModuleUnload(r->modules[i]);
  (void)r->cu->cuEventDestroy(r->event);
  (void)r->cu->cuStreamDestroy(r->stream);
  (void)r->cu->cuDevicePrimaryCtxRelease(r->dev);
}

/* The kernel's function from its registered image (the cubin when it is
 * for this GPU, else the PTX), as the client's device loads it. */
static CUfunction raw_function(raw_t *r, const cubert_kernel_t *k) {
  const cubert_cuda_image_t *img = cubert_cuda_image_find(k->cuda_entry_name);
  cubert_cuda_device_info_t info;
  CUmodule m = NULL;
  CUfunction f = NULL;
  int i;
  for (i = 0; i < r->nmodules; i++)
    if (r->module_kernels[i] == k) return r->functions[i];
  if (r->nmodules == RAW_MAX_MODULES) {
    fprintf(stderr, "bench_cuda: more than %d raw kernels\n", RAW_MAX_MODULES);
    exit(1);
  }
  if (!img || cubert_cuda_device_info(0, &info, NULL) != CUBERT_STATUS_OK) {
    fprintf(stderr, "bench_cuda: no image holds %s\n", k->cuda_entry_name);
    exit(1);
  }
  (void)r->cu->cuCtxSetCurrent(r->ctx);
  if (!(img->cubin && img->cubin_arch == info.compute_major * 10 + info.compute_minor &&
        r->cu->cuModuleLoadDataEx(&m, img->cubin, 0, NULL, NULL) == CUDA_SUCCESS))
    RAW_CU("cuModuleLoadDataEx", r->cu->cuModuleLoadDataEx(&m, img->ptx, 0, NULL, NULL));
  RAW_CU("cuModuleGetFunction", r->cu->cuModuleGetFunction(&f, m, k->cuda_entry_name));
  r->modules[r->nmodules] = m;
  r->module_kernels[r->nmodules] = k;
  r->functions[r->nmodules++] = f;
  return f;
}

/* Launch as the client's device does: (args by value, CHECKED, no report). */
static void raw_launch(raw_t *r, CUfunction f, const cubert_kernel_t *k, cubert_dim3_t count,
                       const cubert_kernel_args_t *args) {
  uint32_t mode = CUBERT_KERNEL_MODE_CHECKED;
  CUdeviceptr report = 0;
  void *params[3];
  params[0] = (void *)args;
  params[1] = &mode;
  params[2] = &report;
  RAW_CU("cuLaunchKernel", r->cu->cuLaunchKernel(f, count.x, count.y, count.z, k->cube_dim.x,
                                                 k->cube_dim.y, k->cube_dim.z,
                                                 k->shared_memory_bytes, r->stream, params, NULL));
}

static void raw_sync(raw_t *r) {
  RAW_CU("cuStreamSynchronize", r->cu->cuStreamSynchronize(r->stream));
}

/* Wait for everything enqueued on the stream, the way `how` says. */
static void raw_wait(raw_t *r, raw_wait_t how) {
  CUresult q;
  switch (how) {
    case RAW_WAIT_EVENT_SYNC:
      RAW_CU("cuEventRecord", r->cu->cuEventRecord(r->event, r->stream));
      RAW_CU("cuEventSynchronize", r->cu->cuEventSynchronize(r->event));
      return;
    case RAW_WAIT_EVENT_SPIN:
      RAW_CU("cuEventRecord", r->cu->cuEventRecord(r->event, r->stream));
      while ((q = r->cu->cuEventQuery(r->event)) == CUDA_ERROR_NOT_READY) {
      }
      RAW_CU("cuEventQuery", q);
      return;
    case RAW_WAIT_STREAM_SPIN:
      while ((q = r->cu->cuStreamQuery(r->stream)) == CUDA_ERROR_NOT_READY) {
      }
      RAW_CU("cuStreamQuery", q);
      return;
    case RAW_WAIT_STREAM_SYNC:
    default:
      raw_sync(r);
      return;
  }
}

static CUdeviceptr raw_alloc(raw_t *r, size_t n) {
  CUdeviceptr p = 0;
  RAW_CU("cuMemAllocAsync", r->cu->cuMemAllocAsync(&p, n, r->stream));
  return p;
}

static void raw_free(raw_t *r, CUdeviceptr p) {
  RAW_CU("cuMemFreeAsync", r->cu->cuMemFreeAsync(p, r->stream));
}

/* Set the current context's scheduling flags (CU_CTX_SCHED_*); 0 when it
 * cannot be done here (no cuCtxSetFlags, or refused). */
static int raw_set_schedule(raw_t *r, unsigned sched) {
  unsigned flags = 0;
  if (!r->ctx_set_flags) return 0;
  (void)r->cu->cuCtxSetCurrent(r->ctx);
  if (r->ctx_get_flags(&flags) != CUDA_SUCCESS) return 0;
  flags = (flags & ~(unsigned)CU_CTX_SCHED_MASK) | sched;
  if (r->ctx_set_flags(flags) != CUDA_SUCCESS) return 0;
  return r->ctx_get_flags(&flags) == CUDA_SUCCESS && (flags & CU_CTX_SCHED_MASK) == sched;
}

static unsigned raw_schedule(raw_t *r) {
  unsigned flags = 0;
  (void)r->cu->cuCtxSetCurrent(r->ctx);
  if (r->ctx_get_flags && r->ctx_get_flags(&flags) == CUDA_SUCCESS)
    return flags & CU_CTX_SCHED_MASK;
  return 0xFFu;
}

#endif /* CUBERT_BENCH_CUDA_RAW_H */

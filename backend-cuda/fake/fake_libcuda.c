/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/fake/fake_libcuda.c: a fake CUDA driver (libcuda.so.1) on host
 * memory, for the CUDA driver's tests on machines without a GPU. What it
 * does and its knobs: fake_libcuda.h. This file: knobs, devices, contexts,
 * streams, events, errors and cuGetProcAddress; memory, copies, modules and
 * launches are in fake_libcuda_exec.c.
 *
 * cuDriverGetVersion, cuInit, cuGetErrorString, cuGetProcAddress_v2 (left
 * out with -DFAKE_CUDA_NO_GET_PROC_ADDRESS) and cubert_fake_cuda_stats are
 * what the driver looks up by name; every other entry point is reached
 * through cuGetProcAddress, as the driver does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_libcuda_internal.h"

pthread_mutex_t fake_mutex = PTHREAD_MUTEX_INITIALIZER;
int fake_initialized;
uint64_t fake_device_used[FAKE_MAX_DEVICES];
fake_cuda_stats_t fake_stats_;
__thread struct CUctx_st *fake_current;
struct CUstream_st *fake_live_streams;
static struct CUctx_st g_ctx[FAKE_MAX_DEVICES];

/* ---- knobs ------------------------------------------------------------------- */

long long fake_knob(const char *name, long long fallback) {
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  return strtoll(v, NULL, 0);
}

static int device_count(void) {
  long long n = fake_knob("CUBERT_FAKE_CUDA_DEVICES", 1);
  if (n < 0) n = 0;
  if (n > FAKE_MAX_DEVICES) n = FAKE_MAX_DEVICES;
  return (int)n;
}

int fake_is_fatal(CUresult r) {
  switch ((int)r) {
    case 214: case 220: case 226: case 700: case 702: case 710: case 714: case 715:
    case 716: case 717: case 718: case 719: case 721: case 911:
      return 1;
    default:
      return 0;
  }
}

static CUresult g_process_poison; /* atomic */

void fake_poison(CUresult r) {
  CUresult none = CUDA_SUCCESS;
  if (fake_current) fake_current->poison = r;
  (void)__atomic_compare_exchange_n(&g_process_poison, &none, r, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
}

CUresult fake_process_poisoned(void) { return __atomic_load_n(&g_process_poison, __ATOMIC_ACQUIRE); }

/* The current context, healthy: else the error a real driver gives. */
CUresult fake_ctx_check(void) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!fake_current || fake_current->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (fake_process_poisoned() != CUDA_SUCCESS) return fake_process_poisoned();
  return fake_current->poison;
}

/* ---- init, version, errors ------------------------------------------------------ */

CUresult CUDAAPI cuInit(unsigned int flags) {
  CUresult r = (CUresult)fake_knob("CUBERT_FAKE_CUDA_INIT_RESULT", 0);
  (void)flags;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.init_calls++;
  if (r == CUDA_SUCCESS) {
    if (!fake_initialized) {
      int i;
      for (i = 0; i < FAKE_MAX_DEVICES; i++) g_ctx[i].device = i;
    }
    fake_initialized = 1;
  }
  pthread_mutex_unlock(&fake_mutex);
  return r;
}

CUresult CUDAAPI cuDriverGetVersion(int *version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = (int)fake_knob("CUBERT_FAKE_CUDA_DRIVER_VERSION", 13000);
  return CUDA_SUCCESS;
}

static const struct {
  int code;
  const char *name;
  const char *text;
} k_errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {909, "CUDA_ERROR_TIMEOUT", "wait operation timed out"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult error_lookup(CUresult error, const char **out, int text) {
  size_t i;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  for (i = 0; i < sizeof k_errors / sizeof k_errors[0]; i++)
    if (k_errors[i].code == (int)error) {
      *out = text ? k_errors[i].text : k_errors[i].name;
      return CUDA_SUCCESS;
    }
  *out = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_cuGetErrorName(CUresult error, const char **out) {
  return error_lookup(error, out, 0);
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **out) {
  return error_lookup(error, out, 1);
}

/* ---- devices ------------------------------------------------------------------- */

static CUresult device_check(CUdevice dev) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGet(CUdevice *out, int ordinal) {
  CUresult r = device_check(ordinal);
  if (r != CUDA_SUCCESS) return r;
  *out = ordinal;
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetCount(int *count) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *count = device_count();
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetName(char *name, int len, CUdevice dev) {
  CUresult r = device_check(dev);
  if (r != CUDA_SUCCESS) return r;
  if (len > 0) snprintf(name, (size_t)len, "Fake CUDA Device %d", dev);
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetPCIBusId(char *id, int len, CUdevice dev) {
  CUresult r = device_check(dev);
  if (r != CUDA_SUCCESS) return r;
  if (len > 0) snprintf(id, (size_t)len, "0000:%02x:00.0", (unsigned)dev + 0x10u);
  return CUDA_SUCCESS;
}

uint64_t fake_device_memory(void) {
  return (uint64_t)fake_knob("CUBERT_FAKE_CUDA_MEMORY", 256ll << 20);
}

static CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  CUresult r = device_check(dev);
  if (r != CUDA_SUCCESS) return r;
  *bytes = (size_t)fake_device_memory();
  return CUDA_SUCCESS;
}

static CUresult fake_cuDeviceGetAttribute(int *out, CUdevice_attribute a, CUdevice dev) {
  CUresult r = device_check(dev);
  if (r != CUDA_SUCCESS) return r;
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *out = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *out = 0; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *out = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *out = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *out = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *out = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *out = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *out = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *out = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *out = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *out = 232448; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *out = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *out = 132; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *out = 1980000; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *out = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *out = 5120; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *out = 52428800; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *out = 65536; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
      *out = fake_knob("CUBERT_FAKE_CUDA_NO_POOLS", 0) ? 0 : 1;
      break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

/* ---- contexts ------------------------------------------------------------------- */

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *out, CUdevice dev) {
  CUresult r = device_check(dev);
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&fake_mutex);
  /* as the driver (seen on two H200s): a poisoned process makes no new
   * context, whatever the thread; an active one is retained */
  if (fake_process_poisoned() != CUDA_SUCCESS && g_ctx[dev].refs <= 0) {
    pthread_mutex_unlock(&fake_mutex);
    return fake_process_poisoned();
  }
  g_ctx[dev].refs++;
  fake_stats_.contexts_retained++;
  pthread_mutex_unlock(&fake_mutex);
  *out = &g_ctx[dev];
  return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  CUresult r = device_check(dev);
  if (r != CUDA_SUCCESS) return r;
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_mutex);
  *flags = g_ctx[dev].flags;
  *active = g_ctx[dev].refs > 0;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  CUresult r = device_check(dev);
  if (r == CUDA_SUCCESS) r = (CUresult)fake_knob("CUBERT_FAKE_CUDA_SET_FLAGS_RESULT", 0);
  if (r != CUDA_SUCCESS) return r;
  if ((flags & CU_CTX_SCHED_MASK) > CU_CTX_SCHED_BLOCKING_SYNC) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_mutex);
  g_ctx[dev].flags = flags;
  fake_stats_.ctx_set_flags++;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev) {
  CUresult r = device_check(dev);
  if (r != CUDA_SUCCESS) return r;
  fake_async_run_all();
  pthread_mutex_lock(&fake_mutex);
  if (g_ctx[dev].refs > 0) {
    g_ctx[dev].refs--;
    fake_stats_.contexts_retained--;
    if (g_ctx[dev].refs == 0) { /* the context is reset: its memory goes, its error too, */
      if (fake_current != &g_ctx[dev]) /* except while it stays current on this thread */
        g_ctx[dev].poison = CUDA_SUCCESS;
      fake_blocks_free_device(dev);
    }
  }
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

static CUresult fake_cuCtxSetCurrent(CUcontext ctx) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.ctx_set_current_calls++;
  pthread_mutex_unlock(&fake_mutex);
  if (ctx && ctx->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (fake_current && fake_current != ctx && fake_current->refs <= 0)
    fake_current->poison = CUDA_SUCCESS; /* a released context, no longer current */
  fake_current = ctx;
  return CUDA_SUCCESS;
}

static CUresult fake_cuCtxGetCurrent(CUcontext *out) {
  if (!fake_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *out = fake_current;
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemGetInfo(size_t *free_bytes, size_t *total) {
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&fake_mutex);
  *total = (size_t)fake_device_memory();
  *free_bytes = (size_t)(fake_device_memory() - fake_device_used[fake_current->device]);
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

/* ---- streams and events ----------------------------------------------------------- */

static CUresult fake_cuStreamCreate(CUstream *out, unsigned int flags) {
  struct CUstream_st *s;
  CUresult r = fake_ctx_check();
  (void)flags;
  if (r != CUDA_SUCCESS) return r;
  s = (struct CUstream_st *)calloc(1, sizeof *s);
  if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
  s->ctx = fake_current;
  pthread_mutex_lock(&fake_mutex);
  s->live_next = fake_live_streams;
  fake_live_streams = s;
  fake_stats_.streams_created++;
  pthread_mutex_unlock(&fake_mutex);
  *out = s;
  return CUDA_SUCCESS;
}

/* Free a destroyed stream no event refers to (caller holds fake_mutex). */
static void stream_maybe_free(struct CUstream_st *s) {
  if (s->destroyed && s->refs == 0) free(s);
}

void fake_stream_unref(struct CUstream_st *s) {
  s->refs--;
  stream_maybe_free(s);
}

static CUresult fake_cuStreamDestroy(CUstream s) {
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  fake_async_run(s, UINT64_MAX); /* the GPU finishes a destroyed stream's work */
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.streams_destroyed++;
  fake_stream_free_deferred(s);
  {
    struct CUstream_st **p = &fake_live_streams;
    while (*p && *p != s) p = &(*p)->live_next;
    if (*p) *p = s->live_next;
  }
  s->destroyed = 1;
  stream_maybe_free(s);
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

/* Event e completed: so did every event recorded before it on its stream
 * (caller holds fake_mutex). */
static void event_complete(struct CUevent_st *e) {
  e->pending = 0;
  if (e->stream && e->stream->completed < e->seq) e->stream->completed = e->seq;
}

/* Detach e from the stream of its last record (caller holds fake_mutex). */
static void event_detach(struct CUevent_st *e) {
  struct CUstream_st *s = e->stream;
  if (!s) return;
  e->stream = NULL;
  s->refs--;
  stream_maybe_free(s);
}

CUresult fake_stream_check(CUstream s) {
  CUresult r = fake_ctx_check();
  s = fake_stream_special(s);
  if (r != CUDA_SUCCESS) return r;
  if (s && s->ctx != fake_current) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

static CUresult fake_cuStreamSynchronize(CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_ready(s);
  if (r == CUDA_SUCCESS) fake_async_run(s, UINT64_MAX);
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.stream_syncs++;
  if (r == CUDA_SUCCESS && s) {
    s->completed = s->recorded;
    fake_stream_free_deferred(s);
  }
  pthread_mutex_unlock(&fake_mutex);
  return r;
}

static CUresult fake_cuStreamQuery(CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.stream_queries++;
  pthread_mutex_unlock(&fake_mutex);
  r = fake_stream_check(s);
  if (r != CUDA_SUCCESS || !s) return r;
  fake_async_run(s, UINT64_MAX); /* lazily: the work runs when someone looks */
  pthread_mutex_lock(&fake_mutex);
  fake_gates_prune(&s->gates);
  if (s->gates.n) r = CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&fake_mutex);
  return r;
}

static CUresult fake_cuEventCreate(CUevent *out, unsigned int flags) {
  struct CUevent_st *e;
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  e = (struct CUevent_st *)calloc(1, sizeof *e);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  e->ctx = fake_current;
  e->flags = flags;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.events_created++;
  pthread_mutex_unlock(&fake_mutex);
  *out = e;
  return CUDA_SUCCESS;
}

static CUresult fake_cuEventDestroy(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.events_destroyed++;
  event_detach(e);
  pthread_mutex_unlock(&fake_mutex);
  free(e);
  return CUDA_SUCCESS;
}

static CUresult fake_cuEventRecord(CUevent e, CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_check(s);
  if (r != CUDA_SUCCESS) return r;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  /* the event and the stream must share a context (the current one for the
   * NULL stream), as the driver requires */
  if (e->ctx != (s ? s->ctx : fake_current)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fake_mutex);
  e->pending = (int)fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", 0);
  event_detach(e);
  e->gates.n = 0;
  if (s) {
    e->stream = s;
    e->seq = ++s->recorded;
    s->refs++;
    fake_gates_prune(&s->gates);
    e->gates = s->gates;
  }
  fake_stats_.event_records++;
  pthread_mutex_unlock(&fake_mutex);
  if (s && fake_async_on()) fake_async_record(s, e->seq);
  return CUDA_SUCCESS;
}

/* The asynchronous mode: run e's stream up to e (lazily, when asked). */
static void event_run(CUevent e) {
  struct CUstream_st *s;
  uint64_t seq;
  if (!fake_async_on()) return;
  pthread_mutex_lock(&fake_mutex);
  s = e->stream;
  seq = e->seq;
  if (s) s->refs++;
  pthread_mutex_unlock(&fake_mutex);
  if (!s) return;
  fake_async_run(s, seq);
  pthread_mutex_lock(&fake_mutex);
  fake_stream_unref(s);
  pthread_mutex_unlock(&fake_mutex);
}

static CUresult fake_cuEventQuery(CUevent e) {
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  event_run(e);
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.event_queries++;
  fake_gates_prune(&e->gates);
  if (e->gates.n) {
    pthread_mutex_unlock(&fake_mutex);
    return CUDA_ERROR_NOT_READY;
  }
  if (e->stream && e->seq <= e->stream->completed) e->pending = 0;
  if (e->pending > 0) {
    e->pending--;
    r = CUDA_ERROR_NOT_READY;
  } else {
    event_complete(e);
  }
  pthread_mutex_unlock(&fake_mutex);
  return r;
}

static CUresult fake_cuEventSynchronize(CUevent e) {
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  r = fake_event_settle(e);
  if (r != CUDA_SUCCESS) return r;
  event_run(e);
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.event_syncs++;
  event_complete(e);
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

static CUresult fake_cuStreamWaitEvent(CUstream s_arg, CUevent e, unsigned int flags) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_check(s);
  struct CUstream_st *target;
  uint64_t seq;
  (void)flags;
  if (r != CUDA_SUCCESS) return r;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  if (!s) return CUDA_SUCCESS;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.stream_wait_events++;
  if (fake_gates_merge(&s->gates, &e->gates) != 0) r = CUDA_ERROR_NOT_SUPPORTED;
  target = e->stream;
  seq = e->seq;
  pthread_mutex_unlock(&fake_mutex);
  /* the asynchronous mode: s's later work waits for e's record to run */
  if (r == CUDA_SUCCESS && target && target != s) fake_async_wait(s, target, seq);
  return r;
}

static CUresult fake_cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!a || !b || (a->flags & CU_EVENT_DISABLE_TIMING) || (b->flags & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = 0.5f;
  return CUDA_SUCCESS;
}

/* ---- memory ------------------------------------------------------------------------ */

/* ---- cuGetProcAddress ---------------------------------------------------------------- */

typedef void (*fake_fn)(void);
#define FAKE_ENTRY(name) {#name, (fake_fn)fake_##name}

static const struct {
  const char *name;
  fake_fn fn;
} k_entries[] = {
    {"cuInit", (fake_fn)cuInit}, {"cuDriverGetVersion", (fake_fn)cuDriverGetVersion},
    FAKE_ENTRY(cuGetErrorName), {"cuGetErrorString", (fake_fn)cuGetErrorString},
    FAKE_ENTRY(cuDeviceGet),
    FAKE_ENTRY(cuDeviceGetCount), FAKE_ENTRY(cuDeviceGetName), FAKE_ENTRY(cuDeviceGetAttribute),
    FAKE_ENTRY(cuDeviceTotalMem), FAKE_ENTRY(cuDeviceGetPCIBusId),
    FAKE_ENTRY(cuDevicePrimaryCtxRetain), FAKE_ENTRY(cuDevicePrimaryCtxRelease),
    FAKE_ENTRY(cuDevicePrimaryCtxGetState), FAKE_ENTRY(cuDevicePrimaryCtxSetFlags),
    FAKE_ENTRY(cuCtxSetCurrent), FAKE_ENTRY(cuCtxGetCurrent), FAKE_ENTRY(cuMemGetInfo),
    FAKE_ENTRY(cuStreamCreate), FAKE_ENTRY(cuStreamDestroy), FAKE_ENTRY(cuStreamSynchronize),
    FAKE_ENTRY(cuStreamQuery), FAKE_ENTRY(cuStreamWaitEvent), FAKE_ENTRY(cuEventCreate),
    FAKE_ENTRY(cuEventRecord), FAKE_ENTRY(cuEventQuery), FAKE_ENTRY(cuEventSynchronize),
    FAKE_ENTRY(cuEventDestroy), FAKE_ENTRY(cuEventElapsedTime), FAKE_ENTRY(cuMemAlloc),
    FAKE_ENTRY(cuMemFree), FAKE_ENTRY(cuMemAllocAsync), FAKE_ENTRY(cuMemFreeAsync),
    FAKE_ENTRY(cuMemHostAlloc), FAKE_ENTRY(cuMemFreeHost), FAKE_ENTRY(cuMemHostRegister),
    FAKE_ENTRY(cuMemHostUnregister), FAKE_ENTRY(cuMemcpyHtoDAsync),
    FAKE_ENTRY(cuMemcpyDtoHAsync), FAKE_ENTRY(cuMemcpyDtoDAsync), FAKE_ENTRY(cuMemcpy2DAsync),
    FAKE_ENTRY(cuMemsetD8Async), FAKE_ENTRY(cuModuleLoadDataEx), FAKE_ENTRY(cuModuleUnload),
    FAKE_ENTRY(cuModuleGetFunction), FAKE_ENTRY(cuFuncGetAttribute),
    FAKE_ENTRY(cuFuncSetAttribute), FAKE_ENTRY(cuLaunchKernel),
    FAKE_ENTRY(cuStreamWaitValue32), FAKE_ENTRY(cuStreamWriteValue32),
    FAKE_ENTRY(cuMemcpyPeerAsync), FAKE_ENTRY(cuDeviceCanAccessPeer),
    FAKE_ENTRY(cuCtxEnablePeerAccess), FAKE_ENTRY(cuGraphCreate), FAKE_ENTRY(cuGraphAddKernelNode),
    FAKE_ENTRY(cuGraphInstantiateWithFlags), FAKE_ENTRY(cuGraphExecKernelNodeSetParams),
    FAKE_ENTRY(cuGraphLaunch), FAKE_ENTRY(cuGraphExecDestroy), FAKE_ENTRY(cuGraphDestroy),
    FAKE_ENTRY(cuGraphAddDependencies), FAKE_ENTRY(cuModuleGetGlobal),
};

/* Without cuGetProcAddress_v2 (a library missing the symbol) the lookup is
 * exported under another name, so the variant still builds the same code. */
#if defined(FAKE_CUDA_NO_GET_PROC_ADDRESS)
#define FAKE_GET_PROC_ADDRESS cubert_fake_cuda_get_proc_address
CUresult cubert_fake_cuda_get_proc_address(const char *symbol, void **pfn, int version,
                                           cuuint64_t flags,
                                           CUdriverProcAddressQueryResult *status);
#else
#define FAKE_GET_PROC_ADDRESS cuGetProcAddress
#endif

CUresult CUDAAPI FAKE_GET_PROC_ADDRESS(const char *symbol, void **pfn, int version,
                                       cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
  const char *missing = getenv("CUBERT_FAKE_CUDA_MISSING");
  size_t i;
  (void)flags;
  if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (version > fake_knob("CUBERT_FAKE_CUDA_DRIVER_VERSION", 13000)) return CUDA_ERROR_INVALID_VALUE;
  if (missing && strcmp(missing, symbol) == 0) return CUDA_SUCCESS;
  for (i = 0; i < sizeof k_entries / sizeof k_entries[0]; i++)
    if (strcmp(k_entries[i].name, symbol) == 0) {
      memcpy(pfn, &k_entries[i].fn, sizeof *pfn);
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  return CUDA_SUCCESS;
}

void cubert_fake_cuda_stats(fake_cuda_stats_t *out) {
  pthread_mutex_lock(&fake_mutex);
  *out = fake_stats_;
  pthread_mutex_unlock(&fake_mutex);
}

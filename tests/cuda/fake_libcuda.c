/*
 * tests/cuda/fake_libcuda.c: a fake CUDA driver (libcuda.so.1) on host
 * memory, for the CUDA backend's tests on machines without a GPU. What it
 * does and its knobs: fake_libcuda.h.
 *
 * Only cuDriverGetVersion, cuGetProcAddress_v2 (left out with
 * -DFAKE_CUDA_NO_GET_PROC_ADDRESS) and cubert_fake_cuda_stats are exported;
 * every other entry point is reached through cuGetProcAddress, as the
 * backend does. The handle types of cuda.h are completed here.
 */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_libcuda.h"

#define FAKE_MAX_DEVICES 8

struct CUctx_st {
  int device;
  int refs;
  CUresult poison; /* sticky context-poisoning error, 0 while healthy */
};

struct CUstream_st {
  struct CUctx_st *ctx;
};

struct CUevent_st {
  struct CUctx_st *ctx;
  unsigned flags;
  int pending; /* queries left that answer NOT_READY */
};

struct CUmod_st {
  struct CUctx_st *ctx;
  unsigned char *bytes; /* copy of the image (text NUL-terminated) */
  size_t size;
  int elf; /* a real ELF cubin: functions are found by their symbol names */
  struct CUfunc_st *funcs; /* freed with the module */
};

struct CUfunc_st {
  struct CUmod_st *module;
  struct CUfunc_st *next;
  char name[64];
  int dynamic_shared;
};

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static int g_initialized;
static struct CUctx_st g_ctx[FAKE_MAX_DEVICES];
static uint64_t g_device_used[FAKE_MAX_DEVICES];
static fake_cuda_stats_t g_stats;
static __thread struct CUctx_st *t_current;

static void blocks_free_device(int device);

/* ---- knobs ------------------------------------------------------------------- */

static long long knob(const char *name, long long fallback) {
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  return strtoll(v, NULL, 0);
}

static int device_count(void) {
  long long n = knob("CUBERT_FAKE_CUDA_DEVICES", 1);
  if (n < 0) n = 0;
  if (n > FAKE_MAX_DEVICES) n = FAKE_MAX_DEVICES;
  return (int)n;
}

static int is_fatal(CUresult r) {
  switch ((int)r) {
    case 214: case 220: case 226: case 700: case 702: case 710: case 714: case 715:
    case 716: case 717: case 718: case 719: case 721: case 911:
      return 1;
    default:
      return 0;
  }
}

/* The current context, healthy: else the error a real driver gives. */
static CUresult ctx_check(void) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!t_current || t_current->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  return t_current->poison;
}

/* ---- init, version, errors ------------------------------------------------------ */

static CUresult fake_cuInit(unsigned int flags) {
  CUresult r = (CUresult)knob("CUBERT_FAKE_CUDA_INIT_RESULT", 0);
  (void)flags;
  pthread_mutex_lock(&g_mutex);
  g_stats.init_calls++;
  if (r == CUDA_SUCCESS) {
    if (!g_initialized) {
      int i;
      for (i = 0; i < FAKE_MAX_DEVICES; i++) g_ctx[i].device = i;
    }
    g_initialized = 1;
  }
  pthread_mutex_unlock(&g_mutex);
  return r;
}

CUresult CUDAAPI cuDriverGetVersion(int *version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = (int)knob("CUBERT_FAKE_CUDA_DRIVER_VERSION", 13000);
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
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
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

static CUresult fake_cuGetErrorString(CUresult error, const char **out) {
  return error_lookup(error, out, 1);
}

/* ---- devices ------------------------------------------------------------------- */

static CUresult device_check(CUdevice dev) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
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
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
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

static uint64_t device_memory(void) {
  return (uint64_t)knob("CUBERT_FAKE_CUDA_MEMORY", 256ll << 20);
}

static CUresult fake_cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  CUresult r = device_check(dev);
  if (r != CUDA_SUCCESS) return r;
  *bytes = (size_t)device_memory();
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
      *out = knob("CUBERT_FAKE_CUDA_NO_POOLS", 0) ? 0 : 1;
      break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

/* ---- contexts ------------------------------------------------------------------- */

static CUresult fake_cuDevicePrimaryCtxRetain(CUcontext *out, CUdevice dev) {
  CUresult r = device_check(dev);
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&g_mutex);
  g_ctx[dev].refs++;
  g_stats.contexts_retained++;
  pthread_mutex_unlock(&g_mutex);
  *out = &g_ctx[dev];
  return CUDA_SUCCESS;
}

static CUresult fake_cuDevicePrimaryCtxRelease(CUdevice dev) {
  CUresult r = device_check(dev);
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&g_mutex);
  if (g_ctx[dev].refs > 0) {
    g_ctx[dev].refs--;
    g_stats.contexts_retained--;
    if (g_ctx[dev].refs == 0) { /* the context is reset: its memory goes, its error too */
      g_ctx[dev].poison = CUDA_SUCCESS;
      blocks_free_device(dev);
    }
  }
  pthread_mutex_unlock(&g_mutex);
  return CUDA_SUCCESS;
}

static CUresult fake_cuCtxSetCurrent(CUcontext ctx) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&g_mutex);
  g_stats.ctx_set_current_calls++;
  pthread_mutex_unlock(&g_mutex);
  if (ctx && ctx->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  t_current = ctx;
  return CUDA_SUCCESS;
}

static CUresult fake_cuCtxGetCurrent(CUcontext *out) {
  if (!g_initialized) return CUDA_ERROR_NOT_INITIALIZED;
  *out = t_current;
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemGetInfo(size_t *free_bytes, size_t *total) {
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&g_mutex);
  *total = (size_t)device_memory();
  *free_bytes = (size_t)(device_memory() - g_device_used[t_current->device]);
  pthread_mutex_unlock(&g_mutex);
  return CUDA_SUCCESS;
}

/* ---- streams and events ----------------------------------------------------------- */

static CUresult fake_cuStreamCreate(CUstream *out, unsigned int flags) {
  struct CUstream_st *s;
  CUresult r = ctx_check();
  (void)flags;
  if (r != CUDA_SUCCESS) return r;
  s = (struct CUstream_st *)calloc(1, sizeof *s);
  if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
  s->ctx = t_current;
  pthread_mutex_lock(&g_mutex);
  g_stats.streams_created++;
  pthread_mutex_unlock(&g_mutex);
  *out = s;
  return CUDA_SUCCESS;
}

static CUresult fake_cuStreamDestroy(CUstream s) {
  if (!s) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_mutex);
  g_stats.streams_destroyed++;
  pthread_mutex_unlock(&g_mutex);
  free(s);
  return CUDA_SUCCESS;
}

static CUresult stream_check(CUstream s) {
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (s && s->ctx != t_current) return CUDA_ERROR_INVALID_HANDLE;
  return CUDA_SUCCESS;
}

static CUresult fake_cuStreamSynchronize(CUstream s) {
  return stream_check(s);
}

static CUresult fake_cuStreamQuery(CUstream s) {
  return stream_check(s);
}

static CUresult fake_cuEventCreate(CUevent *out, unsigned int flags) {
  struct CUevent_st *e;
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  e = (struct CUevent_st *)calloc(1, sizeof *e);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  e->ctx = t_current;
  e->flags = flags;
  pthread_mutex_lock(&g_mutex);
  g_stats.events_created++;
  pthread_mutex_unlock(&g_mutex);
  *out = e;
  return CUDA_SUCCESS;
}

static CUresult fake_cuEventDestroy(CUevent e) {
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_mutex);
  g_stats.events_destroyed++;
  pthread_mutex_unlock(&g_mutex);
  free(e);
  return CUDA_SUCCESS;
}

static CUresult fake_cuEventRecord(CUevent e, CUstream s) {
  CUresult r = stream_check(s);
  if (r != CUDA_SUCCESS) return r;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_mutex);
  e->pending = (int)knob("CUBERT_FAKE_CUDA_EVENT_DELAY", 0);
  g_stats.event_records++;
  pthread_mutex_unlock(&g_mutex);
  return CUDA_SUCCESS;
}

static CUresult fake_cuEventQuery(CUevent e) {
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_mutex);
  if (e->pending > 0) {
    e->pending--;
    r = CUDA_ERROR_NOT_READY;
  }
  pthread_mutex_unlock(&g_mutex);
  return r;
}

static CUresult fake_cuEventSynchronize(CUevent e) {
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!e) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_mutex);
  e->pending = 0;
  pthread_mutex_unlock(&g_mutex);
  return CUDA_SUCCESS;
}

static CUresult fake_cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  CUresult r = stream_check(s);
  (void)flags;
  if (r != CUDA_SUCCESS) return r;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult fake_cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!a || !b || (a->flags & CU_EVENT_DISABLE_TIMING) || (b->flags & CU_EVENT_DISABLE_TIMING))
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = 0.5f;
  return CUDA_SUCCESS;
}

/* ---- memory ------------------------------------------------------------------------ */

/* Each device block has a header before its (512-aligned) address; the
 * blocks of a device are listed, so releasing its primary context frees
 * what is left, as a real context reset does. */
#define FAKE_HEADER 512u

typedef struct fake_block_t {
  size_t size;
  int device;
  struct fake_block_t *prev, *next;
} fake_block_t;

static fake_block_t *g_blocks;

static void block_unlink(fake_block_t *b) {
  if (b->prev) b->prev->next = b->next;
  else g_blocks = b->next;
  if (b->next) b->next->prev = b->prev;
  g_device_used[b->device] -= b->size;
  g_stats.device_allocs_live--;
  g_stats.device_bytes_live -= (int64_t)b->size;
}

/* Free every block of `device` (caller holds the mutex). */
static void blocks_free_device(int device) {
  fake_block_t *b = g_blocks;
  while (b) {
    fake_block_t *next = b->next;
    if (b->device == device) {
      block_unlink(b);
      free(b);
    }
    b = next;
  }
}

static CUresult device_alloc(CUdeviceptr *out, size_t size, int async) {
  fake_block_t *b;
  uint64_t cap = device_memory();
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!out || size == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mutex);
  if (g_device_used[t_current->device] + size > cap) {
    pthread_mutex_unlock(&g_mutex);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&g_mutex);
  if (posix_memalign((void **)&b, FAKE_HEADER, FAKE_HEADER + size) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  b->size = size;
  b->device = t_current->device;
  pthread_mutex_lock(&g_mutex);
  b->prev = NULL;
  b->next = g_blocks;
  if (g_blocks) g_blocks->prev = b;
  g_blocks = b;
  g_device_used[b->device] += size;
  g_stats.device_allocs_live++;
  g_stats.device_bytes_live += (int64_t)size;
  if (async) g_stats.mem_alloc_async++;
  else g_stats.mem_alloc_sync++;
  pthread_mutex_unlock(&g_mutex);
  *out = (CUdeviceptr)(uintptr_t)((unsigned char *)b + FAKE_HEADER);
  return CUDA_SUCCESS;
}

static CUresult device_free(CUdeviceptr p, int async) {
  fake_block_t *b;
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  b = (fake_block_t *)((unsigned char *)(uintptr_t)p - FAKE_HEADER);
  pthread_mutex_lock(&g_mutex);
  block_unlink(b);
  if (async) g_stats.mem_free_async++;
  else g_stats.mem_free_sync++;
  pthread_mutex_unlock(&g_mutex);
  free(b);
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemAlloc(CUdeviceptr *out, size_t size) {
  return device_alloc(out, size, 0);
}

static CUresult fake_cuMemFree(CUdeviceptr p) {
  return device_free(p, 0);
}

static CUresult fake_cuMemAllocAsync(CUdeviceptr *out, size_t size, CUstream s) {
  CUresult r = stream_check(s);
  if (r != CUDA_SUCCESS) return r;
  if (knob("CUBERT_FAKE_CUDA_NO_POOLS", 0)) return CUDA_ERROR_NOT_SUPPORTED;
  return device_alloc(out, size, 1);
}

static CUresult fake_cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  CUresult r = stream_check(s);
  if (r != CUDA_SUCCESS) return r;
  return device_free(p, 1);
}

static CUresult fake_cuMemHostAlloc(void **out, size_t size, unsigned int flags) {
  unsigned char *block;
  uint64_t cap = (uint64_t)knob("CUBERT_FAKE_CUDA_HOST_MEMORY", 1ll << 30);
  CUresult r = ctx_check();
  (void)flags;
  if (r != CUDA_SUCCESS) return r;
  if (!out || size == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mutex);
  if ((uint64_t)g_stats.host_bytes_live + size > cap) {
    pthread_mutex_unlock(&g_mutex);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&g_mutex);
  if (posix_memalign((void **)&block, 64, 64 + size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(block, &size, sizeof size);
  pthread_mutex_lock(&g_mutex);
  g_stats.host_allocs++;
  g_stats.host_bytes_live += (int64_t)size;
  pthread_mutex_unlock(&g_mutex);
  *out = block + 64;
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemFreeHost(void *p) {
  unsigned char *block;
  size_t size;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  block = (unsigned char *)p - 64;
  memcpy(&size, block, sizeof size);
  pthread_mutex_lock(&g_mutex);
  g_stats.host_frees++;
  g_stats.host_bytes_live -= (int64_t)size;
  pthread_mutex_unlock(&g_mutex);
  free(block);
  return CUDA_SUCCESS;
}

/* CUBERT_FAKE_CUDA_COPY_RESULT: what copies return (0: they copy). */
static CUresult copy_result(void) {
  return (CUresult)knob("CUBERT_FAKE_CUDA_COPY_RESULT", 0);
}

static void count(uint64_t *counter) {
  pthread_mutex_lock(&g_mutex);
  (*counter)++;
  pthread_mutex_unlock(&g_mutex);
}

static CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  CUresult r = stream_check(s);
  if (r == CUDA_SUCCESS) r = copy_result();
  if (r != CUDA_SUCCESS) return r;
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  memcpy((void *)(uintptr_t)dst, src, n);
  count(&g_stats.copies_h2d);
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  CUresult r = stream_check(s);
  if (r == CUDA_SUCCESS) r = copy_result();
  if (r != CUDA_SUCCESS) return r;
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  memcpy(dst, (const void *)(uintptr_t)src, n);
  count(&g_stats.copies_d2h);
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  CUresult r = stream_check(s);
  if (r != CUDA_SUCCESS) return r;
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  count(&g_stats.copies_d2d);
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemcpy2DAsync(const CUDA_MEMCPY2D *c, CUstream s) {
  const unsigned char *src;
  unsigned char *dst;
  size_t row;
  CUresult r = stream_check(s);
  if (r != CUDA_SUCCESS) return r;
  if (!c || c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes)
    return CUDA_ERROR_INVALID_VALUE;
  src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? (const unsigned char *)c->srcHost
                                               : (const unsigned char *)(uintptr_t)c->srcDevice;
  dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? (unsigned char *)c->dstHost
                                               : (unsigned char *)(uintptr_t)c->dstDevice;
  if (!src || !dst) return CUDA_ERROR_INVALID_VALUE;
  src += c->srcY * c->srcPitch + c->srcXInBytes;
  dst += c->dstY * c->dstPitch + c->dstXInBytes;
  for (row = 0; row < c->Height; row++)
    memcpy(dst + row * c->dstPitch, src + row * c->srcPitch, c->WidthInBytes);
  count(&g_stats.copies_2d);
  return CUDA_SUCCESS;
}

static CUresult fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  CUresult r = stream_check(s);
  if (r != CUDA_SUCCESS) return r;
  if (!dst) return CUDA_ERROR_INVALID_VALUE;
  memset((void *)(uintptr_t)dst, v, n);
  count(&g_stats.memsets);
  return CUDA_SUCCESS;
}

/* ---- modules and launches ------------------------------------------------------------ */

static void jit_log(unsigned n, const CUjit_option *opts, void **vals, CUjit_option which,
                    CUjit_option size_opt, const char *text) {
  unsigned i, j;
  for (i = 0; i < n; i++) {
    if (opts[i] != which) continue;
    for (j = 0; j < n; j++)
      if (opts[j] == size_opt) {
        size_t cap = (size_t)(uintptr_t)vals[j];
        if (cap > 0) snprintf((char *)vals[i], cap, "%s", text);
        vals[j] = (void *)(uintptr_t)(strlen(text) + 1 < cap ? strlen(text) + 1 : cap);
      }
  }
}

/* The size of a real 64-bit ELF image: its section headers come last. */
static size_t elf_size(const unsigned char *image) {
  uint64_t shoff;
  uint16_t shentsize, shnum;
  memcpy(&shoff, image + 0x28, sizeof shoff);
  memcpy(&shentsize, image + 0x3a, sizeof shentsize);
  memcpy(&shnum, image + 0x3c, sizeof shnum);
  return (size_t)(shoff + (uint64_t)shentsize * shnum);
}

static CUresult fake_cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned int n,
                                        CUjit_option *opts, void **vals) {
  const unsigned char *bytes = (const unsigned char *)image;
  const char *text;
  int cubin, elf;
  size_t size;
  struct CUmod_st *m;
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
  cubin = memcmp(bytes, "\x7f" "ELF", 4) == 0;
  elf = cubin && bytes[4] == 2; /* ELFCLASS64: what nvcc writes */
  text = (const char *)bytes + (cubin ? 4 : 0);
  size = elf ? elf_size(bytes) : strlen(text) + 1;
  if (!elf && cubin && strstr(text, "FAKE_CUBIN_FAIL")) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  if (!elf && strstr(text, "FAKE_SYNTAX_ERROR")) {
    jit_log(n, opts, vals, CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            "ptxas application ptx input, line 3; fatal   : Parsing error near "
            "'FAKE_SYNTAX_ERROR': syntax error\nptxas fatal   : Ptx assembly aborted due to errors");
    return CUDA_ERROR_INVALID_PTX;
  }
  jit_log(n, opts, vals, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
          cubin ? "fake: cubin loaded" : "fake: PTX compiled");
  m = (struct CUmod_st *)calloc(1, sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  m->bytes = (unsigned char *)malloc(size + 1);
  if (!m->bytes) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(m->bytes, elf ? (const void *)bytes : (const void *)text, size);
  m->bytes[size] = 0;
  m->size = size;
  m->elf = elf;
  m->ctx = t_current;
  count(&g_stats.module_loads);
  *out = m;
  return CUDA_SUCCESS;
}

static CUresult fake_cuModuleUnload(CUmodule m) {
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  while (m->funcs) {
    struct CUfunc_st *f = m->funcs;
    m->funcs = f->next;
    free(f);
  }
  free(m->bytes);
  free(m);
  count(&g_stats.module_unloads);
  return CUDA_SUCCESS;
}

/* Whether `needle` (n bytes) occurs in the module's bytes. */
static int module_has(const struct CUmod_st *m, const char *needle, size_t n) {
  size_t i;
  if (n > m->size) return 0;
  for (i = 0; i + n <= m->size; i++)
    if (memcmp(m->bytes + i, needle, n) == 0) return 1;
  return 0;
}

static CUresult fake_cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name) {
  char needle[96];
  size_t len;
  struct CUfunc_st *f;
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!out || !m || !name || strlen(name) >= 64) return CUDA_ERROR_INVALID_VALUE;
  if (m->elf) { /* the symbol name between two NULs of the string table */
    len = strlen(name) + 2;
    needle[0] = '\0';
    memcpy(needle + 1, name, len - 1);
  } else {
    snprintf(needle, sizeof needle, ".entry %s(", name);
    len = strlen(needle);
  }
  if (!module_has(m, needle, len)) return CUDA_ERROR_NOT_FOUND;
  f = (struct CUfunc_st *)calloc(1, sizeof *f);
  if (!f) return CUDA_ERROR_OUT_OF_MEMORY;
  f->module = m;
  f->next = m->funcs;
  m->funcs = f;
  memcpy(f->name, name, strlen(name) + 1);
  *out = f;
  return CUDA_SUCCESS;
}

static CUresult fake_cuFuncGetAttribute(int *out, CUfunction_attribute a, CUfunction f) {
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!out || !f) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *out = (int)knob("CUBERT_FAKE_CUDA_FUNC_MAX_THREADS", 1024);
      break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *out = 0; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *out = 16; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

static CUresult fake_cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int value) {
  CUresult r = ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!f || a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || value < 0 || value > 232448)
    return CUDA_ERROR_INVALID_VALUE;
  f->dynamic_shared = value;
  pthread_mutex_lock(&g_mutex);
  g_stats.last_dynamic_shared_attribute = value;
  pthread_mutex_unlock(&g_mutex);
  return CUDA_SUCCESS;
}

/* cts_add_scalar_u32 on the host: buffer 0 (u32) += scalar 0, one element
 * per unit. The argument block is cubert_kernel_args_t: 16 buffers of
 * {ptr, size}, then 16 scalars of 8 bytes. */
static void run_add_scalar(const unsigned char *args, uint64_t units) {
  void *ptr;
  uint64_t size, delta, i;
  uint32_t *buf;
  memcpy(&ptr, args, sizeof ptr);
  memcpy(&size, args + 8, sizeof size);
  memcpy(&delta, args + 256, sizeof delta);
  buf = (uint32_t *)ptr;
  for (i = 0; i < units && i < size / 4; i++) buf[i] += (uint32_t)delta;
}

static CUresult fake_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                    CUstream s, void **params, void **extra) {
  CUresult want = (CUresult)knob("CUBERT_FAKE_CUDA_LAUNCH_RESULT", 0);
  CUresult r = stream_check(s);
  (void)extra;
  if (r != CUDA_SUCCESS) return r;
  if (!f || !params || gx == 0 || gy == 0 || gz == 0 || bx * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (shared > 49152 && (int)shared > f->dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  if (want != CUDA_SUCCESS) {
    if (is_fatal(want)) t_current->poison = want;
    return want;
  }
  pthread_mutex_lock(&g_mutex);
  g_stats.launches++;
  g_stats.grid[0] = gx;
  g_stats.grid[1] = gy;
  g_stats.grid[2] = gz;
  g_stats.block[0] = bx;
  g_stats.block[1] = by;
  g_stats.block[2] = bz;
  g_stats.shared_bytes = shared;
  memcpy(g_stats.args, params[0], FAKE_CUDA_ARGS_BYTES);
  memcpy(&g_stats.mode, params[1], sizeof g_stats.mode);
  memcpy(&g_stats.report, params[2], sizeof g_stats.report);
  snprintf(g_stats.kernel, sizeof g_stats.kernel, "%s", f->name);
  pthread_mutex_unlock(&g_mutex);
  if (strcmp(f->name, "cts_add_scalar_u32") == 0)
    run_add_scalar((const unsigned char *)params[0], (uint64_t)gx * gy * gz * bx * by * bz);
  if (strcmp(f->name, "fake_fault") == 0) t_current->poison = CUDA_ERROR_ILLEGAL_ADDRESS;
  return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress ---------------------------------------------------------------- */

typedef void (*fake_fn)(void);
#define FAKE_ENTRY(name) {#name, (fake_fn)fake_##name}

static const struct {
  const char *name;
  fake_fn fn;
} k_entries[] = {
    FAKE_ENTRY(cuInit), {"cuDriverGetVersion", (fake_fn)cuDriverGetVersion},
    FAKE_ENTRY(cuGetErrorName), FAKE_ENTRY(cuGetErrorString), FAKE_ENTRY(cuDeviceGet),
    FAKE_ENTRY(cuDeviceGetCount), FAKE_ENTRY(cuDeviceGetName), FAKE_ENTRY(cuDeviceGetAttribute),
    FAKE_ENTRY(cuDeviceTotalMem), FAKE_ENTRY(cuDeviceGetPCIBusId),
    FAKE_ENTRY(cuDevicePrimaryCtxRetain), FAKE_ENTRY(cuDevicePrimaryCtxRelease),
    FAKE_ENTRY(cuCtxSetCurrent), FAKE_ENTRY(cuCtxGetCurrent), FAKE_ENTRY(cuMemGetInfo),
    FAKE_ENTRY(cuStreamCreate), FAKE_ENTRY(cuStreamDestroy), FAKE_ENTRY(cuStreamSynchronize),
    FAKE_ENTRY(cuStreamQuery), FAKE_ENTRY(cuStreamWaitEvent), FAKE_ENTRY(cuEventCreate),
    FAKE_ENTRY(cuEventRecord), FAKE_ENTRY(cuEventQuery), FAKE_ENTRY(cuEventSynchronize),
    FAKE_ENTRY(cuEventDestroy), FAKE_ENTRY(cuEventElapsedTime), FAKE_ENTRY(cuMemAlloc),
    FAKE_ENTRY(cuMemFree), FAKE_ENTRY(cuMemAllocAsync), FAKE_ENTRY(cuMemFreeAsync),
    FAKE_ENTRY(cuMemHostAlloc), FAKE_ENTRY(cuMemFreeHost), FAKE_ENTRY(cuMemcpyHtoDAsync),
    FAKE_ENTRY(cuMemcpyDtoHAsync), FAKE_ENTRY(cuMemcpyDtoDAsync), FAKE_ENTRY(cuMemcpy2DAsync),
    FAKE_ENTRY(cuMemsetD8Async), FAKE_ENTRY(cuModuleLoadDataEx), FAKE_ENTRY(cuModuleUnload),
    FAKE_ENTRY(cuModuleGetFunction), FAKE_ENTRY(cuFuncGetAttribute),
    FAKE_ENTRY(cuFuncSetAttribute), FAKE_ENTRY(cuLaunchKernel),
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
  if (version > knob("CUBERT_FAKE_CUDA_DRIVER_VERSION", 13000)) return CUDA_ERROR_INVALID_VALUE;
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
  pthread_mutex_lock(&g_mutex);
  *out = g_stats;
  pthread_mutex_unlock(&g_mutex);
}

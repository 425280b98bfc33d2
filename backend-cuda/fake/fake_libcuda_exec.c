/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/fake/fake_libcuda_exec.c: the fake CUDA driver's memory, copies,
 * modules and launches (fake_libcuda.h says what they do).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_libcuda_internal.h"

/* Each device block has a header before its (512-aligned) address; the
 * blocks of a device are listed, so releasing its primary context frees
 * what is left, as a real context reset does. */
#define FAKE_HEADER 512u

typedef struct fake_block_t {
  size_t size;
  int device;
  struct fake_block_t *prev, *next;
  struct fake_block_t *deferred_next; /* on its stream's deferred list */
  int deferred;
  int pooled; /* from cuMemAllocAsync (a stream-ordered pool) */
} fake_block_t;

static fake_block_t *g_blocks;

static void block_unlink(fake_block_t *b) {
  if (b->prev) b->prev->next = b->next;
  else g_blocks = b->next;
  if (b->next) b->next->prev = b->prev;
  fake_device_used[b->device] -= b->size;
  fake_stats_.device_allocs_live--;
  fake_stats_.device_bytes_live -= (int64_t)b->size;
}

void fake_stream_free_deferred(struct CUstream_st *s) {
  fake_block_t *b = (fake_block_t *)s->deferred;
  s->deferred = NULL;
  while (b) {
    fake_block_t *next = b->deferred_next;
    block_unlink(b);
    free(b);
    b = next;
  }
}

int fake_pooled_address(CUdeviceptr addr) {
  const fake_block_t *b;
  for (b = g_blocks; b; b = b->next) {
    CUdeviceptr start = (CUdeviceptr)(uintptr_t)((const unsigned char *)b + FAKE_HEADER);
    if (addr >= start && addr < start + b->size) return b->pooled;
  }
  return 0;
}

void fake_blocks_free_device(int device) {
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
  uint64_t cap = fake_device_memory();
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!out || size == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_mutex);
  if (fake_device_used[fake_current->device] + size > cap) {
    pthread_mutex_unlock(&fake_mutex);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&fake_mutex);
  if (posix_memalign((void **)&b, FAKE_HEADER, FAKE_HEADER + size) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  b->size = size;
  b->device = fake_current->device;
  b->deferred = 0;
  b->deferred_next = NULL;
  b->pooled = async;
  pthread_mutex_lock(&fake_mutex);
  b->prev = NULL;
  b->next = g_blocks;
  if (g_blocks) g_blocks->prev = b;
  g_blocks = b;
  fake_device_used[b->device] += size;
  fake_stats_.device_allocs_live++;
  fake_stats_.device_bytes_live += (int64_t)size;
  if (async) fake_stats_.mem_alloc_async++;
  else fake_stats_.mem_alloc_sync++;
  pthread_mutex_unlock(&fake_mutex);
  *out = (CUdeviceptr)(uintptr_t)((unsigned char *)b + FAKE_HEADER);
  return CUDA_SUCCESS;
}

static CUresult device_free(CUdeviceptr p, int async) {
  fake_block_t *b;
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  b = (fake_block_t *)(uintptr_t)(p - FAKE_HEADER);
  pthread_mutex_lock(&fake_mutex);
  block_unlink(b);
  if (async) fake_stats_.mem_free_async++;
  else fake_stats_.mem_free_sync++;
  pthread_mutex_unlock(&fake_mutex);
  free(b);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemAlloc(CUdeviceptr *out, size_t size) {
  return device_alloc(out, size, 0);
}

/* The context-synchronizing calls (cuMemFree, cuModuleLoadDataEx) drain
 * the current context first (fake_context_drain), unless
 * CUBERT_FAKE_CUDA_NO_DRAIN=1. */
static CUresult drain_current(void) {
  CUresult r = fake_ctx_check();
  fake_async_run_all(); /* (the asynchronous mode: every queue runs first) */
  if (r != CUDA_SUCCESS || fake_knob("CUBERT_FAKE_CUDA_NO_DRAIN", 0)) return r;
  return fake_context_drain(fake_current->device);
}

CUresult fake_cuMemFree(CUdeviceptr p) {
  CUresult r = drain_current();
  return r != CUDA_SUCCESS ? r : device_free(p, 0);
}

CUresult fake_cuMemAllocAsync(CUdeviceptr *out, size_t size, CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_ready(s);
  if (r != CUDA_SUCCESS) return r;
  if (fake_knob("CUBERT_FAKE_CUDA_NO_POOLS", 0)) return CUDA_ERROR_NOT_SUPPORTED;
  return device_alloc(out, size, 1);
}

/* CUBERT_FAKE_CUDA_DEFER_FREES=1: a free on a stream gives the memory back
 * only at that stream's next synchronize (as a pool whose frees have not
 * completed yet). */
CUresult fake_cuMemFreeAsync(CUdeviceptr p, CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  fake_block_t *b;
  CUresult r = fake_stream_ready(s);
  if (r != CUDA_SUCCESS) return r;
  fake_async_run(s, UINT64_MAX); /* the stream's earlier work before the free */
  if (!s || !p || !fake_knob("CUBERT_FAKE_CUDA_DEFER_FREES", 0)) return device_free(p, 1);
  b = (fake_block_t *)(uintptr_t)(p - FAKE_HEADER);
  pthread_mutex_lock(&fake_mutex);
  if (b->deferred) {
    pthread_mutex_unlock(&fake_mutex);
    return CUDA_ERROR_INVALID_VALUE; /* freed twice */
  }
  b->deferred = 1;
  b->deferred_next = (fake_block_t *)s->deferred;
  s->deferred = b;
  fake_stats_.mem_free_async++;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemHostAlloc(void **out, size_t size, unsigned int flags) {
  unsigned char *block;
  uint64_t cap = (uint64_t)fake_knob("CUBERT_FAKE_CUDA_HOST_MEMORY", 1ll << 30);
  CUresult r = fake_ctx_check();
  (void)flags;
  if (r != CUDA_SUCCESS) return r;
  if (!out || size == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_mutex);
  if ((uint64_t)fake_stats_.host_bytes_live + size > cap) {
    pthread_mutex_unlock(&fake_mutex);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pthread_mutex_unlock(&fake_mutex);
  if (posix_memalign((void **)&block, 64, 64 + size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(block, &size, sizeof size);
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.host_allocs++;
  fake_stats_.host_bytes_live += (int64_t)size;
  pthread_mutex_unlock(&fake_mutex);
  fake_pinned_add(block + 64, size);
  *out = block + 64;
  return CUDA_SUCCESS;
}

CUresult fake_cuMemFreeHost(void *p) {
  unsigned char *block;
  size_t size;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  fake_async_run_all(); /* cuMemFreeHost synchronizes the device */
  fake_pinned_remove(p);
  block = (unsigned char *)p - 64;
  memcpy(&size, block, sizeof size);
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.host_frees++;
  fake_stats_.host_bytes_live -= (int64_t)size;
  pthread_mutex_unlock(&fake_mutex);
  free(block);
  return CUDA_SUCCESS;
}

/* Registration only counts (the memory is host memory already). */
CUresult fake_cuMemHostRegister(void *p, size_t size, unsigned int flags) {
  CUresult r = fake_ctx_check();
  (void)flags;
  if (r != CUDA_SUCCESS) return r;
  if (!p || size == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.host_registers++;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemHostUnregister(void *p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  fake_async_run_all();
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.host_unregisters++;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

/* CUBERT_FAKE_CUDA_COPY_RESULT: what copies return (0: they copy). */
static CUresult copy_result(void) {
  return (CUresult)fake_knob("CUBERT_FAKE_CUDA_COPY_RESULT", 0);
}

static void count(uint64_t *counter) {
  pthread_mutex_lock(&fake_mutex);
  (*counter)++;
  pthread_mutex_unlock(&fake_mutex);
}

CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_ready(s);
  if (r == CUDA_SUCCESS) r = copy_result();
  if (r != CUDA_SUCCESS) return r;
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_async_copy(s, (void *)(uintptr_t)dst, src, n, 1, 0)) {
    fake_async_run(s, UINT64_MAX);
    memcpy((void *)(uintptr_t)dst, src, n);
  }
  count(&fake_stats_.copies_h2d);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_ready(s);
  if (r == CUDA_SUCCESS) r = copy_result();
  if (r != CUDA_SUCCESS) return r;
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_async_copy(s, dst, (const void *)(uintptr_t)src, n, 0, 1)) {
    fake_async_run(s, UINT64_MAX);
    memcpy(dst, (const void *)(uintptr_t)src, n);
  }
  count(&fake_stats_.copies_d2h);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_ready(s);
  if (r != CUDA_SUCCESS) return r;
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_async_copy(s, (void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n, 0, 0)) {
    fake_async_run(s, UINT64_MAX);
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  }
  count(&fake_stats_.copies_d2d);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemcpy2DAsync(const CUDA_MEMCPY2D *c, CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  const unsigned char *src;
  unsigned char *dst;
  size_t row;
  CUresult r = fake_stream_ready(s);
  if (r != CUDA_SUCCESS) return r;
  if (!c || c->srcPitch < c->WidthInBytes || c->dstPitch < c->WidthInBytes)
    return CUDA_ERROR_INVALID_VALUE;
  src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? (const unsigned char *)c->srcHost
                                               : (const unsigned char *)(uintptr_t)c->srcDevice;
  dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? (unsigned char *)c->dstHost
                                               : (unsigned char *)(uintptr_t)c->dstDevice;
  if (!src || !dst) return CUDA_ERROR_INVALID_VALUE;
  fake_async_run(s, UINT64_MAX); /* 2-D copies run at once, after the stream's work */
  src += c->srcY * c->srcPitch + c->srcXInBytes;
  dst += c->dstY * c->dstPitch + c->dstXInBytes;
  for (row = 0; row < c->Height; row++)
    memcpy(dst + row * c->dstPitch, src + row * c->srcPitch, c->WidthInBytes);
  count(&fake_stats_.copies_2d);
  return CUDA_SUCCESS;
}

CUresult fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s_arg) {
  CUstream s = fake_stream_special(s_arg);
  CUresult r = fake_stream_ready(s);
  if (r != CUDA_SUCCESS) return r;
  if (!dst) return CUDA_ERROR_INVALID_VALUE;
  if (!fake_async_set(s, (void *)(uintptr_t)dst, v, n)) {
    fake_async_run(s, UINT64_MAX);
    memset((void *)(uintptr_t)dst, v, n);
  }
  count(&fake_stats_.memsets);
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

CUresult fake_cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned int n,
                                        CUjit_option *opts, void **vals) {
  const unsigned char *bytes = (const unsigned char *)image;
  const char *text;
  int cubin, elf;
  size_t size;
  struct CUmod_st *m;
  CUresult r = drain_current();
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
  m->ctx = fake_current;
  count(&fake_stats_.module_loads);
  *out = m;
  return CUDA_SUCCESS;
}

CUresult fake_cuModuleUnload(CUmodule m) {
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  fake_async_run_all();
  while (m->funcs) {
    struct CUfunc_st *f = m->funcs;
    m->funcs = f->next;
    free(f);
  }
  free(m->bytes);
  free(m);
  count(&fake_stats_.module_unloads);
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

CUresult fake_cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name) {
  char needle[96];
  size_t len;
  struct CUfunc_st *f;
  CUresult r = fake_ctx_check();
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

/* A module-scope variable by name: found as a function is (the ELF string
 * table, or in PTX its declaration "NAME =" / "NAME;"). The fake knows no
 * variable's type: it reports a 4-byte word holding 1, which is what
 * cubert's markers are (include/cubert/kernel.h, NAME_cubert_grid_wait_). */
CUresult fake_cuModuleGetGlobal(CUdeviceptr *out, size_t *bytes, CUmodule m, const char *name) {
  char needle[96];
  size_t len;
  int found;
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!m || !name || strlen(name) >= 80) return CUDA_ERROR_INVALID_VALUE;
  if (m->elf) {
    len = strlen(name) + 2;
    needle[0] = '\0';
    memcpy(needle + 1, name, len - 1);
    found = module_has(m, needle, len);
  } else {
    snprintf(needle, sizeof needle, " %s =", name);
    found = module_has(m, needle, strlen(needle));
    snprintf(needle, sizeof needle, " %s;", name);
    found = found || module_has(m, needle, strlen(needle));
  }
  if (!found) return CUDA_ERROR_NOT_FOUND;
  m->global_word = 1u;
  if (out) *out = (CUdeviceptr)(uintptr_t)&m->global_word;
  if (bytes) *bytes = sizeof m->global_word;
  return CUDA_SUCCESS;
}

CUresult fake_cuFuncGetAttribute(int *out, CUfunction_attribute a, CUfunction f) {
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!out || !f) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *out = (int)fake_knob("CUBERT_FAKE_CUDA_FUNC_MAX_THREADS", 1024);
      break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *out = 0; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *out = 16; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult fake_cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int value) {
  CUresult r = fake_ctx_check();
  if (r != CUDA_SUCCESS) return r;
  if (!f || a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || value < 0 || value > 232448)
    return CUDA_ERROR_INVALID_VALUE;
  f->dynamic_shared = value;
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.last_dynamic_shared_attribute = value;
  pthread_mutex_unlock(&fake_mutex);
  return CUDA_SUCCESS;
}

/* ck_add_scalar_u32 on the host: buffer 0 (u32) += scalar 0, one element
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

static fake_cuda_kernel_host_fn g_kernel_host;

/* What a launch of a kernel with no CPU body does: CUBERT_FAKE_CUDA_UNKNOWN_KERNELS
 * "fail" (CUDA_ERROR_NOT_SUPPORTED) or "skip" (a no-op); the default is the
 * build's: fail in the installed libcubert-fakecuda.so (FAKE_CUDA_INSTALLED),
 * skip in the test suite's build (its stand-in kernels do nothing). */
static int unknown_kernels_fail(void) {
  const char *v = getenv("CUBERT_FAKE_CUDA_UNKNOWN_KERNELS");
  if (v && strcmp(v, "fail") == 0) return 1;
  if (v && strcmp(v, "skip") == 0) return 0;
#if defined(FAKE_CUDA_INSTALLED)
  return 1;
#else
  return 0;
#endif
}

void cubert_fake_cuda_set_kernel_host(fake_cuda_kernel_host_fn fn) {
  pthread_mutex_lock(&fake_mutex);
  g_kernel_host = fn;
  pthread_mutex_unlock(&fake_mutex);
}

CUresult fake_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                    CUstream s_arg, void **params, void **extra) {
  CUstream s = fake_stream_special(s_arg);
  CUresult want = (CUresult)fake_knob("CUBERT_FAKE_CUDA_LAUNCH_RESULT", 0);
  CUresult r = fake_stream_ready(s);
  fake_cuda_kernel_host_fn host;
  unsigned grid[3], block[3];
  (void)extra;
  if (r != CUDA_SUCCESS) return r;
  if (!f || !params || gx == 0 || gy == 0 || gz == 0 || bx * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  if (shared > 49152 && (int)shared > f->dynamic_shared) return CUDA_ERROR_INVALID_VALUE;
  if (want != CUDA_SUCCESS) {
    if (fake_is_fatal(want)) fake_poison(want);
    return want;
  }
  pthread_mutex_lock(&fake_mutex);
  fake_stats_.launches++;
  fake_stats_.grid[0] = gx;
  fake_stats_.grid[1] = gy;
  fake_stats_.grid[2] = gz;
  fake_stats_.block[0] = bx;
  fake_stats_.block[1] = by;
  fake_stats_.block[2] = bz;
  fake_stats_.shared_bytes = shared;
  memcpy(fake_stats_.args, params[0], FAKE_CUDA_ARGS_BYTES);
  memcpy(&fake_stats_.mode, params[1], sizeof fake_stats_.mode);
  memcpy(&fake_stats_.report, params[2], sizeof fake_stats_.report);
  snprintf(fake_stats_.kernel, sizeof fake_stats_.kernel, "%s", f->name);
  host = g_kernel_host;
  pthread_mutex_unlock(&fake_mutex);
  grid[0] = gx;
  grid[1] = gy;
  grid[2] = gz;
  block[0] = bx;
  block[1] = by;
  block[2] = bz;
  /* the asynchronous mode queues a kernel the runner captured */
  if (strcmp(f->name, "fake_fault") != 0 &&
      fake_async_launch(s, f->name, grid, block, shared, params))
    return CUDA_SUCCESS;
  fake_async_run(s, UINT64_MAX);
  if (host && strcmp(f->name, "fake_fault") != 0) {
    r = (CUresult)host(f->name, grid, block, shared, params);
    if (r != CUDA_ERROR_NOT_FOUND) {
      if (fake_is_fatal(r)) fake_poison(r);
      return r;
    }
  }
  if (strcmp(f->name, "ck_add_scalar_u32") == 0)
    run_add_scalar((const unsigned char *)params[0], (uint64_t)gx * gy * gz * bx * by * bz);
  else if (strcmp(f->name, "fake_fault") == 0)
    fake_poison(CUDA_ERROR_ILLEGAL_ADDRESS);
  else if (unknown_kernels_fail()) {
    /* a kernel with no CPU body (not launched through cubert, or a
     * descriptor without cpu_entry): the fake cannot run it */
    static int said;
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
      fprintf(stderr,
              "libcubert-fakecuda: kernel %s has no CPU body to run: cuLaunchKernel returns "
              "CUDA_ERROR_NOT_SUPPORTED (CUBERT_FAKE_CUDA_UNKNOWN_KERNELS=skip: launch it as a "
              "no-op)\n",
              f->name);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}


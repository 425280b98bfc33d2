/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_module.c: kernel descriptor -> CUfunction.
 *
 * Two caches per device: modules by image (the registered image, or the
 * descriptor's own bytes), loaded once with cuModuleLoadDataEx and the JIT
 * logs kept; functions by descriptor pointer (open addressing, so a warm
 * lookup is a hash probe with no allocation and no driver call).
 */
#include "device/cuda_device.h"
#include "cubert/driver/error.h"

#include <stdio.h>
#include <string.h>

/* Above this many dynamic shared bytes a function must opt in. */
#define MODULE_SHARED_DEFAULT_LIMIT (48u * 1024u)

/* What to load for a kernel. */
typedef struct module_source_t {
  const void *key;
  const char *name;
  const void *ptx;
  size_t ptx_size;
  const void *binary;  /* cubin or fatbin */
  size_t binary_size;
  uint32_t binary_arch; /* 0: unknown (a descriptor's own binary: load it as is) */
} module_source_t;

static uint32_t function_hash(const cubert_kernel_t *k) {
  uint64_t v = (uint64_t)(uintptr_t)k;
  v ^= v >> 29;
  v *= 0x9E3779B97F4A7C15ull;
  return (uint32_t)(v >> 32);
}

static cubert_cuda_function_t *function_find(cubert_cuda_module_cache_t *c,
                                             const cubert_kernel_t *k) {
  uint32_t mask, i;
  if (c->function_capacity == 0) return NULL;
  mask = c->function_capacity - 1;
  for (i = function_hash(k) & mask;; i = (i + 1) & mask) {
    if (c->functions[i] == NULL) return NULL;
    if (c->functions[i]->kernel == k) return c->functions[i];
  }
}

/* Room for one more function (load factor <= 1/2). */
static cubert_status_t function_reserve(cubert_cuda_device_t *d, cubert_error_t *out_error) {
  cubert_cuda_module_cache_t *c = &d->modules;
  cubert_cuda_function_t **old = c->functions, **table = NULL;
  uint32_t old_cap = c->function_capacity, cap, i;
  if ((c->function_count + 1) * 2 <= old_cap) return CUBERT_STATUS_OK;
  cap = old_cap ? old_cap * 2 : 64;
  if (cubert_allocator_malloc_array(d->allocator, cap, sizeof *table, 0, (void **)&table, NULL) !=
      CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cannot grow the CUDA function cache");
  for (i = 0; i < old_cap; i++) {
    uint32_t j;
    if (!old[i]) continue;
    for (j = function_hash(old[i]->kernel) & (cap - 1); table[j]; j = (j + 1) & (cap - 1)) {
    }
    table[j] = old[i];
  }
  cubert_allocator_free(d->allocator, old, (size_t)old_cap * sizeof *old, 0);
  c->functions = table;
  c->function_capacity = cap;
  return CUBERT_STATUS_OK;
}

static cubert_status_t compile_error(cubert_error_t *out_error, const char *fmt_a,
                                     const char *arg) {
  char reason[CUBERT_ERROR_REASON_SIZE];
  cubert__cuda_format(reason, sizeof reason, fmt_a, arg);
  cubert_error_set_driver(out_error, CUBERT_ERROR_COMPILATION_GENERIC, 0, reason);
  cubert_error_wrap(out_error, CUBERT_ERROR_LAUNCH_COMPILATION);
  return cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
}

/* Where a kernel's code comes from (cubert/cuda.h). */
static cubert_status_t module_source(const cubert_kernel_t *k, module_source_t *out,
                                     cubert_error_t *out_error) {
  memset(out, 0, sizeof *out);
  if (k->cuda_image) {
    const unsigned char *b = (const unsigned char *)k->cuda_image;
    size_t n = k->cuda_image_size;
    out->key = k->cuda_image;
    out->name = k->name ? k->name : k->cuda_entry_name;
    if (n >= 4 && ((b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') ||
                   (b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba))) {
      out->binary = b; /* cubin (ELF) or fatbin */
      out->binary_size = n;
      return CUBERT_STATUS_OK;
    }
    if (n == 0 || memchr(b, '\0', n) == NULL)
      return compile_error(out_error,
                           "kernel %s: its cuda_image is neither a cubin/fatbin nor "
                           "NUL-terminated PTX",
                           out->name ? out->name : "?");
    out->ptx = b;
    out->ptx_size = n;
    return CUBERT_STATUS_OK;
  } else {
    const cubert_cuda_image_t *img = cubert_cuda_image_find(k->cuda_entry_name);
    if (!img)
      return compile_error(out_error,
                           "no CUDA image holds kernel %s (build its source with nvcc: "
                           "docs/kernels.md)",
                           k->cuda_entry_name);
    out->key = img;
    out->name = img->name ? img->name : "image";
    out->ptx = img->ptx;
    out->ptx_size = img->ptx ? img->ptx_size : 0;
    out->binary = img->cubin;
    out->binary_size = img->cubin ? img->cubin_size : 0;
    out->binary_arch = img->cubin_arch;
    return CUBERT_STATUS_OK;
  }
}

/* cuModuleLoadDataEx with both JIT logs kept in the cache. */
static CUresult module_load_data(cubert_cuda_device_t *d, const void *data, CUmodule *out) {
  cubert_cuda_module_cache_t *c = &d->modules;
  CUjit_option opts[5];
  void *vals[5];
  CUresult r;
  opts[0] = CU_JIT_INFO_LOG_BUFFER;
  vals[0] = c->info_log;
  opts[1] = CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES;
  vals[1] = (void *)(uintptr_t)sizeof c->info_log;
  opts[2] = CU_JIT_ERROR_LOG_BUFFER;
  vals[2] = c->error_log;
  opts[3] = CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
  vals[3] = (void *)(uintptr_t)sizeof c->error_log;
  opts[4] = CU_JIT_LOG_VERBOSE;
  vals[4] = (void *)(uintptr_t)0;
  c->info_log[0] = '\0';
  c->error_log[0] = '\0';
  r = d->cu->cuModuleLoadDataEx(out, data, 5, opts, vals);
  c->info_log[sizeof c->info_log - 1] = '\0';
  c->error_log[sizeof c->error_log - 1] = '\0';
  return r;
}

/* A load failure: the mapped record, its reason carrying the JIT error log. */
static cubert_status_t module_load_failed(cubert_cuda_device_t *d, CUresult r, const char *what,
                                          cubert_error_t *out_error) {
  cubert_error_t e;
  cubert_status_t st = cubert__cuda_device_fail(d, r, CUBERT_CUDA_OP_MODULE, what, 0, &e);
  if (st != CUBERT_STATUS_UNAVAILABLE && d->modules.error_log[0]) {
    char log[CUBERT_ERROR_REASON_SIZE];
    size_t i;
    cubert__cuda_format(log, sizeof log, "%s", d->modules.error_log);
    for (i = 0; log[i]; i++)
      if (log[i] == '\n' || log[i] == '\r') log[i] = ' ';
    cubert__cuda_format(e.reason, sizeof e.reason, "%s failed: %s: %s", what,
                   cubert__cuda_result_name(r), log);
  }
  if (out_error) *out_error = e;
  return st;
}

/* The module of `src`, loaded once per device. */
static cubert_status_t module_get(cubert_cuda_device_t *d, const module_source_t *src,
                                  CUmodule *out_module, cubert_error_t *out_error) {
  cubert_cuda_module_cache_t *c = &d->modules;
  uint32_t arch = d->info.compute_major * 10u + d->info.compute_minor;
  char what[128];
  CUmodule m = NULL;
  CUresult r = CUDA_ERROR_NO_BINARY_FOR_GPU;
  uint32_t i;
  for (i = 0; i < c->module_count; i++)
    if (c->modules[i].key == src->key) {
      *out_module = c->modules[i].module;
      return CUBERT_STATUS_OK;
    }
  if (c->module_count == c->module_capacity) {
    uint32_t cap = c->module_capacity ? c->module_capacity * 2 : 8;
    cubert_cuda_module_slot_t *grown = NULL;
    if (cubert_allocator_realloc(d->allocator, c->modules,
                                 (size_t)c->module_capacity * sizeof *grown,
                                 (size_t)cap * sizeof *grown, 0, (void **)&grown, NULL) !=
        CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                              "cannot grow the CUDA module cache");
    c->modules = grown;
    c->module_capacity = cap;
  }
  if (src->binary && (src->binary_arch == 0 || src->binary_arch == arch)) {
    r = module_load_data(d, src->binary, &m);
    cubert__cuda_format(what, sizeof what, "cuModuleLoadDataEx(%s, cubin)", src->name);
    if (r != CUDA_SUCCESS && (cubert__cuda_result_is_fatal(r) || !src->ptx))
      return module_load_failed(d, r, what, out_error);
  }
  if (r != CUDA_SUCCESS) {
    if (!src->ptx) {
      char reason[CUBERT_ERROR_REASON_SIZE];
      cubert__cuda_format(reason, sizeof reason,
                     "image %s has no PTX and its cubin is for sm_%u, the device is sm_%u",
                     src->name, (unsigned)src->binary_arch, (unsigned)arch);
      cubert_error_set_driver(out_error, CUBERT_ERROR_COMPILATION_GENERIC,
                              (int64_t)CUDA_ERROR_NO_BINARY_FOR_GPU, reason);
      cubert_error_wrap(out_error, CUBERT_ERROR_LAUNCH_COMPILATION);
      return cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
    }
    cubert__cuda_format(what, sizeof what, "cuModuleLoadDataEx(%s, PTX)", src->name);
    r = module_load_data(d, src->ptx, &m);
    if (r != CUDA_SUCCESS) return module_load_failed(d, r, what, out_error);
  }
  c->modules[c->module_count].key = src->key;
  c->modules[c->module_count].module = m;
  c->module_count++;
  c->loads++;
  *out_module = m;
  return CUBERT_STATUS_OK;
}

/* cuModuleGetFunction + attributes + the dynamic shared memory opt-in. */
static cubert_status_t function_make(cubert_cuda_device_t *d, const cubert_kernel_t *k,
                                     CUmodule m, const char *image_name,
                                     cubert_cuda_function_t *out, cubert_error_t *out_error) {
  const cubert_cuda_loader_t *cu = d->cu;
  int threads = 0, shared = 0, regs = 0;
  char what[128];
  CUresult r = cu->cuModuleGetFunction(&out->handle, m, k->cuda_entry_name);
  if (r == CUDA_ERROR_NOT_FOUND) {
    char reason[CUBERT_ERROR_REASON_SIZE];
    cubert__cuda_format(reason, sizeof reason, "kernel %s is not in image %s", k->cuda_entry_name,
                   image_name);
    cubert_error_set_driver(out_error, CUBERT_ERROR_COMPILATION_GENERIC, (int64_t)r, reason);
    cubert_error_wrap(out_error, CUBERT_ERROR_LAUNCH_COMPILATION);
    return cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
  }
  cubert__cuda_format(what, sizeof what, "cuModuleGetFunction(%s)", k->cuda_entry_name);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(d, r, CUBERT_CUDA_OP_MODULE, what, 0, out_error);
  r = cu->cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, out->handle);
  if (r == CUDA_SUCCESS)
    r = cu->cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, out->handle);
  if (r == CUDA_SUCCESS) r = cu->cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, out->handle);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(d, r, CUBERT_CUDA_OP_LAUNCH, "cuFuncGetAttribute", 0, out_error);
  out->kernel = k;
  out->entry_name = k->cuda_entry_name;
  out->image = k->cuda_image;
  out->shared_memory_bytes = k->shared_memory_bytes;
  out->dynamic_limit = 0;
  out->retired_next = NULL;
  out->max_threads = threads > 0 ? (uint32_t)threads : 0u;
  out->static_shared = shared > 0 ? (uint32_t)shared : 0u;
  out->registers = regs > 0 ? (uint32_t)regs : 0u;
  out->grid_wait = 0u;
  if (cu->cuModuleGetGlobal) { /* the entry's marker (include/cubert/kernel.h) */
    char mark[128];
    CUdeviceptr at = 0;
    size_t bytes = 0;
    int n = snprintf(mark, sizeof mark, "%s_cubert_grid_wait_", k->cuda_entry_name);
    if (n > 0 && (size_t)n < sizeof mark && cu->cuModuleGetGlobal(&at, &bytes, m, mark) == CUDA_SUCCESS &&
        bytes == sizeof(unsigned int))
      out->grid_wait = 1u;
  }
  if (k->shared_memory_bytes > MODULE_SHARED_DEFAULT_LIMIT) {
    uint64_t max = d->info.properties.hardware.max_shared_memory_size;
    if ((uint64_t)k->shared_memory_bytes + out->static_shared > max) {
      uint64_t f[2];
      f[0] = (uint64_t)k->shared_memory_bytes + out->static_shared;
      f[1] = max;
      cubert_error_set(out_error, CUBERT_ERROR_RESOURCE_SHARED_MEMORY, f, 2,
                       "shared memory above the device's");
      cubert_error_wrap(out_error, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES);
      return cubert_error_wrap(out_error, CUBERT_ERROR_SERVER_LAUNCH);
    }
    r = cu->cuFuncSetAttribute(out->handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                               (int)k->shared_memory_bytes);
    if (r != CUDA_SUCCESS)
      return cubert__cuda_device_fail(d, r, CUBERT_CUDA_OP_LAUNCH, "cuFuncSetAttribute", 0,
                                      out_error);
  }
  return CUBERT_STATUS_OK;
}

/* A new record for `kernel` (its module loaded), in the table's slot of
 * `replaced` (retired: not changed or freed, a stream's memo may hold it,
 * cubert_cuda_function_memo_t) or, with NULL, in a free slot (room reserved). */
static cubert_status_t function_add(cubert_cuda_device_t *device, const cubert_kernel_t *kernel,
                                    const module_source_t *src, cubert_cuda_function_t *replaced,
                                    const cubert_cuda_function_t **out_function,
                                    cubert_error_t *out_error) {
  cubert_cuda_module_cache_t *c = &device->modules;
  cubert_cuda_function_t *made = NULL;
  CUmodule m = NULL;
  cubert_status_t st = module_get(device, src, &m, out_error);
  uint32_t mask, i;
  if (st != CUBERT_STATUS_OK) return st;
  if (cubert_allocator_malloc(device->allocator, sizeof *made, 0, (void **)&made, NULL) !=
      CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "cannot allocate a CUDA function record");
  st = function_make(device, kernel, m, src->name, made, out_error);
  if (st != CUBERT_STATUS_OK) {
    cubert_allocator_free(device->allocator, made, sizeof *made, 0);
    return st;
  }
  mask = c->function_capacity - 1;
  for (i = function_hash(kernel) & mask; c->functions[i] != replaced; i = (i + 1) & mask) {
  }
  c->functions[i] = made;
  if (replaced) {
    replaced->retired_next = c->retired;
    c->retired = replaced;
  } else {
    c->function_count++;
  }
  *out_function = made;
  return CUBERT_STATUS_OK;
}

static cubert_status_t function_get(cubert_cuda_device_t *device, const cubert_kernel_t *kernel,
                                    const cubert_cuda_function_t **out_function,
                                    cubert_error_t *out_error) {
  cubert_cuda_function_t *hit;
  module_source_t src;
  cubert_status_t st;
  if (cubert__cuda_device_is_lost(device)) return cubert__cuda_device_lost_error(device, out_error);
  hit = function_find(&device->modules, kernel);
  if (hit && hit->entry_name == kernel->cuda_entry_name && hit->image == kernel->cuda_image &&
      hit->shared_memory_bytes == kernel->shared_memory_bytes) {
    *out_function = hit;
    return CUBERT_STATUS_OK;
  }
  st = cubert__cuda_device_enter(device, out_error);
  if (st == CUBERT_STATUS_OK) st = module_source(kernel, &src, out_error);
  /* the same descriptor address, another kernel: a new record takes its place */
  if (st == CUBERT_STATUS_OK && !hit) st = function_reserve(device, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  return function_add(device, kernel, &src, hit, out_function, out_error);
}

cubert_status_t cubert__cuda_function_get(cubert_cuda_device_t *device,
                                          const cubert_kernel_t *kernel,
                                          const cubert_cuda_function_t **out_function,
                                          cubert_error_t *out_error) {
  cubert_status_t st;
  if (!device || !kernel || !out_function || !kernel->cuda_entry_name)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_function_get: NULL kernel or entry name");
  (void)pthread_mutex_lock(&device->modules.mutex);
  st = function_get(device, kernel, out_function, out_error);
  (void)pthread_mutex_unlock(&device->modules.mutex);
  return st;
}

cubert_status_t cubert__cuda_function_get_memo(cubert_cuda_device_t *device,
                                               cubert_cuda_function_memo_t *memo,
                                               const cubert_kernel_t *kernel,
                                               const cubert_cuda_function_t **out_function,
                                               cubert_error_t *out_error) {
  uint32_t at;
  cubert_status_t st;
  if (!memo || !kernel) return cubert__cuda_function_get(device, kernel, out_function, out_error);
  at = function_hash(kernel) & (CUBERT_CUDA_FUNCTION_MEMO - 1u);
  if (memo->entries[at].kernel == kernel && memo->entries[at].entry_name == kernel->cuda_entry_name &&
      memo->entries[at].image == kernel->cuda_image &&
      memo->entries[at].shared_memory_bytes == kernel->shared_memory_bytes && device && out_function) {
    if (cubert__cuda_device_is_lost(device)) return cubert__cuda_device_lost_error(device, out_error);
    *out_function = memo->entries[at].function;
    return CUBERT_STATUS_OK;
  }
  st = cubert__cuda_function_get(device, kernel, out_function, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  memo->entries[at].kernel = kernel;
  memo->entries[at].entry_name = kernel->cuda_entry_name;
  memo->entries[at].image = kernel->cuda_image;
  memo->entries[at].shared_memory_bytes = kernel->shared_memory_bytes;
  memo->entries[at].function = *out_function;
  return CUBERT_STATUS_OK;
}

const char *cubert__cuda_module_error_log(const cubert_cuda_device_t *device) {
  return device->modules.error_log;
}

const char *cubert__cuda_module_info_log(const cubert_cuda_device_t *device) {
  return device->modules.info_log;
}

void cubert__cuda_module_cache_deinitialize(cubert_cuda_device_t *device) {
  cubert_cuda_module_cache_t *c = &device->modules;
  uint32_t i;
  for (i = 0; i < c->module_count; i++) (void)device->cu->cuModuleUnload(c->modules[i].module);
  for (i = 0; i < c->function_capacity; i++)
    cubert_allocator_free(device->allocator, c->functions[i], sizeof *c->functions[i], 0);
  while (c->retired) {
    cubert_cuda_function_t *next = c->retired->retired_next;
    cubert_allocator_free(device->allocator, c->retired, sizeof *c->retired, 0);
    c->retired = next;
  }
  cubert_allocator_free(device->allocator, c->modules,
                        (size_t)c->module_capacity * sizeof *c->modules, 0);
  cubert_allocator_free(device->allocator, c->functions,
                        (size_t)c->function_capacity * sizeof *c->functions, 0);
  c->modules = NULL;
  c->functions = NULL;
  c->module_capacity = c->module_count = 0;
  c->function_capacity = c->function_count = 0;
}

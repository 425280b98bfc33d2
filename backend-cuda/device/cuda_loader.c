/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_loader.c: dlopen libcuda.so.1, check its version,
 * resolve the entry points with cuGetProcAddress, cuInit, count devices.
 * See cuda_loader.h for the failure messages.
 */
#include "device/cuda_loader.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/cuda_error.h"
#include "cubert/driver/error.h"

cubert_status_t cubert__cuda_unavailable(cubert_error_t *out_error, int64_t code, const char *fmt,
                                         ...) {
  char reason[CUBERT_ERROR_REASON_SIZE];
  size_t n;
  va_list ap;
  n = (size_t)snprintf(reason, sizeof reason, "CUDA unavailable: ");
  if (n >= sizeof reason) n = sizeof reason - 1;
  va_start(ap, fmt);
  (void)vsnprintf(reason + n, sizeof reason - n, fmt, ap);
  va_end(ap);
  return cubert_error_set_driver(out_error, CUBERT_ERROR_SERVICE_CREATION, code, reason);
}

/* One entry of the table: its base name, ABI version and field offset. */
typedef struct loader_entry_t {
  const char *name;
  int version;
  size_t offset;
} loader_entry_t;

static const loader_entry_t k_entries[] = {
#define CUBERT_CUDA_LOADER_ENTRY_(name, version) \
  {#name, version, offsetof(cubert_cuda_loader_t, name)},
    CUBERT_CUDA_ENTRY_POINTS(CUBERT_CUDA_LOADER_ENTRY_)
};

static const loader_entry_t k_optional_entries[] = {
    CUBERT_CUDA_OPTIONAL_ENTRY_POINTS(CUBERT_CUDA_LOADER_ENTRY_)
#undef CUBERT_CUDA_LOADER_ENTRY_
};

/* A function pointer read out of a void * (dlsym / cuGetProcAddress give
 * data pointers; POSIX guarantees the conversion works). */
typedef CUresult(CUDAAPI *loader_get_proc_fn)(const char *, void **, int, cuuint64_t,
                                              CUdriverProcAddressQueryResult *);
typedef CUresult(CUDAAPI *loader_version_fn)(int *);

static const char *loader_query_text(CUdriverProcAddressQueryResult q) {
  switch (q) {
    case CU_GET_PROC_ADDRESS_SUCCESS: return "found without an address";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND: return "symbol not found";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT: return "driver version not sufficient";
    default: return "unknown query result";
  }
}

/* Resolve every table entry through cuGetProcAddress_v2. */
static cubert_status_t loader_resolve(cubert_cuda_loader_t *cu, loader_get_proc_fn get_proc,
                                      cubert_error_t *out_error) {
  size_t i;
  for (i = 0; i < sizeof k_entries / sizeof k_entries[0]; i++) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = get_proc(k_entries[i].name, &fn, k_entries[i].version,
                          CU_GET_PROC_ADDRESS_DEFAULT, &q);
    if (r != CUDA_SUCCESS)
      return cubert__cuda_unavailable(out_error, (int64_t)r, "entry point %s (ABI %d) not found: %s",
                                      k_entries[i].name, k_entries[i].version,
                                      cubert__cuda_result_name(r));
    if (!fn)
      return cubert__cuda_unavailable(out_error, 0, "entry point %s (ABI %d) not found: %s",
                                      k_entries[i].name, k_entries[i].version,
                                      loader_query_text(q));
    memcpy((unsigned char *)cu + k_entries[i].offset, &fn, sizeof fn);
  }
  /* the optional ones: a driver without them (too old) leaves them NULL */
  for (i = 0; i < sizeof k_optional_entries / sizeof k_optional_entries[0]; i++) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc(k_optional_entries[i].name, &fn, k_optional_entries[i].version,
                 CU_GET_PROC_ADDRESS_DEFAULT, &q) != CUDA_SUCCESS ||
        q != CU_GET_PROC_ADDRESS_SUCCESS)
      fn = NULL;
    memcpy((unsigned char *)cu + k_optional_entries[i].offset, &fn, sizeof fn);
  }
  return CUBERT_STATUS_OK;
}

typedef CUresult(CUDAAPI *loader_init_fn)(unsigned int);
typedef CUresult(CUDAAPI *loader_error_string_fn)(CUresult, const char **);

/* A symbol the library must export, as a function pointer (POSIX lets a
 * dlsym result be converted so). NULL when absent. */
static void *loader_export(cubert_cuda_loader_t *cu, const char *symbol,
                           cubert_error_t *out_error) {
  void *sym = dlsym(cu->library, symbol);
  if (!sym) (void)cubert__cuda_unavailable(out_error, 0, "%s has no %s", cu->path, symbol);
  return sym;
}

/* cuInit first (the Driver API wants it before any other call but the
 * version query), through the exported symbol. */
static cubert_status_t loader_init_driver(cubert_cuda_loader_t *cu, cubert_error_t *out_error) {
  loader_init_fn init;
  loader_error_string_fn error_string;
  void *sym_init = loader_export(cu, "cuInit", out_error), *sym_text;
  const char *text = NULL;
  CUresult r;
  if (!sym_init) return CUBERT_STATUS_FAILED_PRECONDITION;
  sym_text = loader_export(cu, "cuGetErrorString", out_error);
  if (!sym_text) return CUBERT_STATUS_FAILED_PRECONDITION;
  memcpy(&init, &sym_init, sizeof sym_init);
  memcpy(&error_string, &sym_text, sizeof sym_text);
  r = init(0);
  if (r == CUDA_SUCCESS) return CUBERT_STATUS_OK;
  if (error_string(r, &text) != CUDA_SUCCESS || !text) text = "no description";
  return cubert__cuda_unavailable(out_error, (int64_t)r, "cuInit failed: %s (%s)",
                                  cubert__cuda_result_name(r), text);
}

/* Version gate, cuInit, the table, device count: everything after dlopen. */
static cubert_status_t loader_initialize(cubert_cuda_loader_t *cu, cubert_error_t *out_error) {
  loader_version_fn get_version;
  loader_get_proc_fn get_proc;
  void *sym;
  int version = 0, count = 0;
  CUresult r;
  cubert_status_t st;
  sym = loader_export(cu, "cuDriverGetVersion", out_error);
  if (!sym) return CUBERT_STATUS_FAILED_PRECONDITION;
  memcpy(&get_version, &sym, sizeof sym);
  r = get_version(&version);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_unavailable(out_error, (int64_t)r, "cuDriverGetVersion failed: %s",
                                    cubert__cuda_result_name(r));
  if (version < CUBERT_CUDA_DRIVER_VERSION_MIN)
    return cubert__cuda_unavailable(out_error, 0,
                                    "driver version %d.%d (%d) is older than the required "
                                    "%d.%d (%d)",
                                    version / 1000, version % 1000 / 10, version,
                                    CUBERT_CUDA_DRIVER_VERSION_MIN / 1000,
                                    CUBERT_CUDA_DRIVER_VERSION_MIN % 1000 / 10,
                                    CUBERT_CUDA_DRIVER_VERSION_MIN);
  cu->driver_version = version;
  st = loader_init_driver(cu, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  sym = loader_export(cu, "cuGetProcAddress_v2", out_error);
  if (!sym) return CUBERT_STATUS_FAILED_PRECONDITION;
  memcpy(&get_proc, &sym, sizeof sym);
  st = loader_resolve(cu, get_proc, out_error);
  if (st != CUBERT_STATUS_OK) return st;
  r = cu->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_unavailable(out_error, (int64_t)r, "cuDeviceGetCount failed: %s",
                                    cubert__cuda_result_name(r));
  if (count <= 0)
    return cubert__cuda_unavailable(out_error, 0, "no CUDA device (cuDeviceGetCount reports 0)");
  cu->device_count = count;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__cuda_loader_open(const char *path, cubert_cuda_loader_t *out_loader,
                                         cubert_error_t *out_error) {
  cubert_cuda_loader_t *cu = out_loader;
  const char *err;
  cubert_status_t st;
  if (!cu)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_loader_open: NULL out_loader");
  if (!path || !*path) path = getenv("CUBERT_LIBCUDA");
  if (!path || !*path) path = CUBERT_CUDA_LIBRARY_DEFAULT;
  if (strlen(path) >= sizeof cu->path)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__cuda_loader_open: library path longer than 255 bytes");
  memset(cu, 0, sizeof *cu);
  memcpy(cu->path, path, strlen(path) + 1);
  (void)dlerror();
  cu->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!cu->library) {
    err = dlerror();
    return cubert__cuda_unavailable(out_error, 0, "cannot load %s: %s", path,
                                    err ? err : "unknown dlopen error");
  }
  st = loader_initialize(cu, out_error);
  if (st != CUBERT_STATUS_OK) {
    (void)dlclose(cu->library);
    memset(cu, 0, sizeof *cu);
    return st;
  }
  {
    /* cubert's fake libcuda: it runs a launched kernel's CPU body through
     * the runner installed here (cuda_fake_host.c) */
    typedef void (*set_host_fn)(int (*)(const char *, const unsigned[3], const unsigned[3],
                                        unsigned, void **));
    void *sym = dlsym(cu->library, "cubert_fake_cuda_set_kernel_host");
    if (sym) {
      set_host_fn set;
      memcpy(&set, &sym, sizeof sym);
      set(cubert__cuda_fake_host_run);
      cu->fake = 1;
    }
    sym = dlsym(cu->library, "cubert_fake_cuda_set_kernel_capture");
    if (sym) { /* its asynchronous mode queues launches: copies of them */
      typedef void (*set_capture_fn)(void *(*)(const char *, void **),
                                     int (*)(void *, const unsigned[3], const unsigned[3], unsigned),
                                     void (*)(void *));
      set_capture_fn set;
      memcpy(&set, &sym, sizeof sym);
      set(cubert__cuda_fake_capture, cubert__cuda_fake_run_captured, cubert__cuda_fake_release);
    }
  }
  return st;
}

void cubert__cuda_loader_close(cubert_cuda_loader_t *loader) {
  if (!loader || !loader->library) return;
  (void)dlclose(loader->library);
  memset(loader, 0, sizeof *loader);
}

void *cubert__cuda_loader_symbol(const cubert_cuda_loader_t *loader, const char *symbol) {
  if (!loader || !loader->library || !symbol) return NULL;
  return dlsym(loader->library, symbol);
}

/* ---- the shared loader ----------------------------------------------------- */

static pthread_once_t g_shared_once = PTHREAD_ONCE_INIT;
static cubert_cuda_loader_t g_shared;
static cubert_status_t g_shared_status;
static cubert_error_t g_shared_error;

static void loader_shared_open(void) {
  cubert_error_clear(&g_shared_error);
  g_shared_status = cubert__cuda_loader_open(NULL, &g_shared, &g_shared_error);
}

cubert_status_t cubert__cuda_loader_shared(const cubert_cuda_loader_t **out_loader,
                                           cubert_error_t *out_error) {
  if (pthread_once(&g_shared_once, loader_shared_open) != 0)
    return cubert__cuda_unavailable(out_error, 0, "pthread_once failed");
  if (g_shared_status != CUBERT_STATUS_OK) {
    if (out_error) *out_error = g_shared_error;
    return g_shared_status;
  }
  if (out_loader) *out_loader = &g_shared;
  return CUBERT_STATUS_OK;
}

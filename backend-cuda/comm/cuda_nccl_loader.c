/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_nccl_loader.c: dlopen libnccl.so.2, resolve its entry
 * points with dlsym, check its version; NCCL's results as cubert errors.
 * See cuda_nccl_loader.h for the failure messages.
 */
#include "comm/cuda_nccl_loader.h"
#include "cubert/driver/error.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cubert_status_t cubert__nccl_unavailable(cubert_error_t *out_error, int64_t code, const char *fmt,
                                         ...) {
  char reason[CUBERT_ERROR_REASON_SIZE];
  size_t n;
  va_list ap;
  n = (size_t)snprintf(reason, sizeof reason, "NCCL unavailable: ");
  if (n >= sizeof reason) n = sizeof reason - 1;
  va_start(ap, fmt);
  (void)vsnprintf(reason + n, sizeof reason - n, fmt, ap);
  va_end(ap);
  return cubert_error_set_driver(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, code,
                                 reason);
}

void cubert__nccl_version_text(int version, char *buf, size_t size) {
  int major, minor, patch;
  if (!buf || size == 0) return;
  if (version >= 10000) {
    major = version / 10000;
    minor = version % 10000 / 100;
  } else {
    major = version / 1000;
    minor = version % 1000 / 100;
  }
  patch = version % 100;
  (void)snprintf(buf, size, "%d.%d.%d", major, minor, patch);
}

const char *cubert__nccl_result_name(int result) {
  switch (result) {
    case CUBERT_NCCL_SUCCESS: return "ncclSuccess";
    case CUBERT_NCCL_UNHANDLED_CUDA_ERROR: return "ncclUnhandledCudaError";
    case CUBERT_NCCL_SYSTEM_ERROR: return "ncclSystemError";
    case CUBERT_NCCL_INTERNAL_ERROR: return "ncclInternalError";
    case CUBERT_NCCL_INVALID_ARGUMENT: return "ncclInvalidArgument";
    case CUBERT_NCCL_INVALID_USAGE: return "ncclInvalidUsage";
    case CUBERT_NCCL_REMOTE_ERROR: return "ncclRemoteError";
    case CUBERT_NCCL_IN_PROGRESS: return "ncclInProgress";
    case CUBERT_NCCL_TIMEOUT: return "ncclTimeout";
    default: return "ncclUnknownResult";
  }
}

cubert_error_kind_t cubert__nccl_result_kind(int result) {
  switch (result) {
    case CUBERT_NCCL_SUCCESS: return CUBERT_ERROR_NONE;
    case CUBERT_NCCL_INVALID_ARGUMENT: return CUBERT_ERROR_INVALID_ARGUMENT;
    case CUBERT_NCCL_INVALID_USAGE: return CUBERT_ERROR_FAILED_PRECONDITION;
    case CUBERT_NCCL_REMOTE_ERROR: return CUBERT_ERROR_DEVICE_LOST;
    case CUBERT_NCCL_TIMEOUT: return CUBERT_ERROR_DEADLINE_EXCEEDED;
    default: return CUBERT_ERROR_SERVER_GENERIC;
  }
}

cubert_status_t cubert__nccl_error_set(cubert_error_t *out_error, const cubert_nccl_loader_t *nccl,
                                       int result, const char *what) {
  char reason[CUBERT_ERROR_REASON_SIZE];
  const char *text = NULL;
  cubert_error_kind_t kind = cubert__nccl_result_kind(result);
  if (kind == CUBERT_ERROR_NONE) kind = CUBERT_ERROR_SERVER_GENERIC; /* not a failure: a bug */
  if (nccl && nccl->library && nccl->ncclGetErrorString)
    text = nccl->ncclGetErrorString((cubert__nccl_result_t)result);
  (void)snprintf(reason, sizeof reason, "%s failed: %s (%s)", what ? what : "NCCL call",
                 cubert__nccl_result_name(result), text ? text : "no description");
  return cubert_error_set_driver(out_error, kind, (int64_t)result, reason);
}

/* ---- opening ----------------------------------------------------------------------- */

typedef struct nccl_entry_t {
  const char *name;
  size_t offset;
} nccl_entry_t;

static const nccl_entry_t k_entries[] = {
#define CUBERT_NCCL_LOADER_ENTRY_(name, type) {#name, offsetof(cubert_nccl_loader_t, name)},
    CUBERT_NCCL_ENTRY_POINTS(CUBERT_NCCL_LOADER_ENTRY_)
#undef CUBERT_NCCL_LOADER_ENTRY_
};

/* Every required symbol, then the optional one, then the version gate. */
static cubert_status_t loader_initialize(cubert_nccl_loader_t *n, cubert_error_t *out_error) {
  char have[32], need[32];
  void *sym;
  size_t i;
  int version = 0;
  cubert__nccl_result_t r;
  for (i = 0; i < sizeof k_entries / sizeof k_entries[0]; i++) {
    sym = dlsym(n->library, k_entries[i].name);
    if (!sym) return cubert__nccl_unavailable(out_error, 0, "%s has no %s", n->path, k_entries[i].name);
    memcpy((unsigned char *)n + k_entries[i].offset, &sym, sizeof sym);
  }
  sym = dlsym(n->library, "ncclCommInitRankConfig");
  if (sym) memcpy(&n->ncclCommInitRankConfig, &sym, sizeof sym);
  r = n->ncclGetVersion(&version);
  if (r != CUBERT_NCCL_SUCCESS)
    return cubert__nccl_unavailable(out_error, (int64_t)r, "ncclGetVersion failed: %s",
                                    cubert__nccl_result_name(r));
  if (version < CUBERT_NCCL_VERSION_MIN) {
    cubert__nccl_version_text(version, have, sizeof have);
    cubert__nccl_version_text(CUBERT_NCCL_VERSION_MIN, need, sizeof need);
    return cubert__nccl_unavailable(out_error, 0, "NCCL %s (%d) is older than the required %s (%d)",
                                    have, version, need, CUBERT_NCCL_VERSION_MIN);
  }
  if (version < CUBERT_NCCL_VERSION_CONFIG) n->ncclCommInitRankConfig = NULL;
  n->version = version;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__nccl_loader_open(const char *path, cubert_nccl_loader_t *out_loader,
                                         cubert_error_t *out_error) {
  cubert_nccl_loader_t *n = out_loader;
  const char *err;
  cubert_status_t st;
  if (!n)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__nccl_loader_open: NULL out_loader");
  if (!path || !*path) path = getenv("CUBERT_LIBNCCL");
  if (!path || !*path) path = CUBERT_NCCL_LIBRARY_DEFAULT;
  if (strlen(path) >= sizeof n->path)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert__nccl_loader_open: library path longer than 255 bytes");
  memset(n, 0, sizeof *n);
  memcpy(n->path, path, strlen(path) + 1);
  (void)dlerror();
  n->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!n->library) {
    err = dlerror();
    return cubert__nccl_unavailable(out_error, 0, "cannot load %s: %s", path,
                                    err ? err : "unknown dlopen error");
  }
  st = loader_initialize(n, out_error);
  if (st != CUBERT_STATUS_OK) {
    (void)dlclose(n->library);
    memset(n, 0, sizeof *n);
  }
  return st;
}

void cubert__nccl_loader_close(cubert_nccl_loader_t *loader) {
  if (!loader || !loader->library) return;
  (void)dlclose(loader->library);
  memset(loader, 0, sizeof *loader);
}

void *cubert__nccl_loader_symbol(const cubert_nccl_loader_t *loader, const char *symbol) {
  if (!loader || !loader->library || !symbol) return NULL;
  return dlsym(loader->library, symbol);
}

/* ---- the shared loader ------------------------------------------------------------- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static cubert_nccl_loader_t g_shared;
static cubert_status_t g_status;
static cubert_error_t g_error;

static void shared_open(void) {
  cubert_error_clear(&g_error);
  g_status = cubert__nccl_loader_open(NULL, &g_shared, &g_error);
}

cubert_status_t cubert__nccl_loader_shared(const cubert_nccl_loader_t **out_loader,
                                           cubert_error_t *out_error) {
  if (pthread_once(&g_once, shared_open) != 0)
    return cubert__nccl_unavailable(out_error, 0, "pthread_once failed");
  if (g_status != CUBERT_STATUS_OK) {
    if (out_error) *out_error = g_error;
    return g_status;
  }
  if (out_loader) *out_loader = &g_shared;
  return CUBERT_STATUS_OK;
}

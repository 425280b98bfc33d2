/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_nccl_loader.h: libnccl opened at run time, like libcuda
 * (cuda_loader.h). docs/collectives.md.
 *
 * The library is never linked: cubert__nccl_loader_open dlopens
 * libnccl.so.2 (or the file named by CUBERT_LIBNCCL), resolves the entry
 * points below with dlsym and checks ncclGetVersion. nccl.h is not needed
 * to build (cuda_nccl_abi.h declares the types). Any failure leaves one
 * status, UNSUPPORTED (kind IO_UNSUPPORTED_IO_OPERATION), and a reason
 * "NCCL unavailable: <reason>":
 *   no library      "cannot load libnccl.so.2: <dlerror text>"
 *   symbol missing  "<path> has no ncclSend"
 *   too old         "NCCL 2.6.4 (2604) is older than the required 2.7.0 (2700)"
 *   version failed  "ncclGetVersion failed: ncclSystemError (...)"
 * The CUDA device keeps working without NCCL: only what needs it (an
 * all_reduce, a process communicator) answers with that record.
 *
 * Hosted code (dlopen, getenv). Thread-safe on distinct loaders; the shared
 * loader is opened once.
 */
#ifndef CUBERT_BACKEND_CUDA_COMM_CUDA_NCCL_LOADER_H
#define CUBERT_BACKEND_CUDA_COMM_CUDA_NCCL_LOADER_H

#include "cubert/error.h"
#include "comm/cuda_nccl_abi.h"

/* Library opened when no path is given and CUBERT_LIBNCCL is not set. */
#define CUBERT_NCCL_LIBRARY_DEFAULT "libnccl.so.2"
/* The oldest NCCL accepted: 2.7.0 (ncclSend / ncclRecv). */
#define CUBERT_NCCL_VERSION_MIN 2700
/* ncclCommInitRankConfig (non-blocking communicators) came with 2.14. */
#define CUBERT_NCCL_VERSION_CONFIG 21400

/* X(name, field type): the entry points every NCCL >= 2.7 exports. */
#define CUBERT_NCCL_ENTRY_POINTS(X)                               \
  X(ncclGetVersion, cubert_nccl_get_version_fn)                   \
  X(ncclGetErrorString, cubert_nccl_get_error_string_fn)          \
  X(ncclGetUniqueId, cubert_nccl_get_unique_id_fn)                \
  X(ncclCommInitRank, cubert_nccl_comm_init_rank_fn)              \
  X(ncclCommInitAll, cubert_nccl_comm_init_all_fn)                \
  X(ncclCommDestroy, cubert_nccl_comm_fn)                         \
  X(ncclCommAbort, cubert_nccl_comm_fn)                           \
  X(ncclCommGetAsyncError, cubert_nccl_comm_get_async_error_fn)   \
  X(ncclAllReduce, cubert_nccl_all_reduce_fn)                     \
  X(ncclSend, cubert_nccl_send_fn)                                \
  X(ncclRecv, cubert_nccl_recv_fn)                                \
  X(ncclGroupStart, cubert_nccl_group_fn)                         \
  X(ncclGroupEnd, cubert_nccl_group_fn)

/* The function table and what loading found. Plain data once open. */
typedef struct cubert_nccl_loader_t {
  void *library; /* dlopen handle (NULL when closed) */
  int version;   /* ncclGetVersion, e.g. 22809 */
  char path[256];
#define CUBERT_NCCL_LOADER_FIELD_(name, type) type name;
  CUBERT_NCCL_ENTRY_POINTS(CUBERT_NCCL_LOADER_FIELD_)
#undef CUBERT_NCCL_LOADER_FIELD_
  /* NULL before NCCL 2.14 (the process communicator needs it). */
  cubert_nccl_comm_init_rank_config_fn ncclCommInitRankConfig;
} cubert_nccl_loader_t;

/* Open `path` (NULL: $CUBERT_LIBNCCL, else CUBERT_NCCL_LIBRARY_DEFAULT) into
 * *out_loader: dlopen, every entry point, the version gate. On failure
 * *out_loader is left closed and nothing stays loaded. OK;
 * INVALID_ARGUMENT (NULL out_loader, a path over 255 bytes); UNSUPPORTED
 * ("NCCL unavailable: ..."). Blocks while the library loads. */
cubert_status_t cubert__nccl_loader_open(const char *path, cubert_nccl_loader_t *out_loader,
                                         cubert_error_t *out_error);

/* dlclose (not the shared loader; not while communicators made through it
 * live). NULL or closed: no-op. */
void cubert__nccl_loader_close(cubert_nccl_loader_t *loader);

/* The address of `symbol` in the loaded library (tests reach the fake's
 * knobs and counters with it); NULL when absent. */
void *cubert__nccl_loader_symbol(const cubert_nccl_loader_t *loader, const char *symbol);

/* The process-wide loader, opened once (path NULL), never closed. Returns
 * its open status (and the failure record, every time). Thread-safe; the
 * first call blocks while the library loads. */
cubert_status_t cubert__nccl_loader_shared(const cubert_nccl_loader_t **out_loader,
                                           cubert_error_t *out_error);

/* "2.28.9" for 22809 (and 2.7.4 for 2704) into buf. */
void cubert__nccl_version_text(int version, char *buf, size_t size);

/* "ncclSystemError"; "ncclUnknownResult" for a value nccl.h does not list. */
const char *cubert__nccl_result_name(int result);

/* The kind an NCCL failure maps to: INVALID_ARGUMENT (ncclInvalidArgument),
 * FAILED_PRECONDITION (ncclInvalidUsage), DEVICE_LOST (ncclRemoteError: a
 * peer failed), DEADLINE_EXCEEDED (ncclTimeout, newer NCCL), SERVER_GENERIC
 * (ncclUnhandledCudaError, ncclSystemError, ncclInternalError, anything
 * else). */
cubert_error_kind_t cubert__nccl_result_kind(int result);

/* Fill out_error for a failed NCCL call: the kind above, driver_code the
 * ncclResult_t, reason "<what> failed: <name> (<ncclGetErrorString text>)"
 * (the text when `nccl` is open). Returns the kind's status. */
cubert_status_t cubert__nccl_error_set(cubert_error_t *out_error, const cubert_nccl_loader_t *nccl,
                                       int result, const char *what);

/* The "NCCL unavailable: <reason>" record (UNSUPPORTED, kind
 * IO_UNSUPPORTED_IO_OPERATION; driver_code `code`). */
cubert_status_t cubert__nccl_unavailable(cubert_error_t *out_error, int64_t code, const char *fmt,
                                         ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* CUBERT_BACKEND_CUDA_COMM_CUDA_NCCL_LOADER_H */

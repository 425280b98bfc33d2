/* SPDX-License-Identifier: MIT */
/*
 * cubert/dlpack.h: sharing tensors with other libraries through DLPack
 * (the tensor interchange of PyTorch, JAX, CuPy, NumPy, TVM), both ways,
 * without a copy; and the non-blocking form of get_resource. docs/interop.md.
 *
 * The DLPack structs. cubert defines its own structs, laid out exactly as
 * DLPack 1.x's (dlpack.h of dmlc/dlpack): DLPackVersion, DLDevice,
 * DLDataType, DLTensor, DLManagedTensor and DLManagedTensorVersioned are
 * cubert_dlpack_version_t, _device_t, _dtype_t, _tensor_t,
 * _managed_tensor_t and _managed_tensor_versioned_t, field for field, so a
 * pointer to one is a pointer to the other (cast it). cubert does not vendor
 * dlpack.h: it is Apache-2.0 (cubert is MIT), and a copy in cubert's headers
 * would clash with the one a program already includes (another version,
 * the same names). tests/cts/test_cts_dlpack.c checks the layout
 * (sizes and offsets on the build's ABI).
 *
 * Export (cubert_client_dlpack_export): a handle plus its shape, strides
 * (in elements) and dtype become a managed tensor. The managed tensor and
 * its shape and strides come from the client's allocator; it holds a
 * reference on the handle (the memory stays alive) and on the device (as a
 * pending completion does: the device outlives its last client while a
 * consumer holds the tensor). Its deleter, called once by the consumer (DLPack's rule),
 * releases both and frees the tensor; it may be called from any thread and
 * may tear the device down when it holds the last reference (it then
 * blocks for the teardown). data is the first element's address (the
 * handle's offsets applied), byte_offset 0. device: kDLCPU, 0 for the CPU
 * and inline drivers; kDLCUDA and the GPU's ordinal for CUDA.
 *
 * Import (cubert_client_dlpack_import): a managed tensor of this device's
 * memory becomes a handle without a copy: the handle's memory is the
 * tensor's bytes from data + byte_offset over the strided span. The tensor
 * is borrowed until cubert's last reference to that memory went (the
 * returned handle, its clones, offsets and the bindings of pending work)
 * and the work that used it completed; then its deleter is called, once,
 * on a thread that runs a server call of this device (a flush, sync, read,
 * import, memory usage or cleanup notices it) or at the device's teardown
 * at the latest. A tensor cubert exported from the same device comes back
 * as a sub-handle of its own handle (the same memory id; the tensor's
 * deleter runs at once). On a
 * refusal nothing was adopted and the caller still owns the tensor (call
 * its deleter itself).
 *
 * Stream order (cubert_dlpack_options_t.stream_kind): DLPack's `stream`
 * protocol, where the consumer names its stream and the producer orders its
 * pending writes before it.
 *   HOST    export: blocks until the tensor's pending writes ran (the
 *           handle's stream and the client's), for a host consumer (NumPy,
 *           DLPack's stream None on the CPU). import: the producer's writes
 *           are complete (nothing to wait for).
 *   NONE    DLPack's -1: no ordering; the other side orders itself.
 *   CUBERT  `stream` is a stream id of this device. export: that stream's
 *           later work waits for the pending writes (non-blocking). import:
 *           the client's stream waits for `stream`'s work so far.
 *   NATIVE  `stream` is a stream of another library on this device (CUDA: a
 *           CUstream; DLPack's 1 and 2 are the legacy and per-thread
 *           default streams). export: that stream's later work waits for
 *           the pending writes; import: the client's stream waits for that
 *           stream's work so far. Non-blocking. UNSUPPORTED on drivers
 *           without native streams (CPU, inline).
 *
 * Thread-safety: as every client call. Blocking: a device round trip, plus
 * the wait of HOST exports.
 */
#ifndef CUBERT_DLPACK_H
#define CUBERT_DLPACK_H

#include "cubert/client.h"

CUBERT_EXTERN_C_BEGIN

/* ---- DLPack 1.x, laid out as dlpack.h ---------------------------------------------------- */

/* The DLPack version cubert writes into the tensors it exports, and the
 * major version it imports (another major: UNSUPPORTED). */
#define CUBERT_DLPACK_MAJOR_VERSION 1u
#define CUBERT_DLPACK_MINOR_VERSION 0u

/* DLDeviceType values cubert uses. */
#define CUBERT_DLPACK_DEVICE_CPU 1  /* kDLCPU */
#define CUBERT_DLPACK_DEVICE_CUDA 2 /* kDLCUDA */

/* DLDataTypeCode values cubert takes. */
#define CUBERT_DLPACK_INT 0u     /* kDLInt: bits 8, 16, 32, 64 */
#define CUBERT_DLPACK_UINT 1u    /* kDLUInt: bits 8, 16, 32, 64 */
#define CUBERT_DLPACK_FLOAT 2u   /* kDLFloat: bits 16, 32, 64 */
#define CUBERT_DLPACK_BFLOAT 4u  /* kDLBfloat: bits 16 */
#define CUBERT_DLPACK_COMPLEX 5u /* kDLComplex: bits 64, 128 */
#define CUBERT_DLPACK_BOOL 6u    /* kDLBool: bits 8 */

/* DLManagedTensorVersioned.flags. */
#define CUBERT_DLPACK_FLAG_READ_ONLY 1u /* DLPACK_FLAG_BITMASK_READ_ONLY */
#define CUBERT_DLPACK_FLAG_IS_COPIED 2u /* DLPACK_FLAG_BITMASK_IS_COPIED */

typedef struct cubert_dlpack_version_t { /* DLPackVersion */
  uint32_t major;
  uint32_t minor;
} cubert_dlpack_version_t;

typedef struct cubert_dlpack_device_t { /* DLDevice */
  int32_t device_type;                  /* DLDeviceType (a 4-byte enum in dlpack.h) */
  int32_t device_id;
} cubert_dlpack_device_t;

typedef struct cubert_dlpack_dtype_t { /* DLDataType */
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} cubert_dlpack_dtype_t;

typedef struct cubert_dlpack_tensor_t { /* DLTensor */
  void *data;
  cubert_dlpack_device_t device;
  int32_t ndim;
  cubert_dlpack_dtype_t dtype;
  int64_t *shape;
  int64_t *strides; /* elements; NULL: compact row-major */
  uint64_t byte_offset;
} cubert_dlpack_tensor_t;

typedef struct cubert_dlpack_managed_tensor_t { /* DLManagedTensor */
  cubert_dlpack_tensor_t dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct cubert_dlpack_managed_tensor_t *self);
} cubert_dlpack_managed_tensor_t;

typedef struct cubert_dlpack_managed_tensor_versioned_t { /* DLManagedTensorVersioned */
  cubert_dlpack_version_t version;
  void *manager_ctx;
  void (*deleter)(struct cubert_dlpack_managed_tensor_versioned_t *self);
  uint64_t flags;
  cubert_dlpack_tensor_t dl_tensor;
} cubert_dlpack_managed_tensor_versioned_t;

/* ---- options ----------------------------------------------------------------------------- */

typedef enum cubert_dlpack_stream_kind_e {
  CUBERT_DLPACK_STREAM_HOST = 0,   /* the default: see the top of this header */
  CUBERT_DLPACK_STREAM_NONE = 1,   /* DLPack's -1 */
  CUBERT_DLPACK_STREAM_CUBERT = 2, /* a stream id of this device */
  CUBERT_DLPACK_STREAM_NATIVE = 3, /* a CUstream (drivers with native streams) */
  CUBERT_DLPACK_STREAM_KIND_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_dlpack_stream_kind_t;

/* What an export or import is ordered against, and its details. Zeros are
 * the defaults (HOST, no flags, the element's alignment). Plain data. */
typedef struct cubert_dlpack_options_t {
  cubert_dlpack_stream_kind_t stream_kind;
  uint32_t flags;     /* export: CUBERT_DLPACK_FLAG_READ_ONLY (versioned form); import: 0 */
  uint64_t stream;    /* CUBERT: a stream id; NATIVE: a native stream handle */
  uint64_t alignment; /* import: data + byte_offset must be a multiple of it (a
                         power of two; 0: the element's width) */
} cubert_dlpack_options_t;

/* Defaults (all zero). NULL: nothing. Pure. */
CUBERT_API void cubert_dlpack_options_initialize(cubert_dlpack_options_t *options);

/* An imported tensor: a new handle (tensor.binding; the caller releases it
 * with cubert_client_handle_release) with the tensor's rank, shape, strides
 * (elements, never negative) and element size, its dtype, and the
 * producer's flags (CUBERT_DLPACK_FLAG_READ_ONLY: do not write it; 0 for
 * the unversioned form). */
typedef struct cubert_dlpack_imported_t {
  cubert_copy_descriptor_t tensor;
  cubert_dlpack_dtype_t dtype;
  uint64_t flags;
} cubert_dlpack_imported_t;

/* ---- export ------------------------------------------------------------------------------- */

/* Export `tensor` (binding: a live handle of this client's device; rank
 * 0..CUBERT_MAX_RANK, 0 being one element; shape; strides in elements;
 * elem_size the dtype's width, or 0 for it) with `dtype` as a managed tensor
 * (*out_tensor; the consumer calls its deleter once). options NULL:
 * defaults. Ordering: options->stream_kind (top of this header).
 * Codes (the record filled; nothing exported, nothing retained):
 *   INVALID_ARGUMENT  NULL client/tensor/out_tensor, elem_size not the
 *                     dtype's width, a shape or stride above INT64_MAX, an
 *                     unknown stream kind or flag;
 *   STRIDE_UNSUPPORTED_RANK (INVALID_ARGUMENT) rank above CUBERT_MAX_RANK;
 *   UNSUPPORTED       a dtype cubert does not take (lanes != 1, an unknown
 *                     code or width; kind IO_UNSUPPORTED_IO_OPERATION), a
 *                     driver without memory_device, a NATIVE stream on a
 *                     driver without native streams;
 *   OUT_OF_RANGE      the strided span exceeds the handle's bytes in use
 *                     (fields: span, size);
 *   DEVICE_MISMATCH / INVALID_HANDLE   a handle of another device / a dead one;
 *   RESOURCE_EXHAUSTED the allocator failed;
 *   the driver's codes of the ordering (an event that cannot be recorded or
 *   waited on; UNAVAILABLE for a lost device). The stream's queued errors
 *   stay queued for the next flush / sync / read.
 * Blocks: a device round trip; HOST also waits for the pending writes. */
CUBERT_API cubert_status_t cubert_client_dlpack_export(
    cubert_client_t *client, const cubert_copy_descriptor_t *tensor, cubert_dlpack_dtype_t dtype,
    const cubert_dlpack_options_t *options, cubert_dlpack_managed_tensor_versioned_t **out_tensor,
    cubert_error_t *out_error);
/* The same as a DLManagedTensor (DLPack before 1.0, torch.utils.dlpack's
 * capsules): no version and no flags (READ_ONLY is refused:
 * INVALID_ARGUMENT). */
CUBERT_API cubert_status_t cubert_client_dlpack_export_unversioned(
    cubert_client_t *client, const cubert_copy_descriptor_t *tensor, cubert_dlpack_dtype_t dtype,
    const cubert_dlpack_options_t *options, cubert_dlpack_managed_tensor_t **out_tensor,
    cubert_error_t *out_error);

/* ---- import -------------------------------------------------------------------------------- */

/* Import `tensor` (borrowed: see the top of this header) as a handle on the
 * client's stream (*out). options NULL: defaults. Codes (the record
 * filled; nothing adopted, the caller still owns the tensor, *out untouched):
 *   INVALID_ARGUMENT  NULL client/tensor/out, NULL data with bytes, a
 *                     negative shape, data + byte_offset not a multiple of
 *                     the alignment (fields: address, alignment), an
 *                     alignment that is not a power of two, an unknown
 *                     stream kind, flags set;
 *   STRIDE_UNSUPPORTED_RANK (INVALID_ARGUMENT) ndim negative or above
 *                     CUBERT_MAX_RANK;
 *   DEVICE_MISMATCH   the tensor's device is not this device's (fields:
 *                     its type and id, the device's);
 *   UNSUPPORTED       another DLPack major version, a dtype cubert does not
 *                     take (IO_UNSUPPORTED_IO_OPERATION); a negative stride,
 *                     or a zero stride on a dimension above 1 (overlapping
 *                     elements; IO_UNSUPPORTED_STRIDES); a driver without
 *                     memory_import; a NATIVE stream without native streams;
 *   OVERFLOW          the span does not fit in 64 bits;
 *   OUT_OF_RANGE      a tensor this device exported whose data was moved
 *                     outside the exported memory;
 *   RESOURCE_EXHAUSTED / OUT_OF_RANGE  no room for the handle.
 * Blocks: a device round trip (never for the producer's work). */
CUBERT_API cubert_status_t cubert_client_dlpack_import(
    cubert_client_t *client, cubert_dlpack_managed_tensor_versioned_t *tensor,
    const cubert_dlpack_options_t *options, cubert_dlpack_imported_t *out,
    cubert_error_t *out_error);
CUBERT_API cubert_status_t cubert_client_dlpack_import_unversioned(
    cubert_client_t *client, cubert_dlpack_managed_tensor_t *tensor,
    const cubert_dlpack_options_t *options, cubert_dlpack_imported_t *out,
    cubert_error_t *out_error);

/* This device's memory in DLPack's terms (kDLCPU 0 for the CPU and inline
 * drivers, kDLCUDA and the ordinal for CUDA; {0, 0} for a driver without
 * memory_device, or a NULL client). Pure, thread-safe. */
CUBERT_API cubert_dlpack_device_t cubert_client_dlpack_device(const cubert_client_t *client);

/* ---- the non-blocking get_resource -------------------------------------------------------- */

/* As cubert_client_get_resource, without waiting: *out_resource at once,
 * and *out_completion armed after the handle's pending writes (on its
 * stream and the client's: the client's stream waits for the handle's
 * first). Wait on it (cubert_completion_wait; timeout 0 polls:
 * DEADLINE_EXCEEDED while pending) before the host touches the memory; it
 * returns the stream's queued errors, and must be waited on until it is
 * finished (cubert/client.h, "completions"). A caller on another library's
 * stream uses cubert_client_dlpack_export's NATIVE ordering instead.
 * Codes of get_resource (INVALID_ARGUMENT for NULL, DEVICE_MISMATCH,
 * INVALID_HANDLE) and of the event record. Non-blocking (a device round
 * trip). */
CUBERT_API cubert_status_t cubert_client_get_resource_async(cubert_client_t *client,
                                                            const cubert_handle_t *handle,
                                                            cubert_resource_t *out_resource,
                                                            cubert_completion_t *out_completion,
                                                            cubert_error_t *out_error);

CUBERT_EXTERN_C_END

#endif /* CUBERT_DLPACK_H */

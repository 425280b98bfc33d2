/* SPDX-License-Identifier: MIT */
/*
 * examples/python/cubert_dlpack.c: a small shared library that lets Python
 * (ctypes) drive cubert's DLPack calls and launch a cubert kernel, for the
 * NumPy round trip (examples/python/dlpack_numpy.py, make check-dlpack-numpy)
 * and the PyTorch one on a GPU (tools/gpu-dlpack-torch.py). Built by
 * `make dlpack-python` into $(BUILD)/examples/python/libcubert_dlpack.so
 * (with CUDA=1 it can open the CUDA device too). docs/interop.md.
 *
 * Every function returns a cubert_status_t (0: OK); the text of the last
 * failure is cdp_last_error()'s (one thread at a time: an example). Handles
 * live on the heap (cdp_handle_release frees them), so Python passes
 * pointers only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cubert.h"
#include "cubert/cpu.h"
#include "cubert/dlpack.h"
#include "cubert/os.h"
#if defined(CUBERT_HAVE_BACKEND_CUDA) && CUBERT_HAVE_BACKEND_CUDA
#include "cubert/cuda.h"
#endif
#include "cubert_kernels.h"

#define CDP_API __attribute__((visibility("default")))

/* The library's functions (ctypes finds them by name). */
CDP_API const char *cdp_last_error(void);
CDP_API cubert_status_t cdp_client_create(int cuda, uint32_t index, cubert_client_t **out_client);
CDP_API void cdp_client_release(cubert_client_t *client);
CDP_API void cdp_set_stream(cubert_client_t *client, uint64_t stream);
CDP_API void cdp_device(cubert_client_t *client, int32_t *out_type, int32_t *out_id);
CDP_API cubert_status_t cdp_create(cubert_client_t *client, const void *data, uint64_t size, cubert_handle_t **out_handle);
CDP_API cubert_status_t cdp_handle_release(cubert_client_t *client, cubert_handle_t *h);
CDP_API uint64_t cdp_handle_size(const cubert_handle_t *h);
CDP_API cubert_status_t cdp_export(cubert_client_t *client, const cubert_handle_t *h, int32_t ndim, const int64_t *shape, uint8_t code, uint8_t bits, int versioned, uint32_t stream_kind, uint64_t stream, uint32_t flags, void **out_managed);
CDP_API cubert_status_t cdp_import(cubert_client_t *client, void *managed, int versioned, uint32_t stream_kind, uint64_t stream, cubert_handle_t **out_handle, uint64_t *out_address);
CDP_API void cdp_managed_delete(void *managed, int versioned);
CDP_API void cdp_capsule_destructor(void *capsule);
CDP_API uint64_t cdp_managed_address(const void *managed, int versioned);
CDP_API cubert_status_t cdp_add_u8(cubert_client_t *client, const cubert_handle_t *lhs, const cubert_handle_t *rhs, const cubert_handle_t *out);
CDP_API cubert_status_t cdp_add_u32(cubert_client_t *client, const cubert_handle_t *buf, uint32_t delta);
CDP_API cubert_status_t cdp_read(cubert_client_t *client, const cubert_handle_t *h, void *dst, uint64_t size);
CDP_API cubert_status_t cdp_sync(cubert_client_t *client);
CDP_API cubert_status_t cdp_address(cubert_client_t *client, const cubert_handle_t *h, uint64_t *out_address);

static char g_error[512];

static cubert_status_t note(cubert_status_t status, const cubert_error_t *err) {
  if (status != CUBERT_STATUS_OK) cubert_error_format(err, g_error, sizeof g_error);
  return status;
}

CDP_API const char *cdp_last_error(void) { return g_error; }

/* A device: 0 the CPU driver (device index `index`), 1 the CUDA driver
 * (GPU 0; UNSUPPORTED in a build without it). */
CDP_API cubert_status_t cdp_client_create(int cuda, uint32_t index, cubert_client_t **out_client) {
  cubert_error_t err;
  cubert_error_clear(&err);
  if (cuda) {
#if defined(CUBERT_HAVE_BACKEND_CUDA) && CUBERT_HAVE_BACKEND_CUDA
    cubert_cuda_options_t o;
    cubert_cuda_options_initialize(&o);
    o.device.index = index;
    return note(cubert_cuda_client_create(cubert_allocator_libc(), &o, out_client, &err), &err);
#else
    (void)index;
    snprintf(g_error, sizeof g_error, "this library was built without CUDA (make CUDA=1)");
    return CUBERT_STATUS_UNSUPPORTED;
#endif
  } else {
    cubert_cpu_options_t o;
    cubert_cpu_options_initialize(&o);
    o.device.index = index;
    return note(cubert_cpu_client_create(cubert_allocator_libc(), &o, out_client, &err), &err);
  }
}

CDP_API void cdp_client_release(cubert_client_t *client) { cubert_client_release(client); }
CDP_API void cdp_set_stream(cubert_client_t *client, uint64_t stream) {
  cubert_client_set_stream(client, stream);
}

CDP_API void cdp_device(cubert_client_t *client, int32_t *out_type, int32_t *out_id) {
  cubert_dlpack_device_t d = cubert_client_dlpack_device(client);
  *out_type = d.device_type;
  *out_id = d.device_id;
}

/* A new handle holding `size` bytes of `data` (NULL: zeros). */
CDP_API cubert_status_t cdp_create(cubert_client_t *client, const void *data, uint64_t size,
                                   cubert_handle_t **out_handle) {
  cubert_error_t err;
  cubert_handle_t *h = (cubert_handle_t *)malloc(sizeof *h);
  cubert_status_t st;
  cubert_error_clear(&err);
  if (!h) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  st = data ? cubert_client_create_from_slice(client, data, size, h, &err)
            : cubert_client_empty(client, size, h, &err);
  if (st != CUBERT_STATUS_OK) {
    free(h);
    return note(st, &err);
  }
  *out_handle = h;
  return CUBERT_STATUS_OK;
}

CDP_API cubert_status_t cdp_handle_release(cubert_client_t *client, cubert_handle_t *h) {
  cubert_error_t err;
  cubert_status_t st;
  cubert_error_clear(&err);
  st = cubert_client_handle_release(client, h, &err);
  free(h);
  return note(st, &err);
}

CDP_API uint64_t cdp_handle_size(const cubert_handle_t *h) { return cubert_handle_size_in_used(h); }

/* Export: a 1-..8-D contiguous tensor over the handle. versioned 1: a
 * DLManagedTensorVersioned, 0: a DLManagedTensor. stream_kind / stream:
 * cubert_dlpack_stream_kind_t and its value (the consumer's stream). */
CDP_API cubert_status_t cdp_export(cubert_client_t *client, const cubert_handle_t *h, int32_t ndim,
                                   const int64_t *shape, uint8_t code, uint8_t bits, int versioned,
                                   uint32_t stream_kind, uint64_t stream, uint32_t flags,
                                   void **out_managed) {
  cubert_copy_descriptor_t d;
  cubert_dlpack_dtype_t dt;
  cubert_dlpack_options_t o;
  cubert_error_t err;
  int32_t i;
  uint64_t stride = 1;
  cubert_error_clear(&err);
  if (ndim < 0 || ndim > CUBERT_MAX_RANK) return CUBERT_STATUS_INVALID_ARGUMENT;
  memset(&d, 0, sizeof d);
  d.binding = *h;
  d.rank = (uint32_t)ndim;
  for (i = ndim; i-- > 0;) {
    d.shape[i] = (uint64_t)shape[i];
    d.strides[i] = stride;
    stride *= (uint64_t)shape[i];
  }
  dt.code = code;
  dt.bits = bits;
  dt.lanes = 1;
  cubert_dlpack_options_initialize(&o);
  o.stream_kind = (cubert_dlpack_stream_kind_t)stream_kind;
  o.stream = stream;
  o.flags = flags;
  if (versioned)
    return note(cubert_client_dlpack_export(client, &d, dt, &o,
                                            (cubert_dlpack_managed_tensor_versioned_t **)out_managed, &err),
                &err);
  return note(cubert_client_dlpack_export_unversioned(client, &d, dt, &o,
                                                      (cubert_dlpack_managed_tensor_t **)out_managed, &err),
              &err);
}

/* Import a managed tensor (versioned or not) as a new heap handle; its
 * data address (data + byte_offset) in *out_address. On failure the
 * tensor is still the caller's. */
CDP_API cubert_status_t cdp_import(cubert_client_t *client, void *managed, int versioned,
                                   uint32_t stream_kind, uint64_t stream, cubert_handle_t **out_handle,
                                   uint64_t *out_address) {
  cubert_dlpack_imported_t im;
  cubert_dlpack_options_t o;
  cubert_error_t err;
  const cubert_dlpack_tensor_t *dl;
  cubert_handle_t *h = (cubert_handle_t *)malloc(sizeof *h);
  cubert_status_t st;
  cubert_error_clear(&err);
  if (!h) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  cubert_dlpack_options_initialize(&o);
  o.stream_kind = (cubert_dlpack_stream_kind_t)stream_kind;
  o.stream = stream;
  dl = versioned ? &((cubert_dlpack_managed_tensor_versioned_t *)managed)->dl_tensor
                 : &((cubert_dlpack_managed_tensor_t *)managed)->dl_tensor;
  *out_address = (uint64_t)(uintptr_t)dl->data + dl->byte_offset;
  st = versioned ? cubert_client_dlpack_import(client, (cubert_dlpack_managed_tensor_versioned_t *)managed,
                                               &o, &im, &err)
                 : cubert_client_dlpack_import_unversioned(client, (cubert_dlpack_managed_tensor_t *)managed,
                                                           &o, &im, &err);
  if (st != CUBERT_STATUS_OK) {
    free(h);
    return note(st, &err);
  }
  *h = im.tensor.binding;
  *out_handle = h;
  return CUBERT_STATUS_OK;
}

/* Call a managed tensor's deleter (a capsule nobody consumed). */
CDP_API void cdp_managed_delete(void *managed, int versioned) {
  if (!managed) return;
  if (versioned) {
    cubert_dlpack_managed_tensor_versioned_t *t = (cubert_dlpack_managed_tensor_versioned_t *)managed;
    if (t->deleter) t->deleter(t);
  } else {
    cubert_dlpack_managed_tensor_t *t = (cubert_dlpack_managed_tensor_t *)managed;
    if (t->deleter) t->deleter(t);
  }
}

/* The destructor of the capsules Python hands out (examples/python/
 * cubert_dlpack.py): a capsule nobody consumed (still "dltensor" /
 * "dltensor_versioned") owns its tensor, so its deleter runs (DLPack's
 * rule); a consumer renamed it "used_...". In C, not a ctypes callback: it
 * may run while an exception is set. The two capsule functions come from
 * the Python process that loaded this library. */
extern int PyCapsule_IsValid(void *capsule, const char *name);
extern void *PyCapsule_GetPointer(void *capsule, const char *name);
CDP_API void cdp_capsule_destructor(void *capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor"))
    cdp_managed_delete(PyCapsule_GetPointer(capsule, "dltensor"), 0);
  else if (PyCapsule_IsValid(capsule, "dltensor_versioned"))
    cdp_managed_delete(PyCapsule_GetPointer(capsule, "dltensor_versioned"), 1);
}

/* The data address of a managed tensor (data + byte_offset). */
CDP_API uint64_t cdp_managed_address(const void *managed, int versioned) {
  const cubert_dlpack_tensor_t *dl =
      versioned ? &((const cubert_dlpack_managed_tensor_versioned_t *)managed)->dl_tensor
                : &((const cubert_dlpack_managed_tensor_t *)managed)->dl_tensor;
  return (uint64_t)(uintptr_t)dl->data + dl->byte_offset;
}

/* out = lhs + rhs, byte by byte (ck_add_u8), over lhs's bytes; enqueued. */
CDP_API cubert_status_t cdp_add_u8(cubert_client_t *client, const cubert_handle_t *lhs,
                                   const cubert_handle_t *rhs, const cubert_handle_t *out) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t count;
  cubert_error_t err;
  uint64_t n = cubert_handle_size_in_used(lhs);
  cubert_error_clear(&err);
  count = cubert_cube_count_new_1d((uint32_t)((n + CK_SMALL_BLOCK - 1) / CK_SMALL_BLOCK));
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, lhs);
  cubert_launch_arguments_set_buffer(&args, 1, rhs);
  cubert_launch_arguments_set_buffer(&args, 2, out);
  return note(cubert_client_launch(client, &ck_add_u8_kernel, &count, &args, &err), &err);
}

/* buf[i] += delta over the handle's u32 elements (ck_add_scalar_u32); enqueued. */
CDP_API cubert_status_t cdp_add_u32(cubert_client_t *client, const cubert_handle_t *buf, uint32_t delta) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t count;
  cubert_error_t err;
  uint64_t n = cubert_handle_size_in_used(buf) / 4;
  cubert_error_clear(&err);
  count = cubert_cube_count_new_1d((uint32_t)((n + CK_SMALL_BLOCK - 1) / CK_SMALL_BLOCK));
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, buf);
  cubert_launch_arguments_set_u32(&args, 0, delta);
  return note(cubert_client_launch(client, &ck_add_scalar_u32_kernel, &count, &args, &err), &err);
}

CDP_API cubert_status_t cdp_read(cubert_client_t *client, const cubert_handle_t *h, void *dst, uint64_t size) {
  cubert_error_t err;
  cubert_error_clear(&err);
  return note(cubert_client_read_one(client, h, dst, size, &err), &err);
}

CDP_API cubert_status_t cdp_sync(cubert_client_t *client) {
  cubert_error_t err;
  cubert_error_clear(&err);
  return note(cubert_client_sync(client, &err), &err);
}

/* The handle's device address (get_resource_async, then its completion
 * waited on: a completion must be waited on, cubert/client.h). */
CDP_API cubert_status_t cdp_address(cubert_client_t *client, const cubert_handle_t *h,
                                    uint64_t *out_address) {
  cubert_resource_t r;
  cubert_completion_t c;
  cubert_error_t err;
  cubert_status_t st;
  cubert_error_clear(&err);
  st = cubert_client_get_resource_async(client, h, &r, &c, &err);
  if (st != CUBERT_STATUS_OK) return note(st, &err);
  *out_address = r.address;
  return note(cubert_completion_wait(&c, UINT64_MAX, &err), &err);
}

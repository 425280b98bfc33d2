/* SPDX-License-Identifier: MIT */
/*
 * core/client/client_dlpack.c: DLPack export and import (cubert/dlpack.h,
 * docs/interop.md) and the non-blocking get_resource. The checks and the
 * tensor's bookkeeping are made here, on the calling thread; the server
 * resolves and orders (cubert__server_share) or adopts the memory
 * (cubert__server_import_memory, core/server/server_external.c) in one
 * device task.
 */
#include "client/client_internal.h"
#include "memory/handle_table.h"
#include "cubert/dlpack.h"
#include "cubert/driver/arith.h"

void cubert_dlpack_options_initialize(cubert_dlpack_options_t *options) {
  if (options) cubert_memset(options, 0, sizeof(*options));
}

/* ---- checks ---------------------------------------------------------------------------------- */

/* The element's width in bytes, 0 when cubert does not take the dtype. */
static uint64_t dtype_width(cubert_dlpack_dtype_t d) {
  if (d.lanes != 1) return 0;
  switch (d.code) {
  case CUBERT_DLPACK_INT:
  case CUBERT_DLPACK_UINT:
    return d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64 ? d.bits / 8u : 0;
  case CUBERT_DLPACK_FLOAT: return d.bits == 16 || d.bits == 32 || d.bits == 64 ? d.bits / 8u : 0;
  case CUBERT_DLPACK_BFLOAT: return d.bits == 16 ? 2 : 0;
  case CUBERT_DLPACK_COMPLEX: return d.bits == 64 || d.bits == 128 ? d.bits / 8u : 0;
  case CUBERT_DLPACK_BOOL: return d.bits == 8 ? 1 : 0;
  default: return 0;
  }
}

static cubert_status_t dtype_check(cubert_dlpack_dtype_t d, uint64_t *out_width,
                                   cubert_error_t *out_error) {
  uint64_t f[3];
  *out_width = dtype_width(d);
  if (*out_width) return CUBERT_STATUS_OK;
  f[0] = d.code;
  f[1] = d.bits;
  f[2] = d.lanes;
  return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, f, 3,
                          d.lanes != 1 ? "dlpack: vector dtypes (lanes != 1) are not supported"
                                       : "dlpack: a dtype cubert does not take");
}

static cubert_status_t options_check(const cubert_dlpack_options_t *o, bool is_import,
                                     cubert_error_t *out_error) {
  uint64_t f;
  if ((uint32_t)o->stream_kind > (uint32_t)CUBERT_DLPACK_STREAM_NATIVE) {
    f = (uint32_t)o->stream_kind;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "dlpack: unknown stream kind");
  }
  if (o->flags & ~(is_import ? 0u : CUBERT_DLPACK_FLAG_READ_ONLY)) {
    f = o->flags;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "dlpack: unknown option flags");
  }
  if (o->alignment & (o->alignment - 1)) {
    f = o->alignment;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "dlpack: the alignment is not a power of two");
  }
  return CUBERT_STATUS_OK;
}

static uint32_t server_order(cubert_dlpack_stream_kind_t kind) {
  switch (kind) {
  case CUBERT_DLPACK_STREAM_NONE: return CUBERT_SERVER_ORDER_NONE;
  case CUBERT_DLPACK_STREAM_CUBERT: return CUBERT_SERVER_ORDER_STREAM;
  case CUBERT_DLPACK_STREAM_NATIVE: return CUBERT_SERVER_ORDER_NATIVE;
  default: return CUBERT_SERVER_ORDER_HOST;
  }
}

static cubert_status_t rank_unsupported(int64_t ndim, cubert_error_t *out_error) {
  uint64_t f[2];
  f[0] = (uint64_t)ndim;
  f[1] = CUBERT_MAX_RANK;
  return cubert_error_set(out_error, CUBERT_ERROR_STRIDE_UNSUPPORTED_RANK, f, 2,
                          "dlpack: rank above CUBERT_MAX_RANK");
}

/* Bytes a strided tensor spans: 0 with a zero dimension, else
 * (sum (shape - 1) * stride + 1) * width. OVERFLOW past 64 bits. */
static cubert_status_t span_bytes(uint32_t rank, const uint64_t *shape, const uint64_t *strides,
                                  uint64_t width, uint64_t *out_bytes, cubert_error_t *out_error) {
  uint64_t last = 0, term;
  uint32_t i;
  for (i = 0; i < rank; i++)
    if (shape[i] == 0) {
      *out_bytes = 0;
      return CUBERT_STATUS_OK;
    }
  for (i = 0; i < rank; i++)
    if (cubert_u64_mul(shape[i] - 1, strides[i], &term) != CUBERT_STATUS_OK ||
        cubert_u64_add(last, term, &last) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "dlpack: tensor span overflows");
  if (cubert_u64_add(last, 1, &last) != CUBERT_STATUS_OK ||
      cubert_u64_mul(last, width, out_bytes) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "dlpack: tensor span overflows");
  return CUBERT_STATUS_OK;
}

static cubert_status_t no_memory_device(cubert_error_t *out_error) {
  return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0,
                          "dlpack: the driver lacks memory_device / memory_import");
}

cubert_dlpack_device_t cubert_client_dlpack_device(const cubert_client_t *client) {
  cubert_dlpack_device_t d;
  d.device_type = 0;
  d.device_id = 0;
  if (client) cubert__server_memory_device(client->state->server, &d.device_type, &d.device_id);
  return d;
}

/* ---- sharing a binding (export, get_resource_async) ------------------------------------------------ */

typedef struct share_task_t {
  client_task_t head;
  cubert_server_share_t op;
  cubert_resource_t *out;
} share_task_t;

static void share_run(void *context, void *payload) {
  share_task_t *t = (share_task_t *)payload;
  t->head.status = cubert__server_share((cubert_server_t *)context, &t->op, t->out, t->head.error);
}

static cubert_status_t share(cubert_client_t *client, const cubert_handle_t *handle, uint32_t order,
                             uint64_t value, cubert_completion_t *completion,
                             cubert_resource_t *out_resource, cubert_error_t *out_error) {
  share_task_t t;
  t.op.stream = cubert_client_stream(client);
  t.op.binding = handle;
  t.op.order = order;
  t.op.value = value;
  t.op.completion = completion;
  t.out = out_resource;
  return client_submit(client, share_run, &t.head, out_error);
}

cubert_status_t cubert_client_get_resource_async(cubert_client_t *client, const cubert_handle_t *handle,
                                                 cubert_resource_t *out_resource,
                                                 cubert_completion_t *out_completion,
                                                 cubert_error_t *out_error) {
  cubert_resource_t r;
  CLIENT_CHECK(client && handle && out_resource && out_completion,
               "get_resource_async: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(client, handle, out_error));
  CUBERT_RETURN_IF_ERROR(
      share(client, handle, CUBERT_SERVER_ORDER_COMPLETION, 0, out_completion, &r, out_error));
  client_completion_keep(client, out_completion);
  *out_resource = r;
  return CUBERT_STATUS_OK;
}

/* ---- export ------------------------------------------------------------------------------------ */

/* One allocation per exported tensor: what its deleter releases, and both
 * forms of the managed tensor (one of them handed out). */
typedef struct dlpack_export_t {
  cubert_allocator_t allocator;
  device_state_t *state;   /* a reference: the device outlives its clients */
  cubert_handle_t handle;  /* a clone: the memory */
  uint32_t device_key;
  uint64_t address;        /* data as exported */
  int64_t shape[CUBERT_MAX_RANK];
  int64_t strides[CUBERT_MAX_RANK];
  cubert_dlpack_managed_tensor_versioned_t versioned;
  cubert_dlpack_managed_tensor_t unversioned;
} dlpack_export_t;

static void export_free(dlpack_export_t *x) {
  device_state_t *state = x->state;
  (void)cubert__handle_release(state->table, &x->handle);
  cubert_allocator_free(x->allocator, x, sizeof(*x), 0);
  client_device_drop(state); /* last: it may tear the device down */
}

static void export_deleter_versioned(cubert_dlpack_managed_tensor_versioned_t *self) {
  if (self) export_free((dlpack_export_t *)self->manager_ctx);
}

static void export_deleter_unversioned(cubert_dlpack_managed_tensor_t *self) {
  if (self) export_free((dlpack_export_t *)self->manager_ctx);
}

static cubert_status_t export_tensor(cubert_client_t *client, const cubert_copy_descriptor_t *tensor,
                                     cubert_dlpack_dtype_t dtype, const cubert_dlpack_options_t *options,
                                     bool versioned, dlpack_export_t **out_export,
                                     cubert_error_t *out_error) {
  device_state_t *st;
  cubert_dlpack_options_t defaults;
  cubert_dlpack_device_t device;
  cubert_dlpack_tensor_t *dl;
  dlpack_export_t *x = NULL;
  cubert_resource_t r;
  uint64_t width = 0, span = 0, size, f[2];
  uint32_t i;
  cubert_status_t status;
  CLIENT_CHECK(client && tensor && out_export, "dlpack export: NULL argument");
  st = client->state;
  if (!options) {
    cubert_dlpack_options_initialize(&defaults);
    options = &defaults;
  }
  CUBERT_RETURN_IF_ERROR(options_check(options, false, out_error));
  CLIENT_CHECK(versioned || options->flags == 0,
               "dlpack export: the unversioned form has no flags (READ_ONLY)");
  CUBERT_RETURN_IF_ERROR(dtype_check(dtype, &width, out_error));
  if (tensor->rank > CUBERT_MAX_RANK) return rank_unsupported(tensor->rank, out_error);
  if (tensor->elem_size != 0 && tensor->elem_size != width) {
    f[0] = tensor->elem_size;
    f[1] = width;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "dlpack export: elem_size is not the dtype's width");
  }
  for (i = 0; i < tensor->rank; i++)
    CLIENT_CHECK(tensor->shape[i] <= (uint64_t)INT64_MAX && tensor->strides[i] <= (uint64_t)INT64_MAX,
                 "dlpack export: a shape or stride above INT64_MAX");
  CUBERT_RETURN_IF_ERROR(client_check_device(client, &tensor->binding, out_error));
  CUBERT_RETURN_IF_ERROR(
      span_bytes(tensor->rank, tensor->shape, tensor->strides, width, &span, out_error));
  size = cubert_handle_size_in_used(&tensor->binding);
  if (span > size) {
    f[0] = span;
    f[1] = size;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                            "dlpack export: the tensor spans more than the handle's bytes");
  }
  device = cubert_client_dlpack_device(client);
  if (device.device_type == 0) return no_memory_device(out_error);
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc(st->allocator, sizeof(*x), 0, (void **)&x, NULL) ==
                                 CUBERT_STATUS_OK
                             ? CUBERT_STATUS_OK
                             : cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                                                "dlpack export: the managed tensor"));
  x->allocator = st->allocator;
  x->device_key = st->device_key;
  status = cubert__handle_clone(st->table, &tensor->binding, &x->handle);
  if (status != CUBERT_STATUS_OK) { /* the handle died meanwhile, or its count saturated */
    cubert_allocator_free(st->allocator, x, sizeof(*x), 0);
    return cubert_error_set(out_error, status == CUBERT_STATUS_OVERFLOW ? CUBERT_ERROR_OVERFLOW
                                                                        : CUBERT_ERROR_INVALID_HANDLE,
                            NULL, 0, "dlpack export: the handle cannot be retained");
  }
  x->state = st;
  client_device_keep(st);
  status = share(client, &tensor->binding, server_order(options->stream_kind), options->stream, NULL,
                 &r, out_error);
  if (status != CUBERT_STATUS_OK) {
    export_free(x);
    return status;
  }
  x->address = r.address;
  for (i = 0; i < tensor->rank; i++) {
    x->shape[i] = (int64_t)tensor->shape[i];
    x->strides[i] = (int64_t)tensor->strides[i];
  }
  dl = versioned ? &x->versioned.dl_tensor : &x->unversioned.dl_tensor;
  dl->data = (void *)(uintptr_t)r.address;
  dl->device = device;
  dl->ndim = (int32_t)tensor->rank;
  dl->dtype = dtype;
  dl->shape = x->shape;
  dl->strides = x->strides;
  dl->byte_offset = 0;
  if (versioned) {
    x->versioned.version.major = CUBERT_DLPACK_MAJOR_VERSION;
    x->versioned.version.minor = CUBERT_DLPACK_MINOR_VERSION;
    x->versioned.manager_ctx = x;
    x->versioned.deleter = export_deleter_versioned;
    x->versioned.flags = options->flags;
  } else {
    x->unversioned.manager_ctx = x;
    x->unversioned.deleter = export_deleter_unversioned;
  }
  *out_export = x;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_dlpack_export(cubert_client_t *client, const cubert_copy_descriptor_t *tensor,
                                            cubert_dlpack_dtype_t dtype,
                                            const cubert_dlpack_options_t *options,
                                            cubert_dlpack_managed_tensor_versioned_t **out_tensor,
                                            cubert_error_t *out_error) {
  dlpack_export_t *x = NULL;
  CLIENT_CHECK(out_tensor, "dlpack export: NULL argument");
  CUBERT_RETURN_IF_ERROR(export_tensor(client, tensor, dtype, options, true, &x, out_error));
  *out_tensor = &x->versioned;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_dlpack_export_unversioned(cubert_client_t *client,
                                                        const cubert_copy_descriptor_t *tensor,
                                                        cubert_dlpack_dtype_t dtype,
                                                        const cubert_dlpack_options_t *options,
                                                        cubert_dlpack_managed_tensor_t **out_tensor,
                                                        cubert_error_t *out_error) {
  dlpack_export_t *x = NULL;
  CLIENT_CHECK(out_tensor, "dlpack export: NULL argument");
  CUBERT_RETURN_IF_ERROR(export_tensor(client, tensor, dtype, options, false, &x, out_error));
  *out_tensor = &x->unversioned;
  return CUBERT_STATUS_OK;
}

/* ---- import ------------------------------------------------------------------------------------ */

typedef struct import_task_t {
  client_task_t head;
  cubert_server_import_t op;
  cubert_memory_id_t memory;
} import_task_t;

static void import_run(void *context, void *payload) {
  import_task_t *t = (import_task_t *)payload;
  t->head.status = cubert__server_import_memory((cubert_server_t *)context, &t->op, &t->memory,
                                                t->head.error);
}

/* The producer's deleter, as a release of cubert_bytes_t (the server calls
 * it once the memory's last use completed). */
static void release_versioned(void *owner, void *data, uint64_t size) {
  cubert_dlpack_managed_tensor_versioned_t *t = (cubert_dlpack_managed_tensor_versioned_t *)owner;
  (void)data;
  (void)size;
  if (t->deleter) t->deleter(t);
}

static void release_unversioned(void *owner, void *data, uint64_t size) {
  cubert_dlpack_managed_tensor_t *t = (cubert_dlpack_managed_tensor_t *)owner;
  (void)data;
  (void)size;
  if (t->deleter) t->deleter(t);
}

/* The checked form of an incoming tensor. */
typedef struct import_view_t {
  uint64_t pointer, bytes, width;
  cubert_dlpack_imported_t out;
} import_view_t;

static cubert_status_t import_check(cubert_client_t *client, const cubert_dlpack_tensor_t *dl,
                                    const cubert_dlpack_options_t *o, import_view_t *v,
                                    cubert_error_t *out_error) {
  cubert_dlpack_device_t device = cubert_client_dlpack_device(client);
  cubert_copy_descriptor_t *d = &v->out.tensor;
  uint64_t align, f[4];
  int32_t i;
  CUBERT_RETURN_IF_ERROR(options_check(o, true, out_error));
  if (device.device_type == 0) return no_memory_device(out_error);
  if (dl->device.device_type != device.device_type || dl->device.device_id != device.device_id) {
    f[0] = (uint64_t)(int64_t)dl->device.device_type;
    f[1] = (uint64_t)(int64_t)dl->device.device_id;
    f[2] = (uint64_t)(int64_t)device.device_type;
    f[3] = (uint64_t)(int64_t)device.device_id;
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, f, 4,
                            "dlpack import: the tensor lives on another device");
  }
  CUBERT_RETURN_IF_ERROR(dtype_check(dl->dtype, &v->width, out_error));
  if (dl->ndim < 0 || dl->ndim > (int32_t)CUBERT_MAX_RANK) return rank_unsupported(dl->ndim, out_error);
  CLIENT_CHECK(dl->ndim == 0 || dl->shape, "dlpack import: NULL shape");
  cubert_memset(&v->out, 0, sizeof(v->out));
  d->rank = (uint32_t)dl->ndim;
  d->elem_size = v->width;
  for (i = dl->ndim; i-- > 0;) {
    CLIENT_CHECK(dl->shape[i] >= 0, "dlpack import: a negative dimension");
    d->shape[i] = (uint64_t)dl->shape[i];
    if (!dl->strides) { /* compact row-major */
      d->strides[i] = i + 1 == dl->ndim ? 1 : d->strides[i + 1] * (d->shape[i + 1] ? d->shape[i + 1] : 1);
      continue;
    }
    if (dl->strides[i] < 0 || (dl->strides[i] == 0 && dl->shape[i] > 1)) {
      f[0] = (uint64_t)i;
      f[1] = (uint64_t)dl->strides[i];
      return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_STRIDES, f, 2,
                              dl->strides[i] < 0
                                  ? "dlpack import: a negative stride"
                                  : "dlpack import: a zero stride (overlapping elements)");
    }
    d->strides[i] = (uint64_t)dl->strides[i];
  }
  CUBERT_RETURN_IF_ERROR(span_bytes(d->rank, d->shape, d->strides, v->width, &v->bytes, out_error));
  if (v->bytes > 0 && !dl->data)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "dlpack import: NULL data with bytes");
  if (cubert_u64_add((uint64_t)(uintptr_t)dl->data, dl->byte_offset, &v->pointer) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "dlpack import: data + byte_offset");
  align = o->alignment ? o->alignment : v->width;
  if (v->bytes > 0 && v->pointer % align != 0) {
    f[0] = v->pointer;
    f[1] = align;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "dlpack import: data + byte_offset is misaligned");
  }
  v->out.dtype = dl->dtype;
  return CUBERT_STATUS_OK;
}

/* A tensor this very device exported comes back as its own memory: a
 * sub-handle of the exported handle over the tensor's span (the consumer
 * may have moved data / byte_offset within it). Adopting it instead would
 * make the device's teardown wait for a deleter that holds the device. */
static bool import_own(cubert_client_t *client, void (*deleter)(void), void *ctx, import_view_t *v,
                       cubert_error_t *out_error, cubert_status_t *out_status) {
  dlpack_export_t *x = (dlpack_export_t *)ctx;
  uint64_t used, start;
  if ((deleter != (void (*)(void))export_deleter_versioned &&
       deleter != (void (*)(void))export_deleter_unversioned) ||
      !x || x->device_key != client->state->device_key)
    return false;
  used = cubert_handle_size_in_used(&x->handle);
  start = v->pointer - x->address; /* wraps (huge) below the export's first byte */
  if (v->pointer < x->address || start > used || v->bytes > used - start) {
    uint64_t f[3];
    f[0] = v->pointer;
    f[1] = x->address;
    f[2] = used;
    *out_status = cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 3,
                                   "dlpack import: the tensor lies outside the memory this device exported");
    return true;
  }
  *out_status = cubert_client_handle_offset(client, &x->handle, start, used - start - v->bytes,
                                            &v->out.tensor.binding, out_error);
  return true;
}

static cubert_status_t import_adopt(cubert_client_t *client, const cubert_dlpack_options_t *o,
                                    import_view_t *v, cubert_bytes_t owner, cubert_error_t *out_error) {
  device_state_t *st = client->state;
  cubert_handle_t *h = &v->out.tensor.binding;
  import_task_t t;
  cubert_memset(&t, 0, sizeof t);
  t.op.stream = cubert_client_stream(client);
  t.op.pointer = v->pointer;
  t.op.size = v->bytes;
  t.op.order = server_order(o->stream_kind);
  t.op.value = o->stream;
  t.op.owner = owner;
  CUBERT_RETURN_IF_ERROR(client_submit(client, import_run, &t.head, out_error));
  cubert_memset(h, 0, sizeof(*h));
  h->memory = t.memory;
  h->device = st->device.index_id;
  h->device_key = st->device_key;
  h->stream = t.op.stream;
  h->size = v->bytes;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_dlpack_import(cubert_client_t *client,
                                            cubert_dlpack_managed_tensor_versioned_t *tensor,
                                            const cubert_dlpack_options_t *options,
                                            cubert_dlpack_imported_t *out, cubert_error_t *out_error) {
  cubert_dlpack_options_t defaults;
  import_view_t v;
  cubert_bytes_t owner;
  cubert_status_t status = CUBERT_STATUS_OK;
  CLIENT_CHECK(client && tensor && out, "dlpack import: NULL argument");
  if (!options) {
    cubert_dlpack_options_initialize(&defaults);
    options = &defaults;
  }
  if (tensor->version.major != CUBERT_DLPACK_MAJOR_VERSION) {
    uint64_t f[2];
    f[0] = tensor->version.major;
    f[1] = CUBERT_DLPACK_MAJOR_VERSION;
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, f, 2,
                            "dlpack import: another DLPack major version");
  }
  CUBERT_RETURN_IF_ERROR(import_check(client, &tensor->dl_tensor, options, &v, out_error));
  v.out.flags = tensor->flags;
  if (import_own(client, (void (*)(void))tensor->deleter, tensor->manager_ctx, &v, out_error, &status)) {
    if (status != CUBERT_STATUS_OK) return status;
    if (tensor->deleter) tensor->deleter(tensor); /* the clone keeps the memory */
    *out = v.out;
    return CUBERT_STATUS_OK;
  }
  cubert_memset(&owner, 0, sizeof owner);
  owner.owner = tensor;
  owner.release = release_versioned;
  CUBERT_RETURN_IF_ERROR(import_adopt(client, options, &v, owner, out_error));
  *out = v.out;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_dlpack_import_unversioned(cubert_client_t *client,
                                                        cubert_dlpack_managed_tensor_t *tensor,
                                                        const cubert_dlpack_options_t *options,
                                                        cubert_dlpack_imported_t *out,
                                                        cubert_error_t *out_error) {
  cubert_dlpack_options_t defaults;
  import_view_t v;
  cubert_bytes_t owner;
  cubert_status_t status = CUBERT_STATUS_OK;
  CLIENT_CHECK(client && tensor && out, "dlpack import: NULL argument");
  if (!options) {
    cubert_dlpack_options_initialize(&defaults);
    options = &defaults;
  }
  CUBERT_RETURN_IF_ERROR(import_check(client, &tensor->dl_tensor, options, &v, out_error));
  if (import_own(client, (void (*)(void))tensor->deleter, tensor->manager_ctx, &v, out_error, &status)) {
    if (status != CUBERT_STATUS_OK) return status;
    if (tensor->deleter) tensor->deleter(tensor);
    *out = v.out;
    return CUBERT_STATUS_OK;
  }
  cubert_memset(&owner, 0, sizeof owner);
  owner.owner = tensor;
  owner.release = release_unversioned;
  CUBERT_RETURN_IF_ERROR(import_adopt(client, options, &v, owner, out_error));
  *out = v.out;
  return CUBERT_STATUS_OK;
}

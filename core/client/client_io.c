/* SPDX-License-Identifier: MIT */
/* core/client/client_io.c: reads and resources. A read is one
 * task: the server enqueues the copies on the client's stream and arms the
 * completion, which is then waited on without the device. */
#include "client/client_internal.h"
#include "cubert/driver/arith.h"

typedef struct read_task_t {
  client_task_t head;
  cubert_server_read_t op;
} read_task_t;

static void read_run(void *context, void *payload) {
  read_task_t *t = (read_task_t *)payload;
  t->head.status = cubert__server_read((cubert_server_t *)context, &t->op, t->head.error);
}

/* Bytes item i needs in dsts[i]: the handle's bytes in use, or the
 * descriptor's unpadded tensor. */
static cubert_status_t read_need(const cubert_handle_t *h, const cubert_copy_descriptor_t *d,
                                 uint64_t *out_need, cubert_error_t *out_error) {
  uint64_t n;
  uint32_t r;
  if (!d || d->rank == 0) {
    *out_need = cubert_handle_size_in_used(h ? h : &d->binding);
    return CUBERT_STATUS_OK;
  }
  CLIENT_CHECK(d->rank <= CUBERT_MAX_RANK, "read: rank above CUBERT_MAX_RANK");
  n = d->elem_size;
  for (r = 0; r < d->rank; r++)
    if (cubert_u64_mul(n, d->shape[r], &n) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "tensor size overflows");
  *out_need = n;
  return CUBERT_STATUS_OK;
}

/* Checks on the calling thread; then the read task. Exactly one of handles
 * and descriptors is set. */
static cubert_status_t read_items(cubert_client_t *client, const cubert_handle_t *handles,
                                  const cubert_copy_descriptor_t *descs, size_t count,
                                  void *const *dsts, const uint64_t *dst_sizes,
                                  cubert_completion_t *completion, cubert_error_t *out_error) {
  read_task_t t;
  size_t i;
  CLIENT_CHECK(client && (handles || descs) && dsts && dst_sizes && count > 0 &&
               count <= CLIENT_MAX_BATCH,
               "read: NULL argument or count outside 1..64");
  CLIENT_CHECK(completion, "read: NULL completion");
  for (i = 0; i < count; i++) {
    const cubert_handle_t *h = handles ? &handles[i] : &descs[i].binding;
    uint64_t need = 0;
    CUBERT_RETURN_IF_ERROR(client_check_device(client, h, out_error));
    CUBERT_RETURN_IF_ERROR(read_need(handles ? h : NULL, handles ? NULL : &descs[i], &need,
                                     out_error));
    CLIENT_CHECK(dsts[i] || need == 0, "read: NULL destination");
    if (dst_sizes[i] < need) {
      uint64_t f[2];
      f[0] = dst_sizes[i];
      f[1] = need;
      return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                              "read destination smaller than the data");
    }
  }
  t.op.stream = cubert_client_stream(client);
  t.op.handles = handles;
  t.op.descriptors = handles ? NULL : descs;
  t.op.count = count;
  t.op.dsts = dsts;
  t.op.dst_sizes = dst_sizes;
  t.op.completion = completion;
  return client_submit(client, read_run, &t.head, out_error);
}

cubert_status_t cubert_client_read_async(cubert_client_t *client, const cubert_handle_t *handles,
                                         size_t count, void *const *dsts,
                                         const uint64_t *dst_sizes,
                                         cubert_completion_t *out_completion,
                                         cubert_error_t *out_error) {
  CLIENT_CHECK(handles, "read: NULL handles");
  return read_items(client, handles, NULL, count, dsts, dst_sizes, out_completion, out_error);
}

cubert_status_t cubert_client_read(cubert_client_t *client, const cubert_handle_t *handles,
                                   size_t count, void *const *dsts, const uint64_t *dst_sizes,
                                   cubert_error_t *out_error) {
  cubert_completion_t completion;
  CUBERT_RETURN_IF_ERROR(cubert_client_read_async(client, handles, count, dsts, dst_sizes,
                                                  &completion, out_error));
  return cubert_completion_wait(&completion, UINT64_MAX, out_error);
}

cubert_status_t cubert_client_read_one(cubert_client_t *client, const cubert_handle_t *handle,
                                       void *dst, uint64_t dst_size, cubert_error_t *out_error) {
  void *dsts[1];
  uint64_t sizes[1];
  dsts[0] = dst;
  sizes[0] = dst_size;
  CLIENT_CHECK(handle, "read_one: NULL handle");
  return cubert_client_read(client, handle, 1, dsts, sizes, out_error);
}

cubert_status_t cubert_client_read_tensor_async(cubert_client_t *client,
                                                const cubert_copy_descriptor_t *descriptors,
                                                size_t count, void *const *dsts,
                                                const uint64_t *dst_sizes,
                                                cubert_completion_t *out_completion,
                                                cubert_error_t *out_error) {
  CLIENT_CHECK(descriptors, "read: NULL descriptors");
  return read_items(client, NULL, descriptors, count, dsts, dst_sizes, out_completion, out_error);
}

cubert_status_t cubert_client_read_tensor(cubert_client_t *client,
                                          const cubert_copy_descriptor_t *descriptors,
                                          size_t count, void *const *dsts,
                                          const uint64_t *dst_sizes, cubert_error_t *out_error) {
  cubert_completion_t completion;
  CUBERT_RETURN_IF_ERROR(cubert_client_read_tensor_async(client, descriptors, count, dsts,
                                                         dst_sizes, &completion, out_error));
  return cubert_completion_wait(&completion, UINT64_MAX, out_error);
}

cubert_status_t cubert_client_read_one_tensor_async(cubert_client_t *client,
                                                    const cubert_copy_descriptor_t *descriptor,
                                                    void *dst, uint64_t dst_size,
                                                    cubert_completion_t *out_completion,
                                                    cubert_error_t *out_error) {
  void *dsts[1];
  uint64_t sizes[1];
  dsts[0] = dst;
  sizes[0] = dst_size;
  return cubert_client_read_tensor_async(client, descriptor, 1, dsts, sizes, out_completion,
                                         out_error);
}

/* ---- resources ---- */

typedef struct resource_task_t {
  client_task_t head;
  uint64_t stream;
  const cubert_handle_t *handle;
  cubert_resource_t *out;
} resource_task_t;

static void resource_run(void *context, void *payload) {
  resource_task_t *t = (resource_task_t *)payload;
  t->head.status = cubert__server_get_resource((cubert_server_t *)context, t->stream, t->handle, t->out,
                                               t->head.error);
}

cubert_status_t cubert_client_get_resource(cubert_client_t *client, const cubert_handle_t *handle,
                                           cubert_resource_t *out_resource,
                                           cubert_error_t *out_error) {
  resource_task_t t;
  CLIENT_CHECK(client && handle && out_resource, "get_resource: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(client, handle, out_error));
  t.stream = cubert_client_stream(client);
  t.handle = handle;
  t.out = out_resource;
  return client_submit(client, resource_run, &t.head, out_error);
}

/* SPDX-License-Identifier: MIT */
/*
 * core/client/client_comm.c: the client's multi-device operations and
 * collectives: change_client_sync, to_client, to_client_tensor,
 * ensure_init_collective, all_reduce, send, recv, sync_collective.
 *
 * Every server call here runs as a blocking device task: the server only validates
 * and enqueues (the rendezvous with the peers happens on the device's
 * communication stream), so a device thread never waits for another device
 * and the call can return the validation error at once (CubeCL submits
 * without waiting and panics on the device thread instead).
 */
#include "client/client_internal.h"
#include "cubert/comm.h"
#include "memory/handle_table.h"

#define COMM_CHECK(cond, what)                                                          \
  do {                                                                                  \
    if (!(cond))                                                                        \
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, what); \
  } while (0)

/* ---- device tasks ---- */

static void sync_collective_run(void *context, void *payload);
typedef struct sync_collective_task_t {
  client_task_t head;
  uint64_t stream;
} sync_collective_task_t;

#if CUBERT_CONFIG_COLLECTIVES

typedef struct comm_init_task_t {
  client_task_t head;
  const uint32_t *indices;
  size_t count;
} comm_init_task_t;

static void comm_init_run(void *context, void *payload) {
  comm_init_task_t *t = (comm_init_task_t *)payload;
  t->head.status = cubert__server_comm_init((cubert_server_t *)context, t->indices, t->count, t->head.error);
}

/* One collective; sync_after: a sync_collective on the same stream right
 * after it succeeded (to_client_tensor's receiver). */
typedef struct collective_task_t {
  client_task_t head;
  cubert_server_collective_t op;
  int sync_after;
} collective_task_t;

static void collective_run(void *context, void *payload) {
  collective_task_t *t = (collective_task_t *)payload;
  cubert_server_t *server = (cubert_server_t *)context;
  t->head.status = cubert__server_collective(server, &t->op, t->head.error);
  if (t->head.status == CUBERT_STATUS_OK && t->sync_after)
    t->head.status = cubert__server_sync_collective(server, t->op.stream, t->head.error);
}

static void collective_init(collective_task_t *t, cubert_client_t *client, uint32_t kind,
                            uint32_t dtype) {
  cubert_memset(t, 0, sizeof(*t));
  t->op.stream = cubert_client_stream(client);
  t->op.kind = kind;
  t->op.dtype = dtype;
}

#endif /* CUBERT_CONFIG_COLLECTIVES */

/* The index ids of `devices`, which must all be of this client's device type. */
static cubert_status_t device_indices(const cubert_client_t *client,
                                      const cubert_device_id_t *devices, size_t count,
                                      uint32_t *out_indices, cubert_error_t *out_error) {
  size_t i;
  uint16_t type = client->state->device.type_id;
  COMM_CHECK(devices && count > 0, "collective: NULL or empty device list");
  if (count > CUBERT_COMMUNICATION_MAX_DEVICES) {
    uint64_t f[2];
    f[0] = count;
    f[1] = CUBERT_COMMUNICATION_MAX_DEVICES;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                            "collective: too many devices");
  }
  for (i = 0; i < count; i++) {
    if (devices[i].type_id != type) {
      uint64_t f[2];
      f[0] = devices[i].type_id;
      f[1] = type;
      return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, f, 2,
                              "collective: a device of another driver type");
    }
    out_indices[i] = devices[i].index_id;
  }
  return CUBERT_STATUS_OK;
}


static void sync_collective_run(void *context, void *payload) {
  sync_collective_task_t *t = (sync_collective_task_t *)payload;
  t->head.status = cubert__server_sync_collective((cubert_server_t *)context, t->stream, t->head.error);
}

static cubert_status_t check_dtype(uint32_t dtype, cubert_error_t *out_error) {
  if (cubert_comm_dtype_size(dtype) == 0) {
    uint64_t f = dtype;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "unknown collective dtype");
  }
  return CUBERT_STATUS_OK;
}

/* The pair {self, peer} as device ids, after checking the peer. */
static cubert_status_t pair_of(const cubert_client_t *client, cubert_device_id_t peer,
                               cubert_device_id_t *out_pair, cubert_error_t *out_error) {
  cubert_device_id_t self = client->state->device;
  if (peer.type_id != self.type_id) {
    uint64_t f[2];
    f[0] = peer.type_id;
    f[1] = self.type_id;
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, f, 2,
                            "peer device of another driver type");
  }
  if (peer.index_id == self.index_id) {
    uint64_t f = peer.index_id;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "a device cannot send to or receive from itself");
  }
  out_pair[0] = self;
  out_pair[1] = peer;
  return CUBERT_STATUS_OK;
}

/* ---- collectives (without them: the same argument checks, then COMPILED_OUT) ---- */

#if CUBERT_CONFIG_COLLECTIVES

cubert_status_t cubert_client_ensure_init_collective(cubert_client_t *client,
                                                     const cubert_device_id_t *devices,
                                                     size_t count, cubert_error_t *out_error) {
  uint32_t indices[CUBERT_COMMUNICATION_MAX_DEVICES];
  comm_init_task_t t;
  COMM_CHECK(client, "ensure_init_collective: NULL client");
  CUBERT_RETURN_IF_ERROR(device_indices(client, devices, count, indices, out_error));
  t.indices = indices;
  t.count = count;
  return client_submit(client, comm_init_run, &t.head, out_error);
}

cubert_status_t cubert_client_all_reduce(cubert_client_t *client, const cubert_handle_t *src,
                                         const cubert_handle_t *dst, uint32_t dtype,
                                         const cubert_device_id_t *devices, size_t count,
                                         cubert_reduce_operation_t op, cubert_error_t *out_error) {
  uint32_t indices[CUBERT_COMMUNICATION_MAX_DEVICES];
  collective_task_t t;
  COMM_CHECK(client && src && dst, "all_reduce: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(client, src, out_error));
  CUBERT_RETURN_IF_ERROR(client_check_device(client, dst, out_error));
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, out_error));
  if (!cubert_reduce_operation_is_valid(op)) {
    uint64_t f = (uint64_t)op;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "all_reduce: unknown reduce operation");
  }
  CUBERT_RETURN_IF_ERROR(device_indices(client, devices, count, indices, out_error));
  CUBERT_RETURN_IF_ERROR(cubert_client_ensure_init_collective(client, devices, count, out_error));
  collective_init(&t, client, CUBERT_COLLECTIVE_ALL_REDUCE, dtype);
  t.op.src = src;
  t.op.dst = dst;
  t.op.op = (uint32_t)op;
  t.op.devices = indices;
  t.op.device_count = count;
  return client_submit(client, collective_run, &t.head, out_error);
}


cubert_status_t cubert_client_send(cubert_client_t *client,
                                   const cubert_copy_descriptor_t *descriptor, uint32_t dtype,
                                   cubert_device_id_t dst_device, cubert_error_t *out_error) {
  cubert_device_id_t pair[2];
  uint32_t indices[2];
  collective_task_t t;
  COMM_CHECK(client && descriptor, "send: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(client, &descriptor->binding, out_error));
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, out_error));
  CUBERT_RETURN_IF_ERROR(pair_of(client, dst_device, pair, out_error));
  CUBERT_RETURN_IF_ERROR(cubert_client_ensure_init_collective(client, pair, 2, out_error));
  collective_init(&t, client, CUBERT_COLLECTIVE_SEND, dtype);
  t.op.src = &descriptor->binding;
  t.op.peer = dst_device.index_id;
  indices[0] = pair[0].index_id;
  indices[1] = pair[1].index_id;
  t.op.devices = indices;
  t.op.device_count = 2;
  return client_submit(client, collective_run, &t.head, out_error);
}

static cubert_status_t recv_with(cubert_client_t *client, uint64_t size, uint32_t dtype,
                                 cubert_device_id_t src_device, int sync_after,
                                 cubert_handle_t *out_handle, cubert_error_t *out_error) {
  device_state_t *s;
  cubert_device_id_t pair[2];
  uint32_t indices[2];
  cubert_handle_t handle;
  collective_task_t t;
  cubert_status_t status;
  COMM_CHECK(client && out_handle, "recv: NULL argument");
  s = client->state;
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, out_error));
  if (size % cubert_comm_dtype_size(dtype)) {
    uint64_t f[2];
    f[0] = size;
    f[1] = cubert_comm_dtype_size(dtype);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "recv: size is not a multiple of the dtype's width");
  }
  CUBERT_RETURN_IF_ERROR(pair_of(client, src_device, pair, out_error));
  CUBERT_RETURN_IF_ERROR(cubert_client_ensure_init_collective(client, pair, 2, out_error));
  status = cubert__handle_create(s->table, s->device.index_id, cubert_client_stream(client), 0,
                                 size, &handle);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                                           ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                           : CUBERT_ERROR_OUT_OF_RANGE,
                            NULL, 0, "recv: no handle slot for the destination");
  collective_init(&t, client, CUBERT_COLLECTIVE_RECV, dtype);
  t.op.dst = &handle;
  t.op.peer = src_device.index_id;
  indices[0] = pair[0].index_id;
  indices[1] = pair[1].index_id;
  t.op.devices = indices;
  t.op.device_count = 2;
  t.sync_after = sync_after;
  status = client_submit(client, collective_run, &t.head, out_error);
  if (status != CUBERT_STATUS_OK) {
    (void)cubert__handle_release(s->table, &handle);
    return status;
  }
  *out_handle = handle;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_recv(cubert_client_t *client, uint64_t size, uint32_t dtype,
                                   cubert_device_id_t src_device, cubert_handle_t *out_handle,
                                   cubert_error_t *out_error) {
  return recv_with(client, size, dtype, src_device, 0, out_handle, out_error);
}

/* ---- moving data between clients ---- */

cubert_status_t cubert_client_to_client_tensor(cubert_client_t *src,
                                               const cubert_copy_descriptor_t *descriptor,
                                               cubert_client_t *dst, uint32_t dtype,
                                               cubert_handle_t *out_handle,
                                               cubert_error_t *out_error) {
  cubert_device_id_t src_id, dst_id, pair[2];
  uint64_t size;
  cubert_handle_t handle;
  cubert_status_t status;
  COMM_CHECK(src && descriptor && dst && out_handle, "to_client_tensor: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(src, &descriptor->binding, out_error));
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, out_error));
  src_id = src->state->device;
  dst_id = dst->state->device;
  CUBERT_RETURN_IF_ERROR(pair_of(src, dst_id, pair, out_error));
  size = cubert_handle_size_in_used(&descriptor->binding);
  if (size % cubert_comm_dtype_size(dtype)) {
    uint64_t f[2];
    f[0] = size;
    f[1] = cubert_comm_dtype_size(dtype);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "to_client_tensor: size is not a multiple of the dtype's width");
  }
  /* both devices join the pair's communicator before either side enqueues */
  CUBERT_RETURN_IF_ERROR(cubert_client_ensure_init_collective(src, pair, 2, out_error));
  CUBERT_RETURN_IF_ERROR(cubert_client_ensure_init_collective(dst, pair, 2, out_error));
  /* receiver first: if it fails nothing was sent */
  CUBERT_RETURN_IF_ERROR(recv_with(dst, size, dtype, src_id, 1, &handle, out_error));
  status = cubert_client_send(src, descriptor, dtype, dst_id, out_error);
  if (status != CUBERT_STATUS_OK) {
    /* the recv is queued and will fail when its peer does not arrive */
    (void)cubert__handle_release(dst->state->table, &handle);
    return status;
  }
  /* src's stream waits for the send too: later writes to the source (or its
   * reuse after a release) cannot reach the copy, as with the blocking read
   * of change_client_sync (seen on two H200s: a write right after raced the
   * peer copy) */
  status = cubert_client_sync_collective(src, out_error);
  if (status != CUBERT_STATUS_OK) {
    (void)cubert__handle_release(dst->state->table, &handle);
    return status;
  }
  *out_handle = handle;
  return CUBERT_STATUS_OK;
}

#else /* !CUBERT_CONFIG_COLLECTIVES: the API links and says so */

#define COLLECTIVES_OMITTED "collectives (CUBERT_CONFIG_COLLECTIVES=0)"

static cubert_status_t collectives_omitted(cubert_error_t *out_error) {
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0, COLLECTIVES_OMITTED);
}

cubert_status_t cubert_client_ensure_init_collective(cubert_client_t *client,
                                                     const cubert_device_id_t *devices,
                                                     size_t count, cubert_error_t *out_error) {
  uint32_t indices[CUBERT_COMMUNICATION_MAX_DEVICES];
  COMM_CHECK(client, "ensure_init_collective: NULL client");
  CUBERT_RETURN_IF_ERROR(device_indices(client, devices, count, indices, out_error));
  return collectives_omitted(out_error);
}

cubert_status_t cubert_client_all_reduce(cubert_client_t *client, const cubert_handle_t *src,
                                         const cubert_handle_t *dst, uint32_t dtype,
                                         const cubert_device_id_t *devices, size_t count,
                                         cubert_reduce_operation_t op, cubert_error_t *out_error) {
  uint32_t indices[CUBERT_COMMUNICATION_MAX_DEVICES];
  COMM_CHECK(client && src && dst, "all_reduce: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(client, src, out_error));
  CUBERT_RETURN_IF_ERROR(client_check_device(client, dst, out_error));
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, out_error));
  COMM_CHECK(cubert_reduce_operation_is_valid(op), "all_reduce: unknown reduce operation");
  CUBERT_RETURN_IF_ERROR(device_indices(client, devices, count, indices, out_error));
  return collectives_omitted(out_error);
}

cubert_status_t cubert_client_send(cubert_client_t *client,
                                   const cubert_copy_descriptor_t *descriptor, uint32_t dtype,
                                   cubert_device_id_t dst_device, cubert_error_t *out_error) {
  cubert_device_id_t pair[2];
  COMM_CHECK(client && descriptor, "send: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(client, &descriptor->binding, out_error));
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, out_error));
  CUBERT_RETURN_IF_ERROR(pair_of(client, dst_device, pair, out_error));
  return collectives_omitted(out_error);
}

cubert_status_t cubert_client_recv(cubert_client_t *client, uint64_t size, uint32_t dtype,
                                   cubert_device_id_t src_device, cubert_handle_t *out_handle,
                                   cubert_error_t *out_error) {
  cubert_device_id_t pair[2];
  COMM_CHECK(client && out_handle, "recv: NULL argument");
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, out_error));
  COMM_CHECK(size % cubert_comm_dtype_size(dtype) == 0,
             "recv: size is not a multiple of the dtype's width");
  CUBERT_RETURN_IF_ERROR(pair_of(client, src_device, pair, out_error));
  return collectives_omitted(out_error);
}

cubert_status_t cubert_client_to_client_tensor(cubert_client_t *src,
                                               const cubert_copy_descriptor_t *descriptor,
                                               cubert_client_t *dst, uint32_t dtype,
                                               cubert_handle_t *out_handle,
                                               cubert_error_t *out_error) {
  cubert_device_id_t pair[2];
  uint64_t size;
  COMM_CHECK(src && descriptor && dst && out_handle, "to_client_tensor: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(src, &descriptor->binding, out_error));
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, out_error));
  CUBERT_RETURN_IF_ERROR(pair_of(src, dst->state->device, pair, out_error));
  size = cubert_handle_size_in_used(&descriptor->binding);
  COMM_CHECK(size % cubert_comm_dtype_size(dtype) == 0,
             "to_client_tensor: size is not a multiple of the dtype's width");
  return collectives_omitted(out_error);
}

#endif /* CUBERT_CONFIG_COLLECTIVES */

/* OK at once when no collective was ever enqueued (always, without collectives). */
cubert_status_t cubert_client_sync_collective(cubert_client_t *client, cubert_error_t *out_error) {
  sync_collective_task_t t;
  COMM_CHECK(client, "sync_collective: NULL client");
  t.stream = cubert_client_stream(client);
  return client_submit(client, sync_collective_run, &t.head, out_error);
}

cubert_status_t cubert_client_change_client_sync(cubert_client_t *src,
                                                 const cubert_copy_descriptor_t *descriptor,
                                                 cubert_client_t *dst,
                                                 cubert_memory_layout_t *out_layout,
                                                 cubert_error_t *out_error) {
  cubert_layout_descriptor_t layout;
  uint64_t size = 1;
  uint32_t r;
  void *buffer = NULL;
  void *dsts[1];
  const void *datas[1];
  cubert_status_t status;
  cubert_allocator_t allocator;
  COMM_CHECK(src && descriptor && dst && out_layout, "change_client_sync: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(src, &descriptor->binding, out_error));
  COMM_CHECK(descriptor->rank <= CUBERT_MAX_RANK, "change_client_sync: rank above CUBERT_MAX_RANK");
  cubert_memset(&layout, 0, sizeof layout);
  layout.strategy = CUBERT_LAYOUT_CONTIGUOUS;
  if (descriptor->rank == 0) {
    layout.rank = 1;
    layout.shape[0] = cubert_handle_size_in_used(&descriptor->binding);
    layout.elem_size = 1;
  } else {
    layout.rank = descriptor->rank;
    layout.elem_size = descriptor->elem_size;
    for (r = 0; r < descriptor->rank; r++) layout.shape[r] = descriptor->shape[r];
  }
  for (r = 0; r < layout.rank; r++) {
    if (layout.shape[r] && size > UINT64_MAX / layout.shape[r])
      return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                              "change_client_sync: tensor size overflows");
    size *= layout.shape[r];
  }
  if (layout.elem_size && size > UINT64_MAX / layout.elem_size)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                            "change_client_sync: tensor size overflows");
  size *= layout.elem_size;
  if (size > (uint64_t)SIZE_MAX)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, &size, 1,
                            "change_client_sync: tensor larger than the address space");
  allocator = src->state->allocator;
  if (size && cubert_allocator_malloc(allocator, (size_t)size, 0, &buffer,
                                      NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &size, 1,
                            "change_client_sync: host buffer");
  /* blocking read on the source, then a non-blocking upload to the destination */
  dsts[0] = buffer ? buffer : (void *)&layout;
  status = cubert_client_read_tensor(src, descriptor, 1, dsts, &size, out_error);
  if (status == CUBERT_STATUS_OK) {
    datas[0] = dsts[0];
    status = cubert_client_create_tensors_from_slices(dst, &layout, datas, 1, out_layout, out_error);
  }
  if (buffer) cubert_allocator_free(allocator, buffer, (size_t)size, 0);
  return status;
}

cubert_status_t cubert_client_to_client(cubert_client_t *src, const cubert_handle_t *handle,
                                        cubert_client_t *dst, uint32_t dtype,
                                        cubert_handle_t *out_handle, cubert_error_t *out_error) {
  cubert_copy_descriptor_t desc;
  cubert_memory_layout_t layout;
  COMM_CHECK(src && handle && dst && out_handle, "to_client: NULL argument");
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, out_error));
  cubert_memset(&desc, 0, sizeof desc);
  desc.binding = *handle;
  desc.rank = 1;
  desc.shape[0] = cubert_handle_size_in_used(handle);
  desc.strides[0] = 1;
  desc.elem_size = 1;
#if CUBERT_CONFIG_COLLECTIVES
  /* another device of the same type, both with collectives: through them */
  if ((src->state->properties.features & CUBERT_FEATURE_COLLECTIVES) &&
      (dst->state->properties.features & CUBERT_FEATURE_COLLECTIVES) &&
      src->state->device.type_id == dst->state->device.type_id &&
      src->state->device.index_id != dst->state->device.index_id)
    return cubert_client_to_client_tensor(src, &desc, dst, dtype, out_handle, out_error);
#endif
  CUBERT_RETURN_IF_ERROR(cubert_client_change_client_sync(src, &desc, dst, &layout, out_error));
  *out_handle = layout.memory;
  return CUBERT_STATUS_OK;
}

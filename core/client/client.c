/* core/client/client.c: the compute client (spec 1). Each operation is computed on the
 * calling thread where CubeCL does so (layouts, handles), then handed to the
 * server through the device handle. */
#include "base/internal.h"
#include "base/atomic.h"
#include "cubert/client.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cubert/memory.h"

#include "client/client_internal.h"

/* ---- lifecycle ---------------------------------------------------------------- */

static cubert_status_t client_new(device_state_t *state, bool pinned, uint64_t stream,
                                  cubert_client_t **out_client) {
  cubert_client_t *c = NULL;
  uint32_t refs = cubert_atomic_load_u32(&state->refs);
  /* retain refuses 0 -> 1: a device being torn down cannot be loaded again */
  do {
    if (refs == 0) return CUBERT_STATUS_UNAVAILABLE;
    if (refs >= CUBERT_HANDLE_MAX_COUNT) return CUBERT_STATUS_OVERFLOW;
  } while (!cubert_atomic_cas_u32(&state->refs, &refs, refs + 1));
  if (cubert_allocator_malloc(state->allocator, sizeof(*c), 0, (void **)&c) != CUBERT_STATUS_OK) {
    cubert_atomic_fetch_sub_u32(&state->refs, 1);
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  c->state = state;
  c->pinned = pinned;
  c->stream = stream;
  *out_client = c;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_init(cubert_allocator_t allocator,
                                   const cubert_client_config_t *config, cubert_server_t *server,
                                   cubert_device_handle_t device_handle,
                                   cubert_client_t **out_client, cubert_error_t *out_error) {
  device_state_t *state = NULL;
  cubert_client_t *client = NULL;
  cubert_status_t status;
  uint32_t max_handles;
  if (!config || !server || !server->vtable || !device_handle.vtable || !out_client)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "client init needs a config, a server and a device handle");
  status = cubert_allocator_malloc(allocator, sizeof(*state), 0, (void **)&state);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "client state");
  state->allocator = allocator;
  state->config = *config;
  state->config.table = NULL;
  state->server = server;
  state->handle = device_handle;
  max_handles = config->max_handles ? config->max_handles : (1u << 20);
  status = CUBERT_STATUS_OK;
  if (config->table)
    state->table = config->table;
  else
    status = cubert_handle_table_create(allocator, max_handles,
                                        (uint8_t)(config->device.index_id & 0xFFu), &state->table);
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, state, sizeof(*state), 0);
    return cubert_error_set(out_error, cubert_error_kind_status(CUBERT_ERROR_HOST_OUT_OF_MEMORY) ==
                                               status
                                           ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                           : CUBERT_ERROR_INVALID_ARGUMENT,
                            NULL, 0, "handle table");
  }
  if (server->vtable->properties) server->vtable->properties(server, &state->properties);
  cubert_atomic_store_u32(&state->refs, 1);
  status = cubert_allocator_malloc(allocator, sizeof(*client), 0, (void **)&client);
  if (status != CUBERT_STATUS_OK) {
    if (!config->table) cubert_handle_table_destroy(state->table);
    cubert_allocator_free(allocator, state, sizeof(*state), 0);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "client");
  }
  client->state = state;
  client->pinned = false;
  client->stream = 0;
  status = cubert_device_registry_insert(config->device, state);
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, client, sizeof(*client), 0);
    if (!config->table) cubert_handle_table_destroy(state->table);
    cubert_allocator_free(allocator, state, sizeof(*state), 0);
    if (status == CUBERT_STATUS_ALREADY_EXISTS)
      return cubert_error_set(out_error, CUBERT_ERROR_SERVICE_CREATION, NULL, 0,
                              "Can't create a new client on an already registered server");
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0,
                            "device registry is full");
  }
  *out_client = client;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_load(cubert_device_id_t device, cubert_client_t **out_client) {
  void *p = NULL;
  if (!out_client) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cubert_device_registry_lookup(device, &p));
  return client_new((device_state_t *)p, false, 0, out_client);
}

cubert_status_t cubert_client_clone(const cubert_client_t *client, cubert_client_t **out_client) {
  if (!client || !out_client) return CUBERT_STATUS_INVALID_ARGUMENT;
  return client_new(client->state, client->pinned, client->stream, out_client);
}

void cubert_client_release(cubert_client_t *client) {
  device_state_t *state;
  cubert_allocator_t allocator;
  if (!client) return;
  state = client->state;
  allocator = state->allocator;
  cubert_allocator_free(allocator, client, sizeof(*client), 0);
  if (cubert_atomic_fetch_sub_u32(&state->refs, 1) != 1) return;
  /* Last client: deregister, drain the device, destroy in dependency order. */
  (void)cubert_device_registry_remove(state->config.device, state);
  state->handle.vtable->destroy(state->handle.self);
  client_profile_destroy(state);
  state->server->vtable->destroy(state->server);
  cubert_handle_table_destroy(state->table);
  cubert_allocator_free(allocator, state, sizeof(*state), 0);
}

void cubert_client_set_stream(cubert_client_t *client, uint64_t stream) {
  if (!client) return;
  client->pinned = true;
  client->stream = stream;
}

void cubert_client_unpin(cubert_client_t *client) {
  if (client) client->pinned = false;
}

uint64_t cubert_client_stream(const cubert_client_t *client) {
  const device_state_t *s;
  if (!client) return 0;
  if (client->pinned) return client->stream;
  s = client->state;
  return s->config.stream_source ? s->config.stream_source(s->config.stream_source_self) : 0;
}

cubert_device_id_t cubert_client_device(const cubert_client_t *client) {
  cubert_device_id_t none = {0, 0};
  return client ? client->state->config.device : none;
}

void cubert_client_properties(const cubert_client_t *client,
                              cubert_device_properties_t *out_properties) {
  if (client && out_properties) *out_properties = client->state->properties;
}

uint64_t cubert_client_features(const cubert_client_t *client) {
  return client ? client->state->properties.features : 0;
}

cubert_handle_table_t *cubert_client_handle_table(const cubert_client_t *client) {
  return client ? client->state->table : NULL;
}

/* ---- handles ------------------------------------------------------------------ */

cubert_status_t client_check_device(const cubert_client_t *client, const cubert_handle_t *handle,
                                    cubert_error_t *out_error) {
  if (!handle) return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "NULL handle");
  if (handle->device != client->state->config.device.index_id) {
    uint64_t f[2];
    f[0] = handle->device;
    f[1] = client->state->config.device.index_id;
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, f, 2,
                            "handle belongs to another device");
  }
  /* Client calls take handles: the user must still hold a handle reference.
   * (The memory may stay alive a little longer, pinned by queued work.) */
  if (cubert_memory_id_handle_count(client->state->table, handle->memory) == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0,
                            "handle was released or never issued");
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_handle_release(cubert_client_t *client,
                                             const cubert_handle_t *handle) {
  if (!client || !handle) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (handle->device != client->state->config.device.index_id)
    return CUBERT_STATUS_DEVICE_MISMATCH;
  return cubert_handle_release(client->state->table, handle);
}

cubert_status_t cubert_client_handle_clone(cubert_client_t *client, const cubert_handle_t *handle,
                                           cubert_handle_t *out_handle) {
  if (!client || !handle || !out_handle) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (handle->device != client->state->config.device.index_id)
    return CUBERT_STATUS_DEVICE_MISMATCH;
  return cubert_handle_clone(client->state->table, handle, out_handle);
}

cubert_status_t cubert_client_handle_offset(cubert_client_t *client, const cubert_handle_t *handle,
                                            uint64_t offset_start, uint64_t offset_end,
                                            cubert_handle_t *out_handle) {
  if (!client || !handle || !out_handle) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (handle->device != client->state->config.device.index_id)
    return CUBERT_STATUS_DEVICE_MISMATCH;
  return cubert_handle_offset(client->state->table, handle, offset_start, offset_end, out_handle);
}

/* ---- device calls ----------------------------------------------------------------
 * Every server call runs as a blocking device task with its arguments on the
 * caller's stack. The server call itself only enqueues stream work, so the
 * stream-level behaviour stays asynchronous. */

static void task_call(void *context, void *payload) {
  cubert_server_t *server = (cubert_server_t *)context;
  const cubert_server_vtable_t *v = server->vtable;
  client_call_t *call = (client_call_t *)payload;
  call->ran = 1;
  switch (call->op) {
    case OP_CREATE:
      call->status = v->initialize_memory(server, (const cubert_handle_t *)call->a, call->u0,
                                          call->stream, call->error);
      if (call->status == CUBERT_STATUS_OK && call->count)
        call->status = v->write(server, (const cubert_copy_descriptor_t *)call->b,
                                (cubert_bytes_t *)call->d, call->count, call->stream, call->error);
      else if (call->count && call->d) {
        /* initialize failed: the data never reached the server; release it here */
        size_t i;
        cubert_bytes_t *bytes = (cubert_bytes_t *)call->d;
        for (i = 0; i < call->count; i++)
          if (bytes[i].release) bytes[i].release(bytes[i].owner, bytes[i].data, bytes[i].size);
      }
      break;
    case OP_WRITE:
      call->status = v->write(server, (const cubert_copy_descriptor_t *)call->b,
                              (cubert_bytes_t *)call->d, call->count, call->stream, call->error);
      break;
    case OP_READ:
      call->status = v->read(server, (const cubert_copy_descriptor_t *)call->b,
                             (void *const *)call->c, (const uint64_t *)call->a, call->count,
                             call->stream, (cubert_completion_t *)call->e, call->error);
      break;
    case OP_SYNC:
      call->status = v->sync(server, call->stream, (cubert_completion_t *)call->e, call->error);
      break;
    case OP_FLUSH:
      call->status = v->flush(server, call->stream, call->error);
      break;
    case OP_LAUNCH:
      call->status = v->launch(server, (const struct cubert_kernel_t *)call->a,
                               (const struct cubert_cube_count_t *)call->b,
                               (const cubert_launch_arguments_t *)call->c,
                               (cubert_execution_mode_t)call->u0, CUBERT_LAUNCH_EXECUTE,
                               call->stream, call->error);
      break;
    case OP_RESOURCE:
      call->status = v->get_resource(server, (const cubert_binding_t *)call->a, call->stream,
                                     (cubert_resource_t *)call->d, call->error);
      break;
    case OP_USAGE:
      call->status = v->memory_usage(server, call->stream, (cubert_memory_usage_t *)call->d,
                                     call->error);
      break;
    case OP_CLEANUP:
      call->status = v->memory_cleanup(server, call->stream, call->error);
      break;
    case OP_MODE:
      call->status = v->allocation_mode(server, (cubert_memory_allocation_mode_t)call->u0, call->stream,
                                        call->error);
      break;
    default:
      call->status = cubert_error_set(call->error, CUBERT_ERROR_SERVER_GENERIC, NULL, 0,
                                      "unknown client call");
      break;
  }
}

cubert_status_t client_device_call(cubert_client_t *client, client_call_t *call) {
  cubert_status_t status;
  call->stream = cubert_client_stream(client);
  call->status = CUBERT_STATUS_INTERNAL;
  status = client->state->handle.vtable->submit_blocking(client->state->handle.self, task_call, call);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(call->error, CUBERT_ERROR_DEVICE_LOST, NULL, 0,
                            "the device handle refused the call");
  return call->status;
}

void client_call_init(client_call_t *call, int op, cubert_error_t *out_error) {
  cubert_memset(call, 0, sizeof(*call));
  call->op = op;
  call->error = out_error;
}

/* ---- allocation / upload ---------------------------------------------------------- */

static void release_owned_copy(void *owner, void *data, uint64_t size) {
  cubert_allocator_free(*(cubert_allocator_t *)owner, data, (size_t)size, 0);
}

#define CLIENT_MAX_BATCH 64 /* tensors per create_tensors call */

static void release_owned_from(cubert_bytes_t *owned, size_t from, size_t count) {
  size_t i;
  if (!owned) return;
  for (i = from; i < count; i++)
    if (owned[i].release) owned[i].release(owned[i].owner, owned[i].data, owned[i].size);
}

/* The shared create path (spec 1.2 do_create). data may be NULL (empty) or
 * have NULL entries; owned (NULL, or `count` buffers) is moved instead of
 * copied, and released on every failure. */
static cubert_status_t do_create(cubert_client_t *client,
                                 const cubert_layout_descriptor_t *descriptors, size_t count,
                                 const void *const *data, cubert_bytes_t *owned,
                                 cubert_memory_layout_t *out_layouts, cubert_error_t *out_error) {
  device_state_t *s = client->state;
  cubert_layout_t layouts[CLIENT_MAX_BATCH];
  cubert_copy_descriptor_t descs[CLIENT_MAX_BATCH];
  cubert_bytes_t bytes[CLIENT_MAX_BATCH];
  cubert_memory_layout_t results[CLIENT_MAX_BATCH];
  cubert_handle_t base;
  uint64_t total = 0, stream = cubert_client_stream(client);
  size_t i, made = 0, nbytes = 0, moved = 0;
  cubert_status_t status;
  client_call_t call;
  if (count == 0 || count > CLIENT_MAX_BATCH || !descriptors || !out_layouts) {
    release_owned_from(owned, 0, count);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "create needs 1..64 descriptors and an output array");
  }
  status = cubert_layout_policy_apply(&s->config.layout_policy, descriptors, count, layouts, &total,
                                      out_error);
  if (status != CUBERT_STATUS_OK) {
    release_owned_from(owned, 0, count);
    return status;
  }
  status = cubert_handle_create(s->table, s->config.device.index_id, stream, 0, total, &base);
  if (status != CUBERT_STATUS_OK) {
    release_owned_from(owned, 0, count);
    return cubert_error_set(out_error, status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                                           ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                           : CUBERT_ERROR_OUT_OF_RANGE,
                            NULL, 0, "no handle slot for the allocation");
  }
  for (i = 0; i < count && status == CUBERT_STATUS_OK; i++) {
    uint32_t r;
    status = cubert_handle_offset(s->table, &base, layouts[i].offset_start, layouts[i].offset_end,
                                  &results[i].memory);
    if (status != CUBERT_STATUS_OK) break;
    made++;
    results[i].rank = layouts[i].rank;
    for (r = 0; r < CUBERT_MAX_RANK; r++) results[i].strides[r] = r < layouts[i].rank ? layouts[i].strides[r] : 0;
    if (owned || (data && data[i])) {
      uint64_t len = 1;
      cubert_copy_descriptor_t *d = &descs[nbytes];
      cubert_memset(d, 0, sizeof(*d));
      d->binding = results[i].memory;
      d->rank = descriptors[i].rank;
      for (r = 0; r < descriptors[i].rank; r++) {
        d->shape[r] = descriptors[i].shape[r];
        d->strides[r] = layouts[i].strides[r];
        len *= descriptors[i].shape[r];
      }
      d->elem_size = descriptors[i].elem_size;
      len *= descriptors[i].elem_size; /* cannot overflow: the layout checked it */
      if (owned) {
        bytes[nbytes] = owned[i];
        moved = i + 1; /* owned[0..moved) now sit in bytes[] */
      } else {
        void *copy = NULL;
        bytes[nbytes].data = NULL;
        bytes[nbytes].size = len;
        bytes[nbytes].property = CUBERT_ALLOCATION_NATIVE;
        bytes[nbytes].owner = &s->allocator;
        bytes[nbytes].release = release_owned_copy;
        if (len) {
          status = cubert_allocator_malloc(s->allocator, (size_t)len, 0, &copy);
          if (status != CUBERT_STATUS_OK) {
            cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &len, 1,
                             "copy of the data to upload");
            break;
          }
          cubert_memcpy(copy, data[i], (size_t)len);
        } else {
          bytes[nbytes].release = NULL;
        }
        bytes[nbytes].data = copy;
      }
      nbytes++;
    }
  }
  if (status == CUBERT_STATUS_OK) {
    client_call_init(&call, OP_CREATE, out_error);
    call.a = &base;
    call.u0 = total;
    call.b = descs;
    call.d = bytes;
    call.count = nbytes;
    status = client_device_call(client, &call);
    if (call.ran) nbytes = 0; /* the data now belongs to the server (or was released) */
  }
  (void)cubert_handle_release(s->table, &base); /* sub-handles keep it alive */
  if (status != CUBERT_STATUS_OK) {
    for (i = 0; i < nbytes; i++)
      if (bytes[i].release) bytes[i].release(bytes[i].owner, bytes[i].data, bytes[i].size);
    for (i = 0; i < made; i++) (void)cubert_handle_release(s->table, &results[i].memory);
    release_owned_from(owned, moved, count);
    return status;
  }
  for (i = 0; i < count; i++) out_layouts[i] = results[i];
  return CUBERT_STATUS_OK;
}

cubert_status_t client_do_create(cubert_client_t *client,
                                 const cubert_layout_descriptor_t *descriptors, size_t count,
                                 const void *const *data, cubert_bytes_t *owned,
                                 cubert_memory_layout_t *out_layouts, cubert_error_t *out_error) {
  return do_create(client, descriptors, count, data, owned, out_layouts, out_error);
}

static void flat_descriptor(cubert_layout_descriptor_t *d, uint64_t size) {
  cubert_memset(d, 0, sizeof(*d));
  d->strategy = CUBERT_LAYOUT_CONTIGUOUS;
  d->rank = 1;
  d->shape[0] = size;
  d->elem_size = 1;
}

static cubert_status_t tensor_descriptor(cubert_layout_descriptor_t *d, uint32_t rank,
                                         const uint64_t *shape, uint64_t elem_size,
                                         cubert_error_t *out_error) {
  uint32_t r;
  if (rank > CUBERT_MAX_RANK || (rank && !shape))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "rank above CUBERT_MAX_RANK or NULL shape");
  cubert_memset(d, 0, sizeof(*d));
  d->strategy = CUBERT_LAYOUT_OPTIMIZED;
  d->rank = rank;
  for (r = 0; r < rank; r++) d->shape[r] = shape[r];
  d->elem_size = elem_size;
  return CUBERT_STATUS_OK;
}

#define CLIENT_CHECK(cond, what)                                                     \
  do {                                                                               \
    if (!(cond))                                                                     \
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, what); \
  } while (0)

cubert_status_t cubert_client_create(cubert_client_t *client, const void *data, uint64_t size,
                                     cubert_handle_t *out_handle, cubert_error_t *out_error) {
  cubert_layout_descriptor_t d;
  cubert_memory_layout_t layout;
  const void *datas[1];
  CLIENT_CHECK(client && out_handle && (data || size == 0), "create: NULL argument");
  flat_descriptor(&d, size);
  datas[0] = data ? data : (const void *)&layout; /* size 0: nothing is read */
  CUBERT_RETURN_IF_ERROR(do_create(client, &d, 1, datas, NULL, &layout, out_error));
  *out_handle = layout.memory;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_create_bytes(cubert_client_t *client, cubert_bytes_t bytes,
                                           cubert_handle_t *out_handle,
                                           cubert_error_t *out_error) {
  cubert_layout_descriptor_t d;
  cubert_memory_layout_t layout;
  if (!client || !out_handle || (!bytes.data && bytes.size)) {
    if (bytes.release) bytes.release(bytes.owner, bytes.data, bytes.size);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "create_bytes: NULL argument");
  }
  flat_descriptor(&d, bytes.size);
  CUBERT_RETURN_IF_ERROR(do_create(client, &d, 1, NULL, &bytes, &layout, out_error));
  *out_handle = layout.memory;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_create_tensor(cubert_client_t *client, const void *data,
                                            uint32_t rank, const uint64_t *shape,
                                            uint64_t elem_size, cubert_memory_layout_t *out_layout,
                                            cubert_error_t *out_error) {
  cubert_layout_descriptor_t d;
  CLIENT_CHECK(client && out_layout && data, "create_tensor: NULL argument");
  CUBERT_RETURN_IF_ERROR(tensor_descriptor(&d, rank, shape, elem_size, out_error));
  return do_create(client, &d, 1, &data, NULL, out_layout, out_error);
}

cubert_status_t cubert_client_create_tensors(cubert_client_t *client,
                                             const cubert_layout_descriptor_t *descriptors,
                                             const void *const *data, size_t count,
                                             cubert_memory_layout_t *out_layouts,
                                             cubert_error_t *out_error) {
  size_t i;
  CLIENT_CHECK(client && descriptors && data && out_layouts, "create_tensors: NULL argument");
  for (i = 0; i < count; i++) CLIENT_CHECK(data[i], "create_tensors: NULL data entry");
  return do_create(client, descriptors, count, data, NULL, out_layouts, out_error);
}

cubert_status_t cubert_client_empty(cubert_client_t *client, uint64_t size,
                                    cubert_handle_t *out_handle, cubert_error_t *out_error) {
  cubert_layout_descriptor_t d;
  cubert_memory_layout_t layout;
  CLIENT_CHECK(client && out_handle, "empty: NULL argument");
  flat_descriptor(&d, size);
  CUBERT_RETURN_IF_ERROR(do_create(client, &d, 1, NULL, NULL, &layout, out_error));
  *out_handle = layout.memory;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_empty_tensor(cubert_client_t *client, uint32_t rank,
                                           const uint64_t *shape, uint64_t elem_size,
                                           cubert_memory_layout_t *out_layout,
                                           cubert_error_t *out_error) {
  cubert_layout_descriptor_t d;
  CLIENT_CHECK(client && out_layout, "empty_tensor: NULL argument");
  CUBERT_RETURN_IF_ERROR(tensor_descriptor(&d, rank, shape, elem_size, out_error));
  return do_create(client, &d, 1, NULL, NULL, out_layout, out_error);
}

cubert_status_t cubert_client_empty_tensors(cubert_client_t *client,
                                            const cubert_layout_descriptor_t *descriptors,
                                            size_t count, cubert_memory_layout_t *out_layouts,
                                            cubert_error_t *out_error) {
  CLIENT_CHECK(client && descriptors && out_layouts, "empty_tensors: NULL argument");
  return do_create(client, descriptors, count, NULL, NULL, out_layouts, out_error);
}

cubert_status_t cubert_client_write(cubert_client_t *client, const cubert_handle_t *handle,
                                    const void *data, uint64_t size, cubert_error_t *out_error) {
  cubert_copy_descriptor_t d;
  cubert_bytes_t bytes;
  void *copy = NULL;
  client_call_t call;
  CLIENT_CHECK(client && handle && (data || size == 0), "write: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(client, handle, out_error));
  if (size > cubert_handle_size_in_used(handle)) {
    uint64_t f[2];
    f[0] = size;
    f[1] = cubert_handle_size_in_used(handle);
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                            "write larger than the handle");
  }
  if (size && cubert_allocator_malloc(client->state->allocator, (size_t)size, 0, &copy) !=
                  CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &size, 1, "write copy");
  if (size) cubert_memcpy(copy, data, (size_t)size);
  cubert_memset(&d, 0, sizeof d);
  d.binding = *handle;
  d.rank = 1;
  d.shape[0] = size;
  d.strides[0] = 1;
  d.elem_size = 1;
  bytes.data = copy;
  bytes.size = size;
  bytes.property = CUBERT_ALLOCATION_NATIVE;
  bytes.owner = &client->state->allocator;
  bytes.release = size ? release_owned_copy : NULL;
  client_call_init(&call, OP_WRITE, out_error);
  call.b = &d;
  call.d = &bytes;
  call.count = 1;
  {
    cubert_status_t status = client_device_call(client, &call);
    if (!call.ran && bytes.release) bytes.release(bytes.owner, bytes.data, bytes.size);
    return status;
  }
}

/* ---- reads ------------------------------------------------------------------------ */

static cubert_status_t check_reads(cubert_client_t *client, const cubert_copy_descriptor_t *descs,
                                   size_t count, void *const *dsts, const uint64_t *dst_sizes,
                                   cubert_error_t *out_error) {
  size_t i;
  CLIENT_CHECK(client && descs && dsts && dst_sizes && count > 0 && count <= CLIENT_MAX_BATCH,
               "read: NULL argument or count outside 1..64");
  for (i = 0; i < count; i++) {
    uint64_t need = cubert_handle_size_in_used(&descs[i].binding);
    CUBERT_RETURN_IF_ERROR(client_check_device(client, &descs[i].binding, out_error));
    CLIENT_CHECK(dsts[i] || need == 0, "read: NULL destination");
    if (descs[i].rank > 0) {
      uint64_t n = descs[i].elem_size;
      uint32_t r;
      for (r = 0; r < descs[i].rank; r++) n *= descs[i].shape[r];
      need = n;
    }
    if (dst_sizes[i] < need) {
      uint64_t f[2];
      f[0] = dst_sizes[i];
      f[1] = need;
      return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                              "read destination smaller than the data");
    }
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t read_descriptors(cubert_client_t *client,
                                        const cubert_copy_descriptor_t *descs, size_t count,
                                        void *const *dsts, const uint64_t *dst_sizes,
                                        cubert_completion_t *completion,
                                        cubert_error_t *out_error) {
  client_call_t call;
  CUBERT_RETURN_IF_ERROR(check_reads(client, descs, count, dsts, dst_sizes, out_error));
  CLIENT_CHECK(completion, "read: NULL completion");
  client_call_init(&call, OP_READ, out_error);
  call.b = descs;
  call.c = dsts;
  call.a = dst_sizes;
  call.count = count;
  call.e = completion;
  return client_device_call(client, &call);
}

static cubert_status_t flat_reads(cubert_client_t *client, const cubert_handle_t *handles,
                                  size_t count, cubert_copy_descriptor_t *descs,
                                  cubert_error_t *out_error) {
  size_t i;
  CLIENT_CHECK(client && handles && count > 0 && count <= CLIENT_MAX_BATCH,
               "read: NULL handles or count outside 1..64");
  for (i = 0; i < count; i++) {
    cubert_memset(&descs[i], 0, sizeof(descs[i]));
    descs[i].binding = handles[i];
    descs[i].rank = 1;
    descs[i].shape[0] = cubert_handle_size_in_used(&handles[i]);
    descs[i].strides[0] = 1;
    descs[i].elem_size = 1;
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_read_async(cubert_client_t *client, const cubert_handle_t *handles,
                                         size_t count, void *const *dsts,
                                         const uint64_t *dst_sizes,
                                         cubert_completion_t *out_completion,
                                         cubert_error_t *out_error) {
  cubert_copy_descriptor_t descs[CLIENT_MAX_BATCH];
  CUBERT_RETURN_IF_ERROR(flat_reads(client, handles, count, descs, out_error));
  return read_descriptors(client, descs, count, dsts, dst_sizes, out_completion, out_error);
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
  return read_descriptors(client, descriptors, count, dsts, dst_sizes, out_completion, out_error);
}

cubert_status_t cubert_client_read_tensor(cubert_client_t *client,
                                          const cubert_copy_descriptor_t *descriptors,
                                          size_t count, void *const *dsts,
                                          const uint64_t *dst_sizes, cubert_error_t *out_error) {
  cubert_completion_t completion;
  CUBERT_RETURN_IF_ERROR(read_descriptors(client, descriptors, count, dsts, dst_sizes, &completion,
                                          out_error));
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
  return read_descriptors(client, descriptor, 1, dsts, sizes, out_completion, out_error);
}

cubert_status_t cubert_client_get_resource(cubert_client_t *client, const cubert_handle_t *handle,
                                           cubert_resource_t *out_resource,
                                           cubert_error_t *out_error) {
  client_call_t call;
  CLIENT_CHECK(client && handle && out_resource, "get_resource: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(client, handle, out_error));
  client_call_init(&call, OP_RESOURCE, out_error);
  call.a = handle;
  call.d = out_resource;
  return client_device_call(client, &call);
}

/* ---- launch, flush, sync ------------------------------------------------------------ */

static cubert_status_t launch_with(cubert_client_t *client, const struct cubert_kernel_t *kernel,
                                   const struct cubert_cube_count_t *count,
                                   const cubert_launch_arguments_t *args,
                                   cubert_execution_mode_t mode, cubert_error_t *out_error) {
  uint32_t i;
  client_call_t call;
  CLIENT_CHECK(client && kernel && count && args, "launch: NULL argument");
  CLIENT_CHECK(args->buffer_count == 0 || args->buffers, "launch: NULL buffer list");
  CLIENT_CHECK(args->scalar_count == 0 || args->scalars, "launch: NULL scalars");
  if (cubert_cube_count_is_empty(count)) return CUBERT_STATUS_OK; /* spec 1.4: dropped */
  for (i = 0; i < args->buffer_count; i++)
    CUBERT_RETURN_IF_ERROR(client_check_device(client, &args->buffers[i], out_error));
  if (cubert_atomic_load_u32(&client->state->profile_level) != CUBERT_PROFILE_LEVEL_OFF)
    return client_profiled_launch(client, kernel, count, args, mode, out_error); /* client_profile.c */
  client_call_init(&call, OP_LAUNCH, out_error);
  call.a = kernel;
  call.b = count;
  call.c = args;
  call.u0 = (uint64_t)mode;
  return client_device_call(client, &call);
}

cubert_status_t cubert_client_launch(cubert_client_t *client, const struct cubert_kernel_t *kernel,
                                     const struct cubert_cube_count_t *count,
                                     const cubert_launch_arguments_t *args,
                                     cubert_error_t *out_error) {
  return launch_with(client, kernel, count, args, CUBERT_EXECUTION_CHECKED, out_error);
}

cubert_status_t cubert_client_launch_unchecked(cubert_client_t *client,
                                               const struct cubert_kernel_t *kernel,
                                               const struct cubert_cube_count_t *count,
                                               const cubert_launch_arguments_t *args,
                                               cubert_error_t *out_error) {
  cubert_execution_mode_t mode = CUBERT_EXECUTION_UNCHECKED;
  CLIENT_CHECK(client, "launch_unchecked: NULL client");
  switch (client->state->config.bounds_check) {
    case CUBERT_BOUNDS_CHECK_ENFORCE:
      mode = CUBERT_EXECUTION_CHECKED;
      break;
    case CUBERT_BOUNDS_CHECK_VALIDATE:
      mode = CUBERT_EXECUTION_VALIDATE;
      break;
    case CUBERT_BOUNDS_CHECK_AUTO:
    default:
      mode = CUBERT_EXECUTION_UNCHECKED;
      break;
  }
  return launch_with(client, kernel, count, args, mode, out_error);
}

cubert_status_t cubert_client_flush(cubert_client_t *client, cubert_error_t *out_error) {
  client_call_t call;
  CLIENT_CHECK(client, "flush: NULL client");
  client_call_init(&call, OP_FLUSH, out_error);
  return client_device_call(client, &call);
}

cubert_status_t cubert_client_sync_async(cubert_client_t *client,
                                         cubert_completion_t *out_completion,
                                         cubert_error_t *out_error) {
  client_call_t call;
  CLIENT_CHECK(client && out_completion, "sync: NULL argument");
  client_call_init(&call, OP_SYNC, out_error);
  call.e = out_completion;
  CUBERT_RETURN_IF_ERROR(client_device_call(client, &call));
  client_profile_emit_summary(client); /* spec 1.4: the summary is printed at each sync */
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_sync(cubert_client_t *client, cubert_error_t *out_error) {
  cubert_completion_t completion;
  CUBERT_RETURN_IF_ERROR(cubert_client_sync_async(client, &completion, out_error));
  return cubert_completion_wait(&completion, UINT64_MAX, out_error);
}

/* ---- exclusive sections and profiling -------------------------------------------------------- */

typedef struct exclusive_call_t {
  cubert_client_t *client;
  cubert_client_fn_t fn;
  void *user;
  const char *name;
  cubert_profile_duration_t *duration;
  cubert_error_t *error;
  cubert_error_t local;
} exclusive_call_t;

static cubert_status_t run_exclusive(void *user) {
  exclusive_call_t *x = (exclusive_call_t *)user;
  return x->fn(x->user, x->error);
}

cubert_status_t cubert_client_exclusive(cubert_client_t *client, cubert_client_fn_t fn, void *user,
                                        cubert_error_t *out_error) {
  exclusive_call_t x;
  cubert_status_t status;
  CLIENT_CHECK(client && fn, "exclusive: NULL argument");
  cubert_memset(&x, 0, sizeof x);
  x.client = client;
  x.fn = fn;
  x.user = user;
  x.error = out_error ? out_error : &x.local;
  cubert_error_clear(x.error);
  status = client->state->handle.vtable->exclusive(client->state->handle.self, run_exclusive, &x);
  if (status != CUBERT_STATUS_OK && x.error->status == CUBERT_STATUS_OK) x.error->status = status;
  return status;
}

/* Runs inside the exclusive section: the server calls are made directly (the
 * device is held by this thread). */
static cubert_status_t run_profile(void *user) {
  exclusive_call_t *x = (exclusive_call_t *)user;
  cubert_server_t *server = x->client->state->server;
  uint64_t stream = cubert_client_stream(x->client);
  cubert_profiling_token_t token;
  cubert_profile_duration_t duration;
  cubert_status_t status;
  status = server->vtable->start_profile(server, stream, &token, x->error);
  if (status != CUBERT_STATUS_OK) return status;
  status = x->fn(x->user, x->error);
  if (status != CUBERT_STATUS_OK) {
    cubert_error_t ignored;
    (void)server->vtable->end_profile(server, stream, token, &duration, &ignored);
    return status;
  }
  status = server->vtable->end_profile(server, stream, token, &duration, x->error);
  if (status == CUBERT_STATUS_OK && x->duration) *x->duration = duration;
  return status;
}

cubert_status_t cubert_client_profile(cubert_client_t *client, cubert_client_fn_t fn, void *user,
                                      const char *name, cubert_profile_duration_t *out_duration,
                                      cubert_error_t *out_error) {
  exclusive_call_t x;
  CLIENT_CHECK(client && fn, "profile: NULL argument");
  cubert_memset(&x, 0, sizeof x);
  x.client = client;
  x.fn = fn;
  x.user = user;
  x.name = name;
  x.duration = out_duration;
  x.error = out_error ? out_error : &x.local;
  cubert_error_clear(x.error);
  return client->state->handle.vtable->exclusive(client->state->handle.self, run_profile, &x);
}

/* ---- memory ----------------------------------------------------------------------------- */

cubert_status_t cubert_client_memory_usage(cubert_client_t *client,
                                           cubert_memory_usage_t *out_usage,
                                           cubert_error_t *out_error) {
  client_call_t call;
  CLIENT_CHECK(client && out_usage, "memory_usage: NULL argument");
  client_call_init(&call, OP_USAGE, out_error);
  call.d = out_usage;
  return client_device_call(client, &call);
}

cubert_status_t cubert_client_memory_cleanup(cubert_client_t *client, cubert_error_t *out_error) {
  client_call_t call;
  CLIENT_CHECK(client, "memory_cleanup: NULL client");
  client_call_init(&call, OP_CLEANUP, out_error);
  return client_device_call(client, &call);
}

cubert_status_t cubert_client_allocation_mode(cubert_client_t *client,
                                              cubert_memory_allocation_mode_t mode,
                                              cubert_error_t *out_error) {
  client_call_t call;
  CLIENT_CHECK(client, "allocation_mode: NULL client");
  CLIENT_CHECK(mode == CUBERT_MEMORY_ALLOCATION_MODE_AUTO || mode == CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT,
               "allocation_mode: unknown mode");
  client_call_init(&call, OP_MODE, out_error);
  call.u0 = (uint64_t)mode;
  return client_device_call(client, &call);
}

/* ---- devices and misc --------------------------------------------------------------------- */

size_t cubert_client_enumerate_devices(uint16_t type_id, cubert_device_id_t *out_ids,
                                       size_t capacity) {
  return cubert_device_registry_enumerate(type_id, out_ids, capacity);
}

size_t cubert_client_device_count(uint16_t type_id) {
  return cubert_device_registry_enumerate(type_id, NULL, 0);
}

size_t cubert_client_device_count_total(void) {
  return cubert_device_registry_enumerate(UINT16_MAX, NULL, 0);
}

cubert_status_t cubert_client_io_optimized_vector_sizes(const cubert_client_t *client,
                                                        uint64_t elem_size, uint32_t *out_sizes,
                                                        size_t capacity, size_t *out_count) {
  if (!client || !out_count || elem_size > (uint64_t)SIZE_MAX) return CUBERT_STATUS_INVALID_ARGUMENT;
  return cubert_io_optimized_vector_sizes(&client->state->properties.hardware, (size_t)elem_size,
                                          out_sizes, capacity, out_count);
}

/* SPDX-License-Identifier: MIT */
/* core/client/client_driver.c: the driver interface's entry points that make and expose a
 * device (include/cubert/driver/server.h): cubert_server_client_create builds a device's
 * state over a driver table (the server, its handle table, its device handle), registers
 * it and hands back its first client; cubert_server_driver_of. The client operations are
 * in client.c and the files beside it. */
#include "client/client_internal.h"
#include "memory/handle_table.h"
#include "cubert/driver/device.h"
#include "device/device_registry.h"
#include "device/device_shards.h"

/* ---- devices ---------------------------------------------------------------------- */

void client_state_free(device_state_t *state) {
  cubert_allocator_t allocator = state->allocator;
  void (*release)(void *) = state->host_release;
  void *release_self = state->host_release_self;
  cubert__handle_table_destroy(state->table);
  cubert__device_shards_destroy(state->shards); /* after the handle that locked through them */
  cubert_allocator_free(allocator, state, sizeof(*state), 0);
  if (release) release(release_self);
}

/* The device handle over the server: the host's factory, or a direct one
 * (over the shards of the host's lock with concurrent_launch). */
static cubert_status_t make_handle(device_state_t *s, const cubert_server_options_t *o,
                                   cubert_error_t *out_error) {
  cubert_status_t status = CUBERT_STATUS_OK;
  cubert_lock_t lock = o->lock;
  if (!o->handle_factory && o->concurrent_launch) {
    status = cubert__device_shards_create(s->allocator, o->lock, o->yield, &s->shards);
    if (status == CUBERT_STATUS_OK) lock = cubert__device_shards_lock(s->shards);
  }
  if (status == CUBERT_STATUS_OK && o->handle_factory)
    status = o->handle_factory(o->handle_factory_self, s->allocator, s->server, &s->handle);
  else if (status == CUBERT_STATUS_OK)
    status = cubert_device_handle_direct_create(s->allocator, s->server, lock, &s->handle);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                                           ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                           : CUBERT_ERROR_SERVICE_CREATION,
                            NULL, 0, "device handle");
  cubert__server_set_handle(s->server, s->handle);
  return CUBERT_STATUS_OK;
}

static cubert_status_t state_create(cubert_allocator_t allocator, const cubert_server_options_t *o,
                                    device_state_t **out_state, cubert_error_t *out_error) {
  device_state_t *s = NULL;
  cubert_status_t status;
  if (cubert_allocator_malloc(allocator, sizeof(*s), 0, (void **)&s, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "client state");
  s->allocator = allocator;
  s->device = o->device;
  s->device_key = ((uint32_t)o->device.type_id << 16) | cubert__device_registry_next_instance();
  s->layout_policy = o->layout_policy;
  s->bounds_check = o->bounds_check;
  s->stream_source = o->stream_source;
  s->stream_source_self = o->stream_source_self;
  /* The table tag mixes index, type and instance: ids of two devices rarely
   * share a tag (the handle's device and key are what is checked first). */
  status = cubert__handle_table_create(allocator, o->max_handles ? o->max_handles : (1u << 20),
                                       (uint8_t)((o->device.index_id * 0x9Du) ^ (s->device_key * 0x3Bu) ^
                                                (s->device_key >> 16)),
                                       &s->table);
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, s, sizeof(*s), 0);
    return cubert_error_set(out_error, status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                                           ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                           : CUBERT_ERROR_INVALID_ARGUMENT,
                            NULL, 0, "handle table");
  }
  *out_state = s;
  return CUBERT_STATUS_OK;
}

static cubert_status_t register_device(device_state_t *s, cubert_error_t *out_error) {
  cubert_status_t status = cubert__device_registry_insert(s->device, s);
  if (status == CUBERT_STATUS_OK) return status;
  if (status == CUBERT_STATUS_ALREADY_EXISTS) {
    /* kind SERVICE_CREATION (CubeCL's), status ALREADY_EXISTS as cpu.h documents */
    (void)cubert_error_set(out_error, CUBERT_ERROR_SERVICE_CREATION, NULL, 0,
                           "Can't create a new client on an already registered server");
    if (out_error) out_error->status = CUBERT_STATUS_ALREADY_EXISTS;
    return CUBERT_STATUS_ALREADY_EXISTS;
  }
  return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "device registry is full");
}

/* The enums of the options, refused when out of range before anything is
 * made (every driver's create comes through here). */
static cubert_status_t check_option_enums(const cubert_server_options_t *o, cubert_error_t *out_error) {
  uint64_t f[2];
  if ((uint32_t)o->bounds_check > (uint32_t)CUBERT_BOUNDS_CHECK_RACECHECK) {
    f[0] = (uint32_t)o->bounds_check;
    f[1] = CUBERT_BOUNDS_CHECK_RACECHECK;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "create: unknown bounds_check mode (AUTO, ENFORCE, VALIDATE or "
                            "RACECHECK)");
  }
  if ((uint32_t)o->layout_policy.kind > (uint32_t)CUBERT_LAYOUT_POLICY_PITCHED) {
    f[0] = (uint32_t)o->layout_policy.kind;
    f[1] = CUBERT_LAYOUT_POLICY_PITCHED;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "create: unknown layout policy kind (CONTIGUOUS or PITCHED)");
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_server_client_create(cubert_allocator_t allocator,
                                            const cubert_server_options_t *options,
                                            const cubert_driver_t *driver, void *driver_self,
                                            cubert_client_t **out_client, cubert_error_t *out_error) {
  device_state_t *s = NULL;
  cubert_client_t *c = NULL;
  cubert_status_t status;
  if (!options || !out_client || (!options->handle_factory &&
                                  (!options->lock.lock || !options->lock.unlock)))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "server_client_create needs options, a lock (or a handle factory) and an "
                            "output");
  CUBERT_RETURN_IF_ERROR(cubert__server_check_driver(driver, out_error));
  CUBERT_RETURN_IF_ERROR(check_option_enums(options, out_error));
  if (cubert_allocator_malloc(allocator, sizeof(*c), 0, (void **)&c, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "client");
  status = state_create(allocator, options, &s, out_error);
  if (status == CUBERT_STATUS_OK) {
    status = cubert__server_create(allocator, options, driver, driver_self, s->table, &s->server,
                                   out_error);
    if (status != CUBERT_STATUS_OK) s->server = NULL;
    else cubert__server_set_device_key(s->server, s->device_key);
  }
  if (status == CUBERT_STATUS_OK) {
    s->properties = *cubert__server_properties(s->server);
    if (s->layout_policy.mem_alignment == 0)
      s->layout_policy.mem_alignment = s->properties.memory.alignment ? s->properties.memory.alignment : 8;
    status = make_handle(s, options, out_error);
    if (status == CUBERT_STATUS_OK) {
      status = register_device(s, out_error);
      if (status != CUBERT_STATUS_OK) s->handle.vtable->destroy(s->handle.self);
    }
    if (status != CUBERT_STATUS_OK) cubert__server_destroy(s->server, false);
  }
  if (status != CUBERT_STATUS_OK) {
    if (s) {
      s->host_release = NULL; /* the caller keeps its hooks on failure */
      client_state_free(s);
    }
    cubert_allocator_free(allocator, c, sizeof(*c), 0);
    return status;
  }
  s->host_release = options->host_release;
  s->host_release_self = options->host_release_self;
  cubert__atomic_store_u32(&s->refs, 1);
  c->state = s;
  c->pinned = false;
  c->stream = 0;
  *out_client = c;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_server_driver_of(const cubert_client_t *client,
                                        const cubert_driver_t **out_driver, void **out_self) {
  if (!client || !out_driver || !out_self) return CUBERT_STATUS_INVALID_ARGUMENT;
  *out_driver = cubert__server_driver(client->state->server, out_self);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__client_driver_stream(cubert_client_t *client, uint64_t stream,
                                             cubert_driver_stream_t **out_stream,
                                             cubert_error_t *out_error) {
  return cubert__server_driver_stream(client->state->server, stream, out_stream, out_error);
}

/* SPDX-License-Identifier: MIT */
/* core/client/client.c: the compute client: devices and their
 * clients, streams, properties, handles, and the server behind a client
 * (cubert/driver/server.h; a device is created over a driver in client_driver.c). The
 * operations live in client_memory.c,
 * client_io.c, client_launch.c, ...; the task machinery they share in
 * client_task.c. */
#include "client/client_internal.h"
#include "base/fmt.h"
#include "memory/handle_table.h"
#include "cubert/driver/device.h"
#include "device/device_registry.h"

static cubert_status_t client_new(device_state_t *state, bool pinned, uint64_t stream,
                                  cubert_client_t **out_client, cubert_error_t *out_error) {
  cubert_client_t *c = NULL;
  uint32_t refs = cubert__atomic_load_u32(&state->refs);
  /* retain refuses 0 -> 1: a device being torn down cannot be loaded again */
  do {
    if (refs == 0)
      return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_LOST, NULL, 0,
                              "the device is being released (its last client is gone)");
    if (refs >= CUBERT_HANDLE_MAX_COUNT)
      return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                              "too many clients of this device");
  } while (!cubert__atomic_cas_u32(&state->refs, &refs, refs + 1));
  if (cubert_allocator_malloc(state->allocator, sizeof(*c), 0, (void **)&c, NULL) !=
      CUBERT_STATUS_OK) {
    cubert__atomic_fetch_sub_u32(&state->refs, 1);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "client");
  }
  c->state = state;
  c->pinned = pinned;
  c->stream = stream;
  *out_client = c;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_load(cubert_device_id_t device, cubert_client_t **out_client,
                                   cubert_error_t *out_error) {
  void *p = NULL;
  if (!out_client) return cubert__invalid_argument(out_error, "cubert_client_load: out_client is NULL");
  if (cubert__device_registry_lookup(device, &p) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "cubert_client_load: no device registered under this id");
  return client_new((device_state_t *)p, false, 0, out_client, out_error);
}

cubert_status_t cubert_client_clone(const cubert_client_t *client, cubert_client_t **out_client,
                                    cubert_error_t *out_error) {
  if (!client) return cubert__invalid_argument(out_error, "cubert_client_clone: client is NULL");
  if (!out_client)
    return cubert__invalid_argument(out_error, "cubert_client_clone: out_client is NULL");
  return client_new(client->state, client->pinned, client->stream, out_client, out_error);
}

/* Drop one reference (a client object's or an armed completion's); the last
 * one tears the device down. */
static void state_release(device_state_t *state) {
  if (cubert__atomic_fetch_sub_u32(&state->refs, 1) != 1) return;
  /* Last client: deregister, stop the device handle, destroy in dependency
   * order (the server synchronizes every stream; the driver goes last). */
  (void)cubert__device_registry_remove(state->device, state);
  state->handle.vtable->destroy(state->handle.self);
  client_profile_destroy(state);
  cubert__server_destroy(state->server, true);
  client_state_free(state);
}

void client_state_release(device_state_t *state) { state_release(state); }

void cubert_client_release(cubert_client_t *client) {
  device_state_t *state;
  if (!client) return;
  state = client->state;
  cubert_allocator_free(state->allocator, client, sizeof(*client), 0);
  state_release(state);
}

/* A reference on the device for an object that outlives its clients (a DLPack
 * export, client_dlpack.c): the caller holds a client, so refs >= 1 (no 0 -> 1). */
void client_device_keep(device_state_t *state) { cubert__atomic_fetch_add_u32(&state->refs, 1); }
void client_device_drop(device_state_t *state) { state_release(state); }

/* ---- completions that keep their device ------------------------------------------ */

/* The server's wait, then the device reference the completion held is dropped
 * (the last one tears the device down, here). A wait that timed out keeps
 * it (the completion stays pending). */
static cubert_status_t kept_completion_wait(cubert_completion_t *completion, uint64_t timeout_ns) {
  device_state_t *state = (device_state_t *)completion->impl[3];
  cubert_status_t status = cubert__server_completion_wait(completion, timeout_ns);
  if (status == CUBERT_STATUS_DEADLINE_EXCEEDED) return status;
  completion->vtable = NULL;
  completion->impl[3] = NULL;
  state_release(state);
  return status;
}

static const cubert_completion_vtable_t g_kept_completion_vtable = {kept_completion_wait};

void client_completion_keep(cubert_client_t *client, cubert_completion_t *completion) {
  if (!completion->vtable) return; /* finished already: nothing to keep */
  /* the caller holds a client object, so refs >= 1 here (no 0 -> 1) */
  cubert__atomic_fetch_add_u32(&client->state->refs, 1);
  completion->impl[3] = client->state;
  completion->vtable = &g_kept_completion_vtable;
}

/* ---- streams and properties -------------------------------------------------------- */

void cubert_client_set_stream(cubert_client_t *client, uint64_t stream) {
  if (!client) return;
  client->pinned = true;
  client->stream = stream;
}

void cubert_client_unpin(cubert_client_t *client) {
  if (client) client->pinned = false;
}

cubert_device_id_t cubert_client_device(const cubert_client_t *client) {
  cubert_device_id_t none = {0, 0};
  return client ? client->state->device : none;
}

void cubert_client_properties(const cubert_client_t *client,
                              cubert_device_properties_t *out_properties) {
  if (client && out_properties) *out_properties = client->state->properties;
}

uint64_t cubert_client_features(const cubert_client_t *client) {
  return client ? client->state->properties.features : 0;
}

cubert_handle_table_t *cubert__client_handle_table(const cubert_client_t *client) {
  return client ? client->state->table : NULL;
}

/* ---- handles ------------------------------------------------------------------------ */

/* The checks every handle call of the client makes, with their records. */
static cubert_status_t check_handle_call(const cubert_client_t *client,
                                         const cubert_handle_t *handle, bool need_out, bool has_out,
                                         const char *fn, cubert_error_t *out_error) {
  char reason[96];
  cubert_fmt_t f;
  const char *what = NULL;
  if (!client) what = ": client is NULL";
  else if (!handle) what = ": handle is NULL";
  else if (need_out && !has_out) what = ": out_handle is NULL";
  if (what) {
    cubert__fmt_initialize(&f, reason, sizeof(reason));
    cubert__fmt_append_str(&f, fn);
    cubert__fmt_append_str(&f, what);
    return cubert__invalid_argument(out_error, reason);
  }
  return client_check_owner(client->state, handle, fn, out_error);
}

cubert_status_t client_check_owner(const device_state_t *state, const cubert_handle_t *handle,
                                   const char *fn, cubert_error_t *out_error) {
  char reason[128];
  cubert_fmt_t f;
  uint64_t fields[4];
  if (handle->device == state->device.index_id && handle->device_key == state->device_key)
    return CUBERT_STATUS_OK;
  if (handle->device_key == 0) { /* instance numbers start at 1: no device issued it */
    cubert__fmt_initialize(&f, reason, sizeof(reason));
    cubert__fmt_append_str(&f, fn);
    cubert__fmt_append_str(&f, ": the handle was never issued (device_key 0: a zeroed or "
                               "uninitialized handle)");
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0, reason);
  }
  fields[0] = handle->device;
  fields[1] = handle->device_key;
  fields[2] = state->device.index_id;
  fields[3] = state->device_key;
  cubert__fmt_initialize(&f, reason, sizeof(reason));
  cubert__fmt_append_str(&f, fn);
  cubert__fmt_append_str(&f, handle->device_key >> 16 != state->device.type_id
                                ? ": the handle belongs to a device of another type"
                         : handle->device != state->device.index_id
                                ? ": the handle belongs to another device"
                                : ": the handle belongs to an earlier device with this id");
  return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, fields, 4, reason);
}

/* The record of a failed handle-table call (status only): dead handles and
 * exhausted counts. */
static cubert_status_t handle_table_error(cubert_status_t status, const char *reason,
                                          cubert_error_t *out_error) {
  return cubert__error_from_status(out_error, status, reason);
}

cubert_status_t cubert_client_handle_release(cubert_client_t *client,
                                             const cubert_handle_t *handle,
                                             cubert_error_t *out_error) {
  CUBERT_RETURN_IF_ERROR(check_handle_call(client, handle, false, false,
                                           "cubert_client_handle_release", out_error));
  return handle_table_error(cubert__handle_release(client->state->table, handle),
                            "cubert_client_handle_release: the handle is dead (released "
                            "already, or stale)", out_error);
}

cubert_status_t cubert_client_handle_clone(cubert_client_t *client, const cubert_handle_t *handle,
                                           cubert_handle_t *out_handle, cubert_error_t *out_error) {
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(check_handle_call(client, handle, true, out_handle != NULL,
                                           "cubert_client_handle_clone", out_error));
  status = cubert__handle_clone(client->state->table, handle, out_handle);
  return handle_table_error(status, status == CUBERT_STATUS_OVERFLOW
                                        ? "cubert_client_handle_clone: too many references"
                                        : "cubert_client_handle_clone: the handle is dead",
                            out_error);
}

cubert_status_t cubert_client_handle_offset(cubert_client_t *client, const cubert_handle_t *handle,
                                            uint64_t offset_start, uint64_t offset_end,
                                            cubert_handle_t *out_handle, cubert_error_t *out_error) {
  cubert_status_t status;
  const char *reason;
  CUBERT_RETURN_IF_ERROR(check_handle_call(client, handle, true, out_handle != NULL,
                                           "cubert_client_handle_offset", out_error));
  status = cubert__handle_offset(client->state->table, handle, offset_start, offset_end,
                                 out_handle);
  if (status == CUBERT_STATUS_OUT_OF_RANGE) {
    uint64_t fields[2];
    fields[0] = handle->offset_start + offset_start;
    fields[1] = handle->size;
    (void)cubert__error_set_text(out_error, CUBERT_ERROR_OUT_OF_RANGE, fields, 2, NULL,
                                 "cubert_client_handle_offset: the offsets exceed the handle's "
                                 "size (offset \001, size \002 bytes)");
    return status;
  }
  reason = status == CUBERT_STATUS_OVERFLOW ? "cubert_client_handle_offset: an offset overflows"
                                            : "cubert_client_handle_offset: the handle is dead";
  return handle_table_error(status, reason, out_error);
}

/* ---- devices and misc ------------------------------------------------------------------ */

size_t cubert_client_enumerate_devices(uint16_t type_id, cubert_device_id_t *out_ids,
                                       size_t capacity) {
  return cubert__device_registry_enumerate(type_id, out_ids, capacity);
}

size_t cubert_client_device_count(uint16_t type_id) {
  return cubert__device_registry_enumerate(type_id, NULL, 0);
}

size_t cubert_client_device_count_total(void) {
  return cubert__device_registry_enumerate(UINT16_MAX, NULL, 0);
}

cubert_status_t cubert_client_io_optimized_vector_sizes(const cubert_client_t *client,
                                                        uint64_t elem_size, uint32_t *out_sizes,
                                                        size_t capacity, size_t *out_count,
                                                        cubert_error_t *out_error) {
  if (!client)
    return cubert__invalid_argument(out_error,
                                    "cubert_client_io_optimized_vector_sizes: client is NULL");
  if (elem_size > (uint64_t)SIZE_MAX)
    return cubert__invalid_argument(out_error,
                                    "cubert_client_io_optimized_vector_sizes: elem_size does not "
                                    "fit size_t");
  return cubert_io_optimized_vector_sizes(&client->state->properties.hardware, (size_t)elem_size,
                                          out_sizes, capacity, out_count, out_error);
}

/* ---- the server behind a client (cubert/driver/server.h) --------------------------------------- */

typedef struct server_state_task_t {
  client_task_t head;
  int collect;
  uint32_t collected;
  uint64_t seed;
  int set_seed;
  cubert_race_counters_t *counters;
  cubert_race_report_t *report;
  bool has_report;
} server_state_task_t;

static void server_state_run(void *context, void *payload) {
  cubert_server_t *server = (cubert_server_t *)context;
  server_state_task_t *t = (server_state_task_t *)payload;
  if (t->collect) t->collected = cubert__server_gc_collect(server);
  if (t->set_seed) cubert__server_set_race_seed(server, t->seed);
  cubert__server_race_state(server, t->counters, t->report, &t->has_report);
  t->head.status = CUBERT_STATUS_OK;
}

static cubert_status_t server_state(cubert_client_t *client, server_state_task_t *t,
                                    cubert_error_t *out_error) {
  return client_submit(client, server_state_run, &t->head, out_error);
}

uint32_t cubert_server_collect(cubert_client_t *client) {
  server_state_task_t t;
  if (!client) return 0;
  cubert_memset(&t, 0, sizeof t);
  t.collect = 1;
  return server_state(client, &t, NULL) == CUBERT_STATUS_OK ? t.collected : 0;
}

cubert_status_t cubert_client_race_counters(cubert_client_t *client,
                                            cubert_race_counters_t *out_counters,
                                            cubert_error_t *out_error) {
  server_state_task_t t;
  if (!client) return cubert__invalid_argument(out_error, "cubert_client_race_counters: client is NULL");
  if (!out_counters)
    return cubert__invalid_argument(out_error, "cubert_client_race_counters: out_counters is NULL");
  cubert_memset(&t, 0, sizeof t);
  t.counters = out_counters;
  return server_state(client, &t, out_error);
}

cubert_status_t cubert_client_race_last_report(cubert_client_t *client,
                                               cubert_race_report_t *out_report,
                                               cubert_error_t *out_error) {
  server_state_task_t t;
  if (!client)
    return cubert__invalid_argument(out_error, "cubert_client_race_last_report: client is NULL");
  if (!out_report)
    return cubert__invalid_argument(out_error, "cubert_client_race_last_report: out_report is NULL");
  cubert_memset(&t, 0, sizeof t);
  t.report = out_report;
  CUBERT_RETURN_IF_ERROR(server_state(client, &t, out_error));
  if (t.has_report) return CUBERT_STATUS_OK;
  return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                          "no race report (none found, or the race checker is off)");
}

cubert_status_t cubert_client_race_seed(cubert_client_t *client, uint64_t seed,
                                        cubert_error_t *out_error) {
  server_state_task_t t;
  if (!client) return cubert__invalid_argument(out_error, "cubert_client_race_seed: client is NULL");
  cubert_memset(&t, 0, sizeof t);
  t.set_seed = 1;
  t.seed = seed;
  return server_state(client, &t, out_error);
}

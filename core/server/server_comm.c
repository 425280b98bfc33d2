/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_comm.c: the bookkeeping of collectives
 * (docs/collectives.md). The driver supplies the primitive (comm_create /
 * comm_query / comm_destroy / collective: NCCL on CUDA, the in-process
 * rendezvous on the CPU); the server keeps, for every driver:
 *  - the communicators this device joined (by CommunicationId of the sorted
 *    device set; at most CUBERT_SERVER_MAX_COMMUNICATORS);
 *  - one communication stream (driver stream max_streams + 1), created by
 *    the first comm_init; collectives run there in call order;
 *  - the ordering: a collective starts after the work enqueued before it on
 *    the caller's stream (the MultiStream resolves that stream over the
 *    bindings, an event recorded there is waited on by the communication
 *    stream), and its bindings stay pinned until it ran: they are held
 *    with those of the next collectives, and up to SERVER_COMM_HELD
 *    collectives' pins go to the release ring behind one event recorded on
 *    the communication stream after the last of them (at the next
 *    collective once that many are held, at sync_collective, at any drain of
 *    the ring: memory_usage, memory_cleanup, teardown), not one event per
 *    collective: a driver call the small collectives' host time does not
 *    pay (the CUDA driver enqueues nothing for a posted collective until its
 *    peers posted, docs/collectives.md);
 *  - sync_collective: the caller's stream waits for everything enqueued on
 *    the communication stream so far, and that stream's errors up to there
 *    are surfaced by the caller's next drain (flush / sync / read).
 * Validation happens before anything is enqueued: a refused call enqueues
 * nothing.
 */
#include "server/server_internal.h"
#include "memory/handle_table.h"

#if CUBERT_CONFIG_COLLECTIVES /* else no communicator is ever made (the client's
                                  * public entry points answer COMPILED_OUT, client_comm.c) */

bool cubert__server_has_collectives(const cubert_server_t *server) { return server->driver->collective != NULL; }

/* Sort the device set, compute its CommunicationId and this device's rank.
 * INVALID_ARGUMENT (NULL, empty, duplicates), OUT_OF_RANGE (too many),
 * DEVICE_MISMATCH (this device is not in it). */
static cubert_status_t describe(const cubert_server_t *server, const uint32_t *devices, size_t count,
                                uint32_t *out_sorted, uint64_t *out_id, uint32_t *out_rank,
                                cubert_error_t *out_error) {
  cubert_device_id_t ids[CUBERT_COMMUNICATION_MAX_DEVICES];
  size_t i, j;
  uint32_t rank = UINT32_MAX;
  if (!devices || count == 0)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "a communicator needs at least one device");
  if (count > CUBERT_COMMUNICATION_MAX_DEVICES) {
    uint64_t f[2];
    f[0] = count;
    f[1] = CUBERT_COMMUNICATION_MAX_DEVICES;
    return cubert__error_set_text(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2, NULL,
                                  "too many devices in one communicator (\001, at most \002)");
  }
  for (i = 0; i < count; i++) { /* insertion sort: at most 64 */
    uint32_t d = devices[i];
    for (j = i; j > 0 && out_sorted[j - 1] > d; j--) out_sorted[j] = out_sorted[j - 1];
    out_sorted[j] = d;
  }
  for (i = 0; i < count; i++) {
    if (i > 0 && out_sorted[i] == out_sorted[i - 1]) {
      uint64_t f = out_sorted[i];
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                              "a device appears twice in the communicator's device list");
    }
    if (out_sorted[i] == server->device_index) rank = (uint32_t)i;
    ids[i].type_id = server->device_type;
    ids[i].index_id = out_sorted[i];
  }
  if (rank == UINT32_MAX) {
    uint64_t f = server->device_index;
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, &f, 1,
                            "this device is not in the communicator's device list");
  }
  (void)cubert_communication_id(ids, count, out_id, NULL);
  *out_rank = rank;
  return CUBERT_STATUS_OK;
}

static server_comm_joined_t *joined_find(server_comm_t *c, uint64_t id, size_t count) {
  uint32_t i;
  if (!c) return NULL;
  for (i = 0; i < c->joined_count; i++)
    if (c->joined[i].id == id && c->joined[i].size == count) return &c->joined[i];
  return NULL;
}

/* The communication state and stream, made by the first comm_init. */
static cubert_status_t comm_state(cubert_server_t *server, cubert_error_t *out_error) {
  server_comm_t *c = NULL;
  cubert_status_t status;
  if (server->comm) return CUBERT_STATUS_OK;
  if (cubert_allocator_malloc(server->allocator, sizeof(*c), 0, (void **)&c, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "communication state");
  status = server_note(
      server, server->driver->stream_create(server->self, server->max_streams + 1u, &c->stream, out_error),
      out_error);
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(server->allocator, c, sizeof(*c), 0);
    return status;
  }
  server->comm = c;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__server_comm_init(cubert_server_t *server, const uint32_t *devices, size_t count,
                                         cubert_error_t *out_error) {
  uint32_t sorted[CUBERT_COMMUNICATION_MAX_DEVICES], rank;
  uint64_t id;
  server_comm_joined_t *j;
  cubert_driver_comm_t *comm = NULL;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  if (!server->driver->collective) return server_unsupported(server, "collectives", out_error);
  CUBERT_RETURN_IF_ERROR(describe(server, devices, count, sorted, &id, &rank, out_error));
  j = joined_find(server->comm, id, count);
  if (j) /* idempotent */
    return server_note(server, server->driver->comm_query(server->self, j->comm, out_error), out_error);
  if (server->comm && server->comm->joined_count == CUBERT_SERVER_MAX_COMMUNICATORS) {
    uint64_t f = CUBERT_SERVER_MAX_COMMUNICATORS;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, &f, 1,
                            "this device joined too many communicators");
  }
  CUBERT_RETURN_IF_ERROR(server_note(
      server, server->driver->comm_create(server->self, sorted, (uint32_t)count, rank, &comm, out_error),
      out_error));
  status = comm_state(server, out_error);
  if (status != CUBERT_STATUS_OK) {
    server->driver->comm_destroy(server->self, comm);
    return status;
  }
  j = &server->comm->joined[server->comm->joined_count++];
  j->id = id;
  j->size = (uint32_t)count;
  j->comm = comm;
  return CUBERT_STATUS_OK;
}

/* ---- one collective -------------------------------------------------------------- */

/* The joined communicator of the op's device set, still working. */
static cubert_status_t find_joined(cubert_server_t *server, const cubert_server_collective_t *op,
                                   cubert_driver_comm_t **out_comm, cubert_error_t *out_error) {
  uint32_t sorted[CUBERT_COMMUNICATION_MAX_DEVICES], rank;
  uint64_t id;
  server_comm_joined_t *j;
  CUBERT_RETURN_IF_ERROR(describe(server, op->devices, op->device_count, sorted, &id, &rank,
                                  out_error));
  j = joined_find(server->comm, id, op->device_count);
  if (!j)
    return cubert_error_set(out_error, CUBERT_ERROR_SERVICE_CREATION, &id, 1,
                            "no communicator for this device set: call comm_init first");
  *out_comm = j->comm;
  return server_note(server, server->driver->comm_query(server->self, j->comm, out_error), out_error);
}

static cubert_status_t check_dtype(uint32_t dtype, uint64_t bytes, bool reduce,
                                   const cubert_server_t *server, cubert_error_t *out_error) {
  uint32_t width = cubert_comm_dtype_size(dtype);
  uint64_t f[2];
  if (width == 0) {
    f[0] = dtype;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 1,
                            "unknown collective dtype");
  }
  if (reduce && !cubert_comm_dtype_reducible(dtype)) {
    f[0] = dtype;
    (void)server;
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, f, 1,
                            "all_reduce does not compute on this dtype");
  }
  if (bytes % width) {
    f[0] = bytes;
    f[1] = width;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "buffer size is not a multiple of the dtype's width");
  }
  return CUBERT_STATUS_OK;
}

/* The op's shape: its bindings are there, the reduce operation is known. */
static cubert_status_t check_op(const cubert_server_collective_t *op, cubert_error_t *out_error) {
  bool ok;
  switch (op->kind) {
    case CUBERT_COLLECTIVE_ALL_REDUCE: ok = op->src && op->dst; break;
    case CUBERT_COLLECTIVE_SEND: ok = op->src && !op->dst; break;
    case CUBERT_COLLECTIVE_RECV: ok = !op->src && op->dst; break;
    default: ok = false; break;
  }
  if (!ok)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "collective: NULL binding");
  if (op->kind == CUBERT_COLLECTIVE_ALL_REDUCE &&
      !cubert_reduce_operation_is_valid((cubert_reduce_operation_t)op->op)) {
    uint64_t f = op->op;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "all_reduce: unknown reduce operation");
  }
  return CUBERT_STATUS_OK;
}

/* Validate the op and fill the driver's record. */
static cubert_status_t prepare(cubert_server_t *server, const cubert_server_collective_t *op,
                               cubert_driver_collective_t *c, cubert_error_t *out_error) {
  uint64_t ss = 0, ds = 0;
  cubert_memset(c, 0, sizeof(*c));
  c->kind = op->kind;
  c->dtype = op->dtype;
  c->op = op->op;
  c->peer = op->peer;
  if (op->src) CUBERT_RETURN_IF_ERROR(server_resolve(server, op->src, &c->src, &ss, out_error));
  if (op->dst) CUBERT_RETURN_IF_ERROR(server_resolve(server, op->dst, &c->dst, &ds, out_error));
  if (op->kind == CUBERT_COLLECTIVE_ALL_REDUCE) {
    if (op->src->stream != op->dst->stream) {
      uint64_t f[2];
      f[0] = op->src->stream;
      f[1] = op->dst->stream;
      return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 2,
                              "Source and destination should be on the same stream.");
    }
    if (ss != ds) {
      uint64_t f[2];
      f[0] = ss;
      f[1] = ds;
      return cubert__error_set_text(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2, NULL,
                                    "all_reduce: source and destination sizes differ (source "
                                   "\001 bytes, destination \002 bytes)");
    }
  }
  c->bytes = op->src ? ss : ds;
  return check_dtype(op->dtype, c->bytes, op->kind == CUBERT_COLLECTIVE_ALL_REDUCE, server,
                     out_error);
}

/* A recv's destination: a new handle of this device, reserved and bound on
 * the caller's stream once its size suits the dtype. */
static cubert_status_t recv_memory(cubert_server_t *server, const cubert_server_collective_t *op,
                                   cubert_error_t *out_error) {
  cubert_server_create_t create;
  if (!op->dst)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "recv: NULL handle");
  if (op->dst->device != server->device_index || op->dst->device_key != server->device_key) {
    uint64_t f[4];
    f[0] = op->dst->device;
    f[1] = op->dst->device_key;
    f[2] = server->device_index;
    f[3] = server->device_key;
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, f, 4,
                            "recv: handle belongs to another device");
  }
  CUBERT_RETURN_IF_ERROR(
      check_dtype(op->dtype, cubert_handle_size_in_used(op->dst), false, server, out_error));
  create.stream = op->stream;
  create.memory = op->dst;
  create.size = op->dst->size;
  create.descriptors = NULL;
  create.bytes = NULL;
  create.count = 0;
  return cubert__server_create_memory(server, &create, out_error);
}

/* Fence the caller's stream over the bindings and make the communication
 * stream wait for it. */
static cubert_status_t fence(cubert_server_t *server, uint64_t stream, const cubert_binding_t *bindings,
                             uint32_t count, cubert_error_t *out_error) {
  server_order_t order;
  cubert_driver_event_t *event = NULL;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(server_order_begin(server, stream, bindings, count, &order, out_error));
  status = server_note(server, server->driver->event_record(server->self, order.slot->stream, &event, out_error),
                       out_error);
  if (status == CUBERT_STATUS_OK) {
    status = server_note(server, server->driver->event_wait(server->self, server->comm->stream, event, out_error),
                         out_error);
    server->driver->event_destroy(server->self, event);
  }
  server_order_end(server, &order, bindings, count);
  return status;
}

cubert_status_t cubert__server_collective(cubert_server_t *server, const cubert_server_collective_t *op,
                                          cubert_error_t *out_error) {
  cubert_driver_collective_t c;
  cubert_driver_comm_t *comm = NULL;
  cubert_binding_t bindings[2];
  cubert_memory_id_t pins[2];
  uint32_t n = 0, i;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(cubert__server_not_recording(server, op->stream, "collective", out_error));
  if (!server->driver->collective) return server_unsupported(server, "collectives", out_error);
  CUBERT_RETURN_IF_ERROR(check_op(op, out_error));
  CUBERT_RETURN_IF_ERROR(find_joined(server, op, &comm, out_error));
  if (op->kind == CUBERT_COLLECTIVE_RECV) /* reserve and bind the new handle first */
    CUBERT_RETURN_IF_ERROR(recv_memory(server, op, out_error));
  CUBERT_RETURN_IF_ERROR(prepare(server, op, &c, out_error));
  /* a full hold goes now, before this collective's fence: an event after
   * the earlier collectives, not after this one (which the CUDA driver
   * enqueues only once its peers posted) */
  if (server->comm->held_collectives >= SERVER_COMM_HELD) server_comm_release_held(server);
  if (op->src) bindings[n++] = *op->src;
  if (op->dst) bindings[n++] = *op->dst;
  for (i = 0; i < n; i++) {
    if (cubert__memory_id_retain_binding(server->table, bindings[i].memory) != CUBERT_STATUS_OK) {
      while (i-- > 0) (void)cubert__memory_id_release_binding(server->table, pins[i]);
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0,
                              "binding was released before the collective was enqueued");
    }
    pins[i] = bindings[i].memory;
  }
  status = fence(server, op->stream, bindings, n, out_error);
  if (status == CUBERT_STATUS_OK)
    status = server_note(server, server->driver->collective(server->self, comm, &c, server->comm->stream, out_error),
                         out_error);
  if (status != CUBERT_STATUS_OK) {
    for (i = 0; i < n; i++) (void)cubert__memory_id_release_binding(server->table, pins[i]);
    return status;
  }
  server->comm->enqueued = 1;
  for (i = 0; i < n; i++) server->comm->held[server->comm->held_count++] = pins[i];
  server->comm->held_collectives++; /* until an event after it completed */
  return CUBERT_STATUS_OK;
}

#endif /* CUBERT_CONFIG_COLLECTIVES */

/* ---- kept when collectives are compiled out: with no communicator (none is
 * ever made then) each does nothing ---- */

void server_comm_release_held(cubert_server_t *server) {
  server_comm_t *c = server->comm;
  if (!c || c->held_collectives == 0) return;
  /* (a collective pins one or two bindings: the hold fits one ring entry) */
  server_gc_retire_pins(server, c->stream, c->held, c->held_count);
  c->held_count = 0;
  c->held_collectives = 0;
}

cubert_status_t cubert__server_sync_collective(cubert_server_t *server, uint64_t stream,
                                               cubert_error_t *out_error) {
  server_slot_t *slot = NULL;
  cubert_driver_event_t *event = NULL;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(cubert__server_not_recording(server, stream, "sync_collective", out_error));
  if (!server->comm || !server->comm->enqueued) return CUBERT_STATUS_OK; /* nothing to wait for */
  CUBERT_RETURN_IF_ERROR(server_slot(server, stream, &slot, out_error));
  server_comm_release_held(server); /* the bindings go once what the caller waits for ran */
  CUBERT_RETURN_IF_ERROR(server_note(
      server, server->driver->event_record(server->self, server->comm->stream, &event, out_error), out_error));
  status = server_note(server, server->driver->event_wait(server->self, slot->stream, event, out_error),
                       out_error);
  if (status != CUBERT_STATUS_OK) {
    server->driver->event_destroy(server->self, event);
    return status;
  }
  /* the newest point covers the earlier ones */
  if (slot->comm_event) server->driver->event_destroy(server->self, slot->comm_event);
  slot->comm_event = event;
  return CUBERT_STATUS_OK;
}

/* ---- teardown ----------------------------------------------------------------------- */

void server_comm_shutdown(cubert_server_t *server) {
  server_comm_t *c = server->comm;
  cubert_driver_event_t *event = NULL;
  uint32_t i;
  if (!c) return;
  /* leaving aborts what waits for peers: the stream then drains quickly */
  for (i = 0; i < c->joined_count; i++) server->driver->comm_destroy(server->self, c->joined[i].comm);
  c->joined_count = 0;
  server_comm_release_held(server); /* (the drain below waits for them) */
  if (server_lost(server, NULL) == CUBERT_STATUS_OK &&
      server->driver->event_record(server->self, c->stream, &event, NULL) == CUBERT_STATUS_OK) {
    (void)server->driver->event_synchronize(server->self, event, UINT64_MAX, NULL);
    server->driver->event_destroy(server->self, event);
  }
}

void server_comm_destroy(cubert_server_t *server) {
  server_comm_t *c = server->comm;
  if (!c) return;
  server->driver->stream_destroy(server->self, c->stream);
  cubert_allocator_free(server->allocator, c, sizeof(*c), 0);
  server->comm = NULL;
}

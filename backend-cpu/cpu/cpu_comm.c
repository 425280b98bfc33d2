/*
 * backend-cpu/cpu/cpu_comm.c: ServerCommunication of the CPU server (spec 2.3, 8).
 *
 * Several CPU devices of one process meet in the communicators of
 * host_comm.c. Each server owns one communication stream (a cpu_stream with
 * its own worker, created by the first comm_init). A collective:
 *  1. is validated on the server thread (nothing is enqueued on failure);
 *  2. resolves the compute stream over its bindings (MultiStream: aligns with
 *     the data's producers on other streams) and enqueues a fence there;
 *  3. enqueues the collective on the communication stream, after the fence;
 *     the op pins its bindings until it ran. The communication worker
 *     rendezvouses with the peers (host_comm_run) and the data moves.
 * sync_collective makes a compute stream wait for everything enqueued on the
 * communication stream so far, and moves the communication stream's queued
 * errors onto that compute stream (surfaced by its next flush/sync/read).
 *
 * Divergences from CubeCL's NCCL path, on purpose: src/dst on different
 * streams, unknown dtypes or ops, a missing communicator are rejected with an
 * error instead of a device-thread panic or a pushed error; the bindings stay
 * pinned while the collective runs (CubeCL releases them at once).
 */
#include "cpu/cpu_server.h"
#include "host/host_comm.h"

#include <string.h>

#define CPU_COMM_MAX_JOINED 16

typedef struct cpu_comm_t {
  cpu_stream_t stream; /* the communication stream */
  uint64_t last_seq;   /* sequence of the last op enqueued on it */
  uint32_t joined_count;
  host_comm_ref_t joined[CPU_COMM_MAX_JOINED];
} cpu_comm_t;

typedef struct comm_op_t {
  cpu_server_t *server;
  host_comm_ref_t ref;
  host_comm_contrib_t contrib;
  uint32_t pin_count;
  cubert_memory_id_t pins[2];
} comm_op_t;

typedef char cpu_comm_op_fits_[sizeof(comm_op_t) <= CPU_OP_PAYLOAD ? 1 : -1];

static cpu_server_t *server_of(cubert_server_t *server) { return (cpu_server_t *)server; }

/* ---- helpers ---- */

static cubert_status_t comm_resolve(cpu_server_t *s, const cubert_binding_t *b, unsigned char **ptr,
                                    uint64_t *size, cubert_error_t *out_error) {
  cpu_slot_t *slot;
  if (b->device != s->device_index) {
    uint64_t f[2];
    f[0] = b->device;
    f[1] = s->device_index;
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, f, 2,
                            "binding belongs to another device");
  }
  if (!cubert_memory_id_is_alive(s->table, b->memory))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0,
                            "binding was released");
  slot = &s->slots[b->stream % s->max_streams];
  if (!slot->initialized || !slot->memory)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "Memory location was never initialized");
  return cpu_memory_resolve(slot->memory, b, ptr, size, out_error);
}

static cubert_status_t check_dtype(uint32_t dtype, uint64_t bytes, bool reduce,
                                   cubert_error_t *out_error) {
  uint32_t width = cubert_comm_dtype_size(dtype);
  uint64_t f[2];
  if (width == 0) {
    f[0] = dtype;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 1,
                            "unknown collective dtype");
  }
  if (reduce && !cubert_comm_dtype_reducible(dtype)) {
    f[0] = dtype;
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, f, 1,
                            "all_reduce does not compute on this dtype on the CPU server");
  }
  if (bytes % width) {
    f[0] = bytes;
    f[1] = width;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "buffer size is not a multiple of the dtype's width");
  }
  return CUBERT_STATUS_OK;
}

/* The communicator this server joined for `devices`. FAILED_PRECONDITION
 * (SERVICE_CREATION) when comm_init was not called for that set. */
static cubert_status_t find_joined(cpu_server_t *s, const uint32_t *devices, size_t count,
                                   host_comm_ref_t *out_ref, cubert_error_t *out_error) {
  uint32_t sorted[CUBERT_COMMUNICATION_MAX_DEVICES], rank, i;
  uint64_t id;
  CUBERT_RETURN_IF_ERROR(
      host_comm_describe(devices, count, s->device_index, sorted, &id, &rank, out_error));
  if (s->comm) {
    for (i = 0; i < s->comm->joined_count; i++) {
      if (s->comm->joined[i].id == id && s->comm->joined[i].size == count) {
        *out_ref = s->comm->joined[i];
        return host_comm_check(out_ref, out_error);
      }
    }
  }
  return cubert_error_set(out_error, CUBERT_ERROR_SERVICE_CREATION, &id, 1,
                          "no communicator for this device set: call comm_init first");
}

static cubert_status_t comm_state(cpu_server_t *s, cubert_error_t *out_error) {
  cpu_comm_t *c = NULL;
  if (s->comm) return CUBERT_STATUS_OK;
  if (cubert_allocator_malloc(s->allocator, sizeof(*c), 0, (void **)&c) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "communication state");
  memset(c, 0, sizeof(*c));
  if (cpu_stream_initialize(&c->stream, s->allocator, s->max_streams + 1, s, 0) !=
      CUBERT_STATUS_OK) {
    cubert_allocator_free(s->allocator, c, sizeof(*c), 0);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "communication stream");
  }
  s->comm = c;
  return CUBERT_STATUS_OK;
}

static cubert_status_t comm_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  comm_op_t *op = (comm_op_t *)payload;
  (void)stream;
  return host_comm_run(&op->ref, &op->contrib, op->server->collective_timeout_ns, error);
}

static cubert_status_t comm_done(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  comm_op_t *op = (comm_op_t *)payload;
  uint32_t i;
  (void)stream;
  (void)error;
  for (i = 0; i < op->pin_count; i++)
    (void)cubert_memory_id_release_binding(op->server->table, op->pins[i]);
  return CUBERT_STATUS_OK;
}

/* Steps 2-3 of a collective (see the top): fence the compute stream over the
 * bindings, then enqueue `op` on the communication stream after it. */
static cubert_status_t enqueue(cpu_server_t *s, uint64_t stream, const cubert_binding_t *bindings,
                               uint32_t count, const comm_op_t *prepared,
                               cubert_error_t *out_error) {
  cubert_resolved_streams_t resolved;
  cpu_stream_t *cs;
  cpu_op_t *fence, *op;
  comm_op_t *payload;
  uint64_t fence_seq;
  uint32_t i, pinned;
  cubert_memory_id_t pins[2];
  for (i = 0; i < count; i++) {
    if (cubert_memory_id_retain_binding(s->table, bindings[i].memory) != CUBERT_STATUS_OK) {
      while (i-- > 0) (void)cubert_memory_id_release_binding(s->table, pins[i]);
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0,
                              "binding was released before the collective was enqueued");
    }
    pins[i] = bindings[i].memory;
  }
  {
    cubert_status_t status = cubert_multi_stream_resolve(s->multi, stream, bindings, count, false,
                                                         &resolved, out_error);
    if (status != CUBERT_STATUS_OK) {
      for (i = 0; i < count; i++) (void)cubert_memory_id_release_binding(s->table, pins[i]);
      return status;
    }
  }
  cs = (cpu_stream_t *)resolved.stream;
  fence = cpu_stream_reserve(cs); /* an empty op: its point is the fence */
  fence_seq = cpu_stream_commit(cs);
  (void)fence;
  pinned = resolved.pinned;
  cubert_multi_stream_resolve_end(s->multi, &resolved);
  if (pinned) cpu_gc_hand_off(s);
  op = cpu_stream_reserve(&s->comm->stream);
  payload = (comm_op_t *)cpu_op_payload(op);
  *payload = *prepared;
  payload->server = s;
  payload->pin_count = count;
  for (i = 0; i < count; i++) payload->pins[i] = pins[i];
  op->wait_stream = cs;
  op->wait_seq = fence_seq;
  op->run = comm_run;
  op->done = comm_done;
  s->comm->last_seq = cpu_stream_commit(&s->comm->stream);
  return CUBERT_STATUS_OK;
}

/* ---- vtable entries ---- */

cubert_status_t cpu_comm_init(cubert_server_t *server, const uint32_t *device_indices, size_t count,
                              cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  host_comm_ref_t ref;
  cubert_status_t status;
  uint32_t sorted[CUBERT_COMMUNICATION_MAX_DEVICES], rank, i;
  uint64_t id;
  /* A collective blocks until its peers' step loops ran: one host thread
   * stepping every device cannot do that, so deterministic mode has none. */
  if (s->deterministic)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0,
                            "collectives need the threaded mode of the CPU server");
  CUBERT_RETURN_IF_ERROR(
      host_comm_describe(device_indices, count, s->device_index, sorted, &id, &rank, out_error));
  if (s->comm) {
    for (i = 0; i < s->comm->joined_count; i++)
      if (s->comm->joined[i].id == id && s->comm->joined[i].size == count)
        return host_comm_check(&s->comm->joined[i], out_error); /* idempotent */
    if (s->comm->joined_count == CPU_COMM_MAX_JOINED) {
      uint64_t f = CPU_COMM_MAX_JOINED;
      return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, &f, 1,
                              "this device joined too many communicators");
    }
  }
  CUBERT_RETURN_IF_ERROR(comm_state(s, out_error)); /* joined_count < max from here on */
  status = host_comm_join(device_indices, count, s->device_index, &ref, out_error);
  if (status == CUBERT_STATUS_ALREADY_EXISTS) status = CUBERT_STATUS_OK; /* cannot happen */
  if (status != CUBERT_STATUS_OK) return status;
  s->comm->joined[s->comm->joined_count++] = ref;
  return CUBERT_STATUS_OK;
}

cubert_status_t cpu_all_reduce(cubert_server_t *server, const cubert_binding_t *src,
                               const cubert_binding_t *dst, uint32_t dtype, uint64_t stream,
                               uint32_t op, const uint32_t *device_indices, size_t count,
                               cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  cubert_binding_t bindings[2];
  unsigned char *sp, *dp;
  uint64_t ss, ds;
  comm_op_t prepared;
  host_comm_ref_t ref;
  if (!src || !dst)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "all_reduce: NULL binding");
  if (!cubert_reduce_operation_is_valid((cubert_reduce_operation_t)op)) {
    uint64_t f = op;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "all_reduce: unknown reduce operation");
  }
  CUBERT_RETURN_IF_ERROR(find_joined(s, device_indices, count, &ref, out_error));
  CUBERT_RETURN_IF_ERROR(comm_resolve(s, src, &sp, &ss, out_error));
  CUBERT_RETURN_IF_ERROR(comm_resolve(s, dst, &dp, &ds, out_error));
  if (src->stream != dst->stream) {
    uint64_t f[2];
    f[0] = src->stream;
    f[1] = dst->stream;
    return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 2,
                            "Source and destination should be on the same stream.");
  }
  if (ss != ds) {
    uint64_t f[2];
    f[0] = ss;
    f[1] = ds;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                            "all_reduce: source and destination sizes differ");
  }
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, ss, true, out_error));
  memset(&prepared, 0, sizeof prepared);
  prepared.ref = ref;
  prepared.contrib.kind = HOST_COMM_ALL_REDUCE;
  prepared.contrib.device = s->device_index;
  prepared.contrib.dtype = dtype;
  prepared.contrib.op = op;
  prepared.contrib.src = sp;
  prepared.contrib.dst = dp;
  prepared.contrib.bytes = ss;
  bindings[0] = *src;
  bindings[1] = *dst;
  return enqueue(s, stream, bindings, 2, &prepared, out_error);
}

static cubert_status_t pair_ref(cpu_server_t *s, uint32_t peer, const char *what,
                                host_comm_ref_t *out_ref, cubert_error_t *out_error) {
  uint32_t pair[2];
  if (peer == s->device_index) {
    uint64_t f = peer;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1, what);
  }
  pair[0] = s->device_index;
  pair[1] = peer;
  return find_joined(s, pair, 2, out_ref, out_error);
}

cubert_status_t cpu_send(cubert_server_t *server, const cubert_copy_descriptor_t *descriptor,
                         uint32_t dtype, uint64_t stream, uint32_t dst_device,
                         cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  unsigned char *sp;
  uint64_t ss;
  comm_op_t prepared;
  host_comm_ref_t ref;
  if (!descriptor)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "send: NULL descriptor");
  CUBERT_RETURN_IF_ERROR(pair_ref(s, dst_device, "send: a device cannot send to itself", &ref,
                                  out_error));
  /* the count derives from the binding's bytes in use, not the shape (spec 8) */
  CUBERT_RETURN_IF_ERROR(comm_resolve(s, &descriptor->binding, &sp, &ss, out_error));
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, ss, false, out_error));
  memset(&prepared, 0, sizeof prepared);
  prepared.ref = ref;
  prepared.contrib.kind = HOST_COMM_SEND;
  prepared.contrib.device = s->device_index;
  prepared.contrib.peer = dst_device;
  prepared.contrib.dtype = dtype;
  prepared.contrib.src = sp;
  prepared.contrib.bytes = ss;
  return enqueue(s, stream, &descriptor->binding, 1, &prepared, out_error);
}

cubert_status_t cpu_recv(cubert_server_t *server, const cubert_handle_t *handle, uint32_t dtype,
                         uint64_t stream, uint32_t src_device, cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  unsigned char *dp;
  uint64_t ds, size;
  comm_op_t prepared;
  host_comm_ref_t ref;
  if (!handle)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, "recv: NULL handle");
  if (handle->device != s->device_index) {
    uint64_t f[2];
    f[0] = handle->device;
    f[1] = s->device_index;
    return cubert_error_set(out_error, CUBERT_ERROR_DEVICE_MISMATCH, f, 2,
                            "recv: handle belongs to another device");
  }
  CUBERT_RETURN_IF_ERROR(pair_ref(s, src_device, "recv: a device cannot receive from itself", &ref,
                                  out_error));
  size = cubert_handle_size_in_used(handle);
  CUBERT_RETURN_IF_ERROR(check_dtype(dtype, size, false, out_error));
  /* reserve and bind the client-created handle, then receive into it */
  CUBERT_RETURN_IF_ERROR(server->vtable->initialize_memory(server, handle, handle->size, stream,
                                                           out_error));
  CUBERT_RETURN_IF_ERROR(comm_resolve(s, handle, &dp, &ds, out_error));
  memset(&prepared, 0, sizeof prepared);
  prepared.ref = ref;
  prepared.contrib.kind = HOST_COMM_RECV;
  prepared.contrib.device = s->device_index;
  prepared.contrib.peer = src_device;
  prepared.contrib.dtype = dtype;
  prepared.contrib.dst = dp;
  prepared.contrib.bytes = ds;
  return enqueue(s, stream, handle, 1, &prepared, out_error);
}

/* Runs on the compute stream after its wait on the communication stream:
 * moves the communication stream's queued errors onto the compute stream. */
typedef struct collect_op_t {
  cpu_stream_t *comm;
} collect_op_t;

static cubert_status_t collect_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  collect_op_t *op = (collect_op_t *)payload;
  (void)stream;
  return cpu_stream_drain_errors(op->comm, error);
}

cubert_status_t cpu_sync_collective(cubert_server_t *server, uint64_t stream,
                                    cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  cubert_resolved_streams_t resolved;
  cpu_stream_t *cs;
  cpu_op_t *op;
  collect_op_t *collect;
  if (!s->comm) return CUBERT_STATUS_OK; /* no collective was ever enqueued */
  CUBERT_RETURN_IF_ERROR(
      cubert_multi_stream_resolve(s->multi, stream, NULL, 0, false, &resolved, out_error));
  cs = (cpu_stream_t *)resolved.stream;
  op = cpu_stream_reserve(cs);
  collect = (collect_op_t *)cpu_op_payload(op);
  collect->comm = &s->comm->stream;
  op->wait_stream = &s->comm->stream;
  op->wait_seq = s->comm->last_seq;
  op->run = collect_run;
  (void)cpu_stream_commit(cs);
  cubert_multi_stream_resolve_end(s->multi, &resolved);
  return CUBERT_STATUS_OK;
}

void cpu_comm_shutdown(cpu_server_t *s) {
  cpu_comm_t *c = s->comm;
  uint32_t i;
  if (!c) return;
  for (i = 0; i < c->joined_count; i++) host_comm_cancel(&c->joined[i]);
  /* queued collectives finish or fail within the grace period */
  (void)cpu_stream_wait_point(&c->stream, c->last_seq, UINT64_MAX);
  for (i = 0; i < c->joined_count; i++) host_comm_leave(&c->joined[i]);
  c->joined_count = 0;
}

void cpu_comm_destroy(cpu_server_t *s) {
  cpu_comm_t *c = s->comm;
  if (!c) return;
  cpu_stream_deinitialize(&c->stream);
  cubert_allocator_free(s->allocator, c, sizeof(*c), 0);
  s->comm = NULL;
}

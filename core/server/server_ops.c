/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_ops.c: the server's transfers and completions: create (reserve,
 * bind, write), write, read, sync, get_resource.
 *
 * Every copy is one driver copy on the client's stream, after the
 * MultiStream resolved that stream over the binding (cross-stream waits and
 * pins). Host bytes a write reads stay alive until an event recorded after
 * the copy completed (server_gc.c). A read or sync arms a completion on an
 * event recorded after the work: its waiter synchronizes that event without
 * the device, then takes the device briefly to drain the stream's errors
 * into the completion (cubert_completion_wait).
 */
#include "server/server_internal.h"
#include "memory/handle_table.h"
#include "memory/memory.h"
#include "cubert/driver/arith.h"

/* ---- copy shapes ---------------------------------------------------------------------- */

static cubert_status_t strides_unsupported(cubert_error_t *out_error) {
  return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_STRIDES, NULL, 0,
                          "only contiguous and pitched tensors can be copied");
}

cubert_status_t server_copy_shape(const cubert_copy_descriptor_t *d, uint64_t *out_width,
                                  uint64_t *out_height, uint64_t *out_pitch,
                                  cubert_error_t *out_error) {
  uint64_t expect = 1, rows = 1, width, pitch;
  uint32_t r, last;
  bool contiguous = true;
  if (d->rank == 0) {
    *out_width = cubert_handle_size_in_used(&d->binding);
    *out_height = 1;
    *out_pitch = *out_width;
    return CUBERT_STATUS_OK;
  }
  /* unreachable: rank > CUBERT_MAX_RANK (reads: read_need refuses it; writes: the client's
   * descriptors come from checked layouts) */
  if (d->rank > CUBERT_MAX_RANK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "rank above CUBERT_MAX_RANK");
  last = d->rank - 1;
  for (r = d->rank; r-- > 0;) {
    if (d->shape[r] > 1 && d->strides[r] != expect) contiguous = false;
    if (cubert_u64_mul(expect, d->shape[r], &expect) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "tensor size overflows");
  }
  if (cubert_u64_mul(d->shape[last], d->elem_size, &width) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "tensor size overflows");
  for (r = 0; r < last; r++) rows *= d->shape[r]; /* <= expect: no overflow */
  if (contiguous || rows <= 1 || width == 0) {
    /* unreachable: overflow (expect is 0 or the caller checked elem_size * the shape's
     * product: read_need, or the layout of a create) */
    if (cubert_u64_mul(expect, d->elem_size, out_width) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "tensor size overflows");
    *out_height = 1;
    *out_pitch = *out_width;
    return CUBERT_STATUS_OK;
  }
  /* pitched: unit stride in the last dimension, rows `strides[last-1]`
   * elements apart, the outer dimensions packed over whole rows */
  if (d->shape[last] > 1 && d->strides[last] != 1) return strides_unsupported(out_error);
  if (d->strides[last - 1] < d->shape[last]) return strides_unsupported(out_error);
  for (r = 0; r + 1 < last; r++)
    if (d->shape[r] > 1 && d->strides[r] != d->strides[r + 1] * d->shape[r + 1])
      return strides_unsupported(out_error);
  if (cubert_u64_mul(d->strides[last - 1], d->elem_size, &pitch) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "tensor size overflows");
  *out_width = width;
  *out_height = rows;
  *out_pitch = pitch;
  return CUBERT_STATUS_OK;
}

/* Bytes a copy of `height` rows `pitch` apart spans (the last row `width`). */
static cubert_status_t copy_span(uint64_t width, uint64_t height, uint64_t pitch,
                                 uint64_t *out_span) {
  uint64_t span = 0;
  if (height == 0 || width == 0) {
    *out_span = 0;
    return CUBERT_STATUS_OK;
  }
  if (cubert_u64_mul(height - 1, pitch, &span) != CUBERT_STATUS_OK ||
      cubert_u64_add(span, width, &span) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_OVERFLOW;
  *out_span = span;
  return CUBERT_STATUS_OK;
}

static cubert_status_t too_small(cubert_error_t *out_error, uint64_t need, uint64_t have,
                                 const char *what) {
  uint64_t f[2];
  f[0] = need;
  f[1] = have;
  cubert__error_set_text(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2, what,
                         "\005 (needs \001 bytes, has \002 bytes)");
  return CUBERT_STATUS_OUT_OF_RANGE;
}

/* One copy on `slot` after resolving it over `binding` (waits, pins,
 * cursor), reported to the race checker. */
static cubert_status_t enqueue_copy(cubert_server_t *server, uint64_t stream,
                                    const cubert_binding_t *binding, cubert_driver_copy_t *copy,
                                    uint8_t mode, const char *name, cubert_error_t *out_error) {
  server_order_t order;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(server_order_begin(server, stream, binding, 1, &order, out_error));
  status = server_note(server, server->driver->copy(server->self, copy, order.slot->stream, out_error),
                       out_error);
  if (status == CUBERT_STATUS_OK) server_race_op(server, order.slot->index, name, binding, &mode, 1);
  server_order_end(server, &order, binding, 1);
  return status;
}

/* ---- writes ------------------------------------------------------------------------------ */

static void release_bytes(cubert_bytes_t *bytes, size_t count) {
  size_t i;
  for (i = 0; i < count; i++) {
    if (bytes[i].release) bytes[i].release(bytes[i].owner, bytes[i].data, bytes[i].size);
    bytes[i].release = NULL;
  }
}

/* The copy of one write item, checked against its destination. */
static cubert_status_t write_copy(cubert_server_t *server, const cubert_copy_descriptor_t *d,
                                  const cubert_bytes_t *bytes, cubert_driver_copy_t *out,
                                  cubert_error_t *out_error) {
  cubert_device_ptr_t address;
  uint64_t size, width, height, pitch, span = UINT64_MAX; /* copy_span fails: "too large" */
  CUBERT_RETURN_IF_ERROR(server_resolve(server, &d->binding, &address, &size, out_error));
  CUBERT_RETURN_IF_ERROR(server_copy_shape(d, &width, &height, &pitch, out_error));
  cubert_memset(out, 0, sizeof(*out));
  out->kind = CUBERT_COPY_HOST_TO_DEVICE;
  out->src_host = bytes->data;
  out->dst_device = address;
  if (height == 1) { /* contiguous: the bytes given, at most the destination */
    if (bytes->size > size) return too_small(out_error, bytes->size, size, "write larger than its destination");
    out->width = bytes->size;
    out->height = bytes->size ? 1 : 0;
    return CUBERT_STATUS_OK;
  }
  if (copy_span(width, height, pitch, &span) != CUBERT_STATUS_OK || span > size)
    return too_small(out_error, span, size, "pitched tensor larger than its destination");
  if (bytes->size != width * height)
    return too_small(out_error, width * height, bytes->size,
                     "a pitched write needs exactly the tensor's bytes");
  out->width = width;
  out->height = height;
  out->src_pitch = width;
  out->dst_pitch = pitch;
  return CUBERT_STATUS_OK;
}

static cubert_status_t write_now(cubert_server_t *server, const cubert_server_write_t *op,
                                 cubert_error_t *out_error);

cubert_status_t cubert__server_write(cubert_server_t *server, const cubert_server_write_t *op,
                                     cubert_error_t *out_error) {
  struct cubert_server_recording_t *recording =
      server->recording_count && !op->upload ? server_recording_of(server, op->stream) : NULL;
  cubert_status_t status;
  if (!recording) return write_now(server, op, out_error);
  /* a recording stream: the item's bytes are copied into the recording */
  status = server_lost(server, out_error);
  /* unreachable: several items (cubert_client_write, the one non-upload caller, writes one) */
  if (status == CUBERT_STATUS_OK && op->count != 1)
    status = cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                              "recording: a write of one item only is recorded");
  if (status == CUBERT_STATUS_OK)
    status = server_record_write(server, recording, &op->descriptors[0], &op->bytes[0], out_error);
  release_bytes(op->bytes, op->count);
  return status;
}

static cubert_status_t write_now(cubert_server_t *server, const cubert_server_write_t *op,
                                 cubert_error_t *out_error) {
  cubert_driver_copy_t copy;
  server_slot_t *slot = NULL;
  cubert_status_t status;
  size_t i;
  status = server_lost(server, out_error);
  /* validate everything first: a failing call enqueues nothing */
  for (i = 0; i < op->count && status == CUBERT_STATUS_OK; i++)
    status = write_copy(server, &op->descriptors[i], &op->bytes[i], &copy, out_error);
  if (status == CUBERT_STATUS_OK) status = server_slot(server, op->stream, &slot, out_error);
  if (status != CUBERT_STATUS_OK) {
    release_bytes(op->bytes, op->count);
    return status;
  }
  for (i = 0; i < op->count && status == CUBERT_STATUS_OK; i++) {
    (void)write_copy(server, &op->descriptors[i], &op->bytes[i], &copy, NULL);
    if (op->borrowed) copy.flags = CUBERT_COPY_SOURCE_BORROWED;
    status = enqueue_copy(server, op->stream, &op->descriptors[i].binding, &copy, CUBERT_RACE_WRITE,
                          "write", out_error);
  }
  /* the bytes of enqueued copies wait for them; the others go now */
  if (status == CUBERT_STATUS_OK) {
    server_gc_retire_bytes(server, slot, op->bytes, op->count);
  } else {
    server_gc_retire_bytes(server, slot, op->bytes, i - 1);
    release_bytes(op->bytes + (i - 1), op->count - (i - 1));
  }
  return status;
}

cubert_status_t cubert__server_create_memory(cubert_server_t *server, const cubert_server_create_t *op,
                                             cubert_error_t *out_error) {
  server_slot_t *slot = NULL;
  cubert_memory_id_t reserved;
  cubert_server_write_t write;
  cubert_status_t status = server_lost(server, out_error);
  if (status == CUBERT_STATUS_OK) status = server_slot(server, op->stream, &slot, out_error);
  if (status == CUBERT_STATUS_OK)
    status = cubert__memory_manager_reserve(slot->manager, op->size, &reserved, out_error);
  if (status == CUBERT_STATUS_OK) {
    status = cubert__memory_manager_bind(slot->manager, reserved, op->memory->memory,
                                         cubert__multi_stream_cursor(server->multi, op->stream),
                                         out_error);
    (void)cubert__memory_id_release_handle(server->table, reserved);
  }
  if (status != CUBERT_STATUS_OK) {
    release_bytes(op->bytes, op->count);
    return status;
  }
  if (op->count == 0) {
    server_gc_poll_if_pending(server);
    return CUBERT_STATUS_OK;
  }
  write.stream = op->stream;
  write.descriptors = op->descriptors;
  write.bytes = op->bytes;
  write.count = op->count;
  write.borrowed = false;
  write.upload = true;
  return write_now(server, &write, out_error); /* creates run at once, recording or not */
}

cubert_status_t cubert__server_reserve_memory(cubert_server_t *server, uint64_t stream, uint64_t size,
                                              cubert_memory_id_t *out_memory,
                                              cubert_error_t *out_error) {
  server_slot_t *slot = NULL;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(server_slot(server, stream, &slot, out_error));
  /* The reserved id is the caller's (one handle reference), so nothing is
   * bound; the slice keeps cursor 0, which the server never reads (it answers
   * a binding's cursor with its origin slot's current one: the multi-stream's
   * wait_on_origin_cursor, server.c). */
  CUBERT_RETURN_IF_ERROR(cubert__memory_manager_reserve(slot->manager, size, out_memory, out_error));
  server_gc_poll_if_pending(server);
  return CUBERT_STATUS_OK;
}

bool cubert__server_reserve_sharded(cubert_server_t *server, uint64_t stream, uint64_t size,
                                    cubert_memory_id_t *out_memory, cubert_status_t *out_status,
                                    cubert_error_t *out_error) {
  /* the slot's manager, storage and driver stream are the shard's; the
   * handle table is lock-free; lost and the slots change only with the
   * device held (device_shards.h) */
  server_slot_t *slot;
  if (!server->concurrent_launch || server->lost.status != CUBERT_STATUS_OK) return false;
  slot = server_slot_existing(server, stream);
  if (!slot || !slot->manager) return false;
  slot->sharded = 1;
  *out_status = cubert__memory_manager_reserve(slot->manager, size, out_memory, out_error);
  slot->sharded = 0;
  return true;
}

bool cubert__server_can_borrow(const cubert_server_t *server, uint64_t size) {
  uint32_t flags = server->driver->flags;
  return (flags & CUBERT_DRIVER_SYNCHRONOUS) != 0 ||
         ((flags & CUBERT_DRIVER_BORROWS_UPLOADS) != 0 && size > CUBERT_DRIVER_BORROW_MIN);
}

/* ---- completions ---------------------------------------------------------------------------- */

typedef struct finish_task_t {
  cubert_completion_t *completion;
  cubert_status_t waited;
  cubert_error_t wait_error;
} finish_task_t;

/* With the device held: the host observed the stream; take its errors. */
static void finish_run(void *context, void *payload) {
  cubert_server_t *server = (cubert_server_t *)context;
  finish_task_t *t = (finish_task_t *)payload;
  cubert_completion_t *c = t->completion;
  uint32_t slot = (uint32_t)(uintptr_t)c->impl[2];
  (void)server_note(server, t->waited, &t->wait_error);
  cubert_error_clear(&c->error);
  if (t->waited == CUBERT_STATUS_OK) {
    server_race_host_sync(server, slot);
    c->status = server_drain(server, slot, &c->error);
  } else { /* the wait failed (a lost device, a deterministic deadlock) */
    c->error = t->wait_error;
    if (c->error.depth == 0)
      cubert_error_set(&c->error, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, "waiting for the stream failed");
    c->status = t->waited;
    c->error.status = t->waited;
  }
  server->driver->event_destroy(server->self, (cubert_driver_event_t *)c->impl[1]);
  c->impl[1] = NULL;
  server_gc_poll_if_pending(server);
}

static cubert_status_t completion_wait(cubert_completion_t *c, uint64_t timeout_ns) {
  cubert_server_t *server = (cubert_server_t *)c->impl[0];
  finish_task_t t;
  cubert_error_clear(&t.wait_error);
  t.completion = c;
  t.waited = server->driver->event_synchronize(server->self, (cubert_driver_event_t *)c->impl[1],
                                               timeout_ns, &t.wait_error);
  if (t.waited == CUBERT_STATUS_DEADLINE_EXCEEDED) return t.waited;
  if (server->handle.vtable->submit_blocking(server->handle.self, finish_run, &t) != CUBERT_STATUS_OK) {
    /* the device is shutting down: the stream's errors stay where they are */
    c->status = cubert_error_set(&c->error, CUBERT_ERROR_DEVICE_LOST, NULL, 0,
                                 "the device handle refused the completion");
  }
  c->vtable = NULL; /* finished: later waits return at once */
  return CUBERT_STATUS_OK;
}

static const cubert_completion_vtable_t g_completion_vtable = {completion_wait};

cubert_status_t cubert__server_completion_wait(cubert_completion_t *completion, uint64_t timeout_ns) {
  return completion_wait(completion, timeout_ns);
}

/* No event for the completion (host memory exhausted): the copies already
 * enqueued write the caller's memory, so wait for the stream here (no
 * allocation) and finish the completion at once. */
static cubert_status_t completion_now(cubert_server_t *server, server_slot_t *slot, cubert_completion_t *c,
                                      cubert_error_t *out_error) {
  cubert_status_t status = server_lost(server, out_error);
  if (status == CUBERT_STATUS_OK)
    status = server_note(server, server->driver->stream_synchronize(server->self, slot->stream, out_error),
                         out_error);
  if (status != CUBERT_STATUS_OK) return status;
  server_race_host_sync(server, slot->index);
  cubert_error_clear(&c->error);
  c->status = server_drain(server, slot->index, &c->error);
  c->vtable = NULL;
  return CUBERT_STATUS_OK;
}

/* Arm `c` on an event recorded now at the end of `slot`. */
static cubert_status_t completion_arm(cubert_server_t *server, server_slot_t *slot, cubert_completion_t *c,
                                      cubert_error_t *out_error) {
  cubert_driver_event_t *event = NULL;
  cubert_status_t status =
      server_note(server, server->driver->event_record(server->self, slot->stream, &event, out_error),
                  out_error);
  if (status == CUBERT_STATUS_RESOURCE_EXHAUSTED) return completion_now(server, slot, c, out_error);
  if (status != CUBERT_STATUS_OK) return status;
  cubert_error_clear(&c->error);
  c->status = CUBERT_STATUS_OK;
  c->impl[0] = server;
  c->impl[1] = event;
  c->impl[2] = (void *)(uintptr_t)slot->index;
  c->impl[3] = NULL;
  c->vtable = &g_completion_vtable;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__server_sync(cubert_server_t *server, uint64_t stream,
                                    cubert_completion_t *completion, cubert_error_t *out_error) {
  server_slot_t *slot = NULL;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(cubert__server_not_recording(server, stream, "sync", out_error));
  CUBERT_RETURN_IF_ERROR(server_slot(server, stream, &slot, out_error));
  if (server->external_live) server_external_poll(server, false);
  server_gc_poll_if_pending(server);
  return completion_arm(server, slot, completion, out_error);
}

/* ---- reads ------------------------------------------------------------------------------------ */

/* The copy of read item i into dsts[i]. */
static cubert_status_t read_copy(cubert_server_t *server, const cubert_server_read_t *op, size_t i,
                                 cubert_driver_copy_t *out, const cubert_binding_t **out_binding,
                                 cubert_error_t *out_error) {
  const cubert_binding_t *b = op->handles ? &op->handles[i] : &op->descriptors[i].binding;
  cubert_device_ptr_t address;
  uint64_t size, width, height, pitch, span = UINT64_MAX; /* copy_span fails: "too large" */
  CUBERT_RETURN_IF_ERROR(server_resolve(server, b, &address, &size, out_error));
  if (op->handles) {
    width = size;
    height = 1;
    pitch = size;
  } else {
    CUBERT_RETURN_IF_ERROR(server_copy_shape(&op->descriptors[i], &width, &height, &pitch, out_error));
  }
  if (copy_span(width, height, pitch, &span) != CUBERT_STATUS_OK || span > size)
    return too_small(out_error, span, size, "tensor larger than its memory");
  if (width * height > op->dst_sizes[i])
    return too_small(out_error, width * height, op->dst_sizes[i],
                     "read destination smaller than the data");
  cubert_memset(out, 0, sizeof(*out));
  out->kind = CUBERT_COPY_DEVICE_TO_HOST;
  out->src_device = address;
  out->dst_host = op->dsts[i];
  out->width = width;
  out->height = width ? height : 0;
  out->src_pitch = pitch;
  out->dst_pitch = width;
  *out_binding = b;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__server_read(cubert_server_t *server, const cubert_server_read_t *op,
                                    cubert_error_t *out_error) {
  cubert_driver_copy_t copy;
  const cubert_binding_t *b = NULL;
  server_slot_t *slot = NULL;
  size_t i;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(cubert__server_not_recording(server, op->stream, "read", out_error));
  for (i = 0; i < op->count; i++)
    CUBERT_RETURN_IF_ERROR(read_copy(server, op, i, &copy, &b, out_error));
  CUBERT_RETURN_IF_ERROR(server_slot(server, op->stream, &slot, out_error));
  for (i = 0; i < op->count; i++) {
    (void)read_copy(server, op, i, &copy, &b, NULL);
    CUBERT_RETURN_IF_ERROR(
        enqueue_copy(server, op->stream, b, &copy, CUBERT_RACE_READ, "read", out_error));
  }
  if (server->external_live) server_external_poll(server, false);
  server_gc_poll_if_pending(server);
  return completion_arm(server, slot, op->completion, out_error);
}

/* ---- resources ------------------------------------------------------------------------------ */

cubert_status_t cubert__server_get_resource(cubert_server_t *server, uint64_t stream,
                                            const cubert_binding_t *binding,
                                            cubert_resource_t *out_resource,
                                            cubert_error_t *out_error) {
  cubert_device_ptr_t address;
  uint64_t size;
  server_slot_t *slot = NULL;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(cubert__server_not_recording(server, stream, "get_resource", out_error));
  CUBERT_RETURN_IF_ERROR(server_resolve(server, binding, &address, &size, out_error));
  /* the resource is used by the host right away: align both streams first */
  CUBERT_RETURN_IF_ERROR(server_stream_sync(server, binding->stream, out_error));
  CUBERT_RETURN_IF_ERROR(server_slot(server, stream, &slot, out_error));
  CUBERT_RETURN_IF_ERROR(server_stream_sync(server, stream, out_error));
  /* the host synced both streams, then may read and write the memory */
  server_race_host_sync(server, (uint32_t)(binding->stream % server->max_streams));
  server_race_host_sync(server, slot->index);
  server_race_host_op(server, "get_resource", binding);
  out_resource->address = address;
  out_resource->ptr = (server->driver->flags & CUBERT_DRIVER_HOST_ADDRESSABLE)
                          ? (void *)(uintptr_t)address
                          : NULL;
  out_resource->size = size;
  return CUBERT_STATUS_OK;
}

/* ---- flush ------------------------------------------------------------------------ */

cubert_status_t cubert__server_flush(cubert_server_t *server, uint64_t stream, cubert_error_t *out_error) {
  CUBERT_RETURN_IF_ERROR(cubert__server_not_recording(server, stream, "flush", out_error));
  if (server->external_live) server_external_poll(server, false);
  server_gc_poll_if_pending(server);
  return server_drain(server, stream, out_error);
}

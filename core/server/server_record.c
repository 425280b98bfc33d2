/* SPDX-License-Identifier: MIT */
/*
 * core/server/server_record.c: recorded launch sequences (cubert/record.h,
 * docs/recording.md).
 *
 * Recording: while a stream records, its launches and contiguous writes are
 * checked as usual (arguments, limits, bindings resolved) and appended to
 * the recording instead of being enqueued. The recording keeps, per
 * operation, what the driver needs (kernel, shape, counts, scalars and their
 * types) and numbers the distinct buffers it used: buffer slots, each a
 * binding (copied, not retained) and its size in bytes.
 *
 * Replay: every slot is checked first (still held by a handle, still bound,
 * the recorded size), then each operation is enqueued on the replaying
 * stream from the pre-built records: no per-operation allocation, no client
 * round trip, one device hold for the whole sequence. Each operation is
 * ordered over its bindings (cross-stream waits, pins) and told to the race
 * checker as a launch would be, so replays keep every guarantee of launches.
 * A refused replay enqueues nothing.
 */
#include "server/server_internal.h"
#include "memory/handle_table.h"

#define RECORD_MAX_BUFFERS 64u /* distinct buffers (slots) of one recording */
#define RECORD_LAUNCH 1u
#define RECORD_WRITE 2u
#define RECORD_NO_SLOT 0xFFu

typedef struct record_op_t {
  uint32_t kind; /* RECORD_LAUNCH / RECORD_WRITE */
  /* RECORD_LAUNCH */
  const cubert_kernel_t *kernel;
  uint32_t execution;
  uint32_t dynamic; /* 1: the count is read from slot count_slot */
  cubert_dim3_t count;
  cubert_dim3_t cube_dim;
  uint32_t shared_memory_bytes;
  uint32_t buffer_count, scalar_count;
  uint8_t slot[CUBERT_KERNEL_MAX_BUFFERS];
  uint8_t count_slot;
  uint8_t types[CUBERT_KERNEL_MAX_SCALARS]; /* cubert_scalar_type_t; NONE: untyped (low-level form) */
  uint64_t scalars[CUBERT_KERNEL_MAX_SCALARS];
  /* RECORD_WRITE: `size` bytes (owned) into slot dst_slot */
  void *bytes;
  uint64_t size;
  uint8_t dst_slot;
  uint8_t dirty; /* RECORD_LAUNCH: scalars changed since the driver's plan saw them */
} record_op_t;

typedef struct record_buffer_t {
  cubert_binding_t binding;
  uint64_t size; /* bytes in use when recorded: a replacement must have as many */
} record_buffer_t;

struct cubert_server_recording_t {
  struct cubert_server_recording_t *next; /* the in-progress list */
  cubert_allocator_t allocator;
  uint64_t stream; /* the recording stream (while in progress) */
  record_op_t *ops;
  uint32_t op_count, op_capacity, launch_count, write_count;
  uint32_t buffer_count;
  record_buffer_t buffers[RECORD_MAX_BUFFERS];
  cubert_device_ptr_t addresses[RECORD_MAX_BUFFERS]; /* resolved by the last replay */
  /* the driver's plan (plan_create) and the addresses it holds; plan_refused:
   * the driver cannot plan these launches (replayed launch by launch) */
  cubert_driver_plan_t *plan;
  uint32_t plan_refused;
  cubert_device_ptr_t plan_addresses[RECORD_MAX_BUFFERS];
  cubert_binding_t all[RECORD_MAX_BUFFERS]; /* a plan replay's bindings (off the stack) */
  /* streams that replayed writes (host bytes read by pending copies) or the
   * plan, by slot index: synchronized before the recording goes */
  uint64_t used_streams[2];
  uint32_t used_streams_all; /* a slot index >= 128: sync every slot */
};

/* ---- the in-progress list ----------------------------------------------------------------- */

cubert_server_recording_t *server_recording_of(const cubert_server_t *server, uint64_t stream_id) {
  cubert_server_recording_t *r;
  for (r = server->recordings; r; r = r->next)
    if (r->stream == stream_id) return r;
  return NULL;
}

cubert_status_t cubert__server_not_recording(const cubert_server_t *server, uint64_t stream,
                                             const char *what, cubert_error_t *out_error) {
  uint64_t f;
  if (server->recording_count == 0 || !server_recording_of(server, stream)) return CUBERT_STATUS_OK;
  f = stream;
  return cubert__error_set_text(out_error, CUBERT_ERROR_FAILED_PRECONDITION, &f, 1, what,
                                "\005 refused: stream \001 is recording (only launches and "
                                "writes are recorded; end the recording first)");
}

static void recording_free(cubert_server_recording_t *r) {
  uint32_t i;
  cubert_allocator_t a = r->allocator;
  for (i = 0; i < r->op_count; i++)
    if (r->ops[i].kind == RECORD_WRITE && r->ops[i].bytes)
      cubert_allocator_free(a, r->ops[i].bytes, (size_t)r->ops[i].size, 16);
  if (r->ops) cubert_allocator_free(a, r->ops, (size_t)r->op_capacity * sizeof(record_op_t), 0);
  cubert_allocator_free(a, r, sizeof(*r), 0);
}

void server_record_destroy_all(cubert_server_t *server) {
  while (server->recordings) {
    cubert_server_recording_t *r = server->recordings;
    server->recordings = r->next;
    recording_free(r);
  }
  server->recording_count = 0;
}

cubert_status_t cubert__server_record_begin(cubert_server_t *server, uint64_t stream,
                                            cubert_error_t *out_error) {
  cubert_server_recording_t *r = NULL;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  if (server_recording_of(server, stream)) {
    uint64_t f = stream;
    return cubert_error_set(out_error, CUBERT_ERROR_FAILED_PRECONDITION, &f, 1,
                            "record_begin: the stream is recording already");
  }
  if (cubert_allocator_malloc(server->allocator, sizeof(*r), 0, (void **)&r, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "record_begin: no memory for the recording");
  cubert_memset(r, 0, sizeof(*r));
  r->allocator = server->allocator;
  r->stream = stream;
  r->next = server->recordings;
  server->recordings = r;
  server->recording_count++;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__server_record_end(cubert_server_t *server, uint64_t stream,
                                          cubert_server_recording_t **out_recording,
                                          cubert_error_t *out_error) {
  cubert_server_recording_t **link = &server->recordings;
  while (*link && (*link)->stream != stream) link = &(*link)->next;
  if (!*link) {
    uint64_t f = stream;
    return cubert_error_set(out_error, CUBERT_ERROR_FAILED_PRECONDITION, &f, 1,
                            "record_end: the stream is not recording");
  }
  *out_recording = *link;
  *link = (*link)->next;
  (*out_recording)->next = NULL;
  server->recording_count--;
  return CUBERT_STATUS_OK;
}

/* ---- recording ---------------------------------------------------------------------------- */

static cubert_status_t ops_room(cubert_server_recording_t *r, cubert_error_t *out_error) {
  uint32_t capacity;
  void *grown = NULL;
  if (r->op_count < r->op_capacity) return CUBERT_STATUS_OK;
  if (r->op_capacity >= (UINT32_MAX / 2u) / (uint32_t)sizeof(record_op_t))
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                            "recording: too many operations");
  capacity = r->op_capacity ? r->op_capacity * 2u : 16u;
  if (cubert_allocator_realloc(r->allocator, r->ops, (size_t)r->op_capacity * sizeof(record_op_t),
                               (size_t)capacity * sizeof(record_op_t), 0, &grown, NULL) !=
      CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "recording: no memory for another operation");
  r->ops = (record_op_t *)grown;
  r->op_capacity = capacity;
  return CUBERT_STATUS_OK;
}

static bool same_binding(const cubert_binding_t *a, const cubert_binding_t *b) {
  return a->memory.index == b->memory.index && a->memory.generation == b->memory.generation &&
         a->offset_start == b->offset_start && a->offset_end == b->offset_end;
}

/* The slot of `b` (resolved: `size` bytes), added when new. `*added` counts
 * slots added by this operation (dropped again when it is refused). */
static cubert_status_t slot_of(cubert_server_recording_t *r, const cubert_binding_t *b, uint64_t size,
                               uint8_t *out_slot, cubert_error_t *out_error) {
  uint32_t i;
  for (i = 0; i < r->buffer_count; i++)
    if (same_binding(&r->buffers[i].binding, b)) {
      *out_slot = (uint8_t)i;
      return CUBERT_STATUS_OK;
    }
  if (r->buffer_count >= RECORD_MAX_BUFFERS) {
    uint64_t f = RECORD_MAX_BUFFERS;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, &f, 1,
                            "recording: more distinct buffers than a recording holds (64)");
  }
  r->buffers[r->buffer_count].binding = *b;
  r->buffers[r->buffer_count].size = size;
  *out_slot = (uint8_t)r->buffer_count++;
  return CUBERT_STATUS_OK;
}

cubert_status_t server_record_launch(cubert_server_t *server, cubert_server_recording_t *r,
                                     const cubert_server_launch_t *op, cubert_dim3_t cube_dim,
                                     uint32_t shared_memory_bytes, cubert_error_t *out_error) {
  const cubert_launch_arguments_t *args = op->args;
  record_op_t *o;
  uint32_t i, slots_before = r->buffer_count;
  cubert_device_ptr_t address;
  uint64_t size;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(ops_room(r, out_error));
  o = &r->ops[r->op_count];
  cubert_memset(o, 0, sizeof(*o));
  o->kind = RECORD_LAUNCH;
  o->kernel = op->kernel;
  o->execution = (uint32_t)op->execution;
  o->count = op->count->count;
  o->cube_dim = cube_dim;
  o->shared_memory_bytes = shared_memory_bytes;
  o->buffer_count = args->buffer_count;
  o->scalar_count = args->scalar_count;
  o->count_slot = RECORD_NO_SLOT;
  for (i = 0; i < args->scalar_count; i++) {
    o->scalars[i] = args->scalars[i];
    o->types[i] = args->scalar_types[i];
  }
  status = CUBERT_STATUS_OK;
  for (i = 0; i < args->buffer_count && status == CUBERT_STATUS_OK; i++) {
    status = server_resolve(server, &args->buffers[i], &address, &size, out_error);
    if (status == CUBERT_STATUS_OK) status = slot_of(r, &args->buffers[i], size, &o->slot[i], out_error);
  }
  if (status == CUBERT_STATUS_OK && op->count->kind == CUBERT_CUBE_COUNT_DYNAMIC) {
    status = server_resolve(server, &op->count->binding, &address, &size, out_error);
    if (status == CUBERT_STATUS_OK && size < 12)
      status = cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, &size, 1,
                                "a dynamic cube count needs 12 bytes");
    if (status == CUBERT_STATUS_OK) status = slot_of(r, &op->count->binding, size, &o->count_slot, out_error);
    o->dynamic = 1;
  }
  if (status != CUBERT_STATUS_OK) {
    r->buffer_count = slots_before; /* refused: the recording is unchanged */
    return status;
  }
  r->op_count++;
  r->launch_count++;
  return CUBERT_STATUS_OK;
}

cubert_status_t server_record_write(cubert_server_t *server, cubert_server_recording_t *r,
                                    const cubert_copy_descriptor_t *d, const cubert_bytes_t *bytes,
                                    cubert_error_t *out_error) {
  record_op_t *o;
  cubert_device_ptr_t address;
  uint64_t size, width, height, pitch, f[2];
  uint32_t slots_before = r->buffer_count;
  void *copy = NULL;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(server_resolve(server, &d->binding, &address, &size, out_error));
  CUBERT_RETURN_IF_ERROR(server_copy_shape(d, &width, &height, &pitch, out_error));
  /* unreachable: a pitched write (cubert_client_write, the one recorded write, is contiguous) */
  if (height != 1)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_STRIDES, NULL, 0,
                            "recording: only contiguous writes are recorded");
  if (bytes->size > size) {
    f[0] = bytes->size;
    f[1] = size;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                            "write larger than its destination");
  }
  CUBERT_RETURN_IF_ERROR(ops_room(r, out_error));
  if (bytes->size &&
      cubert_allocator_malloc(r->allocator, (size_t)bytes->size, 16, &copy, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "recording: no memory for a write's bytes");
  o = &r->ops[r->op_count];
  cubert_memset(o, 0, sizeof(*o));
  status = slot_of(r, &d->binding, size, &o->dst_slot, out_error);
  if (status != CUBERT_STATUS_OK) {
    r->buffer_count = slots_before;
    if (copy) cubert_allocator_free(r->allocator, copy, (size_t)bytes->size, 16);
    return status;
  }
  if (bytes->size) cubert_memcpy(copy, bytes->data, (size_t)bytes->size);
  o->kind = RECORD_WRITE;
  o->bytes = copy;
  o->size = bytes->size;
  r->op_count++;
  r->write_count++;
  return CUBERT_STATUS_OK;
}

/* ---- updates ------------------------------------------------------------------------------ */

static cubert_status_t check_slot_alignment(const cubert_server_recording_t *r, uint32_t slot,
                                            const cubert_handle_t *h, cubert_error_t *out_error) {
  uint32_t i, b;
  for (i = 0; i < r->op_count; i++) {
    const record_op_t *o = &r->ops[i];
    if (o->kind == RECORD_LAUNCH) {
      for (b = 0; b < o->buffer_count; b++) {
        uint32_t align = o->kernel->buffer_align[b];
        if (o->slot[b] != slot) continue;
        if (align == 0) align = CUBERT_KERNEL_DEFAULT_BUFFER_ALIGN;
        if (h->offset_start % align != 0) {
          uint64_t f[3];
          f[0] = slot;
          f[1] = h->offset_start;
          f[2] = align;
          return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 3,
                                  "recording set_buffer: the handle's byte offset is not a "
                                  "multiple of a recorded kernel's buffer_align");
        }
      }
      if (o->dynamic && o->count_slot == slot && h->offset_start % 4u != 0) {
        uint64_t f[3];
        f[0] = slot;
        f[1] = h->offset_start;
        f[2] = 4;
        return cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 3,
                                "recording set_buffer: a dynamic cube count's binding is not "
                                "at a multiple of 4 bytes");
      }
    }
  }
  return CUBERT_STATUS_OK;
}

/* A slot's binding is usable: a handle still holds it, it is bound, its
 * size is the recorded one. */
static cubert_status_t check_fits(cubert_server_t *server, const cubert_server_recording_t *r,
                                  uint32_t slot, const cubert_binding_t *b,
                                  cubert_device_ptr_t *out_address, cubert_error_t *out_error) {
  uint64_t size, f[3];
  cubert_status_t status;
  if (cubert__memory_id_handle_count(server->table, b->memory) == 0) {
    f[0] = slot;
    return cubert__error_set_text(out_error, CUBERT_ERROR_INVALID_HANDLE, f, 1, NULL,
                            "recording: the buffer of slot \001 was released (a recorded "
                            "sequence no longer fits: set_buffer gives it a live one)");
  }
  status = server_resolve(server, b, out_address, &size, out_error);
  if (status != CUBERT_STATUS_OK) return status;
  if (size != r->buffers[slot].size) {
    f[0] = slot;
    f[1] = size;
    f[2] = r->buffers[slot].size;
    return cubert__error_set_text(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 3, NULL,
                            "recording: the buffer of slot \001 has \002 bytes, the recording "
                            "was made with \003 (a recorded sequence keeps its buffers' sizes)");
  }
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__server_recording_set_buffer(cubert_server_t *server,
                                                    cubert_server_recording_t *r, uint32_t slot,
                                                    const cubert_handle_t *handle,
                                                    cubert_error_t *out_error) {
  cubert_device_ptr_t address;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  if (slot >= r->buffer_count) {
    uint64_t f[2];
    f[0] = slot;
    f[1] = r->buffer_count;
    return cubert__error_set_text(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2, NULL,
                            "recording set_buffer: slot \001 is not below the recording's "
                            "\002 buffers");
  }
  CUBERT_RETURN_IF_ERROR(check_fits(server, r, slot, handle, &address, out_error));
  CUBERT_RETURN_IF_ERROR(check_slot_alignment(r, slot, handle, out_error));
  r->buffers[slot].binding = *handle;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__server_recording_set_scalars(cubert_server_recording_t *r, uint32_t launch,
                                                     const cubert_launch_arguments_t *args,
                                                     cubert_error_t *out_error) {
  uint32_t i, n = 0;
  record_op_t *o = NULL;
  uint64_t f[3];
  for (i = 0; i < r->op_count; i++)
    if (r->ops[i].kind == RECORD_LAUNCH && n++ == launch) {
      o = &r->ops[i];
      break;
    }
  if (!o) {
    f[0] = launch;
    f[1] = r->launch_count;
    return cubert__error_set_text(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2, NULL,
                            "recording set_scalars: launch \001 is not below the recording's "
                            "\002 launches");
  }
  if (args->buffer_count != 0) {
    f[0] = args->buffer_count;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 1,
                            "recording set_scalars: the arguments carry buffers (replace "
                            "buffers by slot: cubert_recording_set_buffer)");
  }
  if (args->scalar_count != o->scalar_count) {
    f[0] = launch;
    f[1] = args->scalar_count;
    f[2] = o->scalar_count;
    return cubert__error_set_text(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 3, NULL,
                            "recording set_scalars: launch \001 given \002 scalars, it was "
                            "recorded with \003");
  }
  for (i = 0; i < o->scalar_count; i++)
    if (o->types[i] != CUBERT_SCALAR_NONE && args->scalar_types[i] != CUBERT_SCALAR_NONE &&
        o->types[i] != args->scalar_types[i]) {
      f[0] = i;
      f[1] = args->scalar_types[i];
      f[2] = o->types[i];
      return cubert__error_set_text(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 3, NULL,
                              "recording set_scalars: scalar \001 has type \002, the recording "
                              "has type \003 (cubert_scalar_type_t)");
    }
  for (i = 0; i < o->scalar_count; i++) {
    o->scalars[i] = args->scalars[i];
    if (args->scalar_types[i] != CUBERT_SCALAR_NONE) o->types[i] = args->scalar_types[i];
  }
  o->dirty = 1;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__server_recording_find_buffer(const cubert_server_recording_t *r,
                                                     const cubert_handle_t *handle,
                                                     uint32_t *out_slot, cubert_error_t *out_error) {
  uint32_t i;
  for (i = 0; i < r->buffer_count; i++)
    if (same_binding(&r->buffers[i].binding, handle)) {
      *out_slot = i;
      return CUBERT_STATUS_OK;
    }
  return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                          "recording: the handle is not one of the recording's buffers");
}

void cubert__server_recording_counts(const cubert_server_recording_t *r, uint32_t *out_launches,
                                     uint32_t *out_copies, uint32_t *out_buffers) {
  if (out_launches) *out_launches = r->launch_count;
  if (out_copies) *out_copies = r->write_count;
  if (out_buffers) *out_buffers = r->buffer_count;
}

/* ---- replay ------------------------------------------------------------------------------- */

static void mark_used(cubert_server_recording_t *r, uint32_t index) {
  if (index < 128u)
    r->used_streams[index / 64u] |= (uint64_t)1 << (index % 64u);
  else
    r->used_streams_all = 1;
}

/* The driver's view of a recorded launch over the slots' resolved addresses;
 * `buffers` holds its CUBERT_KERNEL_MAX_BUFFERS entries. */
static void fill_launch(const cubert_server_recording_t *r, const record_op_t *o,
                        cubert_driver_launch_t *launch, cubert_driver_buffer_t *buffers) {
  uint32_t i;
  launch->kernel = o->kernel;
  launch->execution = o->execution;
  launch->dynamic = o->dynamic;
  launch->count = o->count;
  launch->dynamic_count = o->dynamic ? r->addresses[o->count_slot] : 0;
  launch->buffer_count = o->buffer_count;
  launch->scalar_count = o->scalar_count;
  launch->buffers = buffers;
  launch->scalars = o->scalars;
  launch->cube_dim = o->cube_dim;
  launch->shared_memory_bytes = o->shared_memory_bytes;
  for (i = 0; i < o->buffer_count; i++) {
    buffers[i].address = r->addresses[o->slot[i]];
    buffers[i].size = r->buffers[o->slot[i]].size;
  }
}

/* The bindings of a recorded launch (and a dynamic count's) with their race modes. */
static uint32_t launch_bindings(const cubert_server_recording_t *r, const record_op_t *o,
                                cubert_binding_t *bindings, uint8_t *modes) {
  uint32_t i, n = o->buffer_count;
  for (i = 0; i < o->buffer_count; i++) {
    bindings[i] = r->buffers[o->slot[i]].binding;
    modes[i] = (i < 32 && !(o->kernel->read_only_mask & (1u << i))) ? CUBERT_RACE_WRITE
                                                                      : CUBERT_RACE_READ;
  }
  if (o->dynamic) {
    modes[n] = CUBERT_RACE_READ;
    bindings[n++] = r->buffers[o->count_slot].binding;
  }
  return n;
}

static cubert_status_t replay_launch(cubert_server_t *server, uint64_t stream,
                                     cubert_server_recording_t *r, const record_op_t *o,
                                     cubert_error_t *out_error) {
  cubert_binding_t bindings[SERVER_MAX_BINDINGS];
  uint8_t modes[SERVER_MAX_BINDINGS];
  cubert_driver_buffer_t buffers[CUBERT_KERNEL_MAX_BUFFERS];
  cubert_driver_launch_t launch;
  server_order_t order;
  uint32_t nbind;
  cubert_status_t status;
  fill_launch(r, o, &launch, buffers);
  nbind = launch_bindings(r, o, bindings, modes);
  CUBERT_RETURN_IF_ERROR(server_order_begin(server, stream, bindings, nbind, &order, out_error));
  status = server_note(server, server->driver->launch(server->self, &launch, order.slot->stream, out_error),
                       out_error);
  if (status == CUBERT_STATUS_OK && server->race)
    server_race_op(server, order.slot->index, o->kernel->name, bindings, modes, nbind);
  server_order_end(server, &order, bindings, nbind);
  return status;
}

/* ---- the driver's plan ---- */

/* Build the plan (first replay): every launch, in order. */
static cubert_status_t plan_build(cubert_server_t *server, cubert_server_recording_t *r,
                                  cubert_error_t *out_error) {
  cubert_driver_launch_t *launches = NULL;
  cubert_driver_buffer_t *buffers = NULL;
  size_t nl = r->launch_count, nb = (size_t)r->launch_count * CUBERT_KERNEL_MAX_BUFFERS;
  uint32_t i, k = 0;
  cubert_status_t status;
  if (cubert_allocator_malloc(r->allocator, nl * sizeof(*launches), 0, (void **)&launches, NULL) !=
          CUBERT_STATUS_OK ||
      cubert_allocator_malloc(r->allocator, nb * sizeof(*buffers), 0, (void **)&buffers, NULL) !=
          CUBERT_STATUS_OK) {
    if (launches) cubert_allocator_free(r->allocator, launches, nl * sizeof(*launches), 0);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "replay: no memory to plan the recording");
  }
  for (i = 0; i < r->op_count; i++)
    if (r->ops[i].kind == RECORD_LAUNCH) {
      fill_launch(r, &r->ops[i], &launches[k], buffers + (size_t)k * CUBERT_KERNEL_MAX_BUFFERS);
      k++;
    }
  status = server_note(server, server->driver->plan_create(server->self, launches, k, &r->plan, out_error),
                       out_error);
  cubert_allocator_free(r->allocator, buffers, nb * sizeof(*buffers), 0);
  cubert_allocator_free(r->allocator, launches, nl * sizeof(*launches), 0);
  if (status == CUBERT_STATUS_UNSUPPORTED || status == CUBERT_STATUS_COMPILATION_FAILED) {
    r->plan = NULL;
    r->plan_refused = 1; /* replayed launch by launch, which reports the launch's refusal */
    return CUBERT_STATUS_OK;
  }
  if (status != CUBERT_STATUS_OK) {
    r->plan = NULL;
    return status;
  }
  for (i = 0; i < r->op_count; i++) r->ops[i].dirty = 0;
  cubert_memcpy(r->plan_addresses, r->addresses, sizeof r->addresses);
  return CUBERT_STATUS_OK;
}

/* Bring the plan up to the recording: launches with new scalars or a slot at a
 * new address are updated in place (plan_update). */
static cubert_status_t plan_refresh(cubert_server_t *server, cubert_server_recording_t *r,
                                    cubert_error_t *out_error) {
  cubert_driver_buffer_t buffers[CUBERT_KERNEL_MAX_BUFFERS];
  cubert_driver_launch_t launch;
  bool moved[RECORD_MAX_BUFFERS], any = false;
  uint32_t i, b, k = 0;
  for (i = 0; i < r->buffer_count; i++) {
    moved[i] = r->addresses[i] != r->plan_addresses[i];
    any = any || moved[i];
  }
  for (i = 0; i < r->op_count; i++) {
    record_op_t *o = &r->ops[i];
    bool changed;
    if (o->kind != RECORD_LAUNCH) continue;
    changed = o->dirty != 0;
    for (b = 0; any && !changed && b < o->buffer_count; b++) changed = moved[o->slot[b]];
    if (any && !changed && o->dynamic) changed = moved[o->count_slot];
    if (changed) {
      fill_launch(r, o, &launch, buffers);
      CUBERT_RETURN_IF_ERROR(server_note(
          server, server->driver->plan_update(server->self, r->plan, k, &launch, out_error), out_error));
      o->dirty = 0;
    }
    k++;
  }
  if (any) cubert_memcpy(r->plan_addresses, r->addresses, sizeof r->addresses);
  return CUBERT_STATUS_OK;
}

/* One plan_launch, ordered over every slot's binding, each launch told to the race checker. */
static cubert_status_t replay_plan(cubert_server_t *server, uint64_t stream,
                                   cubert_server_recording_t *r, cubert_error_t *out_error) {
  cubert_binding_t *all = r->all;
  server_order_t order;
  uint32_t i;
  cubert_status_t status;
  for (i = 0; i < r->buffer_count; i++) all[i] = r->buffers[i].binding;
  CUBERT_RETURN_IF_ERROR(server_order_begin(server, stream, all, r->buffer_count, &order, out_error));
  status = server_note(server, server->driver->plan_launch(server->self, r->plan, order.slot->stream, out_error),
                       out_error);
  if (status == CUBERT_STATUS_OK) {
    mark_used(r, order.slot->index);
    if (server->race)
      for (i = 0; i < r->op_count; i++) {
        cubert_binding_t bindings[SERVER_MAX_BINDINGS];
        uint8_t modes[SERVER_MAX_BINDINGS];
        uint32_t n = launch_bindings(r, &r->ops[i], bindings, modes);
        server_race_op(server, order.slot->index, r->ops[i].kernel->name, bindings, modes, n);
      }
  }
  server_order_end(server, &order, all, r->buffer_count);
  return status;
}

static cubert_status_t replay_write(cubert_server_t *server, uint64_t stream,
                                    cubert_server_recording_t *r, const record_op_t *o,
                                    cubert_error_t *out_error) {
  const cubert_binding_t *binding = &r->buffers[o->dst_slot].binding;
  cubert_driver_copy_t copy;
  server_order_t order;
  uint8_t mode = CUBERT_RACE_WRITE;
  cubert_status_t status;
  cubert_memset(&copy, 0, sizeof copy);
  copy.kind = CUBERT_COPY_HOST_TO_DEVICE;
  copy.src_host = o->bytes;
  copy.dst_device = r->addresses[o->dst_slot];
  copy.width = o->size;
  copy.height = o->size ? 1 : 0;
  CUBERT_RETURN_IF_ERROR(server_order_begin(server, stream, binding, 1, &order, out_error));
  status = server_note(server, server->driver->copy(server->self, &copy, order.slot->stream, out_error),
                       out_error);
  if (status == CUBERT_STATUS_OK) {
    uint32_t index = order.slot->index;
    server_race_op(server, index, "write", binding, &mode, 1);
    mark_used(r, index);
  }
  server_order_end(server, &order, binding, 1);
  return status;
}

cubert_status_t cubert__server_replay(cubert_server_t *server, uint64_t stream,
                                      cubert_server_recording_t *r, cubert_error_t *out_error) {
  server_slot_t *slot = NULL;
  uint32_t i;
  cubert_status_t status = CUBERT_STATUS_OK;
  CUBERT_RETURN_IF_ERROR(server_lost(server, out_error));
  CUBERT_RETURN_IF_ERROR(cubert__server_not_recording(server, stream, "replay", out_error));
  /* every slot first: a sequence that no longer fits enqueues nothing */
  for (i = 0; i < r->buffer_count; i++)
    CUBERT_RETURN_IF_ERROR(check_fits(server, r, i, &r->buffers[i].binding, &r->addresses[i], out_error));
  CUBERT_RETURN_IF_ERROR(server_slot(server, stream, &slot, out_error));
  /* a driver with plans: launches only (writes read host bytes: launch by launch) */
  if (server->driver->plan_create && r->write_count == 0 && r->launch_count && !r->plan_refused) {
    status = r->plan ? plan_refresh(server, r, out_error) : plan_build(server, r, out_error);
    if (status != CUBERT_STATUS_OK) return status;
    if (r->plan) {
      status = replay_plan(server, stream, r, out_error);
      server_gc_poll_if_pending(server);
      return status;
    }
  }
  for (i = 0; i < r->op_count && status == CUBERT_STATUS_OK; i++)
    status = r->ops[i].kind == RECORD_LAUNCH ? replay_launch(server, stream, r, &r->ops[i], out_error)
                                             : replay_write(server, stream, r, &r->ops[i], out_error);
  server_gc_poll_if_pending(server);
  return status;
}

void cubert__server_recording_destroy(cubert_server_t *server, cubert_server_recording_t *r) {
  uint32_t i;
  /* pending replayed writes read the recording's bytes, pending plan launches the plan */
  if ((r->write_count || r->plan) && server_lost(server, NULL) == CUBERT_STATUS_OK) {
    for (i = 0; server->slots && i < server->max_streams; i++) {
      bool used = r->used_streams_all ||
                  (i < 128u && (r->used_streams[i / 64u] & ((uint64_t)1 << (i % 64u))));
      if (used && server->slots[i])
        (void)server->driver->stream_synchronize(server->self, server->slots[i]->stream, NULL);
    }
  }
  if (r->plan) server->driver->plan_destroy(server->self, r->plan);
  recording_free(r);
}

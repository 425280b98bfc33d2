/*
 * backend-cpu/cpu/cpu_server.c: the CPU server (vtable of cubert/server.h).
 *
 * Each stream slot (stream id mod max_streams) owns a simulated stream
 * (cpu_stream.c: ordered ops on a worker thread) and a memory manager
 * (cpu_memory.c). Every vtable call comes through the device handle, so the
 * calls are serialized; the stream workers run the queued ops.
 *
 * Cross-stream use goes through the core MultiStream (cubert/stream.h) over
 * the event backend of cpu_events.c: an op that touches memory last used on
 * another slot first makes its stream wait for that slot's point, and shared
 * bindings stay pinned until the consumer's event completed. Each op also
 * pins the bindings it touches until it ran, so memory is never reused while
 * an op may still touch it.
 */
#include "cpu/cpu_server.h"
#include "cpu/cpu_launch.h"
#include "cubert/profile.h"

#include <stddef.h>
#include <string.h>
#include <time.h>

/* ---- helpers ---------------------------------------------------------------------- */

static cpu_server_t *server_of(cubert_server_t *server) { return (cpu_server_t *)server; }

static cpu_slot_t *slot_at(cpu_server_t *s, uint64_t stream) {
  return &s->slots[stream % s->max_streams];
}

/* The memory manager that owns a binding: the slot of the stream it was created on. */
static cubert_status_t binding_memory(cpu_server_t *s, const cubert_binding_t *b, cpu_memory_t **out,
                                      cubert_error_t *out_error) {
  cpu_slot_t *slot = slot_at(s, b->stream);
  if (!slot->initialized || !slot->memory)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_NOT_FOUND, NULL, 0,
                            "Memory location was never initialized");
  *out = slot->memory;
  return CUBERT_STATUS_OK;
}

static cubert_status_t resolve_ptr(cpu_server_t *s, const cubert_binding_t *b, unsigned char **ptr,
                                   uint64_t *size, cubert_error_t *out_error) {
  cpu_memory_t *m = NULL;
  if (!cubert_memory_id_is_alive(s->table, b->memory))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0,
                            "binding was released");
  CUBERT_RETURN_IF_ERROR(binding_memory(s, b, &m, out_error));
  return cpu_memory_resolve(m, b, ptr, size, out_error);
}

static cubert_status_t pins_take(cpu_server_t *s, cpu_pins_t *pins, const cubert_binding_t *b,
                                 uint32_t count, cubert_error_t *out_error) {
  uint32_t i;
  pins->count = 0;
  if (count > CPU_MAX_BINDINGS) {
    uint64_t f[2];
    f[0] = count;
    f[1] = CPU_MAX_BINDINGS;
    return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2, "too many bindings");
  }
  for (i = 0; i < count; i++) {
    if (cubert_memory_id_retain_binding(s->table, b[i].memory) != CUBERT_STATUS_OK) {
      pins_release(s, pins);
      return cubert_error_set(out_error, CUBERT_ERROR_INVALID_HANDLE, NULL, 0,
                              "binding was released before the operation was enqueued");
    }
    pins->ids[pins->count++] = b[i].memory;
  }
  return CUBERT_STATUS_OK;
}

void pins_release(cpu_server_t *s, cpu_pins_t *pins) {
  uint32_t i;
  for (i = 0; i < pins->count; i++) (void)cubert_memory_id_release_binding(s->table, pins->ids[i]);
  pins->count = 0;
}

/* Resolve `stream` for an op over `bindings` and return its cpu stream. The
 * caller enqueues exactly one op, then calls cubert_multi_stream_resolve_end. */
static cubert_status_t begin_op(cpu_server_t *s, uint64_t stream, const cubert_binding_t *bindings,
                                size_t count, cubert_resolved_streams_t *resolved,
                                cpu_stream_t **out_stream, cubert_error_t *out_error) {
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_resolve(s->multi, stream, bindings, count, false,
                                                     resolved, out_error));
  *out_stream = (cpu_stream_t *)resolved->stream;
  return CUBERT_STATUS_OK;
}

static void completion_arm(cubert_completion_t *c, cpu_stream_t *stream, uint64_t seq);

static void end_op(cpu_server_t *s, cubert_resolved_streams_t *resolved) {
  uint32_t pinned = resolved->pinned;
  cubert_multi_stream_resolve_end(s->multi, resolved);
  if (pinned) cpu_gc_hand_off(s);
}

/* ---- ops ---------------------------------------------------------------------------- */

typedef struct copy_op_t {
  cpu_server_t *server;
  unsigned char *dst;
  const unsigned char *src;
  uint64_t size;
  cubert_bytes_t bytes; /* owned source of a write (released in done) */
  cpu_pins_t pins;
} copy_op_t;

static cubert_status_t copy_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  copy_op_t *op = (copy_op_t *)payload;
  (void)stream;
  (void)error;
  if (op->size) memcpy(op->dst, op->src, (size_t)op->size);
  return CUBERT_STATUS_OK;
}

static cubert_status_t copy_done(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  copy_op_t *op = (copy_op_t *)payload;
  (void)stream;
  (void)error;
  if (op->bytes.release) op->bytes.release(op->bytes.owner, op->bytes.data, op->bytes.size);
  pins_release(op->server, &op->pins);
  return CUBERT_STATUS_OK;
}

/* Finishes a read or sync: the completion takes the stream's queued errors. */
typedef struct finish_op_t {
  cubert_completion_t *completion;
} finish_op_t;

static cubert_status_t finish_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  finish_op_t *op = (finish_op_t *)payload;
  (void)error;
  cubert_error_clear(&op->completion->error);
  op->completion->status = cpu_stream_drain_errors(stream, &op->completion->error);
  return CUBERT_STATUS_OK;
}

/* ---- vtable ---------------------------------------------------------------------------- */

static cubert_status_t cpu_properties(cubert_server_t *server, cubert_device_properties_t *out) {
  *out = server_of(server)->properties;
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_initialize_memory(cubert_server_t *server, const cubert_handle_t *memory,
                                             uint64_t size, uint64_t stream,
                                             cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  void *backend_stream = NULL;
  cpu_slot_t *slot;
  /* creating the slot's stream also creates its memory (cpu_events.c) */
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_stream(s->multi, stream, &backend_stream, out_error));
  slot = slot_at(s, stream);
  return cpu_memory_reserve_bind(slot->memory, memory, size,
                                 cubert_multi_stream_cursor(s->multi, stream), out_error);
}

/* staging: backend-cpu/cpu/cpu_staging.c */

static void release_all_bytes(cubert_bytes_t *data, size_t count) {
  size_t i;
  for (i = 0; i < count; i++)
    if (data[i].release) data[i].release(data[i].owner, data[i].data, data[i].size);
}

static bool contiguous(const cubert_copy_descriptor_t *d) {
  uint64_t expect = 1;
  uint32_t r;
  if (d->rank == 0) return true;
  for (r = d->rank; r-- > 0;) {
    if (d->shape[r] > 1 && d->strides[r] != expect) return false;
    expect *= d->shape[r];
  }
  return true;
}

static cubert_status_t cpu_write(cubert_server_t *server, const cubert_copy_descriptor_t *descs,
                                 cubert_bytes_t *data, size_t count, uint64_t stream,
                                 cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  size_t i;
  cubert_status_t status = CUBERT_STATUS_OK;
  /* validate everything first: a failing call enqueues nothing */
  for (i = 0; i < count && status == CUBERT_STATUS_OK; i++) {
    unsigned char *ptr;
    uint64_t size;
    if (!contiguous(&descs[i]))
      status = cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_STRIDES, NULL, 0,
                                "the CPU server writes contiguous tensors only");
    else if ((status = resolve_ptr(s, &descs[i].binding, &ptr, &size, out_error)) ==
                 CUBERT_STATUS_OK &&
             data[i].size > size) {
      uint64_t f[2];
      f[0] = data[i].size;
      f[1] = size;
      status = cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                                "write larger than its destination");
    }
  }
  if (status != CUBERT_STATUS_OK) {
    release_all_bytes(data, count);
    return status;
  }
  for (i = 0; i < count; i++) {
    cubert_resolved_streams_t resolved;
    cpu_stream_t *cs;
    cpu_op_t *op;
    copy_op_t *c;
    unsigned char *ptr;
    uint64_t size;
    (void)resolve_ptr(s, &descs[i].binding, &ptr, &size, NULL);
    status = begin_op(s, stream, &descs[i].binding, 1, &resolved, &cs, out_error);
    if (status != CUBERT_STATUS_OK) {
      release_all_bytes(data + i, count - i);
      return status;
    }
    {
      uint8_t mode = CUBERT_RACE_WRITE;
      cpu_race_op(s, resolved.slot, "write", &descs[i].binding, &mode, 1);
    }
    op = cpu_stream_reserve(cs);
    c = (copy_op_t *)cpu_op_payload(op);
    memset(c, 0, sizeof(*c));
    c->server = s;
    c->dst = ptr;
    c->src = (const unsigned char *)data[i].data;
    c->size = data[i].size;
    c->bytes = data[i];
    status = pins_take(s, &c->pins, &descs[i].binding, 1, out_error);
    if (status != CUBERT_STATUS_OK) c->size = 0; /* cannot happen after resolve_ptr; keep safe */
    op->run = copy_run;
    op->done = copy_done;
    (void)cpu_stream_commit(cs);
    end_op(s, &resolved);
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_read(cubert_server_t *server, const cubert_copy_descriptor_t *descs,
                                void *const *dsts, const uint64_t *dst_sizes, size_t count,
                                uint64_t stream, cubert_completion_t *completion,
                                cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  size_t i;
  cpu_stream_t *cs = NULL;
  cubert_resolved_streams_t resolved;
  cpu_op_t *op;
  finish_op_t *finish;
  uint64_t seq;
  for (i = 0; i < count; i++) {
    unsigned char *ptr;
    uint64_t size, need;
    CUBERT_RETURN_IF_ERROR(resolve_ptr(s, &descs[i].binding, &ptr, &size, out_error));
    if (!contiguous(&descs[i]))
      return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_STRIDES, NULL, 0,
                              "the CPU server reads contiguous tensors only");
    need = size;
    if (dst_sizes[i] < need) {
      uint64_t f[2];
      f[0] = dst_sizes[i];
      f[1] = need;
      return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2,
                              "read destination smaller than the data");
    }
  }
  for (i = 0; i < count; i++) {
    copy_op_t *c;
    unsigned char *ptr;
    uint64_t size;
    cubert_status_t status;
    (void)resolve_ptr(s, &descs[i].binding, &ptr, &size, NULL);
    CUBERT_RETURN_IF_ERROR(begin_op(s, stream, &descs[i].binding, 1, &resolved, &cs, out_error));
    {
      uint8_t mode = CUBERT_RACE_READ;
      cpu_race_op(s, resolved.slot, "read", &descs[i].binding, &mode, 1);
    }
    op = cpu_stream_reserve(cs);
    c = (copy_op_t *)cpu_op_payload(op);
    memset(c, 0, sizeof(*c));
    c->server = s;
    c->dst = (unsigned char *)dsts[i];
    c->src = ptr;
    c->size = size;
    status = pins_take(s, &c->pins, &descs[i].binding, 1, NULL);
    if (status != CUBERT_STATUS_OK) c->size = 0;
    op->run = copy_run;
    op->done = copy_done;
    (void)cpu_stream_commit(cs);
    end_op(s, &resolved);
  }
  CUBERT_RETURN_IF_ERROR(begin_op(s, stream, NULL, 0, &resolved, &cs, out_error));
  cubert_error_clear(&completion->error);
  completion->status = CUBERT_STATUS_OK;
  op = cpu_stream_reserve(cs);
  finish = (finish_op_t *)cpu_op_payload(op);
  finish->completion = completion;
  op->run = finish_run;
  seq = cpu_stream_commit(cs);
  end_op(s, &resolved);
  completion_arm(completion, cs, seq);
  return CUBERT_STATUS_OK;
}

/* ---- completions over stream points ---- */

static cubert_status_t completion_wait(cubert_completion_t *c, uint64_t timeout_ns) {
  cpu_stream_t *stream = (cpu_stream_t *)c->impl[0];
  uint64_t seq = ((uint64_t)(uintptr_t)c->impl[1] << 32) | (uint64_t)(uintptr_t)c->impl[2];
  cubert_status_t status = cpu_stream_wait_point(stream, seq, timeout_ns);
  if (status == CUBERT_STATUS_OK) {
    c->vtable = NULL; /* finished: later waits return at once */
    /* the host observed the stream (its clock as of now: docs/race-checker.md) */
    cpu_race_host_sync((cpu_server_t *)stream->server, stream->slot);
  }
  return status;
}

static const cubert_completion_vtable_t g_completion_vtable = {completion_wait};

static void completion_arm(cubert_completion_t *c, cpu_stream_t *stream, uint64_t seq) {
  c->impl[0] = stream;
  c->impl[1] = (void *)(uintptr_t)(uint32_t)(seq >> 32);
  c->impl[2] = (void *)(uintptr_t)(uint32_t)seq;
  c->vtable = &g_completion_vtable;
}

static cubert_status_t cpu_sync(cubert_server_t *server, uint64_t stream,
                                cubert_completion_t *completion, cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  cubert_resolved_streams_t resolved;
  cpu_stream_t *cs;
  cpu_op_t *op;
  finish_op_t *finish;
  uint64_t seq;
  CUBERT_RETURN_IF_ERROR(begin_op(s, stream, NULL, 0, &resolved, &cs, out_error));
  /* the finish op writes status/error from the worker: initialize them first */
  cubert_error_clear(&completion->error);
  completion->status = CUBERT_STATUS_OK;
  op = cpu_stream_reserve(cs);
  finish = (finish_op_t *)cpu_op_payload(op);
  finish->completion = completion;
  op->run = finish_run;
  seq = cpu_stream_commit(cs);
  end_op(s, &resolved);
  completion_arm(completion, cs, seq);
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_flush(cubert_server_t *server, uint64_t stream,
                                 cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  cpu_slot_t *slot = slot_at(s, stream);
  if (!slot->initialized) return CUBERT_STATUS_OK;
  return cpu_stream_drain_errors(&slot->stream, out_error);
}

static cubert_status_t cpu_get_resource(cubert_server_t *server, const cubert_binding_t *binding,
                                        uint64_t stream, cubert_resource_t *out_resource,
                                        cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  unsigned char *ptr;
  uint64_t size;
  void *backend_stream;
  CUBERT_RETURN_IF_ERROR(resolve_ptr(s, binding, &ptr, &size, out_error));
  /* the resource is used by the host right away: align both streams first */
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_sync(s->multi, binding->stream, out_error));
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_stream(s->multi, stream, &backend_stream, out_error));
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_sync(s->multi, stream, out_error));
  /* the host synced both streams, then may read and write the memory */
  cpu_race_host_sync(s, (uint32_t)(binding->stream % s->max_streams));
  cpu_race_host_sync(s, (uint32_t)(stream % s->max_streams));
  cpu_race_host_op(s, "get_resource", binding);
  out_resource->ptr = ptr;
  out_resource->address = (uint64_t)(uintptr_t)ptr;
  out_resource->size = size;
  return CUBERT_STATUS_OK;
}

/* ---- launch ---- */

static cubert_status_t launch_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  return cpu_launch_execute((cpu_server_t *)stream->server, (const cpu_launch_op_t *)payload, error);
}

static cubert_status_t launch_done(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  cpu_launch_op_t *op = (cpu_launch_op_t *)payload;
  (void)error;
  if (op->pinned) pins_release((cpu_server_t *)stream->server, &op->pins);
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_launch(cubert_server_t *server, const struct cubert_kernel_t *kernel,
                                  const struct cubert_cube_count_t *count,
                                  const cubert_launch_arguments_t *args,
                                  cubert_execution_mode_t execution, cubert_launch_mode_t mode,
                                  uint64_t stream, cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  cubert_binding_t bindings[CPU_MAX_BINDINGS];
  cpu_launch_buffer_t buffers[CUBERT_KERNEL_MAX_BUFFERS];
  unsigned char *dynamic_count = NULL;
  uint32_t nb = args ? args->buffer_count : 0, nbind, i;
  cpu_launch_op_t *launch;
  cubert_resolved_streams_t resolved;
  cpu_stream_t *cs;
  cpu_op_t *op;
  cubert_status_t status;
  bool queued = false;
  cubert_error_t limit; /* written by validate only when it queues an error */
  CUBERT_RETURN_IF_ERROR(cpu_launch_validate(s, kernel, count, args, &queued, &limit));
  if (queued) {
    /* resource limits surface at the next flush/sync (spec 11.14) */
    void *backend_stream;
    CUBERT_RETURN_IF_ERROR(cubert_multi_stream_stream(s->multi, stream, &backend_stream, out_error));
    cpu_stream_push_error((cpu_stream_t *)backend_stream, &limit);
    return CUBERT_STATUS_OK;
  }
  if (mode == CUBERT_LAUNCH_SKIP) return CUBERT_STATUS_OK;
  for (i = 0; i < nb; i++) {
    bindings[i] = args->buffers[i];
    CUBERT_RETURN_IF_ERROR(resolve_ptr(s, &args->buffers[i], &buffers[i].ptr, &buffers[i].size,
                                       out_error));
  }
  nbind = nb;
  if (count->kind == CUBERT_CUBE_COUNT_DYNAMIC) {
    uint64_t size;
    bindings[nbind++] = count->binding;
    CUBERT_RETURN_IF_ERROR(resolve_ptr(s, &count->binding, &dynamic_count, &size, out_error));
    if (size < 12)
      return cubert_error_set(out_error, CUBERT_ERROR_OUT_OF_RANGE, &size, 1,
                              "a dynamic cube count needs 12 bytes");
  }
  CUBERT_RETURN_IF_ERROR(begin_op(s, stream, bindings, nbind, &resolved, &cs, out_error));
  /* Filled in place: the worker reads buffers / scalars up to their counts. */
  if (s->race) {
    uint8_t modes[CPU_MAX_BINDINGS];
    for (i = 0; i < nbind; i++)
      modes[i] = (i < nb && i < 32 && !(kernel->read_only_mask & (1u << i)))
                     ? CUBERT_RACE_WRITE
                     : CUBERT_RACE_READ; /* read-only buffers and the dynamic count */
    cpu_race_op(s, resolved.slot, kernel->name, bindings, modes, nbind);
  }
  op = cpu_stream_reserve(cs);
  launch = (cpu_launch_op_t *)cpu_op_payload(op);
  /* an empty launch writes the first cache line of the slot only */
  launch->kernel = kernel;
  launch->execution = (uint8_t)execution;
  launch->count_kind = (uint8_t)count->kind;
  launch->buffer_count = (uint8_t)nb; /* validated: <= CUBERT_KERNEL_MAX_BUFFERS */
  launch->scalar_count = (uint8_t)args->scalar_count;
  launch->pinned = nbind != 0;
  launch->count_dims = count->count;
  if (nb) memcpy(launch->buffers, buffers, nb * sizeof buffers[0]);
  if (dynamic_count) launch->dynamic_count = dynamic_count;
  if (args->scalar_count) memcpy(launch->scalars, args->scalars, args->scalar_count * sizeof(uint64_t));
  status = nbind ? pins_take(s, &launch->pins, bindings, nbind, out_error) : CUBERT_STATUS_OK;
  if (status != CUBERT_STATUS_OK) launch->kernel = NULL; /* pins_take left none */
  op->run = launch_run;
  op->done = launch_done;
  (void)cpu_stream_commit(cs);
  end_op(s, &resolved);
  return status;
}

/* ---- memory ---- */

static cubert_status_t cpu_memory_usage_fn(cubert_server_t *server, uint64_t stream,
                                           cubert_memory_usage_t *out_usage,
                                           cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  uint32_t i;
  (void)stream;
  (void)out_error;
  cpu_gc_drain(s);
  memset(out_usage, 0, sizeof(*out_usage));
  for (i = 0; i < s->max_streams; i++) {
    cubert_memory_usage_t u;
    if (!s->slots[i].initialized) continue;
    cpu_memory_usage(s->slots[i].memory, &u);
    out_usage->number_allocs += u.number_allocs;
    out_usage->bytes_in_use += u.bytes_in_use;
    out_usage->bytes_padding += u.bytes_padding;
    out_usage->bytes_reserved += u.bytes_reserved;
  }
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_memory_cleanup_fn(cubert_server_t *server, uint64_t stream,
                                             cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  uint32_t i;
  (void)stream;
  (void)out_error;
  cpu_gc_drain(s);
  for (i = 0; i < s->max_streams; i++)
    if (s->slots[i].initialized) cpu_memory_cleanup(s->slots[i].memory, true);
  return CUBERT_STATUS_OK;
}

static cubert_status_t cpu_allocation_mode(cubert_server_t *server, cubert_memory_allocation_mode_t mode,
                                           uint64_t stream, cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  void *backend_stream;
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_stream(s->multi, stream, &backend_stream, out_error));
  return cpu_memory_mode(slot_at(s, stream)->memory, mode, out_error);
}

/* ---- profiling: host time between two stream syncs (spec 7) ---- */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t profile_clock_now(void *self) {
  (void)self;
  return now_ns();
}

/* Wait for the stream and take its queued errors (the CPU server's sync). */
static cubert_status_t profile_sync(cpu_server_t *s, uint64_t stream, cubert_error_t *out_error) {
  cpu_slot_t *slot;
  CUBERT_RETURN_IF_ERROR(cubert_multi_stream_sync(s->multi, stream, out_error));
  cpu_race_host_sync(s, (uint32_t)(stream % s->max_streams));
  slot = slot_at(s, stream);
  if (!slot->initialized) return CUBERT_STATUS_OK;
  return cpu_stream_drain_errors(&slot->stream, out_error);
}

/* start_profile: sync the stream (its errors are returned), then a token. */
static cubert_status_t cpu_start_profile(cubert_server_t *server, uint64_t stream,
                                         cubert_profiling_token_t *out_token,
                                         cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  CUBERT_RETURN_IF_ERROR(profile_sync(s, stream, out_error));
  CUBERT_RETURN_IF_ERROR(cubert_profiler_start(s->profiler, out_token, out_error));
  s->profile_counter++;
  return CUBERT_STATUS_OK;
}

/* end_profile: sync again; a sync error invalidates every active token
 * (ProfileError::Server), then the token is stopped. */
static cubert_status_t cpu_end_profile(cubert_server_t *server, uint64_t stream,
                                       cubert_profiling_token_t token,
                                       cubert_profile_duration_t *out_duration,
                                       cubert_error_t *out_error) {
  cpu_server_t *s = server_of(server);
  cubert_error_t sync_error;
  cubert_error_clear(&sync_error);
  if (profile_sync(s, stream, &sync_error) != CUBERT_STATUS_OK)
    (void)cubert_profiler_error(s->profiler, &sync_error);
  return cubert_profiler_stop(s->profiler, token, out_duration, out_error);
}

/* ---- collectives: backend-cpu/cpu/cpu_comm.c ---- */

static void cpu_destroy(cubert_server_t *server);

static const cubert_server_vtable_t g_cpu_vtable = {
    "cpu",
    false,
    cpu_destroy,
    cpu_properties,
    cpu_initialize_memory,
    cpu_staging,
    cpu_read,
    cpu_write,
    cpu_sync,
    cpu_get_resource,
    cpu_launch,
    cpu_flush,
    cpu_memory_usage_fn,
    cpu_memory_cleanup_fn,
    cpu_start_profile,
    cpu_end_profile,
    cpu_allocation_mode,
    cpu_comm_init,
    cpu_all_reduce,
    cpu_send,
    cpu_recv,
    cpu_sync_collective,
};

/* ---- lifecycle ---- */

static void cpu_destroy(cubert_server_t *server) {
  cpu_server_t *s = server_of(server);
  uint32_t i;
  if (!s) return;
  cpu_comm_shutdown(s); /* pending collectives wait on compute streams: before those stop */
  cpu_registry_remove(s);
  /* pending GC tasks wait on stream events: finish them while the streams run */
  if (s->multi) cpu_gc_hand_off(s);
  cpu_gc_stop(s);
  /* the multi-stream syncs and destroys every stream (cpu_events.c) */
  if (s->multi) cubert_multi_stream_destroy(s->multi);
  cpu_comm_destroy(s);
  for (i = 0; i <= s->max_streams; i++) {
    if (s->slots[i].initialized) {
      cpu_stream_deinitialize(&s->slots[i].stream);
      s->slots[i].initialized = 0; /* the step loop must not see it again */
    }
    if (s->slots[i].memory) cpu_memory_destroy(s->slots[i].memory);
  }
  cpu_events_free_all(s);
  if (s->executor) cpu_launch_executor_destroy(s);
  cubert_profiler_destroy(s->profiler);
  cpu_race_destroy(s);
  cpu_sim_destroy(s);
  pthread_mutex_destroy(&s->events_mutex);
  cubert_allocator_free(s->allocator, s->slots, sizeof(cpu_slot_t) * (s->max_streams + 1), 0);
  cubert_allocator_free(s->allocator, s, sizeof(*s), 0);
}

cubert_status_t cpu_server_create(cubert_allocator_t allocator, const cubert_cpu_options_t *options,
                                  cubert_handle_table_t *table, cpu_server_t **out_server,
                                  cubert_error_t *out_error) {
  cpu_server_t *s = NULL;
  cubert_event_backend_t backend;
  cubert_multi_stream_options_t mo;
  cubert_status_t status;
  if (cubert_allocator_malloc(allocator, sizeof(*s), 0, (void **)&s) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "cpu server");
  s->base.vtable = &g_cpu_vtable;
  s->allocator = allocator;
  s->table = table;
  s->max_streams = options->max_streams;
  s->device_index = options->device_index;
  s->collective_timeout_ns = (uint64_t)(options->collective_timeout_ms ? options->collective_timeout_ms
                                                                       : 60000u) * 1000000ull;
  s->comm = NULL;
  pthread_mutex_init(&s->events_mutex, NULL);
  cpu_fill_properties(options, &s->properties);
  if (cubert_allocator_malloc_array(allocator, s->max_streams + 1, sizeof(cpu_slot_t), 0,
                                    (void **)&s->slots) != CUBERT_STATUS_OK) {
    pthread_mutex_destroy(&s->events_mutex);
    cubert_allocator_free(allocator, s, sizeof(*s), 0);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "stream slots");
  }
  /* simulation and race checker first: destroy expects their mutexes */
  status = cpu_sim_create(s, options, out_error);
  if (status == CUBERT_STATUS_OK) status = cpu_race_create(s, options, out_error);
  if (status != CUBERT_STATUS_OK) {
    cpu_race_destroy(s);
    cpu_sim_destroy(s);
    pthread_mutex_destroy(&s->events_mutex);
    cubert_allocator_free(allocator, s->slots, sizeof(cpu_slot_t) * (s->max_streams + 1), 0);
    cubert_allocator_free(allocator, s, sizeof(*s), 0);
    return status;
  }
  status = cpu_launch_executor_create(s, s->deterministic ? 0 : options->workers, out_error);
  if (status == CUBERT_STATUS_OK) {
    cubert_profile_clock_t clock;
    clock.self = s;
    clock.now_ns = profile_clock_now;
    status = cubert_profiler_create(allocator, clock, CUBERT_PROFILER_DEFAULT_CAPACITY,
                                    &s->profiler, out_error);
  }
  if (status == CUBERT_STATUS_OK) {
    backend.vtable = &cpu_event_backend_vtable;
    backend.self = s;
    cubert_multi_stream_options_initialize(&mo);
    mo.max_streams = s->max_streams;
    status = cubert_multi_stream_create(allocator, &backend, table, &mo, &s->multi, out_error);
  }
  if (status == CUBERT_STATUS_OK) status = cpu_gc_start(s, out_error);
  if (status != CUBERT_STATUS_OK) {
    cpu_destroy(&s->base);
    return status;
  }
  cpu_registry_add(s);
  *out_server = s;
  return CUBERT_STATUS_OK;
}

/* Every op record must fit the stream's fixed op slot. */
typedef char cpu_launch_op_fits_[sizeof(cpu_launch_op_t) <= CPU_OP_PAYLOAD ? 1 : -1];
/* an empty launch's fields share the op header's cache line */
typedef char cpu_launch_op_first_line_[offsetof(cpu_op_t, payload) +
                                               offsetof(cpu_launch_op_t, dynamic_count) <=
                                           64
                                       ? 1
                                       : -1];
typedef char cpu_copy_op_fits_[sizeof(copy_op_t) <= CPU_OP_PAYLOAD ? 1 : -1];

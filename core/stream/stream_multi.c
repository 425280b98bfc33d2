/* SPDX-License-Identifier: MIT */
/* core/stream/stream_multi.c: MultiStream over an event driver
 * (core/stream/stream.h): per-slot cursors and last_synced points, the shared-binding
 * analysis, GC pinning of cross-stream bindings, per-stream error queues.
 * No lock: the owning server serializes every cubert_multi_stream_* call
 * (see the threading contract in core/stream/stream.h). */
#include "stream/stream_internal.h"
#include "memory/handle_table.h"
#include "cubert/driver/arith.h"

/* Bits of the per-slot "synced with slot o" set (max_streams <= 255). */
#define STREAM_SYNCED_WORDS ((CUBERT_STREAM_MAX_STREAMS_LIMIT + 32u) / 32u)

typedef struct stream_slot_t {
  void *stream;            /* the driver stream */
  uint64_t cursor;         /* commands resolved on this slot */
  uint32_t synced_bits[STREAM_SYNCED_WORDS];
  uint32_t synced_count;   /* origin slots in synced_bits */
  cubert_error_t errors;   /* SERVER_UNHEALTHY aggregate of the queued errors (empty: none) */
  uint64_t last_synced[]; /* max_streams entries (allocated with the slot) */
} stream_slot_t;

typedef struct gc_entry_t {
  void *event;
  cubert_binding_t *pins; /* buffer kept across reuse of the entry */
  uint32_t pin_count;
  uint32_t pin_capacity;
  cubert_stream_gc_drop_fn_t drop;
  void *drop_user;
} gc_entry_t;

struct cubert_multi_stream_t {
  cubert_allocator_t allocator;
  cubert_event_backend_t driver;
  cubert_handle_table_t *handles;
  uint32_t max_streams;
  uint32_t gc_capacity;
  cubert_stream_pool_t pool; /* max_streams regular slots + 1 special: the GC stream */

  /* scratch of one resolve, sized at creation (no allocation per resolve) */
  uint32_t *needs;        /* origin slots needing a sync [max_streams] */
  uint64_t *needs_cursor; /* their cursor when flushed [max_streams] */
  void **needs_event;     /* their flush events [max_streams] */
  uint32_t *created;      /* slots created by this resolve [max_streams + 1] */

  /* pins of the open resolution (grow-only buffer, swapped into GC entries) */
  cubert_binding_t *staging;
  uint32_t staging_count;
  uint32_t staging_capacity;
  bool active;
  uint64_t active_stream;
  uint32_t active_slot;

  gc_entry_t *gc;  /* [gc_capacity], pending tasks first, oldest first */
  uint32_t gc_len;
};

/* ---- small helpers ---------------------------------------------------------- */

static cubert_status_t stream_fail(cubert_error_t *out_error, cubert_status_t status,
                                   const char *reason) {
  if (out_error) {
    cubert_error_clear(out_error);
    out_error->status = status;
    cubert__strlcpy(out_error->reason, reason, sizeof(out_error->reason));
  }
  return status;
}

/* v > UINT32_MAX, written so 32-bit size_t does not warn (type-limits). */
static bool size_exceeds_u32(size_t v) { return ((v >> 16) >> 16) != 0; }

static bool slot_synced(const stream_slot_t *slot, uint32_t origin) {
  return (slot->synced_bits[origin / 32u] >> (origin % 32u)) & 1u;
}

static void slot_set_synced(stream_slot_t *slot, uint32_t origin, uint64_t cursor) {
  if (!slot_synced(slot, origin)) {
    slot->synced_bits[origin / 32u] |= 1u << (origin % 32u);
    slot->synced_count++;
  }
  slot->last_synced[origin] = cursor;
}

static size_t slot_bytes(uint32_t max_streams) {
  /* max_streams <= 255: cannot overflow. */
  return sizeof(stream_slot_t) + (size_t)max_streams * sizeof(uint64_t);
}

static uint32_t gc_slot_index(const cubert_multi_stream_t *ms) {
  return cubert__stream_pool_special_index(&ms->pool, 0);
}

static stream_slot_t *slot_of(const cubert_multi_stream_t *ms, uint64_t stream_id) {
  return (stream_slot_t *)cubert__stream_pool_get(&ms->pool,
                                                  cubert__stream_pool_index(&ms->pool, stream_id));
}

/* Add `next` to the slot's SERVER_UNHEALTHY aggregate (count, first error's
 * kinds and fields, every message joined; cubert_error_aggregate). */
static void slot_error_add(stream_slot_t *slot, const cubert_error_t *next) {
  (void)cubert_error_aggregate(&slot->errors, next);
}

static uint32_t slot_error_count(const stream_slot_t *slot) {
  uint64_t n = cubert_error_aggregate_count(&slot->errors);
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* Queue a driver failure of work already enqueued (status != OK) on `slot`;
 * a driver that filled no record gets a generic one. */
static void slot_error_add_status(stream_slot_t *slot, cubert_error_t *err,
                                  cubert_status_t status, const char *what) {
  if (err->depth == 0) cubert_error_set(err, CUBERT_ERROR_SERVER_GENERIC, NULL, 0, what);
  if (err->status == CUBERT_STATUS_OK) err->status = status;
  slot_error_add(slot, err);
}

/* ---- slot creation (pool callbacks) ------------------------------------------- */

static cubert_status_t slot_create(void *context, uint32_t index, void **out_entry,
                                   cubert_error_t *out_error) {
  cubert_multi_stream_t *ms = (cubert_multi_stream_t *)context;
  stream_slot_t *slot;
  void *mem = NULL;
  void *stream = NULL;
  cubert_status_t status;
  status = cubert_allocator_malloc(ms->allocator, slot_bytes(ms->max_streams), 0, &mem, NULL);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "stream slot allocation failed");
  status = ms->driver.vtable->create_stream(ms->driver.self, index, &stream, out_error);
  if (status == CUBERT_STATUS_OK && !stream)
    status = stream_fail(out_error, CUBERT_STATUS_INTERNAL, "create_stream returned no stream");
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(ms->allocator, mem, slot_bytes(ms->max_streams), 0);
    return status;
  }
  slot = (stream_slot_t *)mem;
  slot->stream = stream;
  *out_entry = slot;
  return CUBERT_STATUS_OK;
}

static void slot_destroy(void *context, uint32_t index, void *entry) {
  cubert_multi_stream_t *ms = (cubert_multi_stream_t *)context;
  stream_slot_t *slot = (stream_slot_t *)entry;
  (void)index;
  ms->driver.vtable->destroy_stream(ms->driver.self, slot->stream);
  cubert_allocator_free(ms->allocator, slot, slot_bytes(ms->max_streams), 0);
}

/* ---- creation -------------------------------------------------------------------- */

void cubert__multi_stream_options_initialize(cubert_multi_stream_options_t *options) {
  if (!options) return;
  options->max_streams = CUBERT_STREAM_DEFAULT_MAX_STREAMS;
  options->gc_capacity = CUBERT_STREAM_DEFAULT_GC_CAPACITY;
}

static void multi_stream_free(cubert_multi_stream_t *ms) {
  uint32_t m = ms->max_streams, i;
  cubert_allocator_t a = ms->allocator;
  cubert__stream_pool_deinitialize(&ms->pool);
  if (ms->gc) {
    for (i = 0; i < ms->gc_capacity; i++)
      cubert_allocator_free(a, ms->gc[i].pins, (size_t)ms->gc[i].pin_capacity * sizeof(cubert_binding_t), 0);
    cubert_allocator_free(a, ms->gc, (size_t)ms->gc_capacity * sizeof(gc_entry_t), 0);
  }
  cubert_allocator_free(a, ms->staging, (size_t)ms->staging_capacity * sizeof(cubert_binding_t), 0);
  cubert_allocator_free(a, ms->needs, (size_t)m * sizeof(uint32_t), 0);
  cubert_allocator_free(a, ms->needs_cursor, (size_t)m * sizeof(uint64_t), 0);
  cubert_allocator_free(a, ms->needs_event, (size_t)m * sizeof(void *), 0);
  cubert_allocator_free(a, ms->created, (size_t)(m + 1u) * sizeof(uint32_t), 0);
  cubert_allocator_free(a, ms, sizeof(*ms), 0);
}

cubert_status_t cubert__multi_stream_create(cubert_allocator_t allocator,
                                            const cubert_event_backend_t *driver,
                                            cubert_handle_table_t *handles,
                                            const cubert_multi_stream_options_t *options,
                                            cubert_multi_stream_t **out_multi_stream,
                                            cubert_error_t *out_error) {
  cubert_multi_stream_options_t opts;
  cubert_multi_stream_t *ms;
  const cubert_event_backend_vtable_t *vt;
  void *mem = NULL, *needs = NULL, *cursors = NULL, *events = NULL, *created = NULL, *gc = NULL;
  cubert_status_t status;
  if (!driver || !driver->vtable || !handles || !out_multi_stream)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "multi_stream_create: NULL driver, handles or out");
  vt = driver->vtable;
  if (!vt->create_stream || !vt->destroy_stream || !vt->flush || !vt->wait_event ||
      !vt->wait_event_sync || !vt->event_completed || !vt->release_event)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "multi_stream_create: incomplete event driver vtable");
  if (options) {
    opts = *options;
  } else {
    cubert__multi_stream_options_initialize(&opts);
  }
  if (opts.max_streams == 0 || opts.max_streams > CUBERT_STREAM_MAX_STREAMS_LIMIT ||
      opts.gc_capacity == 0 || opts.gc_capacity > 0xFFFFu) {
    uint64_t f[2];
    f[0] = opts.max_streams;
    f[1] = opts.gc_capacity;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, f, 2,
                            "multi_stream_create: max_streams must be 1..255, gc_capacity "
                            "1..65535");
  }
  status = cubert_allocator_malloc(allocator, sizeof(*ms), 0, &mem, NULL);
  if (status != CUBERT_STATUS_OK) goto oom;
  ms = (cubert_multi_stream_t *)mem;
  ms->allocator = allocator;
  ms->driver = *driver;
  ms->handles = handles;
  ms->max_streams = opts.max_streams;
  ms->gc_capacity = opts.gc_capacity;
  if ((status = cubert_allocator_malloc_array(allocator, opts.max_streams, sizeof(uint32_t), 0,
                                              &needs, NULL)) != CUBERT_STATUS_OK)
    goto fail;
  ms->needs = (uint32_t *)needs;
  if ((status = cubert_allocator_malloc_array(allocator, opts.max_streams, sizeof(uint64_t), 0,
                                              &cursors, NULL)) != CUBERT_STATUS_OK)
    goto fail;
  ms->needs_cursor = (uint64_t *)cursors;
  if ((status = cubert_allocator_malloc_array(allocator, opts.max_streams, sizeof(void *), 0,
                                              &events, NULL)) != CUBERT_STATUS_OK)
    goto fail;
  ms->needs_event = (void **)events;
  if ((status = cubert_allocator_malloc_array(allocator, opts.max_streams + 1u,
                                              sizeof(uint32_t), 0, &created,
                                              NULL)) != CUBERT_STATUS_OK)
    goto fail;
  ms->created = (uint32_t *)created;
  if ((status = cubert_allocator_malloc_array(allocator, opts.gc_capacity, sizeof(gc_entry_t), 0,
                                              &gc, NULL)) != CUBERT_STATUS_OK)
    goto fail;
  ms->gc = (gc_entry_t *)gc;
  if ((status = cubert__stream_pool_initialize(&ms->pool, allocator, opts.max_streams, 1,
                                               slot_create, slot_destroy, ms)) != CUBERT_STATUS_OK)
    goto fail;
  *out_multi_stream = ms;
  return CUBERT_STATUS_OK;
fail:
  multi_stream_free(ms);
oom:
  return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                          "multi_stream_create: allocation failed");
}

uint32_t cubert__multi_stream_max_streams(const cubert_multi_stream_t *ms) {
  return ms ? ms->max_streams : 0;
}

/* ---- GC ------------------------------------------------------------------------------ */

static void pins_release(cubert_handle_table_t *handles, cubert_binding_t *pins, uint32_t count) {
  uint32_t i;
  for (i = 0; i < count; i++) (void)cubert__binding_release(handles, &pins[i]);
}

/* Release what a pending entry holds; keep its pin buffer for reuse. */
static void gc_entry_release(cubert_multi_stream_t *ms, gc_entry_t *e) {
  pins_release(ms->handles, e->pins, e->pin_count);
  e->pin_count = 0;
  if (e->drop) e->drop(e->drop_user);
  e->drop = NULL;
  e->drop_user = NULL;
  /* unreachable: a pending entry's event is NULL (flush makes one on OK; register refuses NULL) */
  if (e->event) ms->driver.vtable->release_event(ms->driver.self, e->event);
  e->event = NULL;
}

uint32_t cubert__multi_stream_gc_collect(cubert_multi_stream_t *ms) {
  uint32_t r, w = 0, released = 0;
  if (!ms) return 0;
  for (r = 0; r < ms->gc_len; r++) {
    gc_entry_t *e = &ms->gc[r];
    if (ms->driver.vtable->event_completed(ms->driver.self, e->event)) {
      gc_entry_release(ms, e);
      released++;
    } else {
      if (w != r) {
        gc_entry_t tmp = ms->gc[w];
        ms->gc[w] = *e;
        *e = tmp;
      }
      w++;
    }
  }
  ms->gc_len = w;
  return released;
}

/* Make room for one more pending task: collect completed ones, else block
 * on the oldest (CubeCL's bounded GC channel). A failed wait is queued on
 * `sink` and the oldest is released anyway (the device is broken). */
static void gc_make_room(cubert_multi_stream_t *ms, stream_slot_t *sink) {
  gc_entry_t tmp;
  uint32_t i;
  cubert_error_t err;
  cubert_status_t status;
  if (ms->gc_len < ms->gc_capacity) return;
  if (cubert__multi_stream_gc_collect(ms) > 0) return;
  cubert_error_clear(&err);
  status = ms->driver.vtable->wait_event_sync(ms->driver.self, ms->gc[0].event, &err);
  /* unreachable: sink is NULL (both callers pass the slot they just found) */
  if (status != CUBERT_STATUS_OK && sink)
    slot_error_add_status(sink, &err, status, "GC: waiting for a pinned binding's event failed");
  gc_entry_release(ms, &ms->gc[0]);
  tmp = ms->gc[0];
  for (i = 0; i + 1 < ms->gc_len; i++) ms->gc[i] = ms->gc[i + 1];
  ms->gc[ms->gc_len - 1] = tmp;
  ms->gc_len--;
}

uint32_t cubert__multi_stream_gc_pending(const cubert_multi_stream_t *ms) {
  return ms ? ms->gc_len : 0;
}

cubert_status_t cubert__multi_stream_gc_register(cubert_multi_stream_t *ms, uint64_t stream_id,
                                                 void *event, cubert_stream_gc_drop_fn_t drop,
                                                 void *user, cubert_error_t *out_error) {
  void *slot = NULL;
  gc_entry_t *e;
  if (!ms || !event || !drop)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "gc_register: NULL multi-stream, event or drop");
  CUBERT_RETURN_IF_ERROR(cubert__stream_pool_get_or_create(
      &ms->pool, cubert__stream_pool_index(&ms->pool, stream_id), &slot, NULL, out_error));
  gc_make_room(ms, (stream_slot_t *)slot);
  e = &ms->gc[ms->gc_len++];
  e->event = event;
  e->pin_count = 0;
  e->drop = drop;
  e->drop_user = user;
  return CUBERT_STATUS_OK;
}

bool cubert__multi_stream_gc_take(cubert_multi_stream_t *ms, cubert_stream_gc_task_t *out_task) {
  gc_entry_t *e;
  uint32_t i;
  if (!ms || !out_task || ms->gc_len == 0) return false;
  e = &ms->gc[0];
  out_task->backend_ = ms->driver;
  out_task->allocator_ = ms->allocator;
  out_task->handles_ = ms->handles;
  out_task->event_ = e->event;
  out_task->pins_ = e->pins;
  out_task->pin_count_ = e->pin_count;
  out_task->pin_capacity_ = e->pin_capacity;
  out_task->drop_ = e->drop;
  out_task->drop_user_ = e->drop_user;
  for (i = 0; i + 1 < ms->gc_len; i++) ms->gc[i] = ms->gc[i + 1];
  cubert_memset(&ms->gc[ms->gc_len - 1], 0, sizeof(gc_entry_t)); /* its buffer went to the task */
  ms->gc_len--;
  return true;
}

cubert_status_t cubert__stream_gc_task_wait(const cubert_stream_gc_task_t *task,
                                            cubert_error_t *out_error) {
  if (!task || !task->event_ || !task->backend_.vtable)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "gc_task_wait: empty task");
  return task->backend_.vtable->wait_event_sync(task->backend_.self, task->event_, out_error);
}

void cubert__stream_gc_task_release(cubert_stream_gc_task_t *task) {
  if (!task || !task->backend_.vtable) return;
  pins_release(task->handles_, task->pins_, task->pin_count_);
  if (task->drop_) task->drop_(task->drop_user_);
  /* unreachable: event_ is NULL with a driver set (gc_take copies a pending entry's event) */
  if (task->event_) task->backend_.vtable->release_event(task->backend_.self, task->event_);
  cubert_allocator_free(task->allocator_, task->pins_,
                        (size_t)task->pin_capacity_ * sizeof(cubert_binding_t), 0);
  cubert_memset(task, 0, sizeof(*task));
}

/* ---- destruction -------------------------------------------------------------------- */

void cubert__multi_stream_destroy(cubert_multi_stream_t *ms) {
  uint32_t i;
  if (!ms) return;
  if (ms->active) pins_release(ms->handles, ms->staging, ms->staging_count);
  ms->staging_count = 0;
  ms->active = false;
  for (i = 0; i < ms->gc_len; i++) {
    cubert_error_t ignored;
    (void)ms->driver.vtable->wait_event_sync(ms->driver.self, ms->gc[i].event, &ignored);
    gc_entry_release(ms, &ms->gc[i]);
  }
  ms->gc_len = 0;
  multi_stream_free(ms);
}

/* ---- shared-binding analysis ------------------------------------------------------------- */

/* Does `b`, used on stream_id (slot `cur`, NULL when not created), need a
 * sync with its origin slot? *out_origin gets that slot. */
static bool binding_needs_sync(const cubert_multi_stream_t *ms, const stream_slot_t *cur,
                               uint64_t stream_id, const cubert_binding_t *b,
                               uint32_t *out_origin) {
  uint32_t o;
  uint64_t c;
  const stream_slot_t *origin;
  if (b->stream == stream_id) return false;
  o = cubert__stream_pool_index(&ms->pool, b->stream);
  *out_origin = o;
  if (!cur || !slot_synced(cur, o)) return true; /* never synced */
  origin = (const stream_slot_t *)cubert__stream_pool_get(&ms->pool, o);
  c = b->cursor;
  /* unreachable: origin is NULL (a slot synced with o made o's slot, and slots stay) */
  if (ms->driver.vtable->handle_cursor && origin)
    c = ms->driver.vtable->handle_cursor(ms->driver.self, origin->stream, b);
  return cur->last_synced[o] < c; /* synced before the binding's point */
}

uint32_t cubert__multi_stream_analyze(const cubert_multi_stream_t *ms, uint64_t stream_id,
                                      const cubert_binding_t *bindings, size_t count,
                                      uint32_t *out_origin_slots) {
  const stream_slot_t *cur;
  size_t i, j;
  uint32_t distinct = 0;
  if (!ms || (!bindings && count)) return 0;
  cur = slot_of(ms, stream_id);
  for (i = 0; i < count; i++) {
    uint32_t o = CUBERT_STREAM_NOT_SHARED;
    bool seen = false;
    if (!binding_needs_sync(ms, cur, stream_id, &bindings[i], &o)) o = CUBERT_STREAM_NOT_SHARED;
    if (o != CUBERT_STREAM_NOT_SHARED) {
      for (j = 0; j < i && !seen; j++) {
        uint32_t p;
        seen = binding_needs_sync(ms, cur, stream_id, &bindings[j], &p) && p == o;
      }
      if (!seen) distinct++;
    }
    if (out_origin_slots) out_origin_slots[i] = o;
  }
  return distinct;
}

/* ---- resolve ------------------------------------------------------------------------------- */

static cubert_status_t ensure_slot(cubert_multi_stream_t *ms, uint32_t index,
                                   stream_slot_t **out_slot, uint32_t *ncreated,
                                   cubert_error_t *out_error) {
  void *entry = NULL;
  bool created = false;
  CUBERT_RETURN_IF_ERROR(
      cubert__stream_pool_get_or_create(&ms->pool, index, &entry, &created, out_error));
  if (created) ms->created[(*ncreated)++] = index;
  if (out_slot) *out_slot = (stream_slot_t *)entry;
  return CUBERT_STATUS_OK;
}

static cubert_status_t staging_reserve(cubert_multi_stream_t *ms, size_t needed,
                                       cubert_error_t *out_error) {
  size_t cap;
  void *p = NULL;
  if (needed <= ms->staging_capacity) return CUBERT_STATUS_OK;
  cap = (size_t)ms->staging_capacity * 2u;
  if (cap < needed) cap = needed;
  if (cap < 4) cap = 4;
  /* unreachable: true (doubling passes UINT32_MAX only past 2^31 pins) */
  if (size_exceeds_u32(cap)) cap = needed;
  /* unreachable: overflow (needs a bindings array over half the address space) */
  if (cubert_size_mul(cap, sizeof(cubert_binding_t), &cap) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "too many bindings");
  if (cubert_allocator_realloc(ms->allocator, ms->staging,
                               (size_t)ms->staging_capacity * sizeof(cubert_binding_t), cap, 0,
                               &p, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "resolve: pin buffer allocation failed");
  ms->staging = (cubert_binding_t *)p;
  ms->staging_capacity = (uint32_t)(cap / sizeof(cubert_binding_t));
  return CUBERT_STATUS_OK;
}

/* Advance the current slot's cursor and open the resolution (both paths of
 * resolve end here). */
static void resolution_open(cubert_multi_stream_t *ms, stream_slot_t *cur, uint64_t stream_id,
                            uint32_t cur_index, uint32_t waits, uint32_t pinned,
                            cubert_resolved_streams_t *r) {
  cur->cursor++;
  ms->staging_count = pinned;
  ms->active = true;
  ms->active_stream = stream_id;
  ms->active_slot = cur_index;
  r->current = stream_id;
  r->cursor = cur->cursor;
  r->stream = cur->stream;
  r->slot = cur_index;
  r->waits = waits;
  r->pinned = pinned;
  r->reserved_ = 0;
}

cubert_status_t cubert__multi_stream_resolve(cubert_multi_stream_t *ms, uint64_t stream_id,
                                             const cubert_binding_t *bindings, size_t count,
                                             bool enforce_healthy,
                                             cubert_resolved_streams_t *out_resolved,
                                             cubert_error_t *out_error) {
  const cubert_event_backend_vtable_t *vt;
  stream_slot_t *cur;
  uint32_t cur_index, ncreated = 0, npins = 0, nneeds = 0, nevents = 0, k;
  size_t i, ncross = 0;
  cubert_status_t status;
  if (!ms || !out_resolved || (count && !bindings))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "resolve: NULL multi-stream, out or bindings");
  if (ms->active)
    return stream_fail(out_error, CUBERT_STATUS_FAILED_PRECONDITION,
                       "resolve: a resolution is already open (call resolve_end)");
  if (size_exceeds_u32(count))
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "resolve: too many bindings");
  vt = ms->driver.vtable;
  cur_index = cubert__stream_pool_index(&ms->pool, stream_id);
  cur = (stream_slot_t *)cubert__stream_pool_get(&ms->pool, cur_index);
  if (enforce_healthy && cur && slot_error_count(cur)) {
    if (out_error) *out_error = cur->errors;
    return CUBERT_STATUS_SERVER_UNHEALTHY;
  }
  for (i = 0; i < count; i++)
    if (bindings[i].stream != stream_id) ncross++;
  if (cur && ncross == 0) { /* the common case: nothing to create, pin or wait for */
    resolution_open(ms, cur, stream_id, cur_index, 0, 0, out_resolved);
    return CUBERT_STATUS_OK;
  }
  CUBERT_RETURN_IF_ERROR(staging_reserve(ms, ncross, out_error));

  /* Slots: current, every origin, the GC stream. */
  status = ensure_slot(ms, cur_index, &cur, &ncreated, out_error);
  for (i = 0; status == CUBERT_STATUS_OK && i < count; i++)
    if (bindings[i].stream != stream_id)
      status = ensure_slot(ms, cubert__stream_pool_index(&ms->pool, bindings[i].stream), NULL,
                           &ncreated, out_error);
  if (status == CUBERT_STATUS_OK && ncross)
    status = ensure_slot(ms, gc_slot_index(ms), NULL, &ncreated, out_error);
  if (status != CUBERT_STATUS_OK) goto rollback;

  /* Pin every cross-stream binding (even when no wait is needed). */
  for (i = 0; i < count; i++) {
    if (bindings[i].stream == stream_id) continue;
    status = cubert__binding_clone(ms->handles, &bindings[i], &ms->staging[npins]);
    if (status != CUBERT_STATUS_OK) {
      cubert_error_set(out_error, status == CUBERT_STATUS_OVERFLOW ? CUBERT_ERROR_OVERFLOW
                                                                   : CUBERT_ERROR_INVALID_HANDLE,
                       NULL, 0, "resolve: cannot pin a cross-stream binding");
      goto rollback;
    }
    npins++;
  }

  /* Analysis: distinct origin slots needing a sync, first-use order. */
  for (i = 0; i < count; i++) {
    uint32_t o = 0;
    bool seen = false;
    if (!binding_needs_sync(ms, cur, stream_id, &bindings[i], &o)) continue;
    for (k = 0; k < nneeds && !seen; k++) seen = ms->needs[k] == o;
    if (!seen) ms->needs[nneeds++] = o;
  }

  /* Apply: one flush per origin, one wait per origin on the current stream. */
  for (k = 0; k < nneeds; k++) {
    stream_slot_t *origin = (stream_slot_t *)cubert__stream_pool_get(&ms->pool, ms->needs[k]);
    void *event = NULL;
    status = vt->flush(ms->driver.self, origin->stream, &event, out_error);
    if (status != CUBERT_STATUS_OK) goto rollback;
    ms->needs_event[nevents++] = event;
    ms->needs_cursor[k] = origin->cursor;
  }
  for (k = 0; k < nneeds; k++) {
    status = vt->wait_event(ms->driver.self, cur->stream, ms->needs_event[k], out_error);
    if (status != CUBERT_STATUS_OK) goto rollback;
  }
  for (k = 0; k < nevents; k++) vt->release_event(ms->driver.self, ms->needs_event[k]);
  for (k = 0; k < nneeds; k++) slot_set_synced(cur, ms->needs[k], ms->needs_cursor[k]);

  resolution_open(ms, cur, stream_id, cur_index, nneeds, npins, out_resolved);
  return CUBERT_STATUS_OK;

rollback:
  /* unreachable: true (every goto rollback follows a failed call) */
  if (status == CUBERT_STATUS_OK) status = CUBERT_STATUS_INTERNAL;
  for (k = 0; k < nevents; k++) vt->release_event(ms->driver.self, ms->needs_event[k]);
  pins_release(ms->handles, ms->staging, npins);
  while (ncreated > 0) cubert__stream_pool_remove(&ms->pool, ms->created[--ncreated]);
  return status;
}

void cubert__multi_stream_resolve_end(cubert_multi_stream_t *ms,
                                      cubert_resolved_streams_t *resolved) {
  const cubert_event_backend_vtable_t *vt;
  stream_slot_t *cur, *gc;
  void *e1 = NULL, *e2 = NULL;
  cubert_error_t err;
  cubert_status_t status;
  gc_entry_t *e;
  if (!ms || !resolved || !ms->active || resolved->current != ms->active_stream ||
      resolved->slot != ms->active_slot)
    return;
  vt = ms->driver.vtable;
  cur = (stream_slot_t *)cubert__stream_pool_get(&ms->pool, ms->active_slot);
  if (ms->staging_count > 0) {
    gc = (stream_slot_t *)cubert__stream_pool_get(&ms->pool, gc_slot_index(ms));
    cubert_error_clear(&err);
    status = vt->flush(ms->driver.self, cur->stream, &e1, &err);
    if (status == CUBERT_STATUS_OK) {
      status = vt->wait_event(ms->driver.self, gc->stream, e1, &err);
      vt->release_event(ms->driver.self, e1);
    }
    if (status == CUBERT_STATUS_OK) status = vt->flush(ms->driver.self, gc->stream, &e2, &err);
    if (status != CUBERT_STATUS_OK) {
      /* No event covers the command: queue the error, unpin now. */
      slot_error_add_status(cur, &err, status, "resolve_end: flushing for the GC failed");
      pins_release(ms->handles, ms->staging, ms->staging_count);
    } else {
      cubert_binding_t *buffer;
      uint32_t capacity;
      gc_make_room(ms, cur);
      e = &ms->gc[ms->gc_len++];
      buffer = e->pins;
      capacity = e->pin_capacity;
      e->pins = ms->staging;
      e->pin_capacity = ms->staging_capacity;
      e->pin_count = ms->staging_count;
      e->event = e2;
      e->drop = NULL;
      e->drop_user = NULL;
      ms->staging = buffer;
      ms->staging_capacity = capacity;
    }
  }
  ms->staging_count = 0;
  ms->active = false;
  cubert_memset(resolved, 0, sizeof(*resolved));
}

/* ---- streams, sync, inspection ---------------------------------------------------------------- */

cubert_status_t cubert__multi_stream_stream(cubert_multi_stream_t *ms, uint64_t stream_id,
                                            void **out_stream, cubert_error_t *out_error) {
  void *entry = NULL;
  if (!ms || !out_stream)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "stream: NULL multi-stream or out");
  CUBERT_RETURN_IF_ERROR(cubert__stream_pool_get_or_create(
      &ms->pool, cubert__stream_pool_index(&ms->pool, stream_id), &entry, NULL, out_error));
  *out_stream = ((stream_slot_t *)entry)->stream;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__multi_stream_sync(cubert_multi_stream_t *ms, uint64_t stream_id,
                                          cubert_error_t *out_error) {
  stream_slot_t *slot;
  void *event = NULL;
  cubert_status_t status;
  if (!ms)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "sync: NULL multi-stream");
  slot = slot_of(ms, stream_id);
  if (!slot) return CUBERT_STATUS_OK;
  CUBERT_RETURN_IF_ERROR(
      ms->driver.vtable->flush(ms->driver.self, slot->stream, &event, out_error));
  status = ms->driver.vtable->wait_event_sync(ms->driver.self, event, out_error);
  ms->driver.vtable->release_event(ms->driver.self, event);
  return status;
}

bool cubert__multi_stream_slot_exists(const cubert_multi_stream_t *ms, uint32_t slot) {
  return ms && cubert__stream_pool_get(&ms->pool, slot) != NULL;
}

uint64_t cubert__multi_stream_cursor(const cubert_multi_stream_t *ms, uint64_t stream_id) {
  const stream_slot_t *slot = ms ? slot_of(ms, stream_id) : NULL;
  return slot ? slot->cursor : 0;
}

bool cubert__multi_stream_last_synced(const cubert_multi_stream_t *ms, uint64_t stream_id,
                                      uint32_t origin_slot, uint64_t *out_cursor) {
  const stream_slot_t *slot = ms ? slot_of(ms, stream_id) : NULL;
  if (!slot || origin_slot >= ms->max_streams || !slot_synced(slot, origin_slot)) return false;
  if (out_cursor) *out_cursor = slot->last_synced[origin_slot];
  return true;
}

uint32_t cubert__multi_stream_synced_count(const cubert_multi_stream_t *ms, uint64_t stream_id) {
  const stream_slot_t *slot = ms ? slot_of(ms, stream_id) : NULL;
  return slot ? slot->synced_count : 0;
}

/* ---- error queue ------------------------------------------------------------------------------ */

cubert_status_t cubert__multi_stream_error_push(cubert_multi_stream_t *ms, uint64_t stream_id,
                                                const cubert_error_t *error) {
  void *entry = NULL;
  if (!ms || !error || error->status == CUBERT_STATUS_OK || error->depth == 0)
    return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cubert__stream_pool_get_or_create(
      &ms->pool, cubert__stream_pool_index(&ms->pool, stream_id), &entry, NULL, NULL));
  slot_error_add((stream_slot_t *)entry, error);
  return CUBERT_STATUS_OK;
}

uint32_t cubert__multi_stream_error_count(const cubert_multi_stream_t *ms, uint64_t stream_id) {
  const stream_slot_t *slot = ms ? slot_of(ms, stream_id) : NULL;
  return slot ? slot_error_count(slot) : 0;
}

cubert_status_t cubert__multi_stream_error_peek(const cubert_multi_stream_t *ms,
                                                uint64_t stream_id, cubert_error_t *out_error) {
  const stream_slot_t *slot;
  if (!ms) return CUBERT_STATUS_INVALID_ARGUMENT;
  slot = slot_of(ms, stream_id);
  if (!slot || slot_error_count(slot) == 0) return CUBERT_STATUS_OK;
  if (out_error) *out_error = slot->errors;
  return CUBERT_STATUS_SERVER_UNHEALTHY;
}

cubert_status_t cubert__multi_stream_error_drain(cubert_multi_stream_t *ms, uint64_t stream_id,
                                                 cubert_error_t *out_error) {
  stream_slot_t *slot;
  cubert_status_t status = cubert__multi_stream_error_peek(ms, stream_id, out_error);
  if (status != CUBERT_STATUS_SERVER_UNHEALTHY) return status;
  slot = slot_of(ms, stream_id);
  cubert_error_clear(&slot->errors);
  return status;
}

/* SPDX-License-Identifier: MIT */
/* core/stream/stream_multi.c: the multi-stream's bookkeeping (core/stream/stream.h):
 * per-slot cursors and last_synced points, the plan of a command (its waits,
 * its pins, its release point), per-stream error queues. It calls no driver
 * and pins nothing: the server acts on the plan. No lock: the owner
 * serializes every call. */
#include "stream/stream_internal.h"
#include "memory/handle_table.h"

/* Bits of the per-slot "synced with slot o" set (max_streams <= 255). */
#define STREAM_SYNCED_WORDS ((CUBERT_STREAM_MAX_STREAMS_LIMIT + 32u) / 32u)

typedef struct stream_slot_t {
  uint64_t cursor;         /* commands committed on this slot */
  uint32_t synced_bits[STREAM_SYNCED_WORDS];
  uint32_t synced_count;   /* origin slots in synced_bits */
  cubert_error_t errors;   /* SERVER_UNHEALTHY aggregate of the queued errors (empty: none) */
  uint64_t last_synced[]; /* max_streams entries (allocated with the slot) */
} stream_slot_t;

struct cubert_multi_stream_t {
  cubert_allocator_t allocator;
  uint32_t max_streams;
  uint32_t wait_on_origin_cursor;
  cubert_stream_pool_t pool; /* max_streams slots, made on first use */
  cubert_stream_wait_t *waits; /* the latest plan's waits [max_streams] */
  uint32_t serial;             /* the latest plan's serial (0: none open) */
  uint32_t next_serial;
};

/* ---- small helpers ---------------------------------------------------------- */

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

static stream_slot_t *slot_of(const cubert_multi_stream_t *ms, uint64_t stream_id) {
  return (stream_slot_t *)cubert__stream_pool_get(&ms->pool,
                                                  cubert__stream_pool_index(&ms->pool, stream_id));
}

static uint32_t slot_error_count(const stream_slot_t *slot) {
  uint64_t n = cubert_error_aggregate_count(&slot->errors);
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* ---- slot bookkeeping (pool callbacks) ------------------------------------------- */

static cubert_status_t slot_create(void *context, uint32_t index, void **out_entry,
                                   cubert_error_t *out_error) {
  cubert_multi_stream_t *ms = (cubert_multi_stream_t *)context;
  void *mem = NULL;
  (void)index;
  if (cubert_allocator_malloc(ms->allocator, slot_bytes(ms->max_streams), 0, &mem, NULL) !=
      CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "stream slot allocation failed");
  *out_entry = mem; /* zero-filled: cursor 0, nothing synced, healthy */
  return CUBERT_STATUS_OK;
}

static void slot_destroy(void *context, uint32_t index, void *entry) {
  cubert_multi_stream_t *ms = (cubert_multi_stream_t *)context;
  (void)index;
  cubert_allocator_free(ms->allocator, entry, slot_bytes(ms->max_streams), 0);
}

static cubert_status_t slot_get_or_create(cubert_multi_stream_t *ms, uint64_t stream_id,
                                          stream_slot_t **out_slot, cubert_error_t *out_error) {
  void *entry = NULL;
  CUBERT_RETURN_IF_ERROR(cubert__stream_pool_get_or_create(
      &ms->pool, cubert__stream_pool_index(&ms->pool, stream_id), &entry, NULL, out_error));
  *out_slot = (stream_slot_t *)entry;
  return CUBERT_STATUS_OK;
}

/* ---- creation -------------------------------------------------------------------- */

void cubert__multi_stream_options_initialize(cubert_multi_stream_options_t *options) {
  if (!options) return;
  options->max_streams = CUBERT_STREAM_DEFAULT_MAX_STREAMS;
  options->wait_on_origin_cursor = 0;
}

cubert_status_t cubert__multi_stream_create(cubert_allocator_t allocator,
                                            const cubert_multi_stream_options_t *options,
                                            cubert_multi_stream_t **out_multi_stream,
                                            cubert_error_t *out_error) {
  cubert_multi_stream_options_t opts;
  cubert_multi_stream_t *ms;
  void *mem = NULL, *waits = NULL;
  if (!out_multi_stream)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "multi_stream_create: NULL out");
  if (options) {
    opts = *options;
  } else {
    cubert__multi_stream_options_initialize(&opts);
  }
  if (opts.max_streams == 0 || opts.max_streams > CUBERT_STREAM_MAX_STREAMS_LIMIT) {
    uint64_t f = opts.max_streams;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "multi_stream_create: max_streams must be 1..255");
  }
  if (cubert_allocator_malloc(allocator, sizeof(*ms), 0, &mem, NULL) != CUBERT_STATUS_OK)
    goto oom;
  ms = (cubert_multi_stream_t *)mem; /* zero-filled */
  ms->allocator = allocator;
  ms->max_streams = opts.max_streams;
  ms->wait_on_origin_cursor = opts.wait_on_origin_cursor;
  if (cubert_allocator_malloc_array(allocator, opts.max_streams, sizeof(cubert_stream_wait_t), 0,
                                    &waits, NULL) != CUBERT_STATUS_OK)
    goto fail;
  ms->waits = (cubert_stream_wait_t *)waits;
  if (cubert__stream_pool_initialize(&ms->pool, allocator, opts.max_streams, 0, slot_create,
                                     slot_destroy, ms) != CUBERT_STATUS_OK)
    goto fail;
  *out_multi_stream = ms;
  return CUBERT_STATUS_OK;
fail:
  cubert__multi_stream_destroy(ms);
oom:
  return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                          "multi_stream_create: allocation failed");
}

void cubert__multi_stream_destroy(cubert_multi_stream_t *ms) {
  if (!ms) return;
  cubert__stream_pool_deinitialize(&ms->pool);
  cubert_allocator_free(ms->allocator, ms->waits,
                        (size_t)ms->max_streams * sizeof(cubert_stream_wait_t), 0);
  cubert_allocator_free(ms->allocator, ms, sizeof(*ms), 0);
}

uint32_t cubert__multi_stream_max_streams(const cubert_multi_stream_t *ms) {
  return ms ? ms->max_streams : 0;
}

/* ---- the waits ----------------------------------------------------------------- */

/* Does `b`, used on stream_id (slot `cur`, NULL when never used), need a
 * wait on its origin slot? *out_origin gets that slot. */
static bool binding_needs_sync(const cubert_multi_stream_t *ms, const stream_slot_t *cur,
                               uint64_t stream_id, const cubert_binding_t *b,
                               uint32_t *out_origin) {
  uint32_t o;
  uint64_t point = b->cursor;
  if (b->stream == stream_id) return false;
  o = cubert__stream_pool_index(&ms->pool, b->stream);
  *out_origin = o;
  if (!cur || !slot_synced(cur, o)) return true; /* never synced */
  if (ms->wait_on_origin_cursor) point = cubert__multi_stream_cursor(ms, b->stream);
  return cur->last_synced[o] < point; /* synced before the binding's point */
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

/* ---- plan and commit ------------------------------------------------------------ */

cubert_status_t cubert__multi_stream_plan(cubert_multi_stream_t *ms, uint64_t stream_id,
                                          const cubert_binding_t *bindings, size_t count,
                                          bool enforce_healthy, cubert_stream_plan_t *out_plan,
                                          cubert_error_t *out_error) {
  stream_slot_t *cur;
  uint32_t nwaits = 0, npins = 0, k;
  size_t i;
  if (!ms || !out_plan || (count && !bindings))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "plan: NULL multi-stream, out or bindings");
  if (size_exceeds_u32(count))
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0, "plan: too many bindings");
  cur = slot_of(ms, stream_id);
  if (enforce_healthy && cur && slot_error_count(cur)) {
    if (out_error) *out_error = cur->errors;
    return CUBERT_STATUS_SERVER_UNHEALTHY;
  }
  if (!cur) CUBERT_RETURN_IF_ERROR(slot_get_or_create(ms, stream_id, &cur, out_error));
  for (i = 0; i < count; i++) {
    uint32_t o = 0;
    bool seen = false;
    if (bindings[i].stream != stream_id) npins++;
    if (!binding_needs_sync(ms, cur, stream_id, &bindings[i], &o)) continue;
    for (k = 0; k < nwaits && !seen; k++) seen = ms->waits[k].origin_slot == o;
    if (seen) continue;
    ms->waits[nwaits].origin_slot = o;
    ms->waits[nwaits].reserved_ = 0;
    ms->waits[nwaits].origin_cursor = cubert__multi_stream_cursor(ms, bindings[i].stream);
    nwaits++;
  }
  if (++ms->next_serial == 0) ms->next_serial = 1; /* 0 means "none" */
  ms->serial = ms->next_serial;
  out_plan->stream_id = stream_id;
  out_plan->cursor = cur->cursor + 1u;
  out_plan->slot = cubert__stream_pool_index(&ms->pool, stream_id);
  out_plan->wait_count = nwaits;
  out_plan->waits = ms->waits;
  out_plan->pin_count = npins;
  out_plan->serial = ms->serial;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__multi_stream_commit(cubert_multi_stream_t *ms,
                                            const cubert_stream_plan_t *plan) {
  stream_slot_t *cur;
  uint32_t k;
  if (!ms || !plan) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (plan->serial == 0 || plan->serial != ms->serial) return CUBERT_STATUS_FAILED_PRECONDITION;
  cur = slot_of(ms, plan->stream_id);
  /* unreachable: cur NULL (the plan made the slot, and slots stay) */
  if (!cur) return CUBERT_STATUS_FAILED_PRECONDITION;
  for (k = 0; k < plan->wait_count; k++)
    slot_set_synced(cur, ms->waits[k].origin_slot, ms->waits[k].origin_cursor);
  cur->cursor = plan->cursor;
  ms->serial = 0;
  return CUBERT_STATUS_OK;
}

bool cubert__multi_stream_advance(cubert_multi_stream_t *ms, uint64_t stream_id) {
  stream_slot_t *cur = ms ? slot_of(ms, stream_id) : NULL;
  if (!cur) return false;
  cur->cursor++;
  return true;
}

/* ---- inspection ---------------------------------------------------------------------------- */

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
  stream_slot_t *slot = NULL;
  if (!ms || !error || error->status == CUBERT_STATUS_OK || error->depth == 0)
    return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(slot_get_or_create(ms, stream_id, &slot, NULL));
  (void)cubert_error_aggregate(&slot->errors, error);
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

/* SPDX-License-Identifier: MIT */
/*
 * core/check/race.c: the predictive cross-stream race checker (core/check/race.h,
 * docs/race-checker.md): create, reset, vector clocks, events, joins and
 * results. The shadow table and the access checks are in race_shadow.c, the
 * report text in race_format.c, the state in race_internal.h.
 *
 * Timelines: 0 is the host, 1 + s is stream slot s. `clocks` is a
 * width x width matrix (width = max_streams + 1): row t is timeline t's
 * vector clock; clocks[t][t] is the number of ops begun on t (the index of its
 * latest op). An access record (timeline u, op index i) happens-before the
 * current point of a timeline whose clock is C iff i <= C[u].
 *
 * Shadow: an open-addressing hash table (linear probing, backward-shift
 * deletion, key 0 = empty) maps a buffer id to a singly linked list of access
 * records held in a record pool (indices, free list). Events are slots of an
 * event pool with one clock row each (indices, free list, generations).
 * Pools grow by allocating the bigger block, copying and freeing the old one,
 * so a failed growth leaves everything as it was.
 */
#include "check/race_internal.h"
#include "check/race.h"
#include "cubert/driver/arith.h"

#if CUBERT_CONFIG_RACE_CHECKER /* else race_omitted.c (cubert/config.h) */

/* ---- create / destroy / reset ------------------------------------------------- */

void cubert__race_options_initialize(cubert_race_options_t *options) {
  if (!options) return;
  cubert_memset(options, 0, sizeof(*options));
  options->max_streams = CUBERT_RACE_DEFAULT_MAX_STREAMS;
}

cubert_status_t cubert__race_checker_create(cubert_allocator_t allocator,
                                            const cubert_race_options_t *options,
                                            cubert_race_checker_t **out_checker,
                                            cubert_error_t *out_error) {
  cubert_race_options_t defaults;
  cubert_race_checker_t *c;
  void *mem = NULL, *block = NULL;
  size_t width, cells, clock_bytes, timeline_bytes, block_size;
  uint64_t fields[2];
  cubert_status_t status;
  if (!options) {
    cubert__race_options_initialize(&defaults);
    options = &defaults;
  }
  if (!out_checker || !allocator.fn) {
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "race checker: NULL out_checker or allocator");
  }
  if (options->max_streams == 0 || options->max_streams > CUBERT_RACE_MAX_STREAMS_LIMIT) {
    fields[0] = options->max_streams;
    fields[1] = CUBERT_RACE_MAX_STREAMS_LIMIT;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, fields, 2,
                            "race checker: max_streams must be 1..limit");
  }
  if ((options->flags & ~CUBERT_RACE_FLAG_REPORT_ALL) != 0) {
    fields[0] = options->flags;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, fields, 1,
                            "race checker: unknown flags");
  }
  if (options->sink.vtable && !options->sink.vtable->report) {
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "race checker: sink vtable without report");
  }
  width = (size_t)options->max_streams + 1u;
  /* clocks (width^2) + scratch (width) u64, then the timelines. */
  if (cubert_size_mul_add(width, width, width, &cells) != CUBERT_STATUS_OK ||
      cubert_size_mul(cells, sizeof(uint64_t), &clock_bytes) != CUBERT_STATUS_OK ||
      cubert_size_mul(width, sizeof(race_timeline_t), &timeline_bytes) != CUBERT_STATUS_OK ||
      cubert_size_add(clock_bytes, timeline_bytes, &block_size) != CUBERT_STATUS_OK) {
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                            "race checker: clock matrix size overflows");
  }
  status = cubert_allocator_malloc(allocator, sizeof(*c), RACE_ALIGN, &mem, NULL);
  if (status != CUBERT_STATUS_OK) {
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "race checker: allocating the checker failed");
  }
  c = (cubert_race_checker_t *)mem;
  status = cubert_allocator_malloc(allocator, block_size, RACE_ALIGN, &block, NULL);
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, c, sizeof(*c), RACE_ALIGN);
    fields[0] = block_size;
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, fields, 1,
                            "race checker: allocating the clocks failed");
  }
  c->allocator = allocator;
  c->max_streams = options->max_streams;
  c->width = (uint32_t)width;
  c->block = block;
  c->block_size = block_size;
  c->clocks = (uint64_t *)block;
  c->scratch = c->clocks + width * width;
  c->timelines = (race_timeline_t *)(void *)(c->scratch + width);
  c->event_free = RACE_NIL;
  c->record_free = RACE_NIL;
  c->flags = options->flags;
  c->sink = options->sink;
  *out_checker = c;
  return CUBERT_STATUS_OK;
}

void cubert__race_checker_destroy(cubert_race_checker_t *checker) {
  cubert_allocator_t a;
  if (!checker) return;
  a = checker->allocator;
  cubert_allocator_free(a, checker->events,
                        (size_t)checker->event_capacity * sizeof(race_event_slot_t), RACE_ALIGN);
  cubert_allocator_free(a, checker->event_clocks,
                        (size_t)checker->event_capacity * checker->width * sizeof(uint64_t),
                        RACE_ALIGN);
  cubert_allocator_free(a, checker->buckets,
                        (size_t)checker->bucket_capacity * sizeof(race_bucket_t), RACE_ALIGN);
  cubert_allocator_free(a, checker->records,
                        (size_t)checker->record_capacity * sizeof(race_record_t), RACE_ALIGN);
  cubert_allocator_free(a, checker->block, checker->block_size, RACE_ALIGN);
  cubert_allocator_free(a, checker, sizeof(*checker), RACE_ALIGN);
}

void cubert__race_checker_reset(cubert_race_checker_t *checker) {
  uint32_t i;
  if (!checker) return;
  cubert_memset(checker->block, 0, checker->block_size);
  checker->host_version = 0;
  /* Every token dies: recorded slots become unused (even generation), and the
   * free list is rebuilt over the slots handed out so far. */
  checker->event_free = RACE_NIL;
  for (i = checker->event_used; i > 0; i--) {
    race_event_slot_t *slot = &checker->events[i - 1u];
    if (slot->generation & 1u) slot->generation++;
    slot->next_free = checker->event_free;
    checker->event_free = i - 1u;
  }
  if (checker->buckets) {
    cubert_memset(checker->buckets, 0, (size_t)checker->bucket_capacity * sizeof(race_bucket_t));
  }
  checker->record_used = 0;
  checker->record_free = RACE_NIL;
  cubert_memset(&checker->counters, 0, sizeof(checker->counters));
  checker->has_last = false;
  cubert_memset(&checker->last, 0, sizeof(checker->last));
}

uint32_t cubert__race_checker_max_streams(const cubert_race_checker_t *checker) {
  return checker ? checker->max_streams : 0;
}

cubert_status_t cubert__race_set_sink(cubert_race_checker_t *checker,
                                      const cubert_race_sink_t *sink) {
  if (!checker) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (sink && sink->vtable && !sink->vtable->report) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (sink && sink->vtable) {
    checker->sink = *sink;
  } else {
    checker->sink.vtable = NULL;
    checker->sink.self = NULL;
  }
  return CUBERT_STATUS_OK;
}

void cubert__race_set_seed(cubert_race_checker_t *checker, uint64_t seed) {
  if (!checker) return;
  checker->has_seed = true;
  checker->seed = seed;
}

void cubert__race_clear_seed(cubert_race_checker_t *checker) {
  if (!checker) return;
  checker->has_seed = false;
  checker->seed = 0;
}

/* ---- events ----------------------------------------------------------------- */

/* Double the event pool: new blocks, copy, free the old ones. */
static cubert_status_t race_events_grow(cubert_race_checker_t *c) {
  uint32_t capacity;
  size_t slot_bytes, clock_bytes, old_slot_bytes, old_clock_bytes;
  void *slots = NULL, *clocks = NULL;
  if (c->event_capacity >= RACE_MAX_CAPACITY) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  capacity = c->event_capacity ? c->event_capacity * 2u : 8u;
  if (cubert_size_mul(capacity, sizeof(race_event_slot_t), &slot_bytes) != CUBERT_STATUS_OK ||
      cubert_size_mul((size_t)capacity * sizeof(uint64_t), c->width, &clock_bytes) !=
      CUBERT_STATUS_OK) {
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  if (cubert_allocator_malloc(c->allocator, slot_bytes, RACE_ALIGN, &slots,
                              NULL) != CUBERT_STATUS_OK) {
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  if (cubert_allocator_malloc(c->allocator, clock_bytes, RACE_ALIGN, &clocks, NULL) !=
      CUBERT_STATUS_OK) {
    cubert_allocator_free(c->allocator, slots, slot_bytes, RACE_ALIGN);
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  old_slot_bytes = (size_t)c->event_capacity * sizeof(race_event_slot_t);
  old_clock_bytes = (size_t)c->event_capacity * c->width * sizeof(uint64_t);
  if (c->events) {
    cubert_memcpy(slots, c->events, old_slot_bytes);
    cubert_memcpy(clocks, c->event_clocks, old_clock_bytes);
    cubert_allocator_free(c->allocator, c->events, old_slot_bytes, RACE_ALIGN);
    cubert_allocator_free(c->allocator, c->event_clocks, old_clock_bytes, RACE_ALIGN);
  }
  c->events = (race_event_slot_t *)slots;
  c->event_clocks = (uint64_t *)clocks;
  c->event_capacity = capacity;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__race_event_record(cubert_race_checker_t *checker, uint32_t stream,
                                          cubert_race_event_t *out_event) {
  uint32_t timeline, index;
  race_event_slot_t *slot;
  if (!checker || !out_event || !race_stream_timeline(checker, stream, &timeline)) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  if (checker->event_free == RACE_NIL && checker->event_used == checker->event_capacity) {
    CUBERT_RETURN_IF_ERROR(race_events_grow(checker));
  }
  if (checker->event_free != RACE_NIL) {
    index = checker->event_free;
    checker->event_free = checker->events[index].next_free;
  } else {
    index = checker->event_used++;
  }
  slot = &checker->events[index];
  slot->generation++; /* even -> odd: recorded */
  slot->next_free = RACE_NIL;
  slot->timeline = timeline;
  slot->index = race_row(checker, timeline)[timeline];
  cubert_memcpy(race_event_row(checker, index), race_row(checker, timeline),
                (size_t)checker->width * sizeof(uint64_t));
  checker->counters.events++;
  checker->counters.events_live++;
  out_event->index = index + 1u;
  out_event->generation = slot->generation;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__race_event_release(cubert_race_checker_t *checker,
                                           cubert_race_event_t event) {
  race_event_slot_t *slot;
  if (!checker) return CUBERT_STATUS_INVALID_ARGUMENT;
  slot = race_event_lookup(checker, event);
  if (!slot) return CUBERT_STATUS_INVALID_HANDLE;
  slot->generation++; /* odd -> even: free */
  slot->next_free = checker->event_free;
  checker->event_free = event.index - 1u;
  checker->counters.events_live--;
  return CUBERT_STATUS_OK;
}

/* ---- ops and joins ------------------------------------------------------------ */

cubert_status_t cubert__race_op_begin(cubert_race_checker_t *checker, uint32_t stream,
                                      const char *name, uint64_t *out_op_index) {
  uint32_t timeline;
  uint64_t *row;
  if (!checker || !out_op_index || !race_timeline_of(checker, stream, &timeline)) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  row = race_row(checker, timeline);
  if (row[timeline] == UINT64_MAX) return CUBERT_STATUS_OVERFLOW;
  race_inherit_host(checker, timeline);
  row[timeline]++;
  if (timeline == RACE_HOST_TIMELINE) checker->host_version++;
  checker->timelines[timeline].name = name;
  checker->timelines[timeline].open = 1;
  checker->counters.ops++;
  *out_op_index = row[timeline];
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__race_stream_wait_event(cubert_race_checker_t *checker, uint32_t stream,
                                               cubert_race_event_t event) {
  uint32_t timeline;
  race_event_slot_t *slot;
  if (!checker || !race_stream_timeline(checker, stream, &timeline)) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  slot = race_event_lookup(checker, event);
  if (!slot) return CUBERT_STATUS_INVALID_HANDLE;
  race_join_into(checker, timeline, race_event_row(checker, event.index - 1u));
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__race_stream_wait_stream(cubert_race_checker_t *checker, uint32_t stream,
                                                uint32_t origin) {
  uint32_t timeline, origin_timeline;
  if (!checker || !race_stream_timeline(checker, stream, &timeline) ||
      !race_stream_timeline(checker, origin, &origin_timeline)) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  race_join_into(checker, timeline, race_row(checker, origin_timeline));
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__race_host_wait_event(cubert_race_checker_t *checker,
                                             cubert_race_event_t event) {
  race_event_slot_t *slot;
  if (!checker) return CUBERT_STATUS_INVALID_ARGUMENT;
  slot = race_event_lookup(checker, event);
  if (!slot) return CUBERT_STATUS_INVALID_HANDLE;
  race_join_into(checker, RACE_HOST_TIMELINE, race_event_row(checker, event.index - 1u));
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__race_host_sync_stream(cubert_race_checker_t *checker, uint32_t stream) {
  uint32_t timeline;
  if (!checker || !race_stream_timeline(checker, stream, &timeline)) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  race_join_into(checker, RACE_HOST_TIMELINE, race_row(checker, timeline));
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__race_host_sync_all(cubert_race_checker_t *checker) {
  uint32_t t;
  uint64_t *host;
  if (!checker) return CUBERT_STATUS_INVALID_ARGUMENT;
  host = race_row(checker, RACE_HOST_TIMELINE);
  for (t = 1; t < checker->width; t++) race_join(host, race_row(checker, t), checker->width);
  checker->timelines[RACE_HOST_TIMELINE].open = 0;
  checker->host_version++;
  checker->counters.joins++;
  return CUBERT_STATUS_OK;
}

/* ---- results ------------------------------------------------------------------- */

void cubert__race_counters(const cubert_race_checker_t *checker,
                           cubert_race_counters_t *out_counters) {
  if (!out_counters) return;
  if (!checker) {
    cubert_memset(out_counters, 0, sizeof(*out_counters));
    return;
  }
  *out_counters = checker->counters;
}

bool cubert__race_last_report(const cubert_race_checker_t *checker,
                              cubert_race_report_t *out_report) {
  if (!checker || !out_report || !checker->has_last) return false;
  *out_report = checker->last;
  return true;
}

uint64_t cubert__race_clock(const cubert_race_checker_t *checker, uint32_t of, uint32_t stream) {
  uint32_t a, b;
  if (!checker || !race_timeline_of(checker, of, &a) || !race_timeline_of(checker, stream, &b)) {
    return 0;
  }
  return race_row(checker, a)[b];
}

#endif /* CUBERT_CONFIG_RACE_CHECKER */

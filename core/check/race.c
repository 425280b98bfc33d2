/*
 * core/check/race.c: the predictive cross-stream race checker (cubert/race.h,
 * reliability.md 4.4, docs/race-checker.md).
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
#include "base/internal.h"
#include "cubert/race.h"
#include "base/fmt.h"

#define RACE_NIL 0xFFFFFFFFu
/* Largest pool capacity (records, events, buckets): indices stay below RACE_NIL. */
#define RACE_MAX_CAPACITY 0x40000000u
#define RACE_HOST_TIMELINE 0u
#define RACE_ALIGN 0u /* the allocator's natural alignment (16) */

typedef struct race_record_t {
  uint64_t start, end;
  uint64_t index;   /* op index on its timeline */
  const char *name; /* op name (borrowed) */
  uint32_t timeline;
  uint32_t next;    /* next record of the same buffer, or of the free list */
  uint32_t mode;    /* CUBERT_RACE_READ / CUBERT_RACE_WRITE */
  uint32_t reserved_;
} race_record_t;

typedef struct race_bucket_t {
  uint64_t key;  /* buffer id; 0 = empty */
  uint32_t head; /* first record */
  uint32_t reserved_;
} race_bucket_t;

typedef struct race_event_slot_t {
  uint32_t generation; /* odd while recorded, even while free */
  uint32_t next_free;
  uint32_t timeline;   /* the stream it was recorded on */
  uint32_t reserved_;
  uint64_t index;      /* that stream's op count when recorded */
} race_event_slot_t;

typedef struct race_timeline_t {
  const char *name;   /* name of the latest op */
  uint64_t host_seen; /* host_version last joined (streams) */
  uint32_t open;      /* 1: the latest op still accepts accesses */
  uint32_t reserved_;
} race_timeline_t;

struct cubert_race_checker_t {
  cubert_allocator_t allocator;
  uint32_t max_streams;
  uint32_t width;         /* timelines: max_streams + 1 */
  void *block;            /* clocks, scratch and timelines in one allocation */
  size_t block_size;
  uint64_t *clocks;       /* width * width */
  uint64_t *scratch;      /* width: the check clock of a reclamation */
  race_timeline_t *timelines;
  uint64_t host_version;  /* bumped whenever the host's clock changes */

  race_event_slot_t *events;
  uint64_t *event_clocks; /* event_capacity * width */
  uint32_t event_capacity;
  uint32_t event_free;    /* free list head */
  uint32_t event_used;    /* slots ever handed out since create / reset */

  race_bucket_t *buckets;
  uint32_t bucket_capacity; /* 0 or a power of two */
  race_record_t *records;
  uint32_t record_capacity;
  uint32_t record_free;     /* free list head */
  uint32_t record_used;     /* slots ever handed out since create / reset */

  uint32_t flags;
  cubert_race_sink_t sink;
  bool has_seed;
  uint64_t seed;
  cubert_race_counters_t counters;
  bool has_last;
  cubert_race_report_t last;
};

/* ---- small helpers ---------------------------------------------------------- */

static uint64_t *race_row(const cubert_race_checker_t *c, uint32_t timeline) {
  return c->clocks + (size_t)timeline * c->width;
}

static uint64_t *race_event_row(const cubert_race_checker_t *c, uint32_t slot) {
  return c->event_clocks + (size_t)slot * c->width;
}

/* API stream value -> timeline; false when out of range. */
static bool race_timeline_of(const cubert_race_checker_t *c, uint32_t stream, uint32_t *out) {
  if (stream == CUBERT_RACE_HOST) {
    *out = RACE_HOST_TIMELINE;
    return true;
  }
  if (stream >= c->max_streams) return false;
  *out = stream + 1u;
  return true;
}

/* A stream slot (never the host) -> timeline; false when out of range. */
static bool race_stream_timeline(const cubert_race_checker_t *c, uint32_t stream, uint32_t *out) {
  if (stream == CUBERT_RACE_HOST) return false;
  return race_timeline_of(c, stream, out);
}

static uint32_t race_stream_of(uint32_t timeline) {
  return timeline == RACE_HOST_TIMELINE ? CUBERT_RACE_HOST : timeline - 1u;
}

static void race_join(uint64_t *dst, const uint64_t *src, uint32_t width) {
  uint32_t i;
  for (i = 0; i < width; i++) {
    if (src[i] > dst[i]) dst[i] = src[i];
  }
}

/* A stream's clock takes in the host's: its next op is enqueued by the host
 * after everything the host did or observed. Cheap when the host's clock did
 * not change since the last time. */
static void race_inherit_host(cubert_race_checker_t *c, uint32_t timeline) {
  race_timeline_t *t = &c->timelines[timeline];
  if (timeline == RACE_HOST_TIMELINE || t->host_seen == c->host_version) return;
  race_join(race_row(c, timeline), race_row(c, RACE_HOST_TIMELINE), c->width);
  t->host_seen = c->host_version;
}

/* Join src into timeline's row; a join closes its open op. */
static void race_join_into(cubert_race_checker_t *c, uint32_t timeline, const uint64_t *src) {
  race_join(race_row(c, timeline), src, c->width);
  c->timelines[timeline].open = 0;
  if (timeline == RACE_HOST_TIMELINE) c->host_version++;
  c->counters.joins++;
}

static uint64_t race_mix(uint64_t key) {
  key ^= key >> 33;
  key *= 0xFF51AFD7ED558CCDull;
  key ^= key >> 33;
  key *= 0xC4CEB9FE1A85EC53ull;
  key ^= key >> 33;
  return key;
}

/* ---- create / destroy / reset ------------------------------------------------- */

void cubert_race_options_initialize(cubert_race_options_t *options) {
  if (!options) return;
  cubert_memset(options, 0, sizeof(*options));
  options->max_streams = CUBERT_RACE_DEFAULT_MAX_STREAMS;
}

cubert_status_t cubert_race_checker_create(cubert_allocator_t allocator,
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
    cubert_race_options_initialize(&defaults);
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
  /* unreachable: overflow (width <= CUBERT_RACE_MAX_STREAMS_LIMIT + 1 = 1025: about 8 MiB) */
  if (cubert_size_mul_add(width, width, width, &cells) != CUBERT_STATUS_OK ||
      cubert_size_mul(cells, sizeof(uint64_t), &clock_bytes) != CUBERT_STATUS_OK ||
      cubert_size_mul(width, sizeof(race_timeline_t), &timeline_bytes) != CUBERT_STATUS_OK ||
      cubert_size_add(clock_bytes, timeline_bytes, &block_size) != CUBERT_STATUS_OK) {
    return cubert_error_set(out_error, CUBERT_ERROR_OVERFLOW, NULL, 0,
                            "race checker: clock matrix size overflows");
  }
  status = cubert_allocator_malloc(allocator, sizeof(*c), RACE_ALIGN, &mem);
  if (status != CUBERT_STATUS_OK) {
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "race checker: allocating the checker failed");
  }
  c = (cubert_race_checker_t *)mem;
  status = cubert_allocator_malloc(allocator, block_size, RACE_ALIGN, &block);
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

void cubert_race_checker_destroy(cubert_race_checker_t *checker) {
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

void cubert_race_checker_reset(cubert_race_checker_t *checker) {
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

uint32_t cubert_race_checker_max_streams(const cubert_race_checker_t *checker) {
  return checker ? checker->max_streams : 0;
}

cubert_status_t cubert_race_set_sink(cubert_race_checker_t *checker,
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

void cubert_race_set_seed(cubert_race_checker_t *checker, uint64_t seed) {
  if (!checker) return;
  checker->has_seed = true;
  checker->seed = seed;
}

void cubert_race_clear_seed(cubert_race_checker_t *checker) {
  if (!checker) return;
  checker->has_seed = false;
  checker->seed = 0;
}

/* ---- events ----------------------------------------------------------------- */

static race_event_slot_t *race_event_lookup(const cubert_race_checker_t *c,
                                            cubert_race_event_t event) {
  race_event_slot_t *slot;
  if (event.index == 0 || event.index > c->event_used) return NULL;
  slot = &c->events[event.index - 1u];
  if ((slot->generation & 1u) == 0 || slot->generation != event.generation) return NULL;
  return slot;
}

/* Double the event pool: new blocks, copy, free the old ones. */
static cubert_status_t race_events_grow(cubert_race_checker_t *c) {
  uint32_t capacity;
  size_t slot_bytes, clock_bytes, old_slot_bytes, old_clock_bytes;
  void *slots = NULL, *clocks = NULL;
  /* unreachable: in tests (2^30 live events take over 32 GiB of slots and clocks) */
  if (c->event_capacity >= RACE_MAX_CAPACITY) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  capacity = c->event_capacity ? c->event_capacity * 2u : 8u;
  /* unreachable: overflow (capacity < 2^31 slots; it is the allocation that fails first) */
  if (cubert_size_mul(capacity, sizeof(race_event_slot_t), &slot_bytes) != CUBERT_STATUS_OK ||
      cubert_size_mul((size_t)capacity * sizeof(uint64_t), c->width, &clock_bytes) !=
          CUBERT_STATUS_OK) {
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  if (cubert_allocator_malloc(c->allocator, slot_bytes, RACE_ALIGN, &slots) != CUBERT_STATUS_OK) {
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  if (cubert_allocator_malloc(c->allocator, clock_bytes, RACE_ALIGN, &clocks) !=
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

cubert_status_t cubert_race_event_record(cubert_race_checker_t *checker, uint32_t stream,
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

cubert_status_t cubert_race_event_release(cubert_race_checker_t *checker,
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

cubert_status_t cubert_race_op_begin(cubert_race_checker_t *checker, uint32_t stream,
                                     const char *name, uint64_t *out_op_index) {
  uint32_t timeline;
  uint64_t *row;
  if (!checker || !out_op_index || !race_timeline_of(checker, stream, &timeline)) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  row = race_row(checker, timeline);
  /* unreachable: in tests (2^64 - 1 ops on one timeline) */
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

cubert_status_t cubert_race_stream_wait_event(cubert_race_checker_t *checker, uint32_t stream,
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

cubert_status_t cubert_race_stream_wait_stream(cubert_race_checker_t *checker, uint32_t stream,
                                               uint32_t origin) {
  uint32_t timeline, origin_timeline;
  if (!checker || !race_stream_timeline(checker, stream, &timeline) ||
      !race_stream_timeline(checker, origin, &origin_timeline)) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  race_join_into(checker, timeline, race_row(checker, origin_timeline));
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_race_host_wait_event(cubert_race_checker_t *checker,
                                            cubert_race_event_t event) {
  race_event_slot_t *slot;
  if (!checker) return CUBERT_STATUS_INVALID_ARGUMENT;
  slot = race_event_lookup(checker, event);
  if (!slot) return CUBERT_STATUS_INVALID_HANDLE;
  race_join_into(checker, RACE_HOST_TIMELINE, race_event_row(checker, event.index - 1u));
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_race_host_sync_stream(cubert_race_checker_t *checker, uint32_t stream) {
  uint32_t timeline;
  if (!checker || !race_stream_timeline(checker, stream, &timeline)) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  race_join_into(checker, RACE_HOST_TIMELINE, race_row(checker, timeline));
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_race_host_sync_all(cubert_race_checker_t *checker) {
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

/* ---- shadow table --------------------------------------------------------------- */

/* The bucket holding key, or NULL. */
static race_bucket_t *race_bucket_find(const cubert_race_checker_t *c, uint64_t key) {
  uint32_t mask, i;
  if (c->bucket_capacity == 0) return NULL;
  mask = c->bucket_capacity - 1u;
  for (i = (uint32_t)race_mix(key) & mask;; i = (i + 1u) & mask) {
    if (c->buckets[i].key == key) return &c->buckets[i];
    if (c->buckets[i].key == 0) return NULL;
  }
}

/* Insert key (absent; the table has room). */
static race_bucket_t *race_bucket_insert(race_bucket_t *buckets, uint32_t capacity, uint64_t key) {
  uint32_t mask = capacity - 1u, i;
  for (i = (uint32_t)race_mix(key) & mask; buckets[i].key != 0; i = (i + 1u) & mask) {
  }
  buckets[i].key = key;
  buckets[i].head = RACE_NIL;
  return &buckets[i];
}

/* Make room for one more buffer (load factor <= 1/2). */
static cubert_status_t race_buckets_reserve(cubert_race_checker_t *c) {
  uint32_t capacity, i;
  size_t bytes;
  void *fresh = NULL;
  race_bucket_t *buckets;
  if ((c->counters.buffers + 1u) * 2u <= c->bucket_capacity) return CUBERT_STATUS_OK;
  /* unreachable: in tests (2^29 tracked buffers take over 16 GiB) */
  if (c->bucket_capacity >= RACE_MAX_CAPACITY) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  capacity = c->bucket_capacity ? c->bucket_capacity * 2u : 16u;
  /* unreachable: overflow (capacity < 2^31 buckets; it is the allocation that fails first) */
  if (cubert_size_mul(capacity, sizeof(race_bucket_t), &bytes) != CUBERT_STATUS_OK ||
      cubert_allocator_malloc(c->allocator, bytes, RACE_ALIGN, &fresh) != CUBERT_STATUS_OK) {
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  buckets = (race_bucket_t *)fresh;
  for (i = 0; i < c->bucket_capacity; i++) {
    if (c->buckets[i].key != 0) *race_bucket_insert(buckets, capacity, c->buckets[i].key) =
        c->buckets[i];
  }
  cubert_allocator_free(c->allocator, c->buckets,
                        (size_t)c->bucket_capacity * sizeof(race_bucket_t), RACE_ALIGN);
  c->buckets = buckets;
  c->bucket_capacity = capacity;
  return CUBERT_STATUS_OK;
}

/* Remove the bucket at b (backward-shift deletion keeps probe chains whole). */
static void race_bucket_remove(cubert_race_checker_t *c, race_bucket_t *b) {
  uint32_t mask = c->bucket_capacity - 1u;
  uint32_t i = (uint32_t)(b - c->buckets), j = i, home;
  for (;;) {
    j = (j + 1u) & mask;
    if (c->buckets[j].key == 0) break;
    home = (uint32_t)race_mix(c->buckets[j].key) & mask;
    /* Move j into the hole i unless its home lies cyclically in (i, j]. */
    if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
      c->buckets[i] = c->buckets[j];
      i = j;
    }
  }
  c->buckets[i].key = 0;
  c->buckets[i].head = RACE_NIL;
  c->counters.buffers--;
}

/* Make sure one record can be taken without allocating. */
static cubert_status_t race_records_reserve(cubert_race_checker_t *c) {
  uint32_t capacity;
  size_t bytes, old_bytes;
  void *fresh = NULL;
  if (c->record_free != RACE_NIL || c->record_used < c->record_capacity) return CUBERT_STATUS_OK;
  /* unreachable: in tests (2^30 access records take over 48 GiB) */
  if (c->record_capacity >= RACE_MAX_CAPACITY) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  capacity = c->record_capacity ? c->record_capacity * 2u : 32u;
  /* unreachable: overflow (capacity < 2^31 records; it is the allocation that fails first) */
  if (cubert_size_mul(capacity, sizeof(race_record_t), &bytes) != CUBERT_STATUS_OK ||
      cubert_allocator_malloc(c->allocator, bytes, RACE_ALIGN, &fresh) != CUBERT_STATUS_OK) {
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  old_bytes = (size_t)c->record_capacity * sizeof(race_record_t);
  if (c->records) {
    cubert_memcpy(fresh, c->records, old_bytes);
    cubert_allocator_free(c->allocator, c->records, old_bytes, RACE_ALIGN);
  }
  c->records = (race_record_t *)fresh;
  c->record_capacity = capacity;
  return CUBERT_STATUS_OK;
}

static uint32_t race_record_take(cubert_race_checker_t *c) {
  uint32_t index;
  if (c->record_free != RACE_NIL) {
    index = c->record_free;
    c->record_free = c->records[index].next;
  } else {
    index = c->record_used++;
  }
  c->counters.records++;
  return index;
}

static void race_record_put(cubert_race_checker_t *c, uint32_t index) {
  c->records[index].next = c->record_free;
  c->records[index].name = NULL;
  c->record_free = index;
  c->counters.records--;
}

/* Drop every record of b and the bucket itself. */
static void race_bucket_drop(cubert_race_checker_t *c, race_bucket_t *b) {
  uint32_t r = b->head, next;
  while (r != RACE_NIL) {
    next = c->records[r].next;
    race_record_put(c, r);
    r = next;
  }
  race_bucket_remove(c, b);
}

/* ---- checking ---------------------------------------------------------------- */

static bool race_overlaps(const race_record_t *r, uint64_t start, uint64_t end) {
  return r->start < end && start < r->end;
}

/* The next record to report: overlapping [start, end), conflicting with the
 * current mode (a READ only with writes), not ordered before `clock`. Among
 * them: the lowest timeline, then the highest op index, then a write. */
static uint32_t race_find_conflict(const cubert_race_checker_t *c, const race_bucket_t *b,
                                   const uint64_t *clock, uint32_t mode, uint64_t start,
                                   uint64_t end) {
  uint32_t best = RACE_NIL, r;
  for (r = b->head; r != RACE_NIL; r = c->records[r].next) {
    const race_record_t *rec = &c->records[r];
    const race_record_t *cur;
    if (!race_overlaps(rec, start, end)) continue;
    if (mode == CUBERT_RACE_READ && rec->mode == CUBERT_RACE_READ) continue;
    if (rec->index <= clock[rec->timeline]) continue;
    if (best == RACE_NIL) {
      best = r;
      continue;
    }
    cur = &c->records[best];
    if (rec->timeline < cur->timeline ||
        (rec->timeline == cur->timeline &&
         /* unreachable: rec->index > cur->index (a bucket lists one timeline's records newest first) */
         (rec->index > cur->index || (rec->index == cur->index && rec->mode > cur->mode)))) {
      best = r;
    }
  }
  return best;
}

static uint32_t race_kind_of(uint32_t current, uint32_t previous) {
  if (current == CUBERT_RACE_RECLAIM) return CUBERT_RACE_KIND_RECLAIM;
  if (current == CUBERT_RACE_READ) return CUBERT_RACE_KIND_READ_AFTER_WRITE;
  return previous == CUBERT_RACE_READ ? CUBERT_RACE_KIND_WRITE_AFTER_READ
                                      : CUBERT_RACE_KIND_WRITE_AFTER_WRITE;
}

static void race_report(cubert_race_checker_t *c, uint64_t buffer, const cubert_race_op_t *current,
                        const race_record_t *previous) {
  cubert_race_report_t report;
  cubert_memset(&report, 0, sizeof(report));
  report.buffer = buffer;
  report.kind = race_kind_of(current->access, previous->mode);
  report.has_seed = c->has_seed ? 1u : 0u;
  report.seed = c->has_seed ? c->seed : 0;
  report.current = *current;
  report.previous.stream = race_stream_of(previous->timeline);
  report.previous.access = previous->mode;
  report.previous.index = previous->index;
  report.previous.start = previous->start;
  report.previous.end = previous->end;
  report.previous.name = previous->name;
  c->counters.reports++;
  report.sequence = c->counters.reports;
  switch (report.kind) {
    case CUBERT_RACE_KIND_READ_AFTER_WRITE: c->counters.read_after_write++; break;
    case CUBERT_RACE_KIND_WRITE_AFTER_READ: c->counters.write_after_read++; break;
    case CUBERT_RACE_KIND_WRITE_AFTER_WRITE: c->counters.write_after_write++; break;
    default: c->counters.reclaim_conflicts++; break;
  }
  c->last = report;
  c->has_last = true;
  if (c->sink.vtable) c->sink.vtable->report(c->sink.self, &report);
}

/* Report every conflict of `current` against b's records, one per earlier
 * timeline in conflict. After each report the conflicting timeline u counts
 * as synchronized in `clock`: with join_row, clock joins u's whole current
 * clock (the repair: as if the current timeline had waited for u just now,
 * which also covers what u itself had waited for); without it only u's
 * component moves (every other timeline in conflict is still reported). */
static uint32_t race_check(cubert_race_checker_t *c, uint64_t buffer, const race_bucket_t *b,
                           uint64_t *clock, bool join_row, const cubert_race_op_t *current) {
  uint32_t mode = current->access, r, reports = 0;
  while ((r = race_find_conflict(c, b, clock, mode, current->start, current->end)) != RACE_NIL) {
    uint32_t u = c->records[r].timeline;
    race_report(c, buffer, current, &c->records[r]);
    reports++;
    if (join_row) {
      race_join(clock, race_row(c, u), c->width);
    } else {
      clock[u] = race_row(c, u)[u];
    }
  }
  return reports;
}

cubert_status_t cubert_race_access(cubert_race_checker_t *checker, uint64_t buffer,
                                   uint32_t stream, uint64_t op_index, cubert_race_access_t mode,
                                   uint64_t start, uint64_t end) {
  uint32_t timeline, r, *link, index;
  uint64_t *clock;
  race_bucket_t *b;
  race_record_t *rec;
  cubert_race_op_t current;
  if (!checker || buffer == 0 || !race_timeline_of(checker, stream, &timeline) ||
      (mode != CUBERT_RACE_READ && mode != CUBERT_RACE_WRITE) || start > end) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  clock = race_row(checker, timeline);
  if (!checker->timelines[timeline].open || op_index != clock[timeline]) {
    return CUBERT_STATUS_FAILED_PRECONDITION;
  }
  if (start == end) {
    checker->counters.accesses++;
    return CUBERT_STATUS_OK;
  }
  /* Reserve first: past this point nothing fails. */
  b = race_bucket_find(checker, buffer);
  if (!b) CUBERT_RETURN_IF_ERROR(race_buckets_reserve(checker));
  CUBERT_RETURN_IF_ERROR(race_records_reserve(checker));
  if (!b) {
    b = race_bucket_insert(checker->buckets, checker->bucket_capacity, buffer);
    checker->counters.buffers++;
  }
  checker->counters.accesses++;

  current.stream = stream;
  current.access = (uint32_t)mode;
  current.index = op_index;
  current.start = start;
  current.end = end;
  current.name = checker->timelines[timeline].name;
  if (checker->flags & CUBERT_RACE_FLAG_REPORT_ALL) {
    /* Check a copy: the timeline's clock stays as the program made it. */
    cubert_memcpy(checker->scratch, clock, (size_t)checker->width * sizeof(uint64_t));
    (void)race_check(checker, buffer, b, checker->scratch, false, &current);
  } else if (race_check(checker, buffer, b, clock, true, &current) != 0 &&
             timeline == RACE_HOST_TIMELINE) {
    checker->host_version++; /* the host's clock was repaired: streams inherit it */
  }

  /* Drop the records this access supersedes: covered by its range, ordered
   * before it, and no stronger than it (a read never supersedes a write). */
  link = &b->head;
  while ((r = *link) != RACE_NIL) {
    rec = &checker->records[r];
    if (rec->start >= start && rec->end <= end && rec->index <= clock[rec->timeline] &&
        (mode == CUBERT_RACE_WRITE || rec->mode == CUBERT_RACE_READ)) {
      *link = rec->next;
      race_record_put(checker, r);
    } else {
      link = &rec->next;
    }
  }
  index = race_record_take(checker);
  rec = &checker->records[index];
  rec->start = start;
  rec->end = end;
  rec->index = op_index;
  rec->name = current.name;
  rec->timeline = timeline;
  rec->mode = (uint32_t)mode;
  rec->next = b->head;
  b->head = index;
  return CUBERT_STATUS_OK;
}

/* ---- reclamation ---------------------------------------------------------------- */

/* Check b against `clock` (scratch, may be repaired) as a reclamation by
 * current, then drop the shadow. */
static void race_reclaim_bucket(cubert_race_checker_t *c, uint64_t buffer, race_bucket_t *b,
                                const cubert_race_op_t *current) {
  (void)race_check(c, buffer, b, c->scratch, false, current);
  race_bucket_drop(c, b);
}

cubert_status_t cubert_race_reclaim(cubert_race_checker_t *checker, uint64_t buffer,
                                    uint32_t stream) {
  uint32_t timeline;
  race_bucket_t *b;
  cubert_race_op_t current;
  if (!checker || buffer == 0 || !race_timeline_of(checker, stream, &timeline)) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  checker->counters.reclaims++;
  b = race_bucket_find(checker, buffer);
  if (!b) return CUBERT_STATUS_OK;
  /* The reuse point: the reclaimer's clock; a stream's next op also
   * inherits the host's. */
  cubert_memcpy(checker->scratch, race_row(checker, timeline),
                (size_t)checker->width * sizeof(uint64_t));
  if (timeline != RACE_HOST_TIMELINE) {
    race_join(checker->scratch, race_row(checker, RACE_HOST_TIMELINE), checker->width);
  }
  cubert_memset(&current, 0, sizeof(current));
  current.stream = stream;
  current.access = CUBERT_RACE_RECLAIM;
  current.index = race_row(checker, timeline)[timeline];
  current.end = CUBERT_RACE_WHOLE_END;
  race_reclaim_bucket(checker, buffer, b, &current);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_race_reclaim_at_event(cubert_race_checker_t *checker, uint64_t buffer,
                                             uint32_t stream, cubert_race_event_t event) {
  race_event_slot_t *slot;
  race_bucket_t *b;
  cubert_race_op_t current;
  uint32_t timeline = 0;
  bool known = stream != CUBERT_RACE_NO_STREAM;
  if (!checker || buffer == 0 || (known && !race_timeline_of(checker, stream, &timeline))) {
    return CUBERT_STATUS_INVALID_ARGUMENT;
  }
  slot = race_event_lookup(checker, event);
  if (!slot) return CUBERT_STATUS_INVALID_HANDLE;
  checker->counters.reclaims++;
  b = race_bucket_find(checker, buffer);
  if (!b) return CUBERT_STATUS_OK;
  /* The reuse point: after the event, and at the reuser's next op. */
  cubert_memcpy(checker->scratch, race_event_row(checker, event.index - 1u),
                (size_t)checker->width * sizeof(uint64_t));
  cubert_memset(&current, 0, sizeof(current));
  current.access = CUBERT_RACE_RECLAIM;
  current.end = CUBERT_RACE_WHOLE_END;
  if (known) {
    race_join(checker->scratch, race_row(checker, timeline), checker->width);
    race_join(checker->scratch, race_row(checker, RACE_HOST_TIMELINE), checker->width);
    current.stream = stream;
    current.index = race_row(checker, timeline)[timeline];
  } else {
    current.stream = race_stream_of(slot->timeline);
    current.index = slot->index;
  }
  race_reclaim_bucket(checker, buffer, b, &current);
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_race_forget(cubert_race_checker_t *checker, uint64_t buffer) {
  race_bucket_t *b;
  if (!checker || buffer == 0) return CUBERT_STATUS_INVALID_ARGUMENT;
  checker->counters.reclaims++;
  b = race_bucket_find(checker, buffer);
  if (b) race_bucket_drop(checker, b);
  return CUBERT_STATUS_OK;
}

/* ---- results ------------------------------------------------------------------- */

void cubert_race_counters(const cubert_race_checker_t *checker,
                          cubert_race_counters_t *out_counters) {
  if (!out_counters) return;
  if (!checker) {
    cubert_memset(out_counters, 0, sizeof(*out_counters));
    return;
  }
  *out_counters = checker->counters;
}

bool cubert_race_last_report(const cubert_race_checker_t *checker,
                             cubert_race_report_t *out_report) {
  if (!checker || !out_report || !checker->has_last) return false;
  *out_report = checker->last;
  return true;
}

uint64_t cubert_race_clock(const cubert_race_checker_t *checker, uint32_t of, uint32_t stream) {
  uint32_t a, b;
  if (!checker || !race_timeline_of(checker, of, &a) || !race_timeline_of(checker, stream, &b)) {
    return 0;
  }
  return race_row(checker, a)[b];
}

const char *cubert_race_access_name(uint32_t access) {
  switch (access) {
    case CUBERT_RACE_READ: return "read";
    case CUBERT_RACE_WRITE: return "write";
    case CUBERT_RACE_RECLAIM: return "reclaim";
    default: return "?";
  }
}

const char *cubert_race_kind_name(uint32_t kind) {
  switch (kind) {
    case CUBERT_RACE_KIND_READ_AFTER_WRITE: return "read-after-write";
    case CUBERT_RACE_KIND_WRITE_AFTER_READ: return "write-after-read";
    case CUBERT_RACE_KIND_WRITE_AFTER_WRITE: return "write-after-write";
    case CUBERT_RACE_KIND_RECLAIM: return "reclaim-while-in-use";
    default: return "?";
  }
}

static void race_format_timeline(cubert_fmt_t *f, uint32_t stream) {
  if (stream == CUBERT_RACE_HOST) {
    cubert_fmt_append_str(f, "host");
  } else {
    cubert_fmt_append_str(f, "stream ");
    cubert_fmt_append_u64(f, stream);
  }
}

static void race_format_op(cubert_fmt_t *f, const cubert_race_op_t *op) {
  if (op->access == CUBERT_RACE_RECLAIM) {
    cubert_fmt_append_str(f, "reclaim by ");
    race_format_timeline(f, op->stream);
    cubert_fmt_append_str(f, " at op ");
    cubert_fmt_append_u64(f, op->index);
    return;
  }
  race_format_timeline(f, op->stream);
  cubert_fmt_append_str(f, " op ");
  cubert_fmt_append_u64(f, op->index);
  if (op->name) {
    cubert_fmt_append_str(f, " '");
    cubert_fmt_append_str(f, op->name);
    cubert_fmt_append_char(f, '\'');
  }
  cubert_fmt_append_char(f, ' ');
  cubert_fmt_append_str(f, cubert_race_access_name(op->access));
  if (op->start != 0 || op->end != CUBERT_RACE_WHOLE_END) {
    cubert_fmt_append_str(f, " bytes [");
    cubert_fmt_append_u64(f, op->start);
    cubert_fmt_append_str(f, ", ");
    cubert_fmt_append_u64(f, op->end);
    cubert_fmt_append_char(f, ')');
  }
}

size_t cubert_race_report_format(const cubert_race_report_t *report, char *buf, size_t size) {
  cubert_fmt_t f;
  cubert_fmt_init(&f, buf, size);
  if (!report) return 0;
  cubert_fmt_append_str(&f, "race: ");
  cubert_fmt_append_str(&f, cubert_race_kind_name(report->kind));
  cubert_fmt_append_str(&f, " on buffer 0x");
  cubert_fmt_append_hex(&f, report->buffer, 16);
  cubert_fmt_append_str(&f, ": ");
  race_format_op(&f, &report->current);
  cubert_fmt_append_str(&f, " is not ordered after ");
  race_format_op(&f, &report->previous);
  if (report->has_seed) {
    cubert_fmt_append_str(&f, " (seed ");
    cubert_fmt_append_u64(&f, report->seed);
    cubert_fmt_append_char(&f, ')');
  }
  return cubert_fmt_length(&f);
}

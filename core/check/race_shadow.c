/* SPDX-License-Identifier: MIT */
/*
 * core/check/race_shadow.c: the race checker's shadow table (buffer id ->
 * access records, race_internal.h), the access check and reclamation
 * (core/check/race.h, docs/race-checker.md).
 */
#include "check/race_internal.h"
#include "check/race.h"
#include "cubert/driver/arith.h"

#if CUBERT_CONFIG_RACE_CHECKER /* else race_omitted.c (cubert/config.h) */

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
  if (c->bucket_capacity >= RACE_MAX_CAPACITY) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  capacity = c->bucket_capacity ? c->bucket_capacity * 2u : 16u;
  if (cubert_size_mul(capacity, sizeof(race_bucket_t), &bytes) != CUBERT_STATUS_OK ||
      cubert_allocator_malloc(c->allocator, bytes, RACE_ALIGN, &fresh, NULL) != CUBERT_STATUS_OK) {
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
  if (c->record_capacity >= RACE_MAX_CAPACITY) return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  capacity = c->record_capacity ? c->record_capacity * 2u : 32u;
  if (cubert_size_mul(capacity, sizeof(race_record_t), &bytes) != CUBERT_STATUS_OK ||
      cubert_allocator_malloc(c->allocator, bytes, RACE_ALIGN, &fresh, NULL) != CUBERT_STATUS_OK) {
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

cubert_status_t cubert__race_access(cubert_race_checker_t *checker, uint64_t buffer,
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

cubert_status_t cubert__race_reclaim(cubert_race_checker_t *checker, uint64_t buffer,
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

cubert_status_t cubert__race_reclaim_at_event(cubert_race_checker_t *checker, uint64_t buffer,
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

cubert_status_t cubert__race_forget(cubert_race_checker_t *checker, uint64_t buffer) {
  race_bucket_t *b;
  if (!checker || buffer == 0) return CUBERT_STATUS_INVALID_ARGUMENT;
  checker->counters.reclaims++;
  b = race_bucket_find(checker, buffer);
  if (b) race_bucket_drop(checker, b);
  return CUBERT_STATUS_OK;
}

#endif /* CUBERT_CONFIG_RACE_CHECKER */

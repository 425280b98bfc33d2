/* SPDX-License-Identifier: MIT */
/*
 * core/check/race_internal.h: the race checker's state, shared by race.c
 * (create, vector clocks, events, joins, results), race_shadow.c (the shadow
 * table, access checks, reclamation) and race_format.c (report text). Not
 * installed. See race.c for the representation.
 */
#ifndef CUBERT_CORE_RACE_INTERNAL_H
#define CUBERT_CORE_RACE_INTERNAL_H

#include "base/internal.h"
#include "cubert/race.h"
#include "check/race.h"

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

/* ---- small helpers (every part) ------------------------------------------- */

static inline uint64_t *race_row(const cubert_race_checker_t *c, uint32_t timeline) {
  return c->clocks + (size_t)timeline * c->width;
}

static inline uint64_t *race_event_row(const cubert_race_checker_t *c, uint32_t slot) {
  return c->event_clocks + (size_t)slot * c->width;
}

/* API stream value -> timeline; false when out of range. */
static inline bool race_timeline_of(const cubert_race_checker_t *c, uint32_t stream, uint32_t *out) {
  if (stream == CUBERT_RACE_HOST) {
    *out = RACE_HOST_TIMELINE;
    return true;
  }
  if (stream >= c->max_streams) return false;
  *out = stream + 1u;
  return true;
}

/* A stream slot (never the host) -> timeline; false when out of range. */
static inline bool race_stream_timeline(const cubert_race_checker_t *c, uint32_t stream, uint32_t *out) {
  if (stream == CUBERT_RACE_HOST) return false;
  return race_timeline_of(c, stream, out);
}

static inline uint32_t race_stream_of(uint32_t timeline) {
  return timeline == RACE_HOST_TIMELINE ? CUBERT_RACE_HOST : timeline - 1u;
}

static inline void race_join(uint64_t *dst, const uint64_t *src, uint32_t width) {
  uint32_t i;
  for (i = 0; i < width; i++) {
    if (src[i] > dst[i]) dst[i] = src[i];
  }
}

/* A stream's clock takes in the host's: its next op is enqueued by the host
 * after everything the host did or observed. Cheap when the host's clock did
 * not change since the last time. */
static inline void race_inherit_host(cubert_race_checker_t *c, uint32_t timeline) {
  race_timeline_t *t = &c->timelines[timeline];
  if (timeline == RACE_HOST_TIMELINE || t->host_seen == c->host_version) return;
  race_join(race_row(c, timeline), race_row(c, RACE_HOST_TIMELINE), c->width);
  t->host_seen = c->host_version;
}

/* Join src into timeline's row; a join closes its open op. */
static inline void race_join_into(cubert_race_checker_t *c, uint32_t timeline,
                                  const uint64_t *src) {
  race_join(race_row(c, timeline), src, c->width);
  c->timelines[timeline].open = 0;
  if (timeline == RACE_HOST_TIMELINE) c->host_version++;
  c->counters.joins++;
}

static inline uint64_t race_mix(uint64_t key) {
  key ^= key >> 33;
  key *= 0xFF51AFD7ED558CCDull;
  key ^= key >> 33;
  key *= 0xC4CEB9FE1A85EC53ull;
  key ^= key >> 33;
  return key;
}

/* The slot of a live event token, or NULL. */
static inline race_event_slot_t *race_event_lookup(const cubert_race_checker_t *c,
                                                   cubert_race_event_t event) {
  race_event_slot_t *slot;
  if (event.index == 0 || event.index > c->event_used) return NULL;
  slot = &c->events[event.index - 1u];
  if ((slot->generation & 1u) == 0 || slot->generation != event.generation) return NULL;
  return slot;
}

#endif /* CUBERT_CORE_RACE_INTERNAL_H */

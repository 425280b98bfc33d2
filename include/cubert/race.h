/* SPDX-License-Identifier: MIT */
/*
 * cubert/race.h: what the race checker reports (docs/race-checker.md): the
 * report records, the sink a device delivers them to, the counters, and
 * their text forms. A device runs the checker when asked
 * (cubert_cpu_options_t.race_check in cubert/cpu.h,
 * cubert_inline_options_t.race_check in cubert/inline.h) and gives its
 * counters and last report (cubert_cpu_race_counters, cubert_cpu_race_last_report;
 * any server device: cubert_client_race_counters in cubert/driver/server.h).
 *
 * The checker is predictive: it checks the synchronization the program
 * expresses (at enqueue time) with vector clocks, so a missing
 * synchronization is reported even when the run happened to execute in a
 * safe order. One report per missing synchronization, unless the device's
 * checker runs with CUBERT_RACE_FLAG_REPORT_ALL. The checker object itself,
 * driven by servers, is core/check/race.h.
 *
 * Compiled out (CUBERT_CONFIG_RACE_CHECKER 0, cubert/config.h): the names and
 * cubert_race_report_format write "(race checker compiled out)".
 * Everything here is pure and thread-safe.
 */
#ifndef CUBERT_RACE_H
#define CUBERT_RACE_H

#include "cubert/base.h"

CUBERT_EXTERN_C_BEGIN

/* The host timeline, wherever a `stream` argument accepts it. */
#define CUBERT_RACE_HOST 0xFFFFFFFFu
/* end of a whole-buffer range (start 0). */
#define CUBERT_RACE_WHOLE_END UINT64_MAX

/* How an access touches the buffer. A kernel that reads and writes one
 * binding reports WRITE (a write is checked against reads and writes).
 * RECLAIM appears only in reports (the reuse point of cubert__race_reclaim*). */
typedef enum cubert_race_access_e {
  CUBERT_RACE_READ = 1,
  CUBERT_RACE_WRITE = 2,
  CUBERT_RACE_RECLAIM = 3,
  CUBERT_RACE_ACCESS_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_race_access_t;

/* The kind of a report, from the two accesses' modes. */
typedef enum cubert_race_kind_e {
  CUBERT_RACE_KIND_READ_AFTER_WRITE = 1,  /* current READ, previous WRITE */
  CUBERT_RACE_KIND_WRITE_AFTER_READ = 2,  /* current WRITE, previous READ */
  CUBERT_RACE_KIND_WRITE_AFTER_WRITE = 3, /* current WRITE, previous WRITE */
  CUBERT_RACE_KIND_RECLAIM = 4,           /* current RECLAIM, previous READ or WRITE */
  CUBERT_RACE_KIND_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_race_kind_t;

/* One side of a report. */
typedef struct cubert_race_op_t {
  uint32_t stream;      /* stream slot, or CUBERT_RACE_HOST */
  uint32_t access;      /* cubert_race_access_t */
  uint64_t index;       /* op index on that timeline (1-based, cubert__race_op_begin);
                           for RECLAIM: the reclaimer's op count at the reuse point */
  uint64_t start, end;  /* byte range accessed ([0, CUBERT_RACE_WHOLE_END): whole) */
  const char *name;     /* op / kernel name given to op_begin (borrowed), may be NULL */
} cubert_race_op_t;

typedef struct cubert_race_report_t {
  uint64_t buffer;           /* the buffer id given to access / reclaim */
  uint32_t kind;             /* cubert_race_kind_t */
  uint32_t has_seed;         /* 1 when a seed was set (cubert__race_set_seed) */
  uint64_t seed;             /* the deterministic run's seed, when has_seed */
  uint64_t sequence;         /* 1 for the checker's first report, then 2, ... */
  cubert_race_op_t current;  /* the later access (or the reuse point) */
  cubert_race_op_t previous; /* the earlier access it is not ordered after */
} cubert_race_report_t;

/* Where reports go. report is called once per report with a record valid
 * only during the call (copy it to keep it). */
typedef struct cubert_race_sink_vtable_t {
  void (*report)(void *self, const cubert_race_report_t *report);
} cubert_race_sink_vtable_t;

typedef struct cubert_race_sink_t {
  const cubert_race_sink_vtable_t *vtable; /* NULL: no sink (reports are only counted and kept) */
  void *self;
} cubert_race_sink_t;

typedef struct cubert_race_counters_t {
  uint64_t ops;       /* cubert__race_op_begin calls that succeeded (host and streams) */
  uint64_t accesses;  /* accesses checked */
  uint64_t events;    /* events recorded */
  uint64_t joins;     /* stream waits (event or stream) and host waits / syncs */
  uint64_t reclaims;  /* reclaim / reclaim_at_event / forget calls that succeeded */
  uint64_t reports;   /* all reports */
  uint64_t read_after_write, write_after_read, write_after_write, reclaim_conflicts;
  uint64_t buffers;       /* buffers currently tracked (with at least one record) */
  uint64_t records;       /* access records currently held */
  uint64_t events_live;   /* event tokens recorded and not released */
} cubert_race_counters_t;

/* Render a report as one line into buf[0..size) (snprintf-like: always
 * NUL-terminated when size > 0, truncated to fit) and return the full length
 * of the text. buf may be NULL with size 0 (measure). NULL report: "" (0).
 * Pure; thread-safe. Example:
 *   race: read-after-write on buffer 0x0000000100000001: stream 1 op 2
 *   'consume' read is not ordered after stream 0 op 1 'produce' write (seed 42)
 * (on one line). Ranges other than the whole buffer print as " bytes [a, b)"
 * after the access mode; a reclamation prints as "reclaim by stream 2 at op 5"
 * or "reclaim by host at op 3". */
CUBERT_API size_t cubert_race_report_format(const cubert_race_report_t *report, char *buf,
                                            size_t size);

/* Short names: "read", "write", "reclaim" / "read-after-write",
 * "write-after-read", "write-after-write", "reclaim-while-in-use"; "?" for
 * other values. */
CUBERT_API const char *cubert_race_access_name(uint32_t access);
CUBERT_API const char *cubert_race_kind_name(uint32_t kind);

CUBERT_EXTERN_C_END

#endif /* CUBERT_RACE_H */

/* SPDX-License-Identifier: MIT */
/*
 * cubert/profile.h: profiling.
 *
 *  1. Profiling tokens and durations (cubert_client_profile_start / _end,
 *     cubert_client_profile), and the clock a host gives a device. The
 *     server's token table (CubeCL's TimestampProfiler) is
 *     core/profile/profiler.h.
 *  2. Logger-driven kernel profiling: the profiling level, the per-kernel
 *     summary table printed at each client sync, the per-launch log line and
 *     CubeCL's "Balanced" type-name formatting of kernel names.
 *
 * Everything here is freestanding: host memory comes from the injected
 * allocator (only at create; nothing allocates afterwards) and time from an
 * injected clock. No object here is thread-safe: the device handle
 * serializes every server call, and the client owns its summary, so each
 * object has one user at a time (distinct objects may be used from distinct
 * threads). Nothing blocks. See docs/profiling.md.
 *
 * Compiled out (CUBERT_CONFIG_PROFILING 0, cubert/config.h): summaries
 * cannot be created (UNSUPPORTED with a COMPILED_OUT record), calls
 * on them return UNSUPPORTED or report nothing, the text helpers write
 * "(profiling compiled out)"; the level helpers still describe the levels.
 */
#ifndef CUBERT_PROFILE_H
#define CUBERT_PROFILE_H

#include "cubert/config.h"
#include "cubert/base.h"
#include "cubert/status.h"
#include "cubert/allocator.h"
#include "cubert/error.h"

CUBERT_EXTERN_C_BEGIN

/* ProfilingToken. */
typedef struct cubert_profiling_token_t {
  uint64_t id;
} cubert_profiling_token_t;

/* A completed profile: host nanoseconds between two stream syncs. */
typedef struct cubert_profile_duration_t {
  uint64_t start_ns;
  uint64_t end_ns;
} cubert_profile_duration_t;

/* ---- clock ------------------------------------------------------------------ */

/* The injected host clock: now_ns(self) returns the current instant in
 * nanoseconds from any fixed origin. It must be monotonic (never go back);
 * the profiler calls it on the thread that calls start/stop. */
typedef struct cubert_profile_clock_t {
  void *self;
  uint64_t (*now_ns)(void *self);
} cubert_profile_clock_t;

/* ---- profiling level -------------------------------------------------------- */

/* Values are stable ABI. */
typedef enum cubert_profile_level_e {
  CUBERT_PROFILE_LEVEL_OFF = 0,            /* no kernel profiling */
  CUBERT_PROFILE_LEVEL_EXECUTION_ONLY = 1, /* count launches per kernel, no timing */
  CUBERT_PROFILE_LEVEL_BASIC = 2,          /* profile every launch; summary only */
  CUBERT_PROFILE_LEVEL_MEDIUM = 3,         /* + one log line per launch */
  CUBERT_PROFILE_LEVEL_FULL = 4,           /* + kernel id and cube count in the name */
  CUBERT_PROFILE_LEVEL_FORCE_32BIT_ = 0x7FFFFFFF /* 4 bytes everywhere */
} cubert_profile_level_t;

/* Whether `level` is one of the values above. Pure. */
CUBERT_API bool cubert_profile_level_is_valid(cubert_profile_level_t level);

/* Whether launches are timed at this level (BASIC, MEDIUM, FULL): the client
 * then wraps every launch in a profile. Pure; false for invalid values. */
CUBERT_API bool cubert_profile_level_is_timed(cubert_profile_level_t level);

/* "off", "execution-only", "basic", "medium", "full"; "unknown" otherwise.
 * Never NULL. Pure. */
CUBERT_API const char *cubert_profile_level_name(cubert_profile_level_t level);

/* ---- per-kernel summary ------------------------------------------------------ */

/* Largest max_names cubert_profile_summary_create accepts (the table is
 * sorted with an O(n^2) selection when printed, without scratch memory). */
#define CUBERT_PROFILE_SUMMARY_MAX_NAMES 4096u
/* Largest name_bytes cubert_profile_summary_create accepts (16 MiB). */
#define CUBERT_PROFILE_SUMMARY_MAX_NAME_BYTES ((size_t)1 << 24)
/* Name of the row that collects launches whose name did not fit. */
#define CUBERT_PROFILE_SUMMARY_OTHER_NAME "(other)"

typedef struct cubert_profile_summary_t cubert_profile_summary_t;

/* Create a summary for `level` with room for `max_names` distinct kernel
 * names (1 .. CUBERT_PROFILE_SUMMARY_MAX_NAMES) whose bytes, together, fit in
 * `name_bytes` (1 .. CUBERT_PROFILE_SUMMARY_MAX_NAME_BYTES). Names are copied
 * into that storage, so a caller may pass formatted names from a stack
 * buffer. Everything is allocated here, once; nothing allocates afterwards.
 * Returns OK; INVALID_ARGUMENT for a NULL out_summary, a NULL allocator
 * function, an invalid level, or a size out of range; RESOURCE_EXHAUSTED
 * when the allocator fails. On failure *out_summary is untouched. */
CUBERT_API cubert_status_t cubert_profile_summary_create(cubert_allocator_t allocator,
                                                         cubert_profile_level_t level,
                                                         uint32_t max_names, size_t name_bytes,
                                                         cubert_profile_summary_t **out_summary,
                                                         cubert_error_t *out_error);

/* Free the summary. NULL is a no-op. */
CUBERT_API void cubert_profile_summary_destroy(cubert_profile_summary_t *summary);

/* The level given at create (OFF for NULL). */
CUBERT_API cubert_profile_level_t cubert_profile_summary_level(
    const cubert_profile_summary_t *summary);

/* Register one launch of kernel `name` (CubeCL's register_execution /
 * register_profiled). The key is the first line of `name` (the bytes before
 * the first '\n'), compared by content and copied. At level OFF this does
 * nothing; at EXECUTION_ONLY the count grows and duration_ns is ignored; at
 * BASIC, MEDIUM and FULL the count grows by 1 and the total duration by
 * duration_ns (saturating at UINT64_MAX; counts saturate too).
 * When the name is new and the table is full (max_names names, or not
 * enough name_bytes left for it), the launch is counted in the
 * CUBERT_PROFILE_SUMMARY_OTHER_NAME row instead: it is never lost, and
 * recording never fails for lack of room.
 * Borrows `name` for the call. Returns OK; INVALID_ARGUMENT (kind
 * INVALID_ARGUMENT, reason in *out_error, may be NULL) for a NULL summary or
 * name (nothing changes). Not thread-safe; O(distinct names). */
CUBERT_API cubert_status_t cubert_profile_summary_record(cubert_profile_summary_t *summary,
                                                         const char *name, uint64_t duration_ns,
                                                         cubert_error_t *out_error);

/* Totals of one kernel name (first-line rule applies to `name`). Either out
 * pointer may be NULL. Returns OK; NOT_FOUND (kind IO_NOT_FOUND) when the
 * name has no row (also for a name counted in the other row);
 * INVALID_ARGUMENT for a NULL summary or name. Outputs are untouched on
 * failure and *out_error (may be NULL) holds the record. Reads only. */
CUBERT_API cubert_status_t cubert_profile_summary_lookup(const cubert_profile_summary_t *summary,
                                                         const char *name,
                                                         uint64_t *out_duration_ns,
                                                         uint64_t *out_count,
                                                         cubert_error_t *out_error);

/* Totals of the other row (0, 0 when it is empty). Either out may be NULL.
 * A NULL summary gives 0, 0. */
CUBERT_API void cubert_profile_summary_other(const cubert_profile_summary_t *summary,
                                             uint64_t *out_duration_ns, uint64_t *out_count);

/* Number of distinct names with a row (the other row not included). */
CUBERT_API uint32_t cubert_profile_summary_name_count(const cubert_profile_summary_t *summary);

/* True when nothing was recorded since create / the last reset (also NULL). */
CUBERT_API bool cubert_profile_summary_is_empty(const cubert_profile_summary_t *summary);

/* Forget every row (the level stays). NULL is a no-op. */
CUBERT_API void cubert_profile_summary_reset(cubert_profile_summary_t *summary);

/* Write the summary table into buf[0..size) (UTF-8; the rules use U+23BA,
 * U+23BC, U+23AF as CubeCL's do). An empty summary writes "" (CubeCL logs
 * nothing then). At BASIC / MEDIUM / FULL (CubeCL's layout):
 *   |⎺⎺⎺ ... ⎺|<space>
 *   | Name | Duration | Num Computed | Ratio |
 *   |⎼⎼⎼ ... ⎼|<space>
 *   | <name> | <duration> | <count> | <ratio> % |     one row per name
 *   |⎼⎼⎼ ... ⎼|<space>
 *   | Total | <sum> | <sum of counts> | 100 % |
 *   |⎯⎯⎯ ... ⎯|<space>
 * each line ending in '\n', cells left-aligned and padded with spaces to the
 * column width (the widest cell of the column, headers and the Total row
 * included, counted in characters), a rule being 11 + the four widths
 * characters long. Rows are sorted by total duration, descending (ties: the
 * name registered first comes first); the other row, when not empty, comes
 * after them. Durations print as Rust's Debug of Duration
 * (cubert_profile_format_duration); ratio = 100 * (duration in whole µs) /
 * (total in whole µs), rounded down, 0 when the total is under 1 µs.
 * At EXECUTION_ONLY the Duration column is left out, rows are sorted by
 * count and ratio = 100 * count / total count (rule: 8 + three widths).
 * At OFF this writes "".
 * Always NUL-terminates when size > 0 and truncates safely (possibly inside a
 * UTF-8 sequence); buf may be NULL when size is 0. Returns the length of the
 * full text (snprintf-like: >= size means truncated). Reads only; the
 * summary is not reset (see cubert_profile_summary_flush). */
CUBERT_API size_t cubert_profile_summary_format(const cubert_profile_summary_t *summary,
                                                char *buf, size_t size);

/* CubeCL's profile_summary at each client sync: format, then reset.
 * Returns what cubert_profile_summary_format returns. The summary is reset
 * even when the text was truncated (size it first with
 * cubert_profile_summary_format(summary, NULL, 0) + 1 to avoid that).
 * NULL summary: writes "" and returns 0. Not thread-safe. */
CUBERT_API size_t cubert_profile_summary_flush(cubert_profile_summary_t *summary, char *buf,
                                               size_t size);

/* ---- text helpers (pure, thread-safe, no allocation) --------------------------
 * Each writes into buf[0..size), always NUL-terminates when size > 0,
 * truncates safely, accepts buf == NULL with size 0, and returns the length
 * of the full text (snprintf-like). */

/* Rust's `{:?}` of a core::time::Duration of `ns` nanoseconds: "0ns",
 * "999ns", "1.5µs", "1ms", "1.234567ms", "2.000000001s" (the unit is the
 * largest of s / ms / µs / ns that is <= the value; the fraction prints
 * every digit down to the last non-zero one). "µ" is U+00B5 (2 bytes). */
CUBERT_API size_t cubert_profile_format_duration(uint64_t ns, char *buf, size_t size);

/* CubeCL's TypeNameFormatLevel::Balanced (its test_format_name is ported):
 *   a::b::Name<T1, c::T2, ...>  ->  "Name | T1 | T2 | ..."
 * The part before the first '<' keeps only its last "::" segment (segments
 * found left to right), is trimmed of ASCII whitespace and loses every '>'.
 * With a '<', the rest of the name is split on ", " and each piece,
 * formatted the same way, is appended after " | ". Bytes are copied as is
 * (UTF-8 safe). Not recursive (constant stack). A NULL name formats as "". */
CUBERT_API size_t cubert_profile_format_type_name(const char *name, char *buf, size_t size);

/* The per-launch log line of a level: MEDIUM and FULL write
 * "| <duration padded to 10 characters> | <name>" (CubeCL's
 * `| {duration:<10?} | {name}`), EXECUTION_ONLY writes "Executing <name>",
 * BASIC and OFF (and invalid levels) write "" (nothing is logged per launch).
 * `name` is used whole (no first-line rule); NULL formats as "". */
CUBERT_API size_t cubert_profile_format_launch(cubert_profile_level_t level, const char *name,
                                               uint64_t duration_ns, char *buf, size_t size);

CUBERT_EXTERN_C_END

#endif /* CUBERT_PROFILE_H */

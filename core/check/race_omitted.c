/* SPDX-License-Identifier: MIT */
/*
 * core/check/race_omitted.c: the race checker's API when the checker is
 * compiled out (CUBERT_CONFIG_RACE_CHECKER 0, cubert/config.h). No checker
 * can be created: create fails with UNSUPPORTED and a COMPILED_OUT record;
 * every call on a checker returns UNSUPPORTED (the hooks of core/check/race.h
 * still do nothing for the NULL checker a server keeps), queries report
 * nothing, and the text functions say the checker was compiled out.
 */
#include "base/internal.h"
#include "cubert/race.h"
#include "check/race.h"

#if !CUBERT_CONFIG_RACE_CHECKER

#define RACE_OMITTED "the race checker (CUBERT_CONFIG_RACE_CHECKER=0)"
#define RACE_OMITTED_TEXT "(race checker compiled out)"

void cubert__race_options_initialize(cubert_race_options_t *options) {
  if (!options) return;
  cubert_memset(options, 0, sizeof(*options));
  options->max_streams = CUBERT_RACE_DEFAULT_MAX_STREAMS;
}

cubert_status_t cubert__race_checker_create(cubert_allocator_t allocator,
                                            const cubert_race_options_t *options,
                                            cubert_race_checker_t **out_checker,
                                            cubert_error_t *out_error) {
  (void)allocator;
  (void)options;
  (void)out_checker;
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0, RACE_OMITTED);
}

void cubert__race_checker_destroy(cubert_race_checker_t *checker) { (void)checker; }

void cubert__race_checker_reset(cubert_race_checker_t *checker) { (void)checker; }

uint32_t cubert__race_checker_max_streams(const cubert_race_checker_t *checker) {
  (void)checker;
  return 0;
}

cubert_status_t cubert__race_set_sink(cubert_race_checker_t *checker,
                                      const cubert_race_sink_t *sink) {
  (void)checker;
  (void)sink;
  return CUBERT_STATUS_UNSUPPORTED;
}

void cubert__race_set_seed(cubert_race_checker_t *checker, uint64_t seed) {
  (void)checker;
  (void)seed;
}

void cubert__race_clear_seed(cubert_race_checker_t *checker) { (void)checker; }

cubert_status_t cubert__race_op_begin(cubert_race_checker_t *checker, uint32_t stream,
                                      const char *name, uint64_t *out_op_index) {
  (void)checker;
  (void)stream;
  (void)name;
  (void)out_op_index;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_access(cubert_race_checker_t *checker, uint64_t buffer,
                                    uint32_t stream, uint64_t op_index, cubert_race_access_t mode,
                                    uint64_t start, uint64_t end) {
  (void)checker;
  (void)buffer;
  (void)stream;
  (void)op_index;
  (void)mode;
  (void)start;
  (void)end;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_event_record(cubert_race_checker_t *checker, uint32_t stream,
                                          cubert_race_event_t *out_event) {
  (void)checker;
  (void)stream;
  (void)out_event;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_event_release(cubert_race_checker_t *checker,
                                           cubert_race_event_t event) {
  (void)checker;
  (void)event;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_stream_wait_event(cubert_race_checker_t *checker, uint32_t stream,
                                               cubert_race_event_t event) {
  (void)checker;
  (void)stream;
  (void)event;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_stream_wait_stream(cubert_race_checker_t *checker, uint32_t stream,
                                                uint32_t origin) {
  (void)checker;
  (void)stream;
  (void)origin;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_host_wait_event(cubert_race_checker_t *checker,
                                             cubert_race_event_t event) {
  (void)checker;
  (void)event;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_host_sync_stream(cubert_race_checker_t *checker, uint32_t stream) {
  (void)checker;
  (void)stream;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_host_sync_all(cubert_race_checker_t *checker) {
  (void)checker;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_reclaim(cubert_race_checker_t *checker, uint64_t buffer,
                                     uint32_t stream) {
  (void)checker;
  (void)buffer;
  (void)stream;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_reclaim_at_event(cubert_race_checker_t *checker, uint64_t buffer,
                                              uint32_t stream, cubert_race_event_t event) {
  (void)checker;
  (void)buffer;
  (void)stream;
  (void)event;
  return CUBERT_STATUS_UNSUPPORTED;
}

cubert_status_t cubert__race_forget(cubert_race_checker_t *checker, uint64_t buffer) {
  (void)checker;
  (void)buffer;
  return CUBERT_STATUS_UNSUPPORTED;
}

void cubert__race_counters(const cubert_race_checker_t *checker,
                           cubert_race_counters_t *out_counters) {
  (void)checker;
  if (out_counters) cubert_memset(out_counters, 0, sizeof(*out_counters));
}

bool cubert__race_last_report(const cubert_race_checker_t *checker,
                              cubert_race_report_t *out_report) {
  (void)checker;
  (void)out_report;
  return false;
}

uint64_t cubert__race_clock(const cubert_race_checker_t *checker, uint32_t of, uint32_t stream) {
  (void)checker;
  (void)of;
  (void)stream;
  return 0;
}

const char *cubert_race_access_name(uint32_t access) {
  (void)access;
  return RACE_OMITTED_TEXT;
}

const char *cubert_race_kind_name(uint32_t kind) {
  (void)kind;
  return RACE_OMITTED_TEXT;
}

size_t cubert_race_report_format(const cubert_race_report_t *report, char *buf, size_t size) {
  (void)report;
  if (size > 0) (void)cubert__strlcpy(buf, RACE_OMITTED_TEXT, size);
  return sizeof(RACE_OMITTED_TEXT) - 1u;
}

#endif /* !CUBERT_CONFIG_RACE_CHECKER */

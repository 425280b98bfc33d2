/* SPDX-License-Identifier: MIT */
/*
 * core/profile/profile_omitted.c: profiling when it is compiled out
 * (CUBERT_CONFIG_PROFILING 0, cubert/config.h). No profiler or summary can
 * be created (UNSUPPORTED with a COMPILED_OUT record), calls on them return
 * UNSUPPORTED or report nothing, and the text helpers write
 * "(profiling compiled out)". The level helpers still describe the levels.
 */
#include "base/internal.h"
#include "cubert/profile.h"
#include "profile/profiler.h"

#if !CUBERT_CONFIG_PROFILING

#define PROFILING_OMITTED "profiling (CUBERT_CONFIG_PROFILING=0)"
#define PROFILING_OMITTED_TEXT "(profiling compiled out)"

static cubert_status_t compiled_out(cubert_error_t *out_error) {
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0, PROFILING_OMITTED);
}

static size_t omitted_text(char *buf, size_t size) {
  if (buf && size > 0) (void)cubert__strlcpy(buf, PROFILING_OMITTED_TEXT, size);
  return sizeof(PROFILING_OMITTED_TEXT) - 1u;
}

cubert_status_t cubert__profiler_create(cubert_allocator_t allocator, cubert_profile_clock_t clock,
                                        uint32_t capacity, cubert_profiler_t **out_profiler,
                                        cubert_error_t *out_error) {
  (void)allocator;
  (void)clock;
  (void)capacity;
  (void)out_profiler;
  return compiled_out(out_error);
}

void cubert__profiler_destroy(cubert_profiler_t *profiler) { (void)profiler; }

uint32_t cubert__profiler_active_count(const cubert_profiler_t *profiler) {
  (void)profiler;
  return 0;
}

uint32_t cubert__profiler_capacity(const cubert_profiler_t *profiler) {
  (void)profiler;
  return 0;
}

cubert_status_t cubert__profiler_start(cubert_profiler_t *profiler,
                                       cubert_profiling_token_t *out_token,
                                       cubert_error_t *out_error) {
  (void)profiler;
  (void)out_token;
  return compiled_out(out_error);
}

cubert_status_t cubert__profiler_stop(cubert_profiler_t *profiler, cubert_profiling_token_t token,
                                      cubert_profile_duration_t *out_duration,
                                      cubert_error_t *out_error) {
  (void)profiler;
  (void)token;
  (void)out_duration;
  return compiled_out(out_error);
}

cubert_status_t cubert__profiler_error(cubert_profiler_t *profiler, const cubert_error_t *error) {
  (void)profiler;
  (void)error;
  return CUBERT_STATUS_UNSUPPORTED;
}

bool cubert_profile_level_is_valid(cubert_profile_level_t level) {
  return (unsigned)level <= (unsigned)CUBERT_PROFILE_LEVEL_FULL;
}

bool cubert_profile_level_is_timed(cubert_profile_level_t level) {
  return level == CUBERT_PROFILE_LEVEL_BASIC || level == CUBERT_PROFILE_LEVEL_MEDIUM ||
         level == CUBERT_PROFILE_LEVEL_FULL;
}

const char *cubert_profile_level_name(cubert_profile_level_t level) {
  switch (level) {
    case CUBERT_PROFILE_LEVEL_OFF: return "off";
    case CUBERT_PROFILE_LEVEL_EXECUTION_ONLY: return "execution-only";
    case CUBERT_PROFILE_LEVEL_BASIC: return "basic";
    case CUBERT_PROFILE_LEVEL_MEDIUM: return "medium";
    case CUBERT_PROFILE_LEVEL_FULL: return "full";
    default: return "unknown";
  }
}

size_t cubert_profile_format_duration(uint64_t ns, char *buf, size_t size) {
  (void)ns;
  return omitted_text(buf, size);
}

size_t cubert_profile_format_type_name(const char *name, char *buf, size_t size) {
  (void)name;
  return omitted_text(buf, size);
}

size_t cubert_profile_format_launch(cubert_profile_level_t level, const char *name,
                                    uint64_t duration_ns, char *buf, size_t size) {
  (void)level;
  (void)name;
  (void)duration_ns;
  return omitted_text(buf, size);
}

cubert_status_t cubert_profile_summary_create(cubert_allocator_t allocator,
                                              cubert_profile_level_t level, uint32_t max_names,
                                              size_t name_bytes,
                                              cubert_profile_summary_t **out_summary,
                                              cubert_error_t *out_error) {
  (void)allocator;
  (void)level;
  (void)max_names;
  (void)name_bytes;
  (void)out_summary;
  return compiled_out(out_error);
}

void cubert_profile_summary_destroy(cubert_profile_summary_t *summary) { (void)summary; }

cubert_profile_level_t cubert_profile_summary_level(const cubert_profile_summary_t *summary) {
  (void)summary;
  return CUBERT_PROFILE_LEVEL_OFF;
}

uint32_t cubert_profile_summary_name_count(const cubert_profile_summary_t *summary) {
  (void)summary;
  return 0;
}

bool cubert_profile_summary_is_empty(const cubert_profile_summary_t *summary) {
  (void)summary;
  return true;
}

void cubert_profile_summary_reset(cubert_profile_summary_t *summary) { (void)summary; }

void cubert_profile_summary_other(const cubert_profile_summary_t *summary,
                                  uint64_t *out_duration_ns, uint64_t *out_count) {
  (void)summary;
  if (out_duration_ns) *out_duration_ns = 0;
  if (out_count) *out_count = 0;
}

cubert_status_t cubert_profile_summary_record(cubert_profile_summary_t *summary, const char *name,
                                              uint64_t duration_ns, cubert_error_t *out_error) {
  (void)summary;
  (void)name;
  (void)duration_ns;
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0, PROFILING_OMITTED);
}

cubert_status_t cubert_profile_summary_lookup(const cubert_profile_summary_t *summary,
                                              const char *name, uint64_t *out_duration_ns,
                                              uint64_t *out_count, cubert_error_t *out_error) {
  (void)summary;
  (void)name;
  (void)out_duration_ns;
  (void)out_count;
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0, PROFILING_OMITTED);
}

size_t cubert_profile_summary_format(const cubert_profile_summary_t *summary, char *buf,
                                     size_t size) {
  (void)summary;
  return omitted_text(buf, size);
}

size_t cubert_profile_summary_flush(cubert_profile_summary_t *summary, char *buf, size_t size) {
  (void)summary;
  return omitted_text(buf, size);
}

#endif /* !CUBERT_CONFIG_PROFILING */

/* SPDX-License-Identifier: MIT */
/*
 * core/client/profile_off.c: profiling's public entry points when it is
 * compiled out (CUBERT_CONFIG_PROFILING 0, cubert/config.h), and nothing else:
 * profile.c (but its level helpers), core/server/server_profile.c and
 * core/client/client_profile.c are not built. No profiler, summary or token
 * can be made (UNSUPPORTED with a COMPILED_OUT record naming the switch, after
 * the same argument checks), queries report nothing, the text helpers write
 * "(profiling compiled out)", and the kernel-profiling level stays OFF
 * (setting OFF is accepted). The server's and client's internal calls
 * answer the same where they stand (core/server/server.h,
 * core/client/client_internal.h).
 */
#include "base/internal.h"
#include "cubert/profile.h"
#include "cubert/client.h"

#if !CUBERT_CONFIG_PROFILING

#define PROFILING_OFF "profiling (CUBERT_CONFIG_PROFILING=0)"
#define PROFILING_OFF_TEXT "(profiling compiled out)"

static cubert_status_t compiled_out(cubert_error_t *out_error) {
  return cubert_error_set(out_error, CUBERT_ERROR_COMPILED_OUT, NULL, 0, PROFILING_OFF);
}

static size_t off_text(char *buf, size_t size) {
  if (buf && size > 0) (void)cubert__strlcpy(buf, PROFILING_OFF_TEXT, size);
  return sizeof(PROFILING_OFF_TEXT) - 1u;
}

/* ---- cubert/profile.h ---- */

size_t cubert_profile_format_duration(uint64_t ns, char *buf, size_t size) {
  (void)ns;
  return off_text(buf, size);
}

size_t cubert_profile_format_type_name(const char *name, char *buf, size_t size) {
  (void)name;
  return off_text(buf, size);
}

size_t cubert_profile_format_launch(cubert_profile_level_t level, const char *name,
                                    uint64_t duration_ns, char *buf, size_t size) {
  (void)level;
  (void)name;
  (void)duration_ns;
  return off_text(buf, size);
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
  return compiled_out(out_error);
}

cubert_status_t cubert_profile_summary_lookup(const cubert_profile_summary_t *summary,
                                              const char *name, uint64_t *out_duration_ns,
                                              uint64_t *out_count, cubert_error_t *out_error) {
  (void)summary;
  (void)name;
  (void)out_duration_ns;
  (void)out_count;
  return compiled_out(out_error);
}

size_t cubert_profile_summary_format(const cubert_profile_summary_t *summary, char *buf,
                                     size_t size) {
  (void)summary;
  return off_text(buf, size);
}

size_t cubert_profile_summary_flush(cubert_profile_summary_t *summary, char *buf, size_t size) {
  (void)summary;
  return off_text(buf, size);
}

/* ---- cubert/client.h: tokens and kernel profiling ---- */

cubert_status_t cubert_client_profile_start(cubert_client_t *client,
                                            cubert_profiling_token_t *out_token,
                                            cubert_error_t *out_error) {
  if (!client || !out_token)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "profile_start: NULL argument");
  return compiled_out(out_error);
}

cubert_status_t cubert_client_profile_end(cubert_client_t *client, cubert_profiling_token_t token,
                                          cubert_profile_duration_t *out_duration,
                                          cubert_error_t *out_error) {
  (void)token;
  if (!client || !out_duration)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "profile_end: NULL argument");
  return compiled_out(out_error);
}

/* OFF is accepted (nothing to turn off); any other level is compiled out. */
cubert_status_t cubert_client_set_profiling(cubert_client_t *client, cubert_profile_level_t level,
                                            cubert_log_sink_fn_t sink, void *sink_self,
                                            cubert_error_t *out_error) {
  (void)sink_self;
  if (!client || !cubert_profile_level_is_valid(level) ||
      (level != CUBERT_PROFILE_LEVEL_OFF && !sink))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "set_profiling: NULL client, invalid level or NULL sink");
  if (level == CUBERT_PROFILE_LEVEL_OFF) return CUBERT_STATUS_OK;
  return compiled_out(out_error);
}

cubert_profile_level_t cubert_client_profiling_level(const cubert_client_t *client) {
  (void)client;
  return CUBERT_PROFILE_LEVEL_OFF;
}

#endif /* !CUBERT_CONFIG_PROFILING */

/* SPDX-License-Identifier: MIT */
/* os/os_config.c: the CUBERT_* environment variables of
 * docs/configuration.md, read and checked in one place. The core never reads
 * the environment; the CPU device (backend-cpu/cpu/cpu_client.c), the logger
 * and the trace recorder ask here. */
#include "os/os_obs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/cpu.h"

/* The variable's value, NULL when unset or empty. */
static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

/* INVALID_ARGUMENT naming the variable, its value (cut at 40 bytes) and
 * what it accepts; also a warning line in the log when `log` (not for
 * CUBERT_LOG itself: the logger reads it when it starts and warns then). */
static cubert_status_t invalid_value(const char *name, const char *value, const char *accepted,
                                     int log, cubert_error_t *out_error) {
  char reason[CUBERT_ERROR_REASON_SIZE];
  (void)snprintf(reason, sizeof reason, "%s=\"%.40s\" is invalid: expected %s", name, value,
                 accepted);
  if (log) OS_LOG(CUBERT_LOG_LEVEL_WARN, "%s", reason);
  return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0, reason);
}

static cubert_status_t invalid(const char *name, const char *value, const char *accepted,
                               cubert_error_t *out_error) {
  return invalid_value(name, value, accepted, 1, out_error);
}

/* A whole decimal (or 0x hexadecimal) number in [lo, hi]. */
static int parse_u64(const char *v, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end = NULL;
  unsigned long long x;
  if (!v || *v == '-' || *v == '+' || *v == ' ') return 0;
  errno = 0;
  x = strtoull(v, &end, 0);
  if (errno || !end || *end || end == v || x < lo || x > hi) return 0;
  *out = (uint64_t)x;
  return 1;
}

static const char *const log_names[] = {"off", "error", "warn", "info", "debug", "trace"};
#define LOG_ACCEPTED "off, error, warn, info, debug or trace"

cubert_status_t cubert__os_config_log_level(cubert_log_level_t *out, cubert_error_t *out_error) {
  const char *v = env("CUBERT_LOG");
  uint32_t i;
  if (!v) return CUBERT_STATUS_NOT_FOUND;
  for (i = 0; i < sizeof log_names / sizeof log_names[0]; i++)
    if (strcmp(v, log_names[i]) == 0) {
      *out = (cubert_log_level_t)i;
      return CUBERT_STATUS_OK;
    }
  return invalid_value("CUBERT_LOG", v, LOG_ACCEPTED, 0, out_error);
}

static cubert_status_t read_profile_level(cubert_os_config_t *c, cubert_error_t *out_error) {
  const char *v = env("CUBERT_PROFILE_LEVEL");
  int l;
  if (!v) return CUBERT_STATUS_OK;
  for (l = CUBERT_PROFILE_LEVEL_OFF; l <= CUBERT_PROFILE_LEVEL_FULL; l++)
    if (strcmp(v, cubert_profile_level_name((cubert_profile_level_t)l)) == 0) {
      c->profile_level = (cubert_profile_level_t)l;
      c->set |= HOST_CONFIG_PROFILE_LEVEL;
      return CUBERT_STATUS_OK;
    }
  return invalid("CUBERT_PROFILE_LEVEL", v, "off, execution-only, basic, medium or full",
                 out_error);
}

static cubert_status_t read_flag(const char *name, uint32_t bit, uint32_t *out,
                                 cubert_os_config_t *c, cubert_error_t *out_error) {
  const char *v = env(name);
  if (!v) return CUBERT_STATUS_OK;
  if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0) return invalid(name, v, "0 or 1", out_error);
  *out = v[0] == '1';
  c->set |= bit;
  return CUBERT_STATUS_OK;
}

static cubert_status_t read_number(const char *name, uint32_t bit, uint64_t lo, uint64_t hi,
                                   const char *accepted, uint64_t *out, cubert_os_config_t *c,
                                   cubert_error_t *out_error) {
  const char *v = env(name);
  if (!v) return CUBERT_STATUS_OK;
  if (!parse_u64(v, lo, hi, out)) return invalid(name, v, accepted, out_error);
  c->set |= bit;
  return CUBERT_STATUS_OK;
}

static cubert_status_t read_mode(cubert_os_config_t *c, cubert_error_t *out_error) {
  const char *v = env("CUBERT_CPU_MODE");
  if (!v) return CUBERT_STATUS_OK;
  if (strcmp(v, "threaded") == 0)
    c->cpu_mode = CUBERT_CPU_MODE_THREADED;
  else if (strcmp(v, "deterministic") == 0)
    c->cpu_mode = CUBERT_CPU_MODE_DETERMINISTIC;
  else
    return invalid("CUBERT_CPU_MODE", v, "threaded or deterministic", out_error);
  c->set |= HOST_CONFIG_CPU_MODE;
  return CUBERT_STATUS_OK;
}

static cubert_status_t read_memory(cubert_os_config_t *c, cubert_error_t *out_error) {
  const char *v = env("CUBERT_MEMORY");
  if (!v) return CUBERT_STATUS_OK;
  if (strcmp(v, "sub-slices") == 0)
    c->memory = CUBERT_MEMORY_CONFIGURATION_SUB_SLICES;
  else if (strcmp(v, "exclusive-pages") == 0)
    c->memory = CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES;
  else
    return invalid("CUBERT_MEMORY", v, "sub-slices or exclusive-pages", out_error);
  c->set |= HOST_CONFIG_MEMORY;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert__os_config_read(cubert_os_config_t *c, cubert_error_t *out_error) {
  uint64_t n = 0;
  cubert_status_t status;
  memset(c, 0, sizeof(*c));
  status = cubert__os_config_log_level(&c->log_level, out_error);
  if (status == CUBERT_STATUS_OK) c->set |= HOST_CONFIG_LOG;
  if (status != CUBERT_STATUS_OK && status != CUBERT_STATUS_NOT_FOUND) return status;
  c->log_file = env("CUBERT_LOG_FILE");
  if (c->log_file) c->set |= HOST_CONFIG_LOG_FILE;
  CUBERT_RETURN_IF_ERROR(read_profile_level(c, out_error));
  CUBERT_RETURN_IF_ERROR(read_flag("CUBERT_PROFILE_SUMMARY", HOST_CONFIG_PROFILE_SUMMARY,
                                   &c->profile_summary, c, out_error));
  CUBERT_RETURN_IF_ERROR(read_number("CUBERT_CPU_WORKERS", HOST_CONFIG_CPU_WORKERS, 1,
                                     HOST_CONFIG_MAX_WORKERS, "a number of threads, 1 to 1024",
                                     &n, c, out_error));
  c->cpu_workers = (uint32_t)n;
  CUBERT_RETURN_IF_ERROR(read_mode(c, out_error));
  CUBERT_RETURN_IF_ERROR(read_number("CUBERT_CPU_SEED", HOST_CONFIG_CPU_SEED, 0, UINT64_MAX,
                                     "an unsigned 64-bit number (decimal or 0x hexadecimal)",
                                     &c->cpu_seed, c, out_error));
  CUBERT_RETURN_IF_ERROR(read_memory(c, out_error));
  c->trace_path = env("CUBERT_TRACE");
  if (c->trace_path) c->set |= OS_CONFIG_TRACE;
  n = 0;
  CUBERT_RETURN_IF_ERROR(read_number("CUBERT_TRACE_BUFFER", OS_CONFIG_TRACE_BUFFER,
                                     CUBERT_TRACE_MIN_CAPACITY, CUBERT_TRACE_MAX_CAPACITY,
                                     "a number of events, 16 to 16777216", &n, c, out_error));
  c->trace_buffer = (uint32_t)n;
  n = 0;
  CUBERT_RETURN_IF_ERROR(read_number("CUBERT_CPU_PLANE_DIM", HOST_CONFIG_CPU_PLANE_DIM, 1, 64,
                                     "a power of two, 1 to 64", &n, c, out_error));
  if ((c->set & HOST_CONFIG_CPU_PLANE_DIM) && (n & (n - 1u)) != 0)
    return invalid("CUBERT_CPU_PLANE_DIM", env("CUBERT_CPU_PLANE_DIM"), "a power of two, 1 to 64",
                   out_error);
  c->cpu_plane_dim = (uint32_t)n;
  n = 0;
  CUBERT_RETURN_IF_ERROR(read_number("CUBERT_CPU_STREAM_HELPERS", HOST_CONFIG_CPU_STREAM_HELPERS, 0,
                                     64, "a number of threads, 0 (none) to 64", &n, c, out_error));
  c->cpu_stream_helpers = (uint32_t)n;
  return CUBERT_STATUS_OK;
}

/* SPDX-License-Identifier: MIT */
/* os/os_log.c: the OS layer's leveled log (cubert/os.h,
 * host/os_obs.h) and the default log sinks. The level comes from
 * cubert_log_set_level, else CUBERT_LOG (read once), else off; lines go to
 * CUBERT_LOG_FILE or stderr, one write each:
 *
 *   cubert[info +0.001234] cpu device 0 created: threaded, 3 kernel workers, ...
 *
 * (the time in seconds since the log started). While the level is off a
 * OS_LOG site costs a load and a branch. */
#include "os/os_obs.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/os_thread.h"

/* 0xFF: not started (the first OS_LOG reaches cubert__os_log_write,
 * which starts it and checks again). */
uint32_t cubert_os_log_max_ = 0xFFu;

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static FILE *log_out;     /* NULL: stderr */
static uint64_t log_epoch; /* ns at start */

static FILE *out_file(void) {
  FILE *f = __atomic_load_n(&log_out, __ATOMIC_ACQUIRE);
  return f ? f : stderr;
}

static void log_line_raw(const char *text, size_t length) {
  FILE *f = out_file();
  (void)fwrite(text, 1, length, f);
  (void)fflush(f);
}

/* Open CUBERT_LOG_FILE (once, when a level other than OFF is first in
 * force: an unused log creates no file). */
static void open_destination(void) {
  static pthread_mutex_t open_mutex = PTHREAD_MUTEX_INITIALIZER;
  static int opened;
  const char *path;
  char line[160];
  pthread_mutex_lock(&open_mutex);
  if (!opened) {
    opened = 1;
    path = getenv("CUBERT_LOG_FILE");
    if (path && *path) {
      FILE *f = fopen(path, "a");
      if (f) {
        __atomic_store_n(&log_out, f, __ATOMIC_RELEASE);
      } else {
        int n = snprintf(line, sizeof line,
                         "cubert[warn] CUBERT_LOG_FILE=\"%.80s\" cannot be opened: logging to "
                         "stderr\n",
                         path);
        if (n > 0) log_line_raw(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
      }
    }
  }
  pthread_mutex_unlock(&open_mutex);
}

static void log_start(void) {
  cubert_log_level_t level = CUBERT_LOG_LEVEL_OFF;
  cubert_error_t e;
  cubert_status_t status;
  char line[CUBERT_ERROR_REASON_SIZE + 64];
  log_epoch = cubert__os_clock_ns();
  cubert_error_clear(&e);
  status = cubert__os_config_log_level(&level, &e);
  if (status != CUBERT_STATUS_OK && status != CUBERT_STATUS_NOT_FOUND)
    level = CUBERT_LOG_LEVEL_WARN;
  if (level != CUBERT_LOG_LEVEL_OFF) open_destination();
  if (status != CUBERT_STATUS_OK && status != CUBERT_STATUS_NOT_FOUND) {
    int n = snprintf(line, sizeof line, "cubert[warn] %s (logging at warn)\n", e.reason);
    if (n > 0) log_line_raw(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  }
  __atomic_store_n(&cubert_os_log_max_, (uint32_t)level, __ATOMIC_RELEASE);
  cubert__os_obs_update();
}

static void log_ensure(void) { (void)pthread_once(&log_once, log_start); }

const char *cubert_log_level_name(cubert_log_level_t level) {
  static const char *const names[] = {"off", "error", "warn", "info", "debug", "trace"};
  return (unsigned)level < sizeof names / sizeof names[0] ? names[level] : "unknown";
}

cubert_log_level_t cubert_log_level(void) {
  log_ensure();
  return (cubert_log_level_t)__atomic_load_n(&cubert_os_log_max_, __ATOMIC_ACQUIRE);
}

cubert_status_t cubert_log_set_level(cubert_log_level_t level, cubert_error_t *out_error) {
  if ((unsigned)level > (unsigned)CUBERT_LOG_LEVEL_TRACE) {
    uint64_t f = (uint64_t)(uint32_t)level;
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "cubert_log_set_level: unknown level (0 off .. 5 trace)");
  }
  log_ensure(); /* CUBERT_LOG is overridden below */
  if (level != CUBERT_LOG_LEVEL_OFF) open_destination();
  __atomic_store_n(&cubert_os_log_max_, (uint32_t)level, __ATOMIC_RELEASE);
  cubert__os_obs_update();
  return CUBERT_STATUS_OK;
}

void cubert__os_log_write(cubert_log_level_t level, const char *fmt, ...) {
  char line[512];
  uint64_t t;
  va_list ap;
  int n, m;
  log_ensure();
  if (!OS_LOG_ON(level) || level == CUBERT_LOG_LEVEL_OFF) return;
  t = cubert__os_clock_ns() - log_epoch;
  n = snprintf(line, sizeof line, "cubert[%s +%llu.%06llu] ", cubert_log_level_name(level),
               (unsigned long long)(t / 1000000000u),
               (unsigned long long)(t % 1000000000u / 1000u));
  if (n < 0 || (size_t)n >= sizeof line) return;
  va_start(ap, fmt);
  m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) return;
  n += (size_t)m < sizeof line - (size_t)n - 1 ? m : (int)(sizeof line - (size_t)n - 2);
  line[n++] = '\n';
  log_line_raw(line, (size_t)n);
}

void cubert__os_log_error(cubert_log_level_t level, const char *what, const cubert_error_t *error) {
  char text[CUBERT_ERROR_REASON_SIZE * 2];
  if (!OS_LOG_ON(level)) return;
  text[0] = '\0';
  if (error) (void)cubert_error_format(error, text, sizeof text);
  cubert__os_log_write(level, "%s: %s", what, text);
}

void cubert_log_sink_stderr(void *self, const char *text, size_t length) {
  (void)self;
  if (text && length) (void)fwrite(text, 1, length, stderr);
}

void cubert_log_sink_default(void *self, const char *text, size_t length) {
  (void)self;
  log_ensure();
  open_destination();
  if (text && length) log_line_raw(text, length);
}

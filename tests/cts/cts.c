/* SPDX-License-Identifier: MIT */
/* tests/cts/cts.c: the device under test for the conformance suite (see cts.h):
 * the registry of drivers (each registers itself from its own file), the
 * choice of one by name, and what every test does with it. No driver is
 * named here. */
#include "cts.h"

#include <time.h>

#include "cubert/driver/server.h"

/* ---- the registry ---- */

static const cts_driver_t *g_drivers[CTS_DRIVER_MAX];
static size_t g_driver_count;
static int g_driver_overflow; /* a record did not fit, or a name came twice */

void cts_driver_register(const cts_driver_t *driver) {
  if (!driver || !driver->name || !driver->create || g_driver_count == CTS_DRIVER_MAX ||
      cts_driver_find(driver->name)) {
    g_driver_overflow = 1;
    return;
  }
  g_drivers[g_driver_count++] = driver;
}

size_t cts_driver_count(void) { return g_driver_count; }

const cts_driver_t *cts_driver_at(size_t i) { return i < g_driver_count ? g_drivers[i] : NULL; }

const cts_driver_t *cts_driver_find(const char *name) {
  size_t i;
  if (!name) return NULL;
  for (i = 0; i < g_driver_count; i++)
    if (strcmp(g_drivers[i]->name, name) == 0) return g_drivers[i];
  return NULL;
}

void cts_driver_names(char *out, size_t size) {
  size_t i, used = 0;
  if (!out || size == 0) return;
  out[0] = 0;
  for (i = 0; i < g_driver_count && used + 1 < size; i++) {
    int n = snprintf(out + used, size - used, "%s%s", i ? ", " : "", g_drivers[i]->name);
    if (n < 0) break;
    used += (size_t)n < size - used ? (size_t)n : size - used - 1;
  }
}

const char *cts_unsupported_reason(const cts_driver_t *driver, const char *test) {
  const cts_unsupported_t *u;
  if (!driver || !driver->unsupported || !test) return NULL;
  for (u = driver->unsupported; u->test; u++) {
    size_t n = strlen(u->test);
    if (n && u->test[n - 1] == '*' ? strncmp(test, u->test, n - 1) == 0 : strcmp(test, u->test) == 0)
      return u->reason;
  }
  return NULL;
}

/* The name CUBERT_CTS_DRIVER asks for (no environment in an inline-only build). */
static const char *wanted_name(void) {
#if CUBERT_CTS_INLINE_ONLY
  return "inline";
#else
  const char *v = getenv("CUBERT_CTS_DRIVER");
  const char *mode = getenv("CUBERT_CTS_MODE");
  if (v && *v) return v;
  return mode && strcmp(mode, "deterministic") == 0 ? "deterministic" : "cpu";
#endif
}

const cts_driver_t *cts_driver(void) {
  const char *name = wanted_name();
  const cts_driver_t *d = cts_driver_find(name);
  char names[256];
  if (g_driver_overflow)
    test_fail(__FILE__, __LINE__, "cts: a driver record is invalid, named twice, or past CTS_DRIVER_MAX");
  if (d) return d;
  cts_driver_names(names, sizeof names);
  test_fail(__FILE__, __LINE__, "CUBERT_CTS_DRIVER=%s: no such driver; registered: %s", name, names);
}

int cts_driver_is(const char *name) { return strcmp(cts_driver()->name, name) == 0; }

const char *cts_server_name(void) { return cts_driver()->name; }

int cts_is_threaded(void) { return (cts_driver()->flags & CTS_DRIVER_THREADED) != 0; }

uint16_t cts_device_type(void) { return cts_driver()->device_type; }

cubert_layout_policy_t cts_layout_policy(void) { return cts_driver()->layout_policy; }

/* ---- the device under test ---- */

#if CUBERT_CTS_INLINE_ONLY
static int race_env_on(void) { return 1; }
#else
static int race_env_on(void) {
  const char *v = getenv("CUBERT_CTS_RACE");
  return !(v && *v && strtoull(v, NULL, 0) == 0);
}
#endif

/* On unless CUBERT_CTS_RACE=0 or the library has no race checker (make check-minimal). */
static int race_on(void) {
  return race_env_on() && (cubert_config_features() & CUBERT_FEATURE_RACE_CHECKER) != 0;
}

uint32_t cts_race_check(const cts_options_t *options) {
  if (options && options->race_off) return 0;
  return (uint32_t)(race_on() || (options && options->race_check_forced));
}

cubert_device_options_t cts_device_options(const cts_options_t *options) {
  cubert_device_options_t d;
  memset(&d, 0, sizeof d);
  d.index = options->device_index;
  d.max_streams = options->max_streams;
  d.max_handles = options->max_handles;
  d.memory_size = options->memory_size;
  d.bounds_check = options->bounds_check;
  d.race_check = cts_race_check(options);
  d.faults = options->faults;
  return d;
}

int cts_driver_available(const cts_driver_t *driver, char *why, size_t why_size) {
  const char *reason = NULL;
  if (!driver)
    reason = "not registered in this build";
  else if ((driver->flags & CTS_DRIVER_DETERMINISTIC) &&
           !(cubert_config_features() & CUBERT_FEATURE_SIMULATION))
    reason = "the deterministic mode is compiled out (CUBERT_CONFIG_SIMULATION=0)";
  else if (driver->available)
    return driver->available(why, why_size);
  if (!reason) return 1;
  if (why && why_size) snprintf(why, why_size, "%s", reason);
  return 0;
}

cubert_status_t cts_client_create_as(const cts_driver_t *driver, cubert_allocator_t allocator,
                                     const cts_options_t *options, cubert_client_t **out_client,
                                     cubert_error_t *out_error) {
  cts_options_t o;
  if (options) o = *options;
  else memset(&o, 0, sizeof o);
  if (!o.max_streams) o.max_streams = 8;
  return driver->create(allocator, &o, out_client, out_error);
}

void cts_forget_client(cts_env_t *env) {
  const cts_driver_t *d = cts_driver();
  if (d && d->before_teardown) d->before_teardown(env);
  env->client = NULL;
}

cubert_status_t cts_client_create(cubert_allocator_t allocator, const cts_options_t *options,
                                  cubert_client_t **out_client, cubert_error_t *out_error) {
  const cts_driver_t *d = cts_driver();
  const char *why = cts_unsupported_reason(d, test_current_name);
  cts_options_t o;
  if (why) test_skip(__FILE__, __LINE__, why);
  if (options) o = *options;
  else memset(&o, 0, sizeof o);
  if (!o.max_streams) o.max_streams = 8;
  if (o.threaded && !(d->flags & CTS_DRIVER_THREADED)) {
    /* the threaded CPU driver, whatever is under test */
    const cts_driver_t *cpu = cts_driver_find("cpu");
    if (!cpu) test_skip(__FILE__, __LINE__, "needs the threaded CPU driver (not in this build)");
    d = cpu;
  }
  return d->create(allocator, &o, out_client, out_error);
}

void cts_setup_with(cts_env_t *env, const cts_options_t *options) {
  const cts_driver_t *d = cts_driver();
  cubert_error_t err;
  char msg[256];
  memset(env, 0, sizeof(*env));
  env->allocator = counting_allocator_initialize(&env->counting);
  env->deterministic = (d->flags & CTS_DRIVER_DETERMINISTIC) && !options->threaded;
  env->race_check = cts_race_check(options);
  if (cts_client_create(env->allocator, options, &env->client, &err) != CUBERT_STATUS_OK) {
    cubert_error_format(&err, msg, sizeof msg);
    test_fail(__FILE__, __LINE__, "cts_setup: cannot create the %s device: %s", d->name, msg);
  }
  if (d->after_setup && !options->threaded) d->after_setup(env);
}

void cts_setup(cts_env_t *env, uint32_t device_index) {
  cts_options_t o;
  memset(&o, 0, sizeof o);
  o.device_index = device_index;
  cts_setup_with(env, &o);
}

void cts_teardown(cts_env_t *env) {
  const cts_driver_t *d = cts_driver();
  if (env->race_check) {
    cubert_race_counters_t counters;
    cubert_race_report_t report;
    char line[512];
    CHECK_OK(cubert_client_race_counters(env->client, &counters, NULL));
    if (counters.reports && cubert_client_race_last_report(env->client, &report,
                                                           NULL) == CUBERT_STATUS_OK) {
      cubert_race_report_format(&report, line, sizeof line);
      test_fail(__FILE__, __LINE__, "%llu race report(s), last: %s",
                (unsigned long long)counters.reports, line);
    }
  }
  if (d->before_teardown) d->before_teardown(env);
  cubert_client_release(env->client);
  env->client = NULL;
  CHECK_MSG(env->counting.live_blocks == 0, "leaked %lld blocks (%lld bytes)",
            (long long)env->counting.live_blocks, (long long)env->counting.live_bytes);
  CHECK_EQ_U64(env->counting.bad_frees, 0);
  counting_allocator_destroy(&env->counting);
}

int cts_has_collectives(cubert_client_t *client) {
  const cubert_driver_t *driver = NULL;
  const cts_driver_t *d = cts_driver();
  void *self = NULL;
  if (cubert_server_driver_of(client, &driver, &self) != CUBERT_STATUS_OK) return 0;
  if (!driver->collective) return 0;
  return d->has_collectives ? d->has_collectives(client) : 1;
}

/* ---- time ---- */

#if CUBERT_CTS_INLINE_ONLY
/* The inline driver's clock there (tests/cts/cts_driver_inline.c) counts. */
void cts_inline_clock_advance_ns(uint64_t ns);
void cts_sleep_ms(uint32_t ms) { cts_inline_clock_advance_ns((uint64_t)ms * 1000000u); }
#else
void cts_sleep_ms(uint32_t ms) {
  struct timespec ts;
  ts.tv_sec = (time_t)(ms / 1000u);
  ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
  nanosleep(&ts, NULL);
}
#endif

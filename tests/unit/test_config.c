/* SPDX-License-Identifier: MIT */
/* The compile-time switches of cubert/config.h. Each test checks the feature
 * in the build it runs in: working when compiled in, and, when compiled out
 * (make check-minimal), that its API still links and says so: UNSUPPORTED
 * with a COMPILED_OUT record, nothing created, text naming the switch. */
#include <string.h>

#include "test.h"
#include "device/device_registry.h"
#include "counting_allocator.h"
#include "cubert/config.h"
#include "cubert/device.h"
#include "cubert/error.h"
#include "cubert/memory.h"
#include "cubert/profile.h"
#include "cubert/race.h"
#include "cubert/sim.h"
#include "check/race.h"
#include "cubert/driver/sim.h"
#include "profile/profiler.h"
#include "memory/memory.h"
#include "cubert/driver/device.h"

static void check_compiled_out(const cubert_error_t *e, const char *switch_name) {
  char text[256];
  CHECK_EQ_U64(e->status, CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_U64(cubert_error_kind(e), CUBERT_ERROR_COMPILED_OUT);
  /* without the core's reason strings (CUBERT_CONFIG_ERROR_REASONS=0) the kind says it */
  if (!(cubert_config_features() & CUBERT_FEATURE_ERROR_REASONS)) return;
  CHECK_MSG(strstr(e->reason, switch_name) != NULL, "reason '%s' does not name %s", e->reason,
            switch_name);
  cubert_error_format(e, text, sizeof text);
  CHECK_MSG(strstr(text, switch_name) != NULL, "text '%s' does not name %s", text, switch_name);
}

TEST(config_features_match_the_build) {
  uint32_t f = cubert_config_features();
  CHECK_EQ_U64((f & CUBERT_FEATURE_RACE_CHECKER) != 0, CUBERT_CONFIG_RACE_CHECKER);
  CHECK_EQ_U64((f & CUBERT_FEATURE_SIMULATION) != 0, CUBERT_CONFIG_SIMULATION);
  CHECK_EQ_U64((f & CUBERT_FEATURE_PROFILING) != 0, CUBERT_CONFIG_PROFILING);
  CHECK_EQ_U64((f & CUBERT_FEATURE_ERROR_TEXT) != 0, CUBERT_CONFIG_ERROR_TEXT);
  CHECK_EQ_U64((f & CUBERT_FEATURE_COLLECTIVE_OPS) != 0, CUBERT_CONFIG_COLLECTIVES);
  CHECK_EQ_U64((f & CUBERT_FEATURE_STAGING_BUFFERS) != 0, CUBERT_CONFIG_STAGING);
  CHECK_EQ_U64((f & CUBERT_FEATURE_PAGED_POOLS) != 0, CUBERT_CONFIG_PAGED_POOLS);
  CHECK_EQ_U64((f & CUBERT_FEATURE_PERSISTENT_MEMORY) != 0, CUBERT_CONFIG_PERSISTENT_MEMORY);
  CHECK_EQ_U64((f & CUBERT_FEATURE_ERROR_REASONS) != 0, CUBERT_CONFIG_ERROR_REASONS);
  CHECK_EQ_U64(f & ~(uint32_t)(CUBERT_FEATURE_RACE_CHECKER | CUBERT_FEATURE_SIMULATION |
                               CUBERT_FEATURE_PROFILING | CUBERT_FEATURE_ERROR_TEXT |
                               CUBERT_FEATURE_COLLECTIVE_OPS | CUBERT_FEATURE_STAGING_BUFFERS |
                               CUBERT_FEATURE_PAGED_POOLS | CUBERT_FEATURE_PERSISTENT_MEMORY |
                               CUBERT_FEATURE_ERROR_REASONS),
               0);
  CHECK_EQ_STR(cubert_error_kind_name(CUBERT_ERROR_COMPILED_OUT),
               CUBERT_CONFIG_ERROR_TEXT ? "CompiledOut" : "(error text compiled out)");
  CHECK_EQ_STR(cubert_status_description(CUBERT_STATUS_UNSUPPORTED),
               CUBERT_CONFIG_ERROR_TEXT ? "unsupported" : "(error text compiled out)");
  CHECK_EQ_STR(cubert_status_name(CUBERT_STATUS_UNSUPPORTED), "UNSUPPORTED");
  CHECK_EQ_U64(cubert_error_kind_status(CUBERT_ERROR_COMPILED_OUT), CUBERT_STATUS_UNSUPPORTED);
}

TEST(config_race_checker) {
  char text[128];
  cubert_race_report_t r;
#if CUBERT_CONFIG_RACE_CHECKER
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_race_checker_t *checker = NULL;
  uint64_t op = 7;
  CHECK_OK(cubert__race_checker_create(a, NULL, &checker, NULL));
  CHECK(checker != NULL);
  CHECK_OK(cubert__race_op_begin(checker, 0, "op", &op));
  CHECK_EQ_U64(op, 1);
  cubert__race_checker_destroy(checker);
  /* The hooks a server calls do nothing for the NULL checker it keeps. */
  CHECK_OK(cubert__race_hook_op_begin(NULL, 0, "op", &op));
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
  CHECK_EQ_STR(cubert_race_kind_name(CUBERT_RACE_KIND_RECLAIM), "reclaim-while-in-use");
#else
  /* Only the public text functions remain (core/check/race_off.c); a device
   * asked for the checker is COMPILED_OUT (tests/cts/test_cts_config.c). */
  memset(&r, 0, sizeof r);
  CHECK_EQ_U64(cubert_race_report_format(&r, text, sizeof text), strlen(text));
  CHECK(strstr(text, "compiled out") != NULL);
  CHECK(strstr(cubert_race_kind_name(CUBERT_RACE_KIND_RECLAIM), "compiled out") != NULL);
  CHECK(strstr(cubert_race_access_name(CUBERT_RACE_READ), "compiled out") != NULL);
  CHECK_EQ_U64(cubert_race_report_format(&r, NULL, 0), strlen(text));
#endif
  (void)text;
  (void)r;
}

TEST(config_simulation) {
  cubert_sim_chooser_t ch;
  cubert_sim_explorer_t e;
  uint32_t log[4], choice[4], arity[4], shrunk[3] = {2, 1, 2}, scratch[3];
  uint64_t state = 0;
  cubert_status_t st;
  /* splitmix64 stays in every build (Vigna's reference, seed 0). */
  CHECK_EQ_U64(cubert_sim_splitmix64(&state), 0xe220a8397b1dcdafull);
  memset(&ch, 0xAB, sizeof ch);
  st = cubert_sim_chooser_initialize_seed(&ch, 42, log, 4, NULL);
  if (CUBERT_CONFIG_SIMULATION) {
    CHECK_OK(st);
    CHECK(cubert_sim_choose(&ch, 3, NULL) < 3);
    CHECK_EQ_U64(ch.choices, 1);
    CHECK_OK(cubert_sim_explorer_initialize(&e, choice, arity, 4, NULL));
  } else {
    CHECK_STATUS(st, CUBERT_STATUS_UNSUPPORTED);
    CHECK_EQ_U64(ch.source, 0xABABABABu); /* untouched */
    CHECK_EQ_U64(cubert_sim_choose(&ch, 3, NULL), 0);
    CHECK_STATUS(cubert_sim_chooser_initialize_replay(&ch, log, 0, NULL, 0,
                                                      NULL), CUBERT_STATUS_UNSUPPORTED);
    CHECK_STATUS(cubert_sim_explorer_initialize(&e, choice, arity, 4,
                                                NULL), CUBERT_STATUS_UNSUPPORTED);
    CHECK(!cubert_sim_explorer_next(&e));
    CHECK_EQ_U64(cubert_sim_shrink(shrunk, 3, scratch, NULL, NULL), 3);
    CHECK_EQ_U64(shrunk[0], 2);
  }
}

#if CUBERT_CONFIG_PROFILING
static uint64_t zero_clock(void *self) {
  (void)self;
  return 0;
}
#endif

TEST(config_profiling) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_profile_summary_t *s = NULL;
  cubert_error_t err;
  char text[64];
  uint64_t d = 1, n = 1;
#if CUBERT_CONFIG_PROFILING
  cubert_profiler_t *p = NULL;
  cubert_profile_clock_t clock;
  clock.self = NULL;
  clock.now_ns = zero_clock;
  CHECK_OK(cubert__profiler_create(a, clock, 4, &p, &err));
  cubert__profiler_destroy(p);
  CHECK_OK(cubert_profile_summary_create(a, CUBERT_PROFILE_LEVEL_BASIC, 4, 64, &s, NULL));
  cubert_profile_summary_destroy(s);
  cubert_profile_format_duration(1500, text, sizeof text);
  CHECK_EQ_STR(text, "1.5\xC2\xB5s");
  (void)err;
  (void)d;
  (void)n;
#else
  /* Only the public entry points remain (core/client/profile_off.c). */
  CHECK_STATUS(cubert_profile_summary_create(a, CUBERT_PROFILE_LEVEL_BASIC, 4, 64, &s, &err),
               CUBERT_STATUS_UNSUPPORTED);
  CHECK(s == NULL);
  check_compiled_out(&err, "CUBERT_CONFIG_PROFILING");
  CHECK_STATUS(cubert_profile_summary_record(NULL, "k", 1, &err), CUBERT_STATUS_UNSUPPORTED);
  check_compiled_out(&err, "CUBERT_CONFIG_PROFILING");
  CHECK_STATUS(cubert_profile_summary_lookup(NULL, "k", &d, &n, &err), CUBERT_STATUS_UNSUPPORTED);
  check_compiled_out(&err, "CUBERT_CONFIG_PROFILING");
  cubert_profile_summary_other(NULL, &d, &n);
  CHECK_EQ_U64(d + n, 0);
  CHECK(cubert_profile_summary_is_empty(NULL));
  CHECK_EQ_U64(cubert_profile_format_duration(1500, text, sizeof text), strlen(text));
  CHECK_EQ_STR(text, "(profiling compiled out)");
  CHECK_EQ_U64(cubert_profile_summary_format(NULL, text, sizeof text), strlen(text));
  CHECK_EQ_STR(text, "(profiling compiled out)");
#endif
  CHECK_EQ_STR(cubert_profile_level_name(CUBERT_PROFILE_LEVEL_MEDIUM), "medium");
  CHECK(cubert_profile_level_is_timed(CUBERT_PROFILE_LEVEL_BASIC));
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(config_error_text) {
  cubert_error_t e, agg;
  char text[512];
  uint64_t size = 1024;
  cubert_error_set(&e, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  cubert_error_format(&e, text, sizeof text);
  if (CUBERT_CONFIG_ERROR_TEXT) {
    CHECK_EQ_STR(text, "can't allocate buffer of size: 1024");
  } else {
    char want[128];
    snprintf(want, sizeof want, "error %d (status %d) fields 1024 0 0 0 [text compiled out]",
             (int)CUBERT_ERROR_IO_BUFFER_TOO_BIG, (int)CUBERT_STATUS_BUFFER_TOO_BIG);
    CHECK_EQ_STR(text, want);
  }
  /* Aggregates keep their count and first error in every build. */
  memset(&agg, 0, sizeof agg);
  CHECK_STATUS(cubert_error_aggregate(&agg, &e), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_STATUS(cubert_error_aggregate(&agg, &e), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&agg), 2);
  CHECK_EQ_U64(cubert_error_kind(&agg), CUBERT_ERROR_IO_BUFFER_TOO_BIG);
  CHECK(strstr(agg.reason, CUBERT_CONFIG_ERROR_TEXT ? "size: 1024" : "fields 1024") != NULL);
}

/* Without paged pools both presets are one direct pool and a sliced or
 * exclusive entry is refused (COMPILED_OUT) wherever a list is checked. */
TEST(config_paged_pools) {
  cubert_memory_device_properties_t props;
  cubert_memory_configuration_t c = cubert_memory_configuration_default(false), out_config;
  cubert_memory_pool_options_t pools[32], entry = cubert_memory_pool_sliced(4096, 1024,
                                                                            CUBERT_MEMORY_NONE);
  cubert_memory_pools_config_t list;
  cubert_error_t err;
  uint32_t n = 0;
  memset(&props, 0, sizeof props);
  props.max_page_size = (uint64_t)1 << 30;
  props.alignment = 32;
  CHECK_OK(cubert_memory_configuration_pools(&c, props, pools, 32, &n, NULL));
  list.kind = CUBERT_MEMORY_POOLS_EXPLICIT;
  list.entries = &entry;
  list.count = 1;
  if (CUBERT_CONFIG_PAGED_POOLS) {
    CHECK(n > 2); /* the SubSlices ladder */
    CHECK_EQ_U64(pools[0].type, CUBERT_MEMORY_POOL_EXCLUSIVE);
    CHECK_OK(cubert_memory_configuration_resolve(&c, &list, props, false, pools, 32, &out_config,
                                                 NULL));
  } else {
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_U64(pools[0].type, CUBERT_MEMORY_POOL_DIRECT);
    CHECK_EQ_U64(pools[0].reclaim_at, 0);
    c.kind = CUBERT_MEMORY_CONFIGURATION_EXCLUSIVE_PAGES;
    CHECK_OK(cubert_memory_configuration_pools(&c, props, pools, 32, &n, NULL));
    CHECK_EQ_U64(n, 1);
    c.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
    c.pools = &entry;
    c.pool_count = 1;
    CHECK_STATUS(cubert_memory_configuration_pools(&c, props, pools, 32, &n, &err),
                 CUBERT_STATUS_UNSUPPORTED);
    check_compiled_out(&err, "CUBERT_CONFIG_PAGED_POOLS");
    CHECK_STATUS(cubert_memory_configuration_resolve(&c, &list, props, false, pools, 32,
                                                     &out_config, &err),
                 CUBERT_STATUS_UNSUPPORTED);
    check_compiled_out(&err, "CUBERT_CONFIG_PAGED_POOLS");
    entry = cubert_memory_pool_direct(CUBERT_MEMORY_NONE); /* direct lists still work */
    CHECK_OK(cubert_memory_configuration_pools(&c, props, pools, 32, &n, NULL));
    CHECK_EQ_U64(n, 1);
  }
}

/* The registry holds CUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY devices (the
 * core's only static data); tests/unit/test_device.c fills it. */
TEST(config_device_registry_capacity) {
  CHECK_EQ_U64(CUBERT_DEVICE_REGISTRY_CAPACITY, CUBERT_CONFIG_DEVICE_REGISTRY_CAPACITY);
  CHECK(CUBERT_DEVICE_REGISTRY_CAPACITY >= 1);
}

/* Without the core's reason strings a record keeps its kinds, status and
 * fields; a caller's own reason is kept either way. */
TEST(config_error_reasons) {
  cubert_memory_pool_options_t entry = cubert_memory_pool_sliced(0, CUBERT_MEMORY_NONE,
                                                                 CUBERT_MEMORY_NONE);
  cubert_memory_configuration_t c;
  cubert_memory_device_properties_t props;
  cubert_error_t err;
  uint32_t n = 0;
  memset(&props, 0, sizeof props);
  props.max_page_size = 1u << 20;
  c.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  c.pools = &entry;
  c.pool_count = 1; /* a zero page (or, without paged pools, a sliced pool at all) */
  CHECK(cubert_memory_configuration_pools(&c, props, NULL, 0, &n, &err) != CUBERT_STATUS_OK);
  CHECK(cubert_error_kind(&err) != CUBERT_ERROR_NONE);
  CHECK_EQ_U64(err.reason[0] != '\0', CUBERT_CONFIG_ERROR_REASONS);
  /* (the function itself: device_registry.h brings the core's macro of base/internal.h) */
  CHECK_STATUS((cubert_error_set)(&err, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "mine"),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_STR(err.reason, "mine");
}

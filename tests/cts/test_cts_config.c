/* SPDX-License-Identifier: MIT */
/* The compile-time switches of cubert/config.h seen through a client of the
 * device under test (tests/unit/test_config.c checks the core's own API):
 * collectives, staging buffers, persistent memory, profiling and the race
 * checker each work when compiled in and, when compiled out (make
 * check-minimal), answer UNSUPPORTED with a COMPILED_OUT record naming the
 * switch, after the same argument checks, leaving nothing behind. */
#include "cts.h"

#include "cubert/driver/server.h"
#include "cubert/config.h"
#include "cubert/profile.h"

static void drop_text(void *self, const char *text, size_t length) {
  (void)self;
  (void)text;
  (void)length;
}

static int has(uint32_t bit) { return (cubert_config_features() & bit) != 0; }

static void check_compiled_out(cubert_status_t status, const cubert_error_t *e,
                               const char *switch_name) {
  char text[256];
  CHECK_STATUS(status, CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_U64(cubert_error_kind(e), CUBERT_ERROR_COMPILED_OUT);
  /* without the core's reason strings (CUBERT_CONFIG_ERROR_REASONS=0) the kind says it */
  if (!(cubert_config_features() & CUBERT_FEATURE_ERROR_REASONS)) return;
  CHECK_MSG(strstr(e->reason, switch_name) != NULL, "reason '%s' does not name %s", e->reason,
            switch_name);
  cubert_error_format(e, text, sizeof text);
  CHECK_MSG(strstr(text, switch_name) != NULL, "text '%s' does not name %s", text, switch_name);
}

static cubert_status_t noop_fn(void *user, cubert_error_t *err) {
  (void)err;
  (*(int *)user)++;
  return CUBERT_STATUS_OK;
}

TEST(cts_config_collectives) {
  cts_env_t env;
  cubert_device_id_t self;
  cubert_handle_t h, out;
  cubert_error_t err;
  uint32_t data[4] = {1, 2, 3, 4};
  cubert_status_t st;
  cts_setup(&env, 0);
  self = cubert_client_device(env.client);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  /* the argument checks come first in either build */
  CHECK_STATUS(cubert_client_ensure_init_collective(env.client, NULL, 1, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_all_reduce(env.client, &h, &h, 99, &self, 1,
                                        CUBERT_REDUCE_OPERATION_SUM, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_recv(env.client, 16, CUBERT_COMM_DTYPE_U32, self, &out, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT); /* from itself */
  st = cubert_client_all_reduce(env.client, &h, &h, CUBERT_COMM_DTYPE_U32, &self, 1,
                                CUBERT_REDUCE_OPERATION_SUM, &err);
  if (!has(CUBERT_FEATURE_COLLECTIVE_OPS)) {
    check_compiled_out(st, &err, "CUBERT_CONFIG_COLLECTIVES");
    CHECK(!(cubert_client_features(env.client) & CUBERT_FEATURE_COLLECTIVES));
  } else if (!cts_has_collectives(env.client)) {
    CHECK_STATUS(st, CUBERT_STATUS_UNSUPPORTED); /* this device has none */
    CHECK(cubert_error_kind(&err) != CUBERT_ERROR_COMPILED_OUT);
  } else {
    CHECK_OK(st);
  }
  /* sync_collective has nothing to wait for; data moves between clients still */
  CHECK_OK(cubert_client_sync_collective(env.client, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h, data, sizeof data, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

TEST(cts_config_staging) {
  cts_env_t env;
  uint64_t sizes[2] = {64, 0};
  cubert_bytes_t b[2];
  cubert_handle_t h;
  uint8_t data[64], out[64];
  cts_setup(&env, 0);
  memset(data, 5, sizeof data);
  CHECK_STATUS(cubert_client_reserve_staging(env.client, NULL, 1, b, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_reserve_staging(env.client, sizes, 2, b, NULL));
  CHECK(b[0].data != NULL && b[0].size == 64);
  /* compiled out: the client's own buffers, as when a server refuses */
  if (!has(CUBERT_FEATURE_STAGING_BUFFERS)) {
    CHECK_EQ_U64(b[0].property, CUBERT_ALLOCATION_NATIVE);
    CHECK(!(cubert_client_features(env.client) & CUBERT_FEATURE_STAGING));
  }
  memcpy(b[0].data, data, sizeof data);
  CHECK_OK(cubert_client_staging(env.client, b, 1, false, NULL)); /* OK in either build */
  CHECK_OK(cubert_client_create_from_bytes(env.client, b[0], &h, NULL)); /* takes b[0] */
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK(memcmp(out, data, sizeof out) == 0);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  CHECK_OK(cubert_client_create_from_slice_pinned(env.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK(memcmp(out, data, sizeof out) == 0);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

TEST(cts_config_persistent_memory) {
  cts_env_t env;
  cubert_error_t err;
  cubert_status_t st;
  int calls = 0;
  cts_setup(&env, 0);
  CHECK_STATUS(cubert_client_memory_persistent_allocation(env.client, NULL, NULL, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  st = cubert_client_memory_persistent_allocation(env.client, noop_fn, &calls, &err);
  if (has(CUBERT_FEATURE_PERSISTENT_MEMORY)) {
    CHECK_OK(st);
    CHECK_EQ_I64(calls, 1);
  } else {
    check_compiled_out(st, &err, "CUBERT_CONFIG_PERSISTENT_MEMORY");
    CHECK_EQ_I64(calls, 0); /* fn is not run */
  }
  cts_teardown(&env);
}

TEST(cts_config_profiling_and_race_checker) {
  cts_env_t env;
  cubert_error_t err;
  cubert_profiling_token_t token;
  cubert_race_counters_t counters;
  cubert_status_t st;
  cts_setup(&env, 0);
  st = cubert_client_profile_start(env.client, &token, &err);
  if (has(CUBERT_FEATURE_PROFILING)) {
    cubert_profile_duration_t d;
    CHECK_OK(st);
    CHECK_OK(cubert_client_profile_end(env.client, token, &d, NULL));
  } else {
    check_compiled_out(st, &err, "CUBERT_CONFIG_PROFILING");
    CHECK_OK(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_OFF, NULL, NULL, NULL));
    check_compiled_out(cubert_client_set_profiling(env.client, CUBERT_PROFILE_LEVEL_BASIC,
                                                   drop_text, NULL, &err),
                       &err, "CUBERT_CONFIG_PROFILING");
    CHECK_EQ_U64(cubert_client_profiling_level(env.client), CUBERT_PROFILE_LEVEL_OFF);
  }
  /* a device cannot be asked for the race checker the library lacks */
  if (!has(CUBERT_FEATURE_RACE_CHECKER)) {
    cts_options_t o;
    cubert_client_t *client = NULL;
    memset(&o, 0, sizeof o);
    o.device_index = 1;
    o.race_check_forced = 1;
    check_compiled_out(cts_client_create(env.allocator, &o, &client, &err), &err,
                       "CUBERT_CONFIG_RACE_CHECKER");
    CHECK(client == NULL);
  }
  CHECK_OK(cubert_client_race_counters(env.client, &counters, NULL));
  if (!env.race_check) CHECK_EQ_U64(counters.reports, 0);
  cts_teardown(&env);
}

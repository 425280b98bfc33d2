/* SPDX-License-Identifier: MIT */
/* The server's replay over the fake driver's plans (core/server/server_record.c):
 * one plan built at the first replay, updated only where scalars or slots
 * changed, one plan_launch per replay; every failure of the plan primitives
 * returned with the recording still usable; a refused plan replayed launch by
 * launch; a driver without plans replays launch by launch. */
#include "test.h"
#include "counting_allocator.h"
#include "fake_driver.h"
#include "cubert/driver/server.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cubert/record.h"

/* the record's reason holds `text` (unless built without the reason texts) */
#define CHECK_REASON(err, text)                                                      \
  CHECK_MSG(!(cubert_config_features() & CUBERT_FEATURE_ERROR_REASONS) ||            \
                strstr((err).reason, (text)) != NULL,                                \
            "reason: %s", (err).reason)

static void fake_kernel_entry(const cubert_kernel_args_t *args, cubert_kernel_cube_t *cube) {
  (void)args;
  (void)cube;
}
/* one buffer, one scalar */
static const cubert_kernel_t k_rec = {"fake_record_kernel", fake_kernel_entry, NULL, NULL, 1, 1,
                                      {1, 1, 1}, 0, 0, 0, {0}};

typedef struct rec_env_t {
  counting_allocator_t counting;
  fake_device_t d;
  cubert_client_t *client;
  cubert_handle_t h[2];
  cubert_recording_t *rec;
} rec_env_t;

static cubert_status_t launch(cubert_client_t *c, const cubert_handle_t *h, uint32_t v) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, h);
  cubert_launch_arguments_set_u32(&args, 0, v);
  return cubert_client_launch(c, &k_rec, &one, &args, NULL);
}

/* A device over `driver`, two 64-byte buffers, a recording of three launches on h[0]. */
static void open_env(rec_env_t *e, const cubert_driver_t *driver) {
  cubert_server_options_t o;
  cubert_allocator_t a = counting_allocator_initialize(&e->counting);
  int i;
  fake_server_options(&o, 78, 0);
  e->client = fake_client(a, &e->d, &o, driver);
  CHECK_OK(cubert_client_empty(e->client, 64, &e->h[0], NULL));
  CHECK_OK(cubert_client_empty(e->client, 64, &e->h[1], NULL));
  CHECK_OK(cubert_client_record_begin(e->client, NULL));
  for (i = 0; i < 3; i++) CHECK_OK(launch(e->client, &e->h[0], (uint32_t)i));
  CHECK_OK(cubert_client_record_end(e->client, &e->rec, NULL));
  CHECK_EQ_I64(e->d.launches, 0);
}

static void close_env(rec_env_t *e) {
  cubert_recording_destroy(e->rec);
  CHECK_OK(cubert_client_handle_release(e->client, &e->h[0], NULL));
  CHECK_OK(cubert_client_handle_release(e->client, &e->h[1], NULL));
  fake_release(e->client, &e->d, &e->counting);
}

static void new_scalar(cubert_recording_t *rec, uint32_t launch_index, uint32_t v) {
  cubert_launch_arguments_t s;
  cubert_launch_arguments_initialize(&s);
  CHECK_OK(cubert_launch_arguments_set_u32(&s, 0, v));
  CHECK_OK(cubert_recording_set_scalars(rec, launch_index, &s, NULL));
}

TEST(record_fake_one_plan_updated_in_place) {
  rec_env_t e;
  open_env(&e, &fake_driver_full);
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL));
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL));
  CHECK_EQ_I64(e.d.plans_created, 1);
  CHECK_EQ_I64(e.d.plan_launches, 2);
  CHECK_EQ_I64(e.d.launches, 6);
  CHECK_EQ_I64(e.d.plan_updates, 0);
  new_scalar(e.rec, 1, 9); /* one launch */
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL));
  CHECK_EQ_I64(e.d.plan_updates, 1);
  CHECK_OK(cubert_recording_set_buffer(e.rec, 0, &e.h[1], NULL)); /* every launch */
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL));
  CHECK_EQ_I64(e.d.plan_updates, 4);
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL)); /* nothing changed */
  CHECK_EQ_I64(e.d.plan_updates, 4);
  CHECK_EQ_I64(e.d.plans_created, 1);
  CHECK_EQ_I64(e.d.live_plans, 1);
  close_env(&e); /* the plan destroyed with the recording */
}

TEST(record_fake_plan_create_failure_is_returned_then_retried) {
  rec_env_t e;
  cubert_error_t err;
  open_env(&e, &fake_driver_full);
  e.d.fail_only = "plan_create";
  e.d.fail_at = e.d.calls + 1;
  CHECK_STATUS(cubert_client_replay(e.client, e.rec, &err), CUBERT_STATUS_INTERNAL);
  CHECK_REASON(err, "plan_create failed");
  CHECK_EQ_I64(e.d.launches, 0); /* nothing enqueued */
  CHECK_EQ_I64(e.d.live_plans, 0);
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL)); /* built now */
  CHECK_EQ_I64(e.d.plans_created, 1);
  CHECK_EQ_I64(e.d.launches, 3);
  close_env(&e);
}

TEST(record_fake_plan_update_failure_is_returned_then_retried) {
  rec_env_t e;
  cubert_error_t err;
  open_env(&e, &fake_driver_full);
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL));
  new_scalar(e.rec, 2, 5);
  e.d.fail_only = "plan_update";
  e.d.fail_at = e.d.calls + 1;
  CHECK_STATUS(cubert_client_replay(e.client, e.rec, &err), CUBERT_STATUS_INTERNAL);
  CHECK_REASON(err, "plan_update failed");
  CHECK_EQ_I64(e.d.plan_launches, 1); /* not launched */
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL)); /* the update again, then the launch */
  CHECK_EQ_I64(e.d.plan_updates, 1);
  CHECK_EQ_I64(e.d.plan_launches, 2);
  close_env(&e);
}

TEST(record_fake_plan_launch_failure_is_returned) {
  rec_env_t e;
  cubert_error_t err;
  open_env(&e, &fake_driver_full);
  e.d.fail_only = "plan_launch";
  e.d.fail_at = e.d.calls + 1;
  CHECK_STATUS(cubert_client_replay(e.client, e.rec, &err), CUBERT_STATUS_INTERNAL);
  CHECK_REASON(err, "plan_launch failed");
  CHECK_EQ_I64(e.d.launches, 0);
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL));
  CHECK_EQ_I64(e.d.launches, 3);
  close_env(&e);
}

TEST(record_fake_refused_plan_replays_launch_by_launch) {
  rec_env_t e;
  open_env(&e, &fake_driver_full);
  e.d.plan_refuse = 1;
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL));
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL));
  CHECK_EQ_I64(e.d.plans_created, 0);
  CHECK_EQ_I64(e.d.plan_launches, 0);
  CHECK_EQ_I64(e.d.launches, 6);
  close_env(&e);
}

TEST(record_fake_without_plans_launch_by_launch) {
  rec_env_t e;
  cubert_error_t err;
  open_env(&e, &fake_driver);
  CHECK_OK(cubert_client_replay(e.client, e.rec, NULL));
  CHECK_EQ_I64(e.d.launches, 3);
  /* a launch the driver refuses midway: returned, the launches before it stay enqueued */
  e.d.fail_only = "launch failed";
  e.d.fail_at = e.d.calls + 2;
  CHECK_STATUS(cubert_client_replay(e.client, e.rec, &err), CUBERT_STATUS_INTERNAL);
  CHECK_EQ_I64(e.d.launches, 4);
  close_env(&e);
}

TEST(record_fake_device_lost_refuses_replay) {
  rec_env_t e;
  cubert_error_t err;
  open_env(&e, &fake_driver_full);
  e.d.fail_only = "plan_launch";
  e.d.fail_kind = CUBERT_ERROR_DEVICE_LOST;
  e.d.fail_at = e.d.calls + 1;
  CHECK_STATUS(cubert_client_replay(e.client, e.rec, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert_client_replay(e.client, e.rec, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert_client_record_begin(e.client, &err), CUBERT_STATUS_UNAVAILABLE);
  {
    cubert_handle_t other = e.h[1];
    CHECK_STATUS(cubert_recording_set_buffer(e.rec, 0, &other, &err), CUBERT_STATUS_UNAVAILABLE);
  }
  close_env(&e); /* the plan is destroyed without a sync (the device is lost) */
}

/* SPDX-License-Identifier: MIT */
/* The device lock's shards (core/device/device_shards.h, issue 27): a launch
 * over its own stream's buffers enqueues without the device lock when the
 * server was made with concurrent_launch; every case the sharded path
 * declines (the lock held, a binding of another stream, a slot never made, a
 * recording, a limit, a dynamic count, VALIDATE) takes the lock and behaves as
 * before; a driver error and a lost device on the sharded path; the shards'
 * allocation failing. One test thread over the fake driver (the threaded
 * stress is the CTS's cts_threads_launch_own_streams). Core only. */
#include "test.h"
#include "counting_allocator.h"
#include "fake_driver.h"
#include "cubert/driver/server.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"
#include "cubert/record.h"
#include "base/atomic.h"
#include "device/device_shards.h"

/* A lock that counts its acquisitions (one test thread). */
typedef struct count_lock_t {
  int locks, depth, max_depth;
} count_lock_t;

static void cl_lock(void *self) {
  count_lock_t *l = (count_lock_t *)self;
  l->locks++;
  if (++l->depth > l->max_depth) l->max_depth = l->depth;
}
static void cl_unlock(void *self) { ((count_lock_t *)self)->depth--; }

static void entry(const cubert_kernel_args_t *args, cubert_kernel_cube_t *cube) {
  (void)args;
  (void)cube;
}
static const cubert_kernel_t k_one = {"shard_kernel", entry, NULL, NULL, 0, 0, {1, 1, 1}, 1, 0, 0, {0}};

static void options(cubert_server_options_t *o, count_lock_t *l) {
  fake_server_options(o, 78, 0);
  o->max_handles = 64;
  o->lock.lock = cl_lock;
  o->lock.unlock = cl_unlock;
  o->lock.self = l;
  o->concurrent_launch = 1;
}

static cubert_status_t launch_with(cubert_client_t *client, const cubert_handle_t *h,
                                   cubert_error_t *err) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 1;
  return cubert_client_launch(client, &k_one, &count, &args, err);
}

#if defined(CUBERT_ATOMIC_SEQ_CST)
#define SKIP_UNLESS_SHARDS() ((void)0)
#else
#define SKIP_UNLESS_SHARDS() TEST_SKIP("this build has no seq_cst atomics: no shard is ever entered")
#endif

TEST(shards_launch_on_own_stream_skips_the_device_lock) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  count_lock_t l = {0, 0, 0};
  cubert_client_t *client;
  cubert_handle_t h;
  uint8_t data[16] = {0};
  int locks, i;
  SKIP_UNLESS_SHARDS();
  options(&o, &l);
  client = fake_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  locks = l.locks;
  for (i = 0; i < 5; i++) CHECK_OK(launch_with(client, &h, NULL));
  CHECK_EQ_I64(l.locks, locks); /* not one device lock */
  CHECK_EQ_I64(d.launches, 5);
  CHECK_OK(cubert_client_sync(client, NULL)); /* the lock again, and the launches are there */
  CHECK(l.locks > locks);
  CHECK_OK(cubert_client_read_one(client, &h, data, sizeof data, NULL));
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

/* Without concurrent_launch every launch takes the lock (today's path). */
TEST(shards_off_without_concurrent_launch) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  count_lock_t l = {0, 0, 0};
  cubert_client_t *client;
  cubert_handle_t h;
  uint8_t data[16] = {0};
  int locks;
  options(&o, &l);
  o.concurrent_launch = 0;
  client = fake_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  locks = l.locks;
  CHECK_OK(launch_with(client, &h, NULL));
  CHECK_EQ_I64(l.locks, locks + 1);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

static cubert_status_t launch_inside(void *user, cubert_error_t *err) {
  void **p = (void **)user;
  return launch_with((cubert_client_t *)p[0], (const cubert_handle_t *)p[1], err);
}

/* Every case the sharded path declines takes the device lock, with the
 * device path's answer. */
TEST(shards_declined_launches_take_the_device_lock) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  count_lock_t l = {0, 0, 0};
  cubert_client_t *client, *other;
  cubert_handle_t h;
  cubert_error_t err;
  cubert_recording_t *rec = NULL;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  uint8_t data[16] = {0};
  void *pair[2];
  int locks;
  SKIP_UNLESS_SHARDS();
  options(&o, &l);
  client = fake_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_clone(client, &other, NULL));
  /* inside an exclusive section: the lock is held (re-entered, depth 2) */
  pair[0] = client;
  pair[1] = &h;
  locks = l.locks;
  CHECK_OK(cubert_client_exclusive(client, launch_inside, pair, NULL));
  CHECK_EQ_I64(l.locks, locks + 2);
  CHECK_EQ_I64(l.max_depth, 2);
  /* a binding of stream 0 used on stream 1: the plan's wait (slot 1 made now) */
  cubert_client_set_stream(other, 1);
  locks = l.locks;
  CHECK_OK(launch_with(other, &h, NULL));
  CHECK_EQ_I64(l.locks, locks + 1);
  /* a slot never made (stream 2, no buffer): made with the lock */
  cubert_client_set_stream(other, 2);
  cubert_launch_arguments_initialize(&args);
  locks = l.locks;
  /* too few buffers: the device path refuses it */
  CHECK_STATUS(cubert_client_launch(other, &k_one, &count, &args, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_I64(l.locks, locks + 1);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_SERVER_VALIDATION);
  /* a limit: cube dim above the device's is queued on the stream, surfaces at sync */
  cubert_launch_arguments_initialize(&args);
  args.buffers = &h;
  args.buffer_count = 1;
  args.cube_dim.x = 4096;
  args.cube_dim.y = 1;
  args.cube_dim.z = 1;
  locks = l.locks;
  CHECK_OK(cubert_client_launch(client, &k_one, &count, &args, NULL));
  CHECK_EQ_I64(l.locks, locks + 1);
  CHECK_STATUS(cubert_client_sync(client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  /* a dynamic count */
  count = cubert_cube_count_new_dynamic(&h);
  cubert_launch_arguments_initialize(&args);
  args.buffers = &h;
  args.buffer_count = 1;
  locks = l.locks;
  CHECK_OK(cubert_client_launch(client, &k_one, &count, &args, NULL));
  CHECK_EQ_I64(l.locks, locks + 1);
  count = cubert_cube_count_new_single();
  /* a recording stream: appended with the lock, nothing launched */
  CHECK_OK(cubert_client_record_begin(client, NULL));
  locks = l.locks;
  d.launches = 0;
  CHECK_OK(launch_with(client, &h, NULL));
  CHECK_EQ_I64(l.locks, locks + 1);
  CHECK_EQ_I64(d.launches, 0);
  CHECK_OK(cubert_client_record_end(client, &rec, NULL));
  cubert_recording_destroy(rec);
  /* and the sharded path again once recording stopped */
  locks = l.locks;
  CHECK_OK(launch_with(client, &h, NULL));
  CHECK_EQ_I64(l.locks, locks);
  CHECK_EQ_I64(d.launches, 1);
  CHECK_OK(cubert_client_sync(client, NULL));
  cubert_client_release(other);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

/* The unchecked launch in VALIDATE mode: the device path. */
TEST(shards_validate_mode_takes_the_device_lock) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  count_lock_t l = {0, 0, 0};
  cubert_client_t *client;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  uint8_t data[16] = {0};
  int locks;
  SKIP_UNLESS_SHARDS();
  options(&o, &l);
  o.bounds_check = CUBERT_BOUNDS_CHECK_VALIDATE;
  client = fake_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  cubert_launch_arguments_initialize(&args);
  args.buffers = &h;
  args.buffer_count = 1;
  locks = l.locks;
  CHECK_OK(cubert_client_launch_unchecked(client, &k_one, &count, &args, NULL));
  CHECK_EQ_I64(l.locks, locks + 1);
  CHECK_EQ_I64(d.launches, 1);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

/* A driver refusal on the sharded path comes back with its record; a lost
 * device is made sticky (with the lock) and every later call answers it. */
TEST(shards_driver_error_and_lost_device) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  count_lock_t l = {0, 0, 0};
  cubert_client_t *client;
  cubert_handle_t h;
  cubert_error_t err;
  uint8_t data[16] = {0};
  int locks, calls;
  SKIP_UNLESS_SHARDS();
  options(&o, &l);
  client = fake_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  d.fail_only = "launch";
  d.fail_at = d.calls + 1;
  locks = l.locks;
  cubert_error_clear(&err);
  CHECK(launch_with(client, &h, &err) != CUBERT_STATUS_OK);
  CHECK(strstr(err.reason, "fake: launch failed") != NULL);
  CHECK_EQ_I64(l.locks, locks); /* refused on the sharded path */
  d.fail_only = NULL;
  d.fail_at = 0;
  CHECK_OK(launch_with(client, &h, NULL)); /* the device still works */
  d.lose_at_launch = 1;
  CHECK_STATUS(launch_with(client, &h, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK(strstr(err.reason, "fell off") != NULL);
  CHECK_EQ_I64(l.locks, locks + 1); /* the loss was noted with the lock */
  calls = d.calls;
  CHECK_STATUS(launch_with(client, &h, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK(strstr(err.reason, "fell off") != NULL);
  CHECK_STATUS(cubert_client_sync(client, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_I64(d.calls, calls); /* nothing reached the driver */
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

/* The shards' allocation failing fails the creation, nothing left. */
TEST(shards_creation_out_of_memory) {
  uint64_t n;
  int failed = 0;
  SKIP_UNLESS_SHARDS();
  for (n = 1; n < 200; n++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    fake_device_t d;
    cubert_server_options_t o;
    count_lock_t l = {0, 0, 0};
    cubert_client_t *client = NULL;
    cubert_error_t err;
    cubert_status_t st;
    options(&o, &l);
    fake_device_initialize(&d, a);
    counting_allocator_fail_at(&c, n, 0);
    st = cubert_server_client_create(a, &o, &fake_driver, &d, &client, &err);
    if (st == CUBERT_STATUS_OK) {
      cubert_client_release(client);
      CHECK_EQ_I64(c.live_blocks, 0);
      break;
    }
    failed++;
    CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_HOST_OUT_OF_MEMORY);
    CHECK_EQ_I64(c.live_blocks, 0);
  }
  CHECK(failed > 0);
  CHECK(n < 200);
}

/* The handshake itself: a held device lock keeps shards out; a held shard
 * keeps another enterer out; the lock's recursion. */
TEST(shards_handshake) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  count_lock_t l = {0, 0, 0};
  cubert_lock_t inner, lock;
  cubert_device_shards_t *s = NULL;
  SKIP_UNLESS_SHARDS();
  inner.lock = cl_lock;
  inner.unlock = cl_unlock;
  inner.self = &l;
  CHECK_STATUS(cubert__device_shards_create(a, inner, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert__device_shards_create(a, inner, NULL, &s));
  lock = cubert__device_shards_lock(s);
  CHECK(cubert__device_shards_enter(s, 3));
  CHECK(!cubert__device_shards_enter(s, 3 + CUBERT_DEVICE_SHARDS)); /* the same shard */
  CHECK(cubert__device_shards_enter(s, 4));
  cubert__device_shards_leave(s, 3);
  cubert__device_shards_leave(s, 4);
  lock.lock(lock.self);
  lock.lock(lock.self); /* recursive */
  CHECK(!cubert__device_shards_enter(s, 3));
  lock.unlock(lock.self);
  CHECK(!cubert__device_shards_enter(s, 5)); /* still held once */
  lock.unlock(lock.self);
  CHECK(cubert__device_shards_enter(s, 5));
  cubert__device_shards_leave(s, 5);
  /* the waiting enter: free at once; held (the shard, or the device lock by
   * this very thread) gives up after its bounded wait, never hangs */
  CHECK(cubert__device_shards_enter_wait(s, 6, false));
  CHECK(!cubert__device_shards_enter_wait(s, 6 + CUBERT_DEVICE_SHARDS, false));
  cubert__device_shards_leave(s, 6);
  lock.lock(lock.self);
  CHECK(!cubert__device_shards_enter_wait(s, 7, false));
  /* patient: waits in the (recursive) lock, which this thread holds, a
   * bounded number of rounds, then gives up: never hangs */
  CHECK(!cubert__device_shards_enter_wait(s, 7, true));
  CHECK_EQ_I64(l.depth, 1);
  lock.unlock(lock.self);
  CHECK(cubert__device_shards_enter_wait(s, 7, true));
  cubert__device_shards_leave(s, 7);
  CHECK_EQ_I64(l.locks, 3 + CUBERT_DEVICE_SHARDS_ROUNDS);
  CHECK_EQ_I64(l.depth, 0);
  cubert__device_shards_destroy(s);
  cubert__device_shards_destroy(NULL);
  CHECK_EQ_I64(c.live_blocks, 0);
}

/* An empty buffer's reserve on a stream whose slot exists: no device lock;
 * the driver's allocation failing comes back with its record (nothing
 * reserved); a lost device there is made sticky. */
TEST(shards_reserve_skips_the_device_lock) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  count_lock_t l = {0, 0, 0};
  cubert_client_t *client;
  cubert_handle_t h, e1, e2;
  cubert_error_t err;
  uint8_t data[16] = {0};
  int locks, calls;
  cubert_status_t st;
  SKIP_UNLESS_SHARDS();
  options(&o, &l);
  client = fake_client(a, &d, &o, &fake_driver);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL)); /* slot 0 made */
  locks = l.locks;
  CHECK_OK(cubert_client_empty(client, 256, &e1, NULL));
  CHECK_OK(launch_with(client, &e1, NULL)); /* bound on stream 0: sharded too */
  CHECK_EQ_I64(l.locks, locks);
  CHECK_OK(cubert_client_handle_release(client, &e1, NULL));
  /* a new page's allocation refused */
  d.fail_only = "memory_alloc";
  d.fail_at = d.calls + 1;
  st = cubert_client_empty(client, 700u << 10, &e2, &err);
  CHECK_STATUS(st, CUBERT_STATUS_INTERNAL); /* the fake's SERVER_GENERIC */
  CHECK_EQ_I64(d.failed, 1);
  CHECK(strstr(err.reason, "fake: memory_alloc failed") != NULL);
  CHECK_EQ_I64(l.locks, locks);
  /* the device lost there */
  d.fail_kind = CUBERT_ERROR_DEVICE_LOST;
  d.fail_at = d.calls + 1;
  CHECK_STATUS(cubert_client_empty(client, 900u << 10, &e2, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_I64(l.locks, locks + 1); /* noted with the lock */
  calls = d.calls;
  CHECK_STATUS(cubert_client_empty(client, 256, &e2, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_EQ_I64(d.calls, calls);
  d.fail_only = NULL;
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

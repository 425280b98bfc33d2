/* SPDX-License-Identifier: MIT */
/* The client's entry points at their edges, over the fake driver of
 * edges_driver.h: every NULL argument of every call (INVALID_ARGUMENT with a
 * record, outputs untouched, nothing reaches the driver), and a scenario that
 * uses most of the client run once per driver call with that call failing,
 * once per host allocation with that allocation failing, and once per driver
 * call with the device lost there: every failure comes back as a status with
 * its record, owned bytes are released exactly once, and nothing leaks. */
#include "edges_driver.h"
#include "cubert/cubert.h"
#include "memory/handle_table.h"
#include "cubert/driver/device.h"

static cubert_error_t fresh(void) {
  cubert_error_t e;
  cubert_error_clear(&e);
  return e;
}

#define CHECK_INVALID(expr)                                                   \
  do {                                                                        \
    cubert_error_t *ce_ = &e;                                                 \
    *ce_ = fresh();                                                           \
    CHECK_STATUS((expr), CUBERT_STATUS_INVALID_ARGUMENT);                     \
    CHECK_EQ_U64(cubert_error_kind(ce_), CUBERT_ERROR_INVALID_ARGUMENT);      \
  } while (0)

static cubert_status_t count_fn(void *user, cubert_error_t *err) {
  (void)err;
  (*(int *)user)++;
  return CUBERT_STATUS_OK;
}

static int g_released;
static void release_counted(void *owner, void *data, uint64_t size) {
  (void)owner;
  (void)data;
  (void)size;
  g_released++;
}

TEST(client_edges_null_arguments) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_COLLECTIVE_OPS | CUBERT_FEATURE_STAGING_BUFFERS |
                       CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_error_t e;
  cubert_handle_t h, out, bad;
  cubert_memory_layout_t layout;
  cubert_layout_descriptor_t ld;
  cubert_copy_descriptor_t cd;
  cubert_completion_t comp;
  cubert_resource_t res;
  cubert_memory_usage_t usage;
  cubert_bytes_t b;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_device_id_t self;
  uint8_t data[16] = {1, 2, 3}, dst[16];
  void *dsts[1];
  const void *srcs[1];
  uint64_t sizes[1] = {16}, shape[1] = {4}, big_shape[CUBERT_MAX_RANK + 1];
  int calls, runs = 0;
  ed_options(&o, 1);
  client = ed_client(a, &d, &o, &fake_driver_full);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  calls = d.calls;
  memset(&out, 0xA5, sizeof out);
  bad = out;
  dsts[0] = dst;
  srcs[0] = data;
  memset(&ld, 0, sizeof ld);
  ld.rank = 1;
  ld.shape[0] = 4;
  ld.elem_size = 4;
  memset(&cd, 0, sizeof cd);
  cd.binding = h;
  cd.rank = 1;
  cd.shape[0] = 4;
  cd.strides[0] = 1;
  cd.elem_size = 4;
  memset(big_shape, 0, sizeof big_shape);
  cubert_launch_arguments_initialize(&args);
  /* creation */
  CHECK_INVALID(cubert_client_create_from_slice(NULL, data, 4, &out, &e));
  CHECK_INVALID(cubert_client_create_from_slice(client, NULL, 4, &out, &e));
  CHECK_INVALID(cubert_client_create_from_slice(client, data, 4, NULL, &e));
  CHECK_INVALID(cubert_client_create_tensor_from_slice(NULL, data, 1, shape, 4, &layout, &e));
  CHECK_INVALID(cubert_client_create_tensor_from_slice(client, NULL, 1, shape, 4, &layout, &e));
  CHECK_INVALID(cubert_client_create_tensor_from_slice(client, data, 1, shape, 4, NULL, &e));
  CHECK_INVALID(cubert_client_create_tensor_from_slice(client, data, 1, NULL, 4, &layout, &e));
  CHECK_INVALID(
      cubert_client_create_tensor_from_slice(client, data, CUBERT_MAX_RANK + 1, big_shape, 4, &layout, &e));
  CHECK_INVALID(cubert_client_create_tensors_from_slices(NULL, &ld, srcs, 1, &layout, &e));
  CHECK_INVALID(cubert_client_create_tensors_from_slices(client, NULL, srcs, 1, &layout, &e));
  CHECK_INVALID(cubert_client_create_tensors_from_slices(client, &ld, NULL, 1, &layout, &e));
  CHECK_INVALID(cubert_client_create_tensors_from_slices(client, &ld, srcs, 1, NULL, &e));
  CHECK_INVALID(cubert_client_create_tensors_from_slices(client, &ld, srcs, 0, &layout, &e));
  srcs[0] = NULL;
  CHECK_INVALID(cubert_client_create_tensors_from_slices(client, &ld, srcs, 1, &layout, &e));
  srcs[0] = data;
  CHECK_INVALID(cubert_client_empty(NULL, 4, &out, &e));
  CHECK_INVALID(cubert_client_empty(client, 4, NULL, &e));
  CHECK_INVALID(cubert_client_empty_tensor(NULL, 1, shape, 4, &layout, &e));
  CHECK_INVALID(cubert_client_empty_tensor(client, 1, shape, 4, NULL, &e));
  CHECK_INVALID(cubert_client_empty_tensor(client, 1, NULL, 4, &layout, &e));
  CHECK_INVALID(cubert_client_empty_tensors(NULL, &ld, 1, &layout, &e));
  CHECK_INVALID(cubert_client_empty_tensors(client, NULL, 1, &layout, &e));
  CHECK_INVALID(cubert_client_empty_tensors(client, &ld, 1, NULL, &e));
  /* bytes: a NULL argument releases the bytes all the same (ownership moved) */
  g_released = 0;
  memset(&b, 0, sizeof b);
  b.data = data;
  b.size = 4;
  b.owner = &c;
  b.release = release_counted;
  CHECK_INVALID(cubert_client_create_from_bytes(NULL, b, &out, &e));
  CHECK_INVALID(cubert_client_create_from_bytes(client, b, NULL, &e));
  b.data = NULL;
  CHECK_INVALID(cubert_client_create_from_bytes(client, b, &out, &e));
  CHECK_EQ_I64(g_released, 3);
  /* writes and reads */
  CHECK_INVALID(cubert_client_write(NULL, &h, data, 4, &e));
  CHECK_INVALID(cubert_client_write(client, NULL, data, 4, &e));
  CHECK_INVALID(cubert_client_write(client, &h, NULL, 4, &e));
  CHECK_INVALID(cubert_client_read(NULL, &h, 1, dsts, sizes, &e));
  CHECK_INVALID(cubert_client_read(client, NULL, 1, dsts, sizes, &e));
  CHECK_INVALID(cubert_client_read(client, &h, 1, NULL, sizes, &e));
  CHECK_INVALID(cubert_client_read(client, &h, 1, dsts, NULL, &e));
  CHECK_INVALID(cubert_client_read(client, &h, 0, dsts, sizes, &e));
  dsts[0] = NULL;
  CHECK_INVALID(cubert_client_read(client, &h, 1, dsts, sizes, &e));
  dsts[0] = dst;
  CHECK_INVALID(cubert_client_read_async(client, &h, 1, dsts, sizes, NULL, &e));
  CHECK_INVALID(cubert_client_read_tensor(client, NULL, 1, dsts, sizes, &e));
  CHECK_INVALID(cubert_client_read_tensor_async(client, &cd, 1, dsts, sizes, NULL, &e));
  CHECK_INVALID(cubert_client_read_one_tensor_async(client, &cd, dst, 16, NULL, &e));
  cd.rank = CUBERT_MAX_RANK + 1;
  CHECK_INVALID(cubert_client_read_tensor(client, &cd, 1, dsts, sizes, &e));
  cd.rank = 1;
  CHECK_INVALID(cubert_client_get_resource(NULL, &h, &res, &e));
  CHECK_INVALID(cubert_client_get_resource(client, NULL, &res, &e));
  CHECK_INVALID(cubert_client_get_resource(client, &h, NULL, &e));
  /* launches, syncs, windows */
  CHECK_INVALID(cubert_client_launch(NULL, &g_ed_kernel, &count, &args, &e));
  CHECK_INVALID(cubert_client_launch(client, NULL, &count, &args, &e));
  CHECK_INVALID(cubert_client_launch(client, &g_ed_kernel, NULL, &args, &e));
  CHECK_INVALID((cubert_client_launch)(client, &g_ed_kernel, &count, NULL, &e));
  args.buffer_count = 1;
  CHECK_INVALID(cubert_client_launch(client, &g_ed_kernel, &count, &args, &e));
  args.buffer_count = 0;
  args.scalar_count = 1;
  CHECK_INVALID(cubert_client_launch(client, &g_ed_kernel, &count, &args, &e));
  args.scalar_count = 0;
  CHECK_INVALID(cubert_client_launch_unchecked(NULL, &g_ed_kernel, &count, &args, &e));
  CHECK_INVALID(cubert_client_flush(NULL, &e));
  CHECK_INVALID(cubert_client_sync(NULL, &e));
  CHECK_INVALID(cubert_client_sync_async(NULL, &comp, &e));
  CHECK_INVALID(cubert_client_sync_async(client, NULL, &e));
  CHECK_INVALID(cubert_client_exclusive(NULL, count_fn, &runs, &e));
  CHECK_INVALID(cubert_client_exclusive(client, NULL, &runs, &e));
  CHECK_INVALID(cubert_client_profile(NULL, count_fn, &runs, "p", NULL, &e));
  CHECK_INVALID(cubert_client_profile(client, NULL, &runs, "p", NULL, &e));
  CHECK_INVALID(cubert_client_memory_usage(NULL, &usage, &e));
  CHECK_INVALID(cubert_client_memory_usage(client, NULL, &e));
  CHECK_INVALID(cubert_client_memory_cleanup(NULL, &e));
  CHECK_INVALID(cubert_client_allocation_mode(NULL, CUBERT_MEMORY_ALLOCATION_MODE_AUTO, &e));
  CHECK_EQ_I64(runs, 0);
  /* handles */
  CHECK_INVALID(cubert_client_handle_clone(client, &h, NULL, &e));
  CHECK_INVALID(cubert_client_handle_offset(client, &h, 0, 0, NULL, &e));
  /* collectives */
  self = cubert_client_device(client);
  CHECK_INVALID(cubert_client_all_reduce(NULL, &h, &h, CUBERT_COMM_DTYPE_U32, &self, 1,
                                         CUBERT_REDUCE_OPERATION_SUM, &e));
  CHECK_INVALID(cubert_client_all_reduce(client, NULL, &h, CUBERT_COMM_DTYPE_U32, &self, 1,
                                         CUBERT_REDUCE_OPERATION_SUM, &e));
  CHECK_INVALID(cubert_client_all_reduce(client, &h, NULL, CUBERT_COMM_DTYPE_U32, &self, 1,
                                         CUBERT_REDUCE_OPERATION_SUM, &e));
  CHECK_INVALID(cubert_client_send(NULL, &cd, CUBERT_COMM_DTYPE_U32, self, &e));
  CHECK_INVALID(cubert_client_send(client, NULL, CUBERT_COMM_DTYPE_U32, self, &e));
  CHECK_INVALID(cubert_client_recv(NULL, 16, CUBERT_COMM_DTYPE_U32, self, &out, &e));
  CHECK_INVALID(cubert_client_recv(client, 16, CUBERT_COMM_DTYPE_U32, self, NULL, &e));
  CHECK_INVALID(cubert_client_change_client_sync(NULL, &cd, client, &layout, &e));
  CHECK_INVALID(cubert_client_change_client_sync(client, NULL, client, &layout, &e));
  CHECK_INVALID(cubert_client_change_client_sync(client, &cd, NULL, &layout, &e));
  CHECK_INVALID(cubert_client_change_client_sync(client, &cd, client, NULL, &e));
  CHECK_INVALID(cubert_client_to_client_tensor(NULL, &cd, client, CUBERT_COMM_DTYPE_U32, &out, &e));
  CHECK_INVALID(cubert_client_to_client_tensor(client, NULL, client, CUBERT_COMM_DTYPE_U32, &out, &e));
  CHECK_INVALID(cubert_client_to_client_tensor(client, &cd, NULL, CUBERT_COMM_DTYPE_U32, &out, &e));
  CHECK_INVALID(cubert_client_to_client_tensor(client, &cd, client, CUBERT_COMM_DTYPE_U32, NULL, &e));
  CHECK_INVALID(cubert_client_to_client(NULL, &h, client, CUBERT_COMM_DTYPE_U32, &out, &e));
  CHECK_INVALID(cubert_client_to_client(client, NULL, client, CUBERT_COMM_DTYPE_U32, &out, &e));
  CHECK_INVALID(cubert_client_to_client(client, &h, NULL, CUBERT_COMM_DTYPE_U32, &out, &e));
  CHECK_INVALID(cubert_client_to_client(client, &h, client, CUBERT_COMM_DTYPE_U32, NULL, &e));
  /* staging */
  CHECK_INVALID(cubert_client_create_from_slice_pinned(NULL, data, 4, &out, &e));
  CHECK_INVALID(cubert_client_create_from_slice_pinned(client, NULL, 4, &out, &e));
  CHECK_INVALID(cubert_client_create_from_slice_pinned(client, data, 4, NULL, &e));
  CHECK_INVALID(cubert_client_create_tensors_from_slices_pinned(NULL, &ld, srcs, 1, &layout, &e));
  CHECK_INVALID(cubert_client_create_tensors_from_slices_pinned(client, NULL, srcs, 1, &layout, &e));
  CHECK_INVALID(cubert_client_create_tensors_from_slices_pinned(client, &ld, NULL, 1, &layout, &e));
  CHECK_INVALID(cubert_client_create_tensors_from_slices_pinned(client, &ld, srcs, 1, NULL, &e));
  CHECK_INVALID(cubert_client_create_tensors_from_slices_pinned(client, &ld, srcs, 0, &layout, &e));
  srcs[0] = NULL;
  CHECK_INVALID(cubert_client_create_tensors_from_slices_pinned(client, &ld, srcs, 1, &layout, &e));
  srcs[0] = data;
  /* the plain getters answer a NULL client with zeros */
  cubert_client_release(NULL);
  cubert_client_set_stream(NULL, 3);
  cubert_client_unpin(NULL);
  cubert_client_properties(NULL, NULL);
  cubert_client_properties(client, NULL);
  CHECK_EQ_U64(cubert_client_stream(NULL), 0);
  CHECK_EQ_U64(cubert_client_features(NULL), 0);
  CHECK_EQ_U64(cubert_client_device(NULL).type_id, 0);
  CHECK_EQ_U64(cubert_server_collect(NULL), 0);
  {
    const cubert_driver_t *drv = NULL;
    void *dself = NULL;
    CHECK_STATUS(cubert_server_driver_of(NULL, &drv, &dself), CUBERT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(cubert_server_driver_of(client, NULL, &dself), CUBERT_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(cubert_server_driver_of(client, &drv, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
    CHECK(drv == NULL && dself == NULL);
    CHECK_OK(cubert_server_driver_of(client, &drv, &dself));
    CHECK(drv == &fake_driver_full && dself == &d);
  }
  CHECK(memcmp(&out, &bad, sizeof out) == 0); /* untouched */
  CHECK_EQ_I64(d.calls, calls);               /* nothing reached the driver */
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

/* ---- the scenario, failing at every point in turn ---- */

static uint64_t tick_ns(void *self) {
  uint64_t *t = (uint64_t *)self;
  return *t += 1000;
}

typedef struct sink_t {
  int calls;
} sink_t;
static void sink_fn(void *self, const char *text, size_t length) {
  (void)text;
  (void)length;
  ((sink_t *)self)->calls++;
}

#define MAX_HANDLES 24
typedef struct scenario_t {
  cubert_handle_t handles[MAX_HANDLES];
  int count;
  int step;
} scenario_t;

static void keep(scenario_t *s, const cubert_handle_t *h) {
  CHECK(s->count < MAX_HANDLES);
  s->handles[s->count++] = *h;
}

/* A failed call: a status and its record (a lost device: UNAVAILABLE, DEVICE_LOST). */
static void check_failure(cubert_status_t st, const cubert_error_t *e, const fake_device_t *d) {
  CHECK(st != CUBERT_STATUS_OK);
  CHECK_MSG(e->depth > 0, "status %s without a record", test_status_name(st));
  if (d->lost) {
    CHECK_STATUS(st, CUBERT_STATUS_UNAVAILABLE);
    CHECK(cubert_error_has_kind(e, CUBERT_ERROR_DEVICE_LOST));
  }
}

#define STEP(expr)                                                    \
  do {                                                                \
    cubert_status_t st_;                                              \
    s->step++;                                                        \
    cubert_error_clear(&e);                                           \
    st_ = (expr);                                                     \
    if (st_ != CUBERT_STATUS_OK) {                                    \
      check_failure(st_, &e, d);                                      \
      return st_;                                                     \
    }                                                                 \
  } while (0)

/* Most of the client, in order; stops at the first failure. */
static cubert_status_t scenario(cubert_client_t *client, fake_device_t *d, scenario_t *s) {
  cubert_error_t e;
  cubert_handle_t h, h2;
  cubert_memory_layout_t layouts[2];
  cubert_layout_descriptor_t ld[2];
  cubert_copy_descriptor_t cd;
  cubert_completion_t comp;
  cubert_resource_t res;
  cubert_memory_usage_t usage;
  cubert_bytes_t b, staged[2];
  cubert_launch_arguments_t args;
  cubert_binding_t binding;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_device_id_t self = cubert_client_device(client);
  cubert_profile_duration_t dur;
  cubert_profiling_token_t token;
  static uint8_t data[64], dst[64];
  static sink_t sink;
  void *dsts[2];
  const void *srcs[2];
  uint64_t sizes[2] = {64, 64}, shape[2] = {2, 8}, stage_sizes[2] = {32, 16};
  int runs = 0;
  size_t i;
  for (i = 0; i < sizeof data; i++) data[i] = (uint8_t)i;
  memset(ld, 0, sizeof ld);
  ld[0].rank = 2;
  ld[0].shape[0] = 2;
  ld[0].shape[1] = 8;
  ld[0].elem_size = 4;
  ld[1] = ld[0];
  ld[1].shape[0] = 1;
  srcs[0] = data;
  srcs[1] = data;
  dsts[0] = dst;
  dsts[1] = dst;
  STEP(cubert_client_create_from_slice(client, data, 64, &h, &e));
  keep(s, &h);
  g_released++;
  memset(&b, 0, sizeof b);
  b.data = data;
  b.size = 32;
  b.release = release_counted;
  STEP(cubert_client_create_from_bytes(client, b, &h2, &e));
  keep(s, &h2);
  STEP(cubert_client_write(client, &h, data, 48, &e));
  STEP(cubert_client_create_tensor_from_slice(client, data, 2, shape, 4, &layouts[0], &e));
  keep(s, &layouts[0].memory);
  STEP(cubert_client_create_tensors_from_slices(client, ld, srcs, 2, layouts, &e));
  keep(s, &layouts[0].memory);
  keep(s, &layouts[1].memory);
  STEP(cubert_client_empty(client, 40, &h2, &e));
  keep(s, &h2);
  STEP(cubert_client_empty_tensor(client, 2, shape, 4, &layouts[0], &e));
  keep(s, &layouts[0].memory);
  STEP(cubert_client_empty_tensors(client, ld, 2, layouts, &e));
  keep(s, &layouts[0].memory);
  keep(s, &layouts[1].memory);
  STEP(cubert_client_read(client, s->handles, 2, dsts, sizes, &e));
  CHECK(memcmp(dst, data, 48) == 0);
  STEP(cubert_client_read_async(client, s->handles, 1, dsts, sizes, &comp, &e));
  STEP(cubert_completion_wait(&comp, UINT64_MAX, &e));
  memset(&cd, 0, sizeof cd);
  cd.binding = s->handles[2];
  cd.rank = 2;
  cd.shape[0] = 2;
  cd.shape[1] = 8;
  cd.strides[0] = 8;
  cd.strides[1] = 1;
  cd.elem_size = 4;
  STEP(cubert_client_read_tensor(client, &cd, 1, dsts, sizes, &e));
  STEP(cubert_client_read_one_tensor_async(client, &cd, dst, 64, &comp, &e));
  STEP(cubert_completion_wait(&comp, UINT64_MAX, &e));
  STEP(cubert_client_get_resource(client, &h, &res, &e));
  CHECK(res.size == 64);
  cubert_launch_arguments_initialize(&args);
  binding = h;
  cubert_launch_arguments_initialize(&args);
  args.buffers = &binding;
  args.buffer_count = 1;
  STEP(cubert_client_launch(client, &g_ed_kernel, &count, &args, &e));
  STEP(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_FULL, sink_fn, &sink, &e));
  STEP(cubert_client_launch(client, &g_ed_kernel, &count, &args, &e));
  STEP(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_OFF, NULL, NULL, &e));
  STEP(cubert_client_launch_unchecked(client, &g_ed_kernel, &count, &args, &e));
  STEP(cubert_client_flush(client, &e));
  STEP(cubert_client_sync(client, &e));
  STEP(cubert_client_sync_async(client, &comp, &e));
  STEP(cubert_completion_wait(&comp, UINT64_MAX, &e));
  STEP(cubert_client_profile_start(client, &token, &e));
  STEP(cubert_client_profile_end(client, token, &dur, &e));
  STEP(cubert_client_profile(client, count_fn, &runs, "edges", &dur, &e));
  STEP(cubert_client_exclusive(client, count_fn, &runs, &e));
  STEP(cubert_client_reserve_staging(client, stage_sizes, 2, staged, &e));
  memset(staged[0].data, 5, 32);
  staged[1].release(staged[1].owner, staged[1].data, staged[1].size);
  STEP(cubert_client_staging(client, staged, 1, false, &e));
  STEP(cubert_client_create_from_bytes(client, staged[0], &h2, &e));
  keep(s, &h2);
  STEP(cubert_client_create_from_slice_pinned(client, data, 24, &h2, &e));
  keep(s, &h2);
  STEP(cubert_client_create_tensors_from_slices_pinned(client, ld, srcs, 2, layouts, &e));
  keep(s, &layouts[0].memory);
  keep(s, &layouts[1].memory);
  STEP(cubert_client_memory_persistent_allocation(client, count_fn, &runs, &e));
  STEP(cubert_client_allocation_mode(client, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT, &e));
  STEP(cubert_client_empty(client, 16, &h2, &e));
  keep(s, &h2);
  STEP(cubert_client_allocation_mode(client, CUBERT_MEMORY_ALLOCATION_MODE_AUTO, &e));
  STEP(cubert_client_ensure_init_collective(client, &self, 1, &e));
  STEP(cubert_client_all_reduce(client, &s->handles[0], &s->handles[0], CUBERT_COMM_DTYPE_U32,
                                &self, 1, CUBERT_REDUCE_OPERATION_SUM, &e));
  STEP(cubert_client_sync_collective(client, &e));
  STEP(cubert_client_memory_usage(client, &usage, &e));
  STEP(cubert_client_memory_cleanup(client, &e));
  STEP(cubert_client_handle_clone(client, &h, &h2, &e));
  keep(s, &h2);
  STEP(cubert_client_handle_offset(client, &h, 8, 8, &h2, &e));
  keep(s, &h2);
  STEP(cubert_client_sync(client, &e));
  CHECK_EQ_I64(runs, 3);
  return CUBERT_STATUS_OK;
}

/* Runs the scenario on a fresh device; returns how the device's faults went. */
static void run_once(cubert_error_kind_t kind, int driver_fail_at, uint64_t alloc_fail_at,
                     int *out_failed, int *out_steps, cubert_status_t *out_status) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  uint64_t clock = 0;
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  scenario_t s;
  cubert_status_t st;
  int i;
  ed_options(&o, 2);
  o.clock.self = &clock;
  o.clock.now_ns = tick_ns;
  o.race_check = 1;
  client = ed_client(a, &d, &o, &fake_driver_full);
  d.fail_kind = kind;
  d.fail_at = driver_fail_at ? d.calls + driver_fail_at : 0;
  if (alloc_fail_at) counting_allocator_fail_at(&c, alloc_fail_at, 0);
  memset(&s, 0, sizeof s);
  g_released = 0;
  st = scenario(client, &d, &s);
  *out_failed = d.failed + (int)c.failures;
  counting_allocator_fail_at(&c, 0, 0);
  if (d.lost) {
    /* sticky: every later call says so at once */
    cubert_error_t e;
    CHECK_STATUS(cubert_client_sync(client, &e), CUBERT_STATUS_UNAVAILABLE);
    CHECK(cubert_error_has_kind(&e, CUBERT_ERROR_DEVICE_LOST));
    CHECK_STATUS(cubert_client_flush(client, &e), CUBERT_STATUS_UNAVAILABLE);
  } else if (st != CUBERT_STATUS_OK) {
    /* the device stays usable after a failed call (asynchronous errors drained once) */
    cubert_error_t e;
    cubert_status_t again = cubert_client_sync(client, &e);
    if (again != CUBERT_STATUS_OK) again = cubert_client_sync(client, &e);
    CHECK_OK(again);
  }
  for (i = 0; i < s.count; i++) CHECK_OK(cubert_client_handle_release(client, &s.handles[i], NULL));
  if (s.step >= 2) CHECK_EQ_I64(g_released, 2); /* the bytes moved in: released once */
  *out_steps = s.step;
  *out_status = st;
  fake_release(client, &d, &c);
}

static void fault_loop(cubert_error_kind_t kind, int driver) {
  int n, failed, steps, full_steps = 0, failures = 0;
  cubert_status_t st;
  run_once(kind, 0, 0, &failed, &full_steps, &st);
  CHECK_OK(st);
  CHECK_EQ_I64(failed, 0);
  for (n = 1; n < 2000; n++) {
    run_once(kind, driver ? n : 0, driver ? 0 : (uint64_t)n, &failed, &steps, &st);
    if (failed == 0) break; /* past the scenario's last call */
    if (st != CUBERT_STATUS_OK) failures++;
    else CHECK(steps == full_steps); /* a failure the scenario never saw (a GC wait, ...) */
  }
  CHECK(n < 2000);
  CHECK_MSG(failures > 20, "only %d failures surfaced", failures);
}

TEST(client_edges_every_driver_call_fails_in_turn) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING | CUBERT_FEATURE_STAGING_BUFFERS |
                       CUBERT_FEATURE_COLLECTIVE_OPS | CUBERT_FEATURE_PERSISTENT_MEMORY |
                       CUBERT_FEATURE_RACE_CHECKER);
  fault_loop(CUBERT_ERROR_SERVER_GENERIC, 1);
}

TEST(client_edges_device_lost_at_every_driver_call) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING | CUBERT_FEATURE_STAGING_BUFFERS |
                       CUBERT_FEATURE_COLLECTIVE_OPS | CUBERT_FEATURE_PERSISTENT_MEMORY |
                       CUBERT_FEATURE_RACE_CHECKER);
  fault_loop(CUBERT_ERROR_DEVICE_LOST, 1);
}

TEST(client_edges_every_allocation_fails_in_turn) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING | CUBERT_FEATURE_STAGING_BUFFERS |
                       CUBERT_FEATURE_COLLECTIVE_OPS | CUBERT_FEATURE_PERSISTENT_MEMORY |
                       CUBERT_FEATURE_RACE_CHECKER);
  fault_loop(CUBERT_ERROR_SERVER_GENERIC, 0);
}

/* ---- arguments beyond NULL ---- */

static void unnamed_entry(const cubert_kernel_args_t *args, cubert_kernel_cube_t *cube) {
  (void)args;
  (void)cube;
}

/* Handles of another device, empty buffers, counts beyond the batch limit,
 * shapes that overflow, rank-0 descriptors, a kernel without a name profiled
 * in full (static and dynamic counts), the profile summary at release. */
TEST(client_edges_foreign_handles_empty_buffers_and_limits) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PROFILING | CUBERT_FEATURE_STAGING_BUFFERS |
                       CUBERT_FEATURE_COLLECTIVE_OPS);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d, d2;
  cubert_server_options_t o;
  cubert_client_t *client, *other;
  cubert_error_t e;
  cubert_handle_t h, foreign, empty, out;
  cubert_memory_layout_t layouts[70];
  cubert_layout_descriptor_t ld[70];
  cubert_copy_descriptor_t cd;
  cubert_resource_t res;
  cubert_device_id_t self;
  uint64_t shape[2] = {(uint64_t)1 << 40, (uint64_t)1 << 40}, dst_size = 64, zero = 0;
  uint8_t data[64] = {7}, dst[64];
  void *dsts[70];
  const void *srcs[70];
  uint64_t sizes[70];
  cubert_handle_t handles[70];
  uint64_t clock = 0;
  sink_t sink;
  int i;
  ed_options(&o, 5);
  o.clock.self = &clock;
  o.clock.now_ns = tick_ns;
  client = ed_client(a, &d, &o, &fake_driver_full);
  ed_options(&o, 6);
  other = ed_client(a, &d2, &o, &fake_driver_full);
  self = cubert_client_device(client);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_create_from_slice(other, data, sizeof data, &foreign, NULL));
  /* another device's handle */
  CHECK_STATUS(cubert_client_write(client, &foreign, data, 4, &e), CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_DEVICE_MISMATCH);
  CHECK_STATUS(cubert_client_get_resource(client, &foreign, &res, &e), CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_DEVICE_MISMATCH);
  CHECK_STATUS(cubert_client_all_reduce(client, &h, &foreign, CUBERT_COMM_DTYPE_U32, &self, 1,
                                        CUBERT_REDUCE_OPERATION_SUM, &e),
               CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_DEVICE_MISMATCH);
  /* empty buffers: size 0 creates, writes and reads need no data */
  CHECK_OK(cubert_client_create_from_slice(client, NULL, 0, &empty, NULL));
  CHECK_OK(cubert_client_write(client, &empty, NULL, 0, NULL));
  dsts[0] = NULL;
  CHECK_OK(cubert_client_read(client, &empty, 1, dsts, &zero, NULL));
  /* batches above 64 */
  memset(ld, 0, sizeof ld);
  for (i = 0; i < 70; i++) {
    ld[i].rank = 1;
    ld[i].shape[0] = 1;
    ld[i].elem_size = 4;
    srcs[i] = data;
    dsts[i] = dst;
    sizes[i] = 64;
    handles[i] = h;
  }
  CHECK_STATUS(cubert_client_create_tensors_from_slices(client, ld, srcs, 70, layouts, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_create_tensors_from_slices_pinned(client, ld, srcs, 70, layouts, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_empty_tensors(client, ld, 70, layouts, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_read(client, handles, 70, dsts, sizes, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  /* shapes whose size overflows */
  CHECK(cubert_client_create_tensor_from_slice(client, data, 2, shape, 4, &layouts[0], &e) !=
        CUBERT_STATUS_OK);
  CHECK(cubert_client_empty_tensor(client, 2, shape, 4, &layouts[0], &e) != CUBERT_STATUS_OK);
  ld[0].rank = 2;
  ld[0].shape[0] = ld[0].shape[1] = (uint64_t)1 << 40;
  CHECK(cubert_client_create_tensors_from_slices_pinned(client, ld, srcs, 1, layouts, &e) !=
        CUBERT_STATUS_OK);
  memset(&cd, 0, sizeof cd);
  cd.binding = h;
  cd.rank = 2;
  cd.shape[0] = cd.shape[1] = (uint64_t)1 << 40;
  cd.strides[1] = 1;
  cd.elem_size = 4;
  dsts[0] = dst;
  CHECK_STATUS(cubert_client_read_tensor(client, &cd, 1, dsts, &dst_size, &e), CUBERT_STATUS_OVERFLOW);
  /* rank 0: the binding's bytes, here moved to the other device */
  cd.rank = 0;
  memset(&layouts[0], 0, sizeof layouts[0]);
  CHECK_OK(cubert_client_change_client_sync(client, &cd, other, &layouts[0], NULL));
  CHECK_EQ_U64(layouts[0].rank, 1);
  CHECK_EQ_U64(cubert_handle_size_in_used(&layouts[0].memory), 64);
  memset(dst, 0, sizeof dst);
  CHECK_OK(cubert_client_read_one(other, &layouts[0].memory, dst, 64, NULL));
  CHECK(memcmp(dst, data, 64) == 0);
  CHECK_OK(cubert_client_handle_release(other, &layouts[0].memory, NULL));
  /* to_client between two devices of one type with collectives: send / recv */
  CHECK_OK(cubert_client_to_client(client, &h, other, CUBERT_COMM_DTYPE_U32, &out, NULL));
  CHECK_EQ_U64(d.collectives, 1);
  CHECK_EQ_U64(d2.collectives, 1);
  memset(dst, 0, sizeof dst);
  CHECK_OK(cubert_client_read_one(other, &out, dst, 64, NULL));
  CHECK(memcmp(dst, data, 64) == 0);
  CHECK_OK(cubert_client_handle_release(other, &out, NULL));
  /* a kernel without a name, profiled in full: static and dynamic counts */
  {
    cubert_kernel_t k = {NULL, unnamed_entry, NULL, NULL, 0, 0, {1, 1, 1}, 0, 0, 0, {0}};
    cubert_launch_arguments_t args;
    cubert_cube_count_t one = cubert_cube_count_new_single();
    cubert_cube_count_t dyn = cubert_cube_count_new_dynamic(&h);
    uint32_t counts[3] = {1, 1, 1};
    cubert_launch_arguments_initialize(&args);
    CHECK_OK(cubert_client_write(client, &h, counts, sizeof counts, NULL));
    memset(&sink, 0, sizeof sink);
    CHECK_OK(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_FULL, sink_fn, &sink, NULL));
    CHECK_OK(cubert_client_launch(client, &k, &one, &args, NULL));
    CHECK_OK(cubert_client_launch(client, &k, &dyn, &args, NULL));
    CHECK_EQ_I64(d.launches, 2);
    CHECK(sink.calls >= 2); /* a line per launch */
  }
  CHECK_OK(cubert_client_handle_release(client, &empty, NULL));
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  CHECK_OK(cubert_client_handle_release(other, &foreign, NULL));
  i = sink.calls;
  CHECK_OK(cubert_client_sync(client, NULL)); /* prints the summary */
  CHECK(sink.calls > i);
  cubert_client_release(client);
  CHECK_EQ_I64(d.destroyed, 1);
  CHECK_EQ_I64(d.live_blocks, 0);
  fake_release(other, &d2, &c);
}

/* The race checker's queries at their edges, a profile_end without an out
 * duration, handle calls on a dead handle, clients made without a lock. */
TEST(client_edges_kit_queries_and_dead_handles) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_RACE_CHECKER | CUBERT_FEATURE_PROFILING);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client, *none = NULL;
  cubert_error_t e;
  cubert_handle_t h, out;
  cubert_race_counters_t counters;
  cubert_race_report_t report;
  cubert_profiling_token_t token;
  uint64_t clock = 0;
  uint8_t data[16] = {1};
  ed_options(&o, 7);
  o.lock.unlock = NULL;
  memset(&d, 0, sizeof d);
  d.allocator = a;
  CHECK_STATUS(cubert_server_client_create(a, &o, &fake_driver, &d, &none, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(none == NULL);
  ed_options(&o, 7);
  o.race_check = 1;
  o.clock.self = &clock;
  o.clock.now_ns = tick_ns;
  client = ed_client(a, &d, &o, &fake_driver);
  CHECK(cubert__client_handle_table(client) != NULL);
  CHECK(cubert__client_handle_table(NULL) == NULL);
  CHECK_STATUS(cubert_client_race_counters(client, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_race_last_report(NULL, &report, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_race_counters(client, &counters, NULL));
  CHECK_OK(cubert_client_profile_start(client, &token, NULL));
  CHECK_STATUS(cubert_client_profile_end(client, token, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  memset(&out, 0x5A, sizeof out);
  CHECK(cubert_client_handle_clone(client, &h, &out, &e) != CUBERT_STATUS_OK);
  CHECK(cubert_client_handle_offset(client, &h, 1, 1, &out, &e) != CUBERT_STATUS_OK);
  CHECK_EQ_U64(out.size, 0x5A5A5A5A5A5A5A5AULL); /* untouched */
  fake_release(client, &d, &c);
}

/* ---- a device handle that refuses every call ---- */

static cubert_status_t refuse_submit(void *self, cubert_device_task_fn_t fn, const void *p, size_t n) {
  (void)self;
  (void)fn;
  (void)p;
  (void)n;
  return CUBERT_STATUS_UNAVAILABLE;
}
static cubert_status_t refuse_blocking(void *self, cubert_device_task_fn_t fn, void *p) {
  (void)self;
  (void)fn;
  (void)p;
  return CUBERT_STATUS_UNAVAILABLE;
}
static cubert_status_t refuse_exclusive(void *self, cubert_device_exclusive_fn_t fn, void *u) {
  (void)self;
  (void)fn;
  (void)u;
  return CUBERT_STATUS_UNAVAILABLE;
}
static cubert_status_t refuse_flush(void *self) {
  (void)self;
  return CUBERT_STATUS_UNAVAILABLE;
}
static bool refuse_is_blocking(const void *self) {
  (void)self;
  return true;
}
static void refuse_destroy(void *self) { (void)self; }
static const cubert_device_handle_vtable_t g_refusing = {refuse_submit, refuse_blocking,
                                                         refuse_exclusive, refuse_flush,
                                                         refuse_is_blocking, refuse_destroy};
static cubert_status_t refusing_factory(void *self, cubert_allocator_t allocator, void *context,
                                        cubert_device_handle_t *out) {
  (void)self;
  (void)allocator;
  (void)context;
  out->vtable = &g_refusing;
  out->self = NULL;
  return CUBERT_STATUS_OK;
}

/* Every call that needs the device answers UNAVAILABLE (DEVICE_LOST), releases
 * the bytes it was given once, and leaves nothing behind. */
TEST(client_edges_refusing_device_handle) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PERSISTENT_MEMORY | CUBERT_FEATURE_RACE_CHECKER);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_error_t e;
  cubert_handle_t h;
  cubert_memory_layout_t layouts[2];
  cubert_layout_descriptor_t ld[2];
  cubert_completion_t comp;
  cubert_memory_usage_t usage;
  cubert_bytes_t b;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_race_report_t report;
  uint8_t data[32] = {1};
  uint64_t shape[1] = {4};
  const void *srcs[2];
  int runs = 0;
  ed_options(&o, 8);
  o.handle_factory = refusing_factory;
  client = ed_client(a, &d, &o, &fake_driver);
  memset(ld, 0, sizeof ld);
  ld[0].rank = ld[1].rank = 1;
  ld[0].shape[0] = ld[1].shape[0] = 4;
  ld[0].elem_size = ld[1].elem_size = 4;
  srcs[0] = srcs[1] = data;
#define CHECK_REFUSED(expr)                                                 \
  do {                                                                      \
    cubert_error_clear(&e);                                                 \
    CHECK_STATUS((expr), CUBERT_STATUS_UNAVAILABLE);                        \
    CHECK_EQ_U64(cubert_error_kind(&e), CUBERT_ERROR_DEVICE_LOST);          \
  } while (0)
  CHECK_REFUSED(cubert_client_create_from_slice(client, data, sizeof data, &h, &e));
  g_released = 0;
  memset(&b, 0, sizeof b);
  b.data = data;
  b.size = 8;
  b.release = release_counted;
  CHECK_REFUSED(cubert_client_create_from_bytes(client, b, &h, &e));
  CHECK_EQ_I64(g_released, 1);
  CHECK_REFUSED(cubert_client_create_tensor_from_slice(client, data, 1, shape, 4, &layouts[0], &e));
  CHECK_REFUSED(cubert_client_create_tensors_from_slices(client, ld, srcs, 2, layouts, &e));
  CHECK_REFUSED(cubert_client_empty(client, 8, &h, &e));
  CHECK_REFUSED(cubert_client_empty_tensors(client, ld, 2, layouts, &e));
  cubert_launch_arguments_initialize(&args);
  CHECK_REFUSED(cubert_client_launch(client, &g_ed_kernel_none, &one, &args, &e));
  CHECK_REFUSED(cubert_client_flush(client, &e));
  CHECK_REFUSED(cubert_client_sync(client, &e));
  CHECK_REFUSED(cubert_client_sync_async(client, &comp, &e));
  CHECK_REFUSED(cubert_client_memory_usage(client, &usage, &e));
  CHECK_REFUSED(cubert_client_memory_cleanup(client, &e));
  CHECK_REFUSED(cubert_client_allocation_mode(client, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT, &e));
  CHECK(cubert_client_exclusive(client, count_fn, &runs, &e) != CUBERT_STATUS_OK);
  CHECK(cubert_client_race_last_report(client, &report, &e) != CUBERT_STATUS_OK);
  CHECK_EQ_I64(runs, 0);
  CHECK_EQ_I64(d.calls, 0); /* nothing reached the driver */
  fake_release(client, &d, &c);
}

static void release_plain(void *owner, void *data, uint64_t size) {
  (void)size;
  (void)data;
  (*(int *)owner)++;
}

/* A full handle table, tensors with a zero dimension, staging of host bytes
 * (moved into pinned buffers, the old ones released once) and its refusals. */
TEST(client_edges_full_table_zero_dims_and_staging) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_STAGING_BUFFERS);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_error_t e;
  cubert_handle_t h[8];
  cubert_memory_layout_t layout;
  cubert_bytes_t b[2];
  uint64_t shape[2] = {0, 4};
  uint8_t data[16] = {4, 5, 6}, out[16];
  int n = 0, released = 0;
  ed_options(&o, 9);
  o.max_handles = 4;
  client = ed_client(a, &d, &o, &fake_driver_full);
  /* a zero dimension: an empty tensor, nothing uploaded */
  CHECK_OK(cubert_client_create_tensor_from_slice(client, data, 2, shape, 4, &layout, NULL));
  CHECK_EQ_U64(cubert_handle_size_in_used(&layout.memory), 0);
  CHECK_OK(cubert_client_handle_release(client, &layout.memory, NULL));
  /* the table holds 4 handles (the server may keep some of them) */
  while (n < 8 && cubert_client_create_from_slice(client, data, sizeof data, &h[n], &e) == CUBERT_STATUS_OK)
    n++;
  CHECK(n > 0 && n < 8);
  CHECK(e.depth > 0);
  while (n-- > 0) CHECK_OK(cubert_client_handle_release(client, &h[n], NULL));
  /* staging: native bytes move into pinned buffers; the old ones are released */
  memset(b, 0, sizeof b);
  b[0].data = data;
  b[0].size = sizeof data;
  b[0].owner = &released;
  b[0].release = release_plain;
  b[1].data = data;
  b[1].size = 4; /* no release: borrowed */
  CHECK_OK(cubert_client_staging(client, b, 2, false, NULL));
  CHECK_EQ_I64(released, 1);
  CHECK_EQ_U64(b[0].property, CUBERT_ALLOCATION_PINNED);
  CHECK_EQ_U64(b[1].property, CUBERT_ALLOCATION_PINNED);
  CHECK(b[0].data != data && memcmp(b[0].data, data, sizeof data) == 0);
  CHECK(memcmp(b[1].data, data, 4) == 0);
  b[0].release(b[0].owner, b[0].data, b[0].size);
  b[1].release(b[1].owner, b[1].data, b[1].size);
  /* a buffer with a size and no data */
  b[0].data = NULL;
  b[0].size = 4;
  CHECK_STATUS(cubert_client_staging(client, b, 1, false, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_staging(client, NULL, 1, false, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_staging(client, NULL, 0, false, NULL));
  (void)out;
  fake_release(client, &d, &c);
}

/* to_client between two devices with collectives (send on one, recv on the
 * other), with each driver call of either device failing in turn: the error
 * comes back with its record, the source handle is intact, nothing leaks. */
TEST(client_edges_to_client_fails_at_every_driver_call) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_COLLECTIVE_OPS);
  int side, n, failures = 0;
  for (side = 0; side < 2; side++) {
    for (n = 1; n < 200; n++) {
      counting_allocator_t c;
      cubert_allocator_t a = counting_allocator_initialize(&c);
      fake_device_t d[2];
      cubert_server_options_t o;
      cubert_client_t *client[2];
      cubert_handle_t h, out;
      cubert_error_t e;
      cubert_status_t st;
      uint8_t data[32], back[32];
      int i, failed;
      for (i = 0; i < 32; i++) data[i] = (uint8_t)(i * 3);
      for (i = 0; i < 2; i++) {
        ed_options(&o, (uint32_t)(30 + i));
        client[i] = ed_client(a, &d[i], &o, &fake_driver_full);
      }
      CHECK_OK(cubert_client_create_from_slice(client[0], data, sizeof data, &h, NULL));
      d[side].fail_at = d[side].calls + n;
      cubert_error_clear(&e);
      st = cubert_client_to_client(client[0], &h, client[1], CUBERT_COMM_DTYPE_U32, &out, &e);
      failed = d[side].failed;
      d[side].fail_at = 0;
      if (st == CUBERT_STATUS_OK) {
        memset(back, 0, sizeof back);
        (void)cubert_client_sync(client[0], NULL);
        (void)cubert_client_sync(client[1], NULL);
        if (!failed) {
          CHECK_OK(cubert_client_read_one(client[1], &out, back, sizeof back, NULL));
          CHECK(memcmp(back, data, sizeof data) == 0);
        }
        CHECK_OK(cubert_client_handle_release(client[1], &out, NULL));
      } else {
        CHECK(e.depth > 0);
        failures++;
      }
      memset(back, 0, sizeof back);
      (void)cubert_client_sync(client[0], NULL);
      CHECK_OK(cubert_client_read_one(client[0], &h, back, sizeof back, NULL));
      CHECK(memcmp(back, data, sizeof data) == 0); /* the source is intact */
      CHECK_OK(cubert_client_handle_release(client[0], &h, NULL));
      cubert_client_release(client[1]);
      CHECK_EQ_I64(d[1].live_blocks, 0);
      CHECK_EQ_I64(d[1].live_comms, 0);
      fake_release(client[0], &d[0], &c);
      if (!failed) break;
    }
    CHECK(n < 200);
  }
  CHECK_MSG(failures > 4, "only %d failures surfaced", failures);
}

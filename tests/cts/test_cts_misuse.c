/* SPDX-License-Identifier: MIT */
/* Conformance: integrity under misuse (issue 25; the catalogue of these
 * inputs: tests/osile-inputs.md). A handle is accepted only by the device
 * that issued it (every pair of drivers this build has, 257 devices of one
 * type); a completion keeps its device until waited on; launch counts, cube
 * count kinds and view alignment are checked before anything is read or
 * run; enums of the create options are checked where they enter; NULL data
 * follows one rule. Every refusal: status, kind, reason and fields. */
#include "cts.h"

#include <stdio.h>
#include <string.h>

#include "cubert/cube.h"
#include "cubert/memory.h"
#include "cubert_kernels.h"

/* A reason holds `what` (any reason when the library is built without them). */
static int reason_has(const cubert_error_t *e, const char *what) {
  if (!(cubert_config_features() & CUBERT_FEATURE_ERROR_REASONS)) return 1;
  return strstr(e->reason, what) != NULL;
}

/* Every driver the suite may register (cts_driver_find: NULL where this build has none). */
static const char *const k_all[4] = {"cpu", "deterministic", "inline", "cuda"};

/* A device of `server` in env (its own counting allocator; its race checker's
 * reports are not checked at teardown: the tests here make no race). */
static void peer_setup(cts_env_t *env, const cts_driver_t *server, uint32_t index) {
  cts_options_t o;
  cubert_error_t err;
  memset(env, 0, sizeof(*env));
  memset(&o, 0, sizeof o);
  o.device_index = index;
  o.workers = 1;
  o.max_streams = 4;
  o.memory_size = 1u << 20; /* small pages: the counting allocator fills each block */
  env->allocator = counting_allocator_initialize(&env->counting);
  CHECK_OK_E(cts_client_create_as(server, env->allocator, &o, &env->client, &err), err);
}

static cubert_handle_t make_u32(cubert_client_t *c, uint32_t first, uint32_t n) {
  uint32_t v[16];
  uint32_t i;
  cubert_handle_t h;
  for (i = 0; i < n; i++) v[i] = first + i;
  CHECK_OK(cubert_client_create_from_slice(c, v, n * sizeof(uint32_t), &h, NULL));
  return h;
}

static void check_u32(cubert_client_t *c, const cubert_handle_t *h, uint32_t first, uint32_t n) {
  uint32_t v[16];
  uint32_t i;
  cubert_error_t err;
  CHECK_OK_E(cubert_client_read_one(c, h, v, n * sizeof(uint32_t), &err), err);
  for (i = 0; i < n; i++) CHECK_EQ_U64(v[i], first + i);
}

static void check_mismatch(const cubert_error_t *err, const cubert_handle_t *h, const char *what) {
  CHECK_EQ_U64(err->status, CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK(cubert_error_kind(err) == CUBERT_ERROR_DEVICE_MISMATCH);
  CHECK_MSG(reason_has(err, what), "reason \"%s\" lacks \"%s\"", err->reason, what);
  CHECK_EQ_U64(err->field[0], h->device);
  CHECK_EQ_U64(err->field[1], h->device_key);
}

/* Every handle call of `c` refuses `h` (of another device) and changes
 * nothing: read, write, clone, offset, release, launch. */
static void check_refused(cubert_client_t *c, const cubert_handle_t *h, const char *what) {
  uint32_t buf[16] = {0};
  cubert_handle_t out;
  cubert_error_t err;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  uint64_t delta = 1;
  CHECK_STATUS(cubert_client_read_one(c, h, buf, sizeof buf, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  check_mismatch(&err, h, what);
  CHECK_STATUS(cubert_client_write(c, h, buf, 4, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  check_mismatch(&err, h, what);
  CHECK_STATUS(cubert_client_handle_clone(c, h, &out, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  check_mismatch(&err, h, what);
  CHECK_STATUS(cubert_client_handle_offset(c, h, 4, 0, &out, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  check_mismatch(&err, h, what);
  CHECK_STATUS(cubert_client_handle_release(c, h, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  check_mismatch(&err, h, what);
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 1;
  args.scalars = &delta;
  args.scalar_count = 1;
  CHECK_STATUS(cubert_client_launch(c, &ck_add_scalar_u32_kernel, &count, &args, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  check_mismatch(&err, h, what);
}

/* a's handle on b and b's on a are refused; both stay good on their own device. */
static void cross_check(cubert_client_t *a, cubert_client_t *b, const char *what) {
  cubert_handle_t ha = make_u32(a, 100, 16), hb = make_u32(b, 200, 16);
  check_refused(b, &ha, what);
  check_refused(a, &hb, what);
  check_u32(a, &ha, 100, 16);
  check_u32(b, &hb, 200, 16);
  CHECK_OK(cubert_client_handle_release(a, &ha, NULL));
  CHECK_OK(cubert_client_handle_release(b, &hb, NULL));
}

/* The device under test (index 0) beside a device of every other driver this
 * build has: index 0 where the type differs (the case an index-only check
 * let through), index 1 where it is the same. */
TEST(cts_misuse_handles_of_another_driver_are_refused) {
  cts_env_t env;
  uint32_t i, peers = 0;
  char skipped[256] = "";
  CTS_REQUIRE_HOST("devices of other drivers");
  cts_setup(&env, 0);
  for (i = 0; i < 4; i++) {
    const cts_driver_t *s = cts_driver_find(k_all[i]);
    char why[CUBERT_ERROR_REASON_SIZE + 16];
    cts_env_t peer;
    int same;
    if (s == cts_driver()) continue;
    if (!cts_driver_available(s, why, sizeof why)) {
      snprintf(skipped + strlen(skipped), sizeof skipped - strlen(skipped), "%s (%s); ",
               k_all[i], why);
      continue;
    }
    same = s->device_type == cts_device_type();
    peer_setup(&peer, s, same ? 1u : 0u);
    cross_check(env.client, peer.client, same ? "another device" : "another type");
    cts_teardown(&peer);
    peers++;
  }
  /* pairs with a driver this build lacks (CUDA without CUDA=1) are left out:
   * `skipped` names them for a debugger; the CUDA=1 suite runs them */
  (void)skipped;
  CHECK(peers >= 1); /* the threaded CPU and the inline driver are always there */
  cts_teardown(&env);
}

/* 257 devices of one type, one after another beside device 0: index 256
 * has the low 8 bits of index 0 (the handle table's old tag). */
TEST(cts_misuse_257_devices_of_one_type) {
  cts_env_t env;
  cts_options_t o;
  uint32_t i;
  memset(&o, 0, sizeof o);
  o.memory_size = 1u << 20;
  cts_setup_with(&env, &o);
  for (i = 1; i <= 256; i++) {
    cts_env_t peer;
    cubert_handle_t ha, hb;
    cubert_error_t err;
    uint32_t v[4];
    peer_setup(&peer, cts_driver(), i);
    ha = make_u32(env.client, i, 4);
    hb = make_u32(peer.client, i * 10u, 4);
    CHECK_STATUS(cubert_client_read_one(peer.client, &ha, v, sizeof v, &err),
                 CUBERT_STATUS_DEVICE_MISMATCH);
    check_mismatch(&err, &ha, "another device");
    CHECK_STATUS(cubert_client_handle_release(env.client, &hb, &err),
                 CUBERT_STATUS_DEVICE_MISMATCH);
    check_mismatch(&err, &hb, "another device");
    if (i == 256) check_refused(peer.client, &ha, "another device");
    check_u32(peer.client, &hb, i * 10u, 4);
    CHECK_OK(cubert_client_handle_release(peer.client, &hb, NULL));
    CHECK_OK(cubert_client_handle_release(env.client, &ha, NULL));
    cts_teardown(&peer);
  }
  cts_teardown(&env);
}

/* A device released and created again under the same id refuses the
 * handles of the earlier one. */
TEST(cts_misuse_handle_of_an_earlier_device_with_the_same_id) {
  cts_env_t env;
  cubert_handle_t old, fresh;
  cubert_error_t err;
  uint32_t v[4];
  cts_setup(&env, 0);
  old = make_u32(env.client, 1, 4);
  CHECK_OK(cubert_client_handle_release(env.client, &old, NULL));
  cts_teardown(&env);
  cts_setup(&env, 0);
  fresh = make_u32(env.client, 7, 4);
  CHECK_STATUS(cubert_client_read_one(env.client, &old, v, sizeof v, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  check_mismatch(&err, &old, "an earlier device with this id");
  check_u32(env.client, &fresh, 7, 4);
  CHECK_OK(cubert_client_handle_release(env.client, &fresh, NULL));
  cts_teardown(&env);
}

/* Waiting on read_async / sync_async after the device's last client was
 * released: the completions kept the device; the wait finishes the reads
 * and the last wait tears the device down. */
TEST(cts_misuse_wait_after_the_last_client_is_released) {
  cts_env_t env;
  cubert_handle_t h;
  cubert_completion_t read, sync;
  cubert_error_t err;
  uint32_t dst[16];
  void *dsts[1];
  uint64_t sizes[1];
  uint32_t i;
  int held;
  cts_setup(&env, 0);
  h = make_u32(env.client, 40, 16);
  memset(dst, 0, sizeof dst);
  dsts[0] = dst;
  sizes[0] = sizeof dst;
  CHECK_OK(cubert_client_read_async(env.client, &h, 1, dsts, sizes, &read, NULL));
  CHECK_OK(cubert_client_sync_async(env.client, &sync, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  /* a completion finished at once (the inline driver's) holds nothing */
  held = (read.vtable != NULL) + (sync.vtable != NULL);
  {
    cubert_client_t *last = env.client;
    cts_forget_client(&env);
    cubert_client_release(last);
  }
  /* still there while a completion is pending */
  CHECK_EQ_U64(cubert_client_device_count(cts_device_type()), held ? 1 : 0);
  CHECK_OK_E(cubert_completion_wait(&read, UINT64_MAX, &err), err);
  for (i = 0; i < 16; i++) CHECK_EQ_U64(dst[i], 40 + i);
  CHECK_EQ_U64(cubert_client_device_count(cts_device_type()), sync.vtable != NULL ? 1 : 0);
  CHECK_OK_E(cubert_completion_wait(&sync, UINT64_MAX, &err), err);
  CHECK_EQ_U64(cubert_client_device_count(cts_device_type()), 0);
  /* a finished completion returns its status again without the device */
  CHECK_OK(cubert_completion_wait(&sync, 0, NULL));
  env.race_check = 0; /* the device is gone: nothing to ask */
  cts_teardown(&env); /* every block given back */
}

/* buffer_count / scalar_count are checked against the limits before either
 * array is read (a 1-entry array with a count of UINT32_MAX). */
TEST(cts_misuse_launch_counts_checked_before_the_arrays) {
  cts_env_t env;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  uint64_t scalar = 1;
  cts_setup(&env, 0);
  h = make_u32(env.client, 0, 16);
  cubert_launch_arguments_initialize(&args);
  args.buffers = &h;
  args.buffer_count = UINT32_MAX;
  args.scalars = &scalar;
  args.scalar_count = 1;
  CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_EQ_U64(err.field[0], UINT32_MAX);
  CHECK_EQ_U64(err.field[1], CUBERT_KERNEL_MAX_BUFFERS);
  CHECK(reason_has(&err, "buffer_count above"));
  args.buffer_count = 17;
  args.buffers = NULL; /* the count is refused first, not the NULL list */
  CHECK_STATUS(cubert_client_launch_unchecked(env.client, &ck_add_scalar_u32_kernel, &count,
                                              &args, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(reason_has(&err, "buffer_count above"));
  args.buffers = &h;
  args.buffer_count = 1;
  args.scalar_count = 17;
  CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_EQ_U64(err.field[0], 17);
  CHECK_EQ_U64(err.field[1], CUBERT_KERNEL_MAX_SCALARS);
  CHECK(reason_has(&err, "scalar_count above"));
  check_u32(env.client, &h, 0, 16); /* nothing ran */
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

/* ck_add_scalar_u32 declaring its slot's alignment: 8, and 3 (not a power of two). */
static const cubert_kernel_t k_add_align8 = {"ck_add_scalar_u32", ck_add_scalar_u32,
                                             "ck_add_scalar_u32", NULL, 0, 0, {CK_SMALL_BLOCK, 1, 1},
                                             1, 1, 0, {8}};
static const cubert_kernel_t k_add_align3 = {"ck_add_scalar_u32", ck_add_scalar_u32,
                                             "ck_add_scalar_u32", NULL, 0, 0, {CK_SMALL_BLOCK, 1, 1},
                                             1, 1, 0, {3}};

static cubert_status_t add_one(cubert_client_t *c, const cubert_kernel_t *k,
                               const cubert_handle_t *h, cubert_error_t *err) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  uint64_t delta = 1;
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 1;
  args.scalars = &delta;
  args.scalar_count = 1;
  return cubert_client_launch(c, k, &count, &args, err);
}

static void check_misaligned(const cubert_error_t *err, uint64_t offset, uint64_t align,
                             const char *what) {
  CHECK_EQ_U64(err->status, CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(err) == CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_EQ_U64(err->field[0], 0);
  CHECK_EQ_U64(err->field[1], offset);
  CHECK_EQ_U64(err->field[2], align);
  CHECK_MSG(reason_has(err, what), "reason \"%s\" lacks \"%s\"", err->reason, what);
}

/* A u32 view on a sub-handle 2 bytes into its allocation is refused at
 * launch (on CUDA it would be CUDA_ERROR_MISALIGNED_ADDRESS); 4 bytes in is
 * fine; a slot declaring 8 needs 8. */
TEST(cts_misuse_misaligned_view_is_refused_at_launch) {
  cts_env_t env;
  cubert_handle_t base, sub;
  cubert_error_t err;
  uint32_t v[16];
  uint32_t i;
  cts_setup(&env, 0);
  base = make_u32(env.client, 0, 16);
  CHECK_OK(cubert_client_handle_offset(env.client, &base, 2, 2, &sub, NULL));
  CHECK_STATUS(add_one(env.client, &ck_add_scalar_u32_kernel, &sub, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  check_misaligned(&err, 2, CUBERT_KERNEL_DEFAULT_BUFFER_ALIGN, "not a multiple");
  CHECK_OK(cubert_client_handle_release(env.client, &sub, NULL));
  CHECK_OK(cubert_client_handle_offset(env.client, &base, 4, 0, &sub, NULL));
  CHECK_STATUS(add_one(env.client, &k_add_align8, &sub, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  check_misaligned(&err, 4, 8, "not a multiple");
  CHECK_STATUS(add_one(env.client, &k_add_align3, &sub, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  check_misaligned(&err, 4, 3, "power of two");
  /* a dynamic cube count's three u32 at an offset of 2 */
  {
    cubert_handle_t dyn;
    cubert_launch_arguments_t args;
    cubert_cube_count_t count;
    uint64_t delta = 1;
    CHECK_OK(cubert_client_handle_offset(env.client, &base, 2, 2, &dyn, NULL));
    count = cubert_cube_count_new_dynamic(&dyn);
    cubert_launch_arguments_initialize(&args);
    args.buffers = &sub;
    args.buffer_count = 1;
    args.scalars = &delta;
    args.scalar_count = 1;
    CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, &err),
                 CUBERT_STATUS_INVALID_ARGUMENT);
    CHECK(cubert_error_kind(&err) == CUBERT_ERROR_SERVER_VALIDATION);
    CHECK_EQ_U64(err.field[0], CUBERT_KERNEL_MAX_BUFFERS); /* the slot after the buffers */
    CHECK_EQ_U64(err.field[1], 2);
    CHECK(reason_has(&err, "dynamic cube count"));
    CHECK_OK(cubert_client_handle_release(env.client, &dyn, NULL));
  }
  check_u32(env.client, &base, 0, 16); /* nothing ran */
  CHECK_OK_E(add_one(env.client, &ck_add_scalar_u32_kernel, &sub, &err), err);
  CHECK_OK(cubert_client_read_one(env.client, &base, v, sizeof v, NULL));
  CHECK_EQ_U64(v[0], 0);
  for (i = 1; i < 16; i++) CHECK_EQ_U64(v[i], i + 1);
  CHECK_OK(cubert_client_handle_release(env.client, &sub, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &base, NULL));
  cts_teardown(&env);
}

/* A cube count of a kind outside the enum is refused before it is looked at. */
TEST(cts_misuse_unknown_cube_count_kind) {
  cts_env_t env;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_error_t err;
  uint64_t delta = 1;
  cts_setup(&env, 0);
  h = make_u32(env.client, 5, 16);
  cubert_launch_arguments_initialize(&args);
  args.buffers = &h;
  args.buffer_count = 1;
  args.scalars = &delta;
  args.scalar_count = 1;
  count.kind = (cubert_cube_count_kind_t)5;
  count.count.x = 1u << 30; /* would be above every limit, were it static */
  CHECK_STATUS(cubert_client_launch(env.client, &ck_add_scalar_u32_kernel, &count, &args, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.field[0], 5);
  CHECK(reason_has(&err, "unknown cube count kind"));
  CHECK_OK(cubert_client_sync(env.client, NULL)); /* nothing queued */
  check_u32(env.client, &h, 5, 16);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

static void check_create_refused(const cts_options_t *o, cubert_status_t want,
                                 cubert_error_kind_t kind, const char *what) {
  counting_allocator_t counting;
  cubert_allocator_t a = counting_allocator_initialize(&counting);
  cubert_client_t *client = NULL;
  cubert_error_t err;
  CHECK_STATUS(cts_client_create(a, o, &client, &err), want);
  CHECK(client == NULL);
  CHECK_EQ_U64(err.status, want);
  CHECK(cubert_error_kind(&err) == kind);
  CHECK_MSG(reason_has(&err, what), "reason \"%s\" lacks \"%s\"", err.reason, what);
  CHECK_EQ_U64(cubert_client_device_count(cts_device_type()), 0);
  CHECK_EQ_U64(counting.live_blocks, 0);
  counting_allocator_destroy(&counting);
}

/* Create options: a bounds_check outside the enum (it ran as UNCHECKED), a
 * CUSTOM memory configuration without pools or with NULL pools. */
TEST(cts_misuse_create_options_are_validated) {
  cts_options_t o;
  cubert_memory_configuration_t mc;
  cubert_memory_pool_options_t pool = cubert_memory_pool_direct(0);
  cts_env_t env;
  memset(&o, 0, sizeof o);
  o.bounds_check = (cubert_bounds_check_mode_t)9;
  check_create_refused(&o, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT,
                       "bounds_check");
  o.bounds_check = (cubert_bounds_check_mode_t)0x7FFFFFFF;
  check_create_refused(&o, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT,
                       "bounds_check");
  o.bounds_check = CUBERT_BOUNDS_CHECK_AUTO;
  if (cts_driver_is("cuda")) {
    printf("  (cuda: no memory_config option: the CUSTOM cases are the other drivers')\n");
    return;
  }
  mc.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  mc.pools = NULL;
  mc.pool_count = 0;
  o.memory_config = &mc;
  check_create_refused(&o, CUBERT_STATUS_CONFIG_INVALID, CUBERT_ERROR_CONFIG_EMPTY_POOL_LIST,
                       "at least one pool");
  mc.pool_count = 1;
  check_create_refused(&o, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT,
                       "NULL pools");
  mc.kind = (cubert_memory_configuration_kind_t)3;
  mc.pools = &pool;
  check_create_refused(&o, CUBERT_STATUS_INVALID_ARGUMENT, CUBERT_ERROR_INVALID_ARGUMENT,
                       "unknown memory configuration");
  /* one direct pool: a device that allocates */
  mc.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  cts_setup_with(&env, &o);
  {
    cubert_handle_t h = make_u32(env.client, 3, 8);
    check_u32(env.client, &h, 3, 8);
    CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  }
  cts_teardown(&env);
}

/* One rule for NULL data: allowed exactly for a tensor without bytes. */
TEST(cts_misuse_null_data_only_for_empty_tensors) {
  cts_env_t env;
  cubert_handle_t h;
  cubert_memory_layout_t l[2];
  cubert_layout_descriptor_t d[2];
  const void *data[2];
  uint64_t shape[2];
  uint32_t buf[10] = {0};
  cubert_error_t err;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, NULL, 0, &h, NULL));
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 0);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  shape[0] = 0;
  shape[1] = 5;
  CHECK_OK_E(cubert_client_create_tensor_from_slice(env.client, NULL, 2, shape, 4, &l[0], &err),
             err);
  CHECK_OK(cubert_client_handle_release(env.client, &l[0].memory, NULL));
  shape[0] = 2;
  CHECK_STATUS(cubert_client_create_tensor_from_slice(env.client, NULL, 2, shape, 4, &l[0], &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(reason_has(&err, "NULL data"));
  CHECK_STATUS(cubert_client_create_from_slice(env.client, NULL, 4, &h, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  memset(d, 0, sizeof d);
  d[0].strategy = d[1].strategy = CUBERT_LAYOUT_CONTIGUOUS;
  d[0].rank = d[1].rank = 2;
  d[0].shape[0] = 0;
  d[0].shape[1] = 5;
  d[1].shape[0] = 2;
  d[1].shape[1] = 5;
  d[0].elem_size = d[1].elem_size = 4;
  data[0] = NULL;
  data[1] = buf;
  CHECK_OK_E(cubert_client_create_tensors_from_slices(env.client, d, data, 2, l, &err), err);
  CHECK_OK(cubert_client_handle_release(env.client, &l[0].memory, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &l[1].memory, NULL));
  data[1] = NULL;
  CHECK_STATUS(cubert_client_create_tensors_from_slices(env.client, d, data, 2, l, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(reason_has(&err, "NULL data"));
  cts_teardown(&env);
}

static int g_released;
static void count_release(void *owner, void *data, uint64_t size) {
  (void)owner;
  (void)data;
  (void)size;
  g_released++;
}

/* An allocation property outside the enum: create_from_bytes refuses it (and
 * still releases the bytes it was given), staging refuses it unchanged. */
TEST(cts_misuse_unknown_allocation_property) {
  cts_env_t env;
  cubert_bytes_t b;
  cubert_handle_t h;
  cubert_error_t err;
  uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  cts_setup(&env, 0);
  memset(&b, 0, sizeof b);
  b.data = data;
  b.size = sizeof data;
  b.property = (cubert_allocation_property_t)7;
  b.release = count_release;
  g_released = 0;
  CHECK_STATUS(cubert_client_create_from_bytes(env.client, b, &h, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(err.field[0], 7);
  CHECK(reason_has(&err, "allocation property"));
  CHECK_EQ_U64(g_released, 1);
  b.release = NULL;
  CHECK_STATUS(cubert_client_staging(env.client, &b, 1, false, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(reason_has(&err, "allocation property"));
  CHECK(b.data == data && b.property == (cubert_allocation_property_t)7);
  cts_teardown(&env);
}

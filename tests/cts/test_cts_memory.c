/* SPDX-License-Identifier: MIT */
/* Conformance: create / empty / write / read round trips. */
#include "cts.h"

#include "cubert/cube.h"
#include "cubert/memory.h"
#include "cubert/cpu.h"
#include "memory/handle_table.h"

TEST(cts_created_resource_is_the_same_when_read) {
  cts_env_t env;
  const uint8_t data[3] = {0, 1, 2};
  uint8_t out[3] = {9, 9, 9};
  cubert_handle_t h;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, 3, &h, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK(memcmp(out, data, 3) == 0);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

TEST(cts_empty_allocates_memory) {
  cts_env_t env;
  uint8_t out[4] = {9, 9, 9, 9};
  cubert_handle_t h;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_empty(env.client, 4, &h, NULL));
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 4);
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

static void release_counted(void *owner, void *data, uint64_t size) {
  (void)size;
  (*(int *)owner)++;
  free(data);
}

TEST(cts_create_bytes_takes_ownership) {
  cts_env_t env;
  cubert_bytes_t bytes;
  cubert_handle_t h;
  int released = 0;
  uint32_t out[4];
  uint32_t *data = (uint32_t *)malloc(16);
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 4; i++) data[i] = 100u + (uint32_t)i;
  bytes.data = data;
  bytes.size = 16;
  bytes.property = CUBERT_ALLOCATION_NATIVE;
  bytes.owner = &released;
  bytes.release = release_counted;
  CHECK_OK(cubert_client_create_from_bytes(env.client, bytes, &h, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[3], 103);
  CHECK_EQ_I64(released, 1);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  /* failure path: ownership moves too (release called exactly once) */
  data = (uint32_t *)malloc(16);
  bytes.data = data;
  CHECK_STATUS(cubert_client_create_from_bytes(env.client, bytes, NULL, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_I64(released, 2);
  cts_teardown(&env);
}

/* strides[0] of an optimized [s0, s1] tensor under the device's policy. */
static uint64_t expected_stride0(const uint64_t shape[2], uint64_t elem_size) {
  cubert_layout_policy_t policy = cts_layout_policy();
  cubert_layout_descriptor_t d;
  cubert_layout_t l;
  uint64_t total = 0;
  memset(&d, 0, sizeof d);
  d.strategy = CUBERT_LAYOUT_OPTIMIZED;
  d.rank = 2;
  d.shape[0] = shape[0];
  d.shape[1] = shape[1];
  d.elem_size = elem_size;
  CHECK_OK(cubert_layout_policy_apply(&policy, &d, 1, &l, &total, NULL));
  return l.strides[0];
}

TEST(cts_create_tensor_round_trip_and_strides) {
  cts_env_t env;
  float data[15], out[15];
  uint64_t shape[2] = {3, 5};
  cubert_memory_layout_t layout;
  cubert_copy_descriptor_t desc;
  void *dsts[1];
  uint64_t sizes[1];
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 15; i++) data[i] = (float)i * 1.5f;
  CHECK_OK(cubert_client_create_tensor_from_slice(env.client, data, 2, shape, 4, &layout, NULL));
  CHECK_EQ_U64(layout.rank, 2);
  /* the device's policy (CPU: contiguous, 5; CUDA: pitched rows) */
  CHECK_EQ_U64(layout.strides[0], expected_stride0(shape, 4));
  CHECK_EQ_U64(layout.strides[1], 1);
  memset(&desc, 0, sizeof desc);
  desc.binding = layout.memory;
  desc.rank = 2;
  desc.shape[0] = 3;
  desc.shape[1] = 5;
  desc.strides[0] = layout.strides[0];
  desc.strides[1] = 1;
  desc.elem_size = 4;
  dsts[0] = out;
  sizes[0] = sizeof out;
  CHECK_OK(cubert_client_read_tensor(env.client, &desc, 1, dsts, sizes, NULL));
  CHECK(memcmp(out, data, sizeof data) == 0);
  CHECK_OK(cubert_client_handle_release(env.client, &layout.memory, NULL));
  cts_teardown(&env);
}

TEST(cts_create_tensors_share_one_allocation) {
  cts_env_t env;
  cubert_layout_descriptor_t d[3];
  cubert_memory_layout_t l[3];
  float a[15];
  uint16_t b[10];
  uint8_t c[3] = {7, 8, 9};
  const void *data[3];
  float ra[15];
  uint16_t rb[10];
  uint8_t rc[3];
  void *dsts[3];
  uint64_t sizes[3];
  cubert_handle_t hs[3];
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 15; i++) a[i] = (float)i;
  for (i = 0; i < 10; i++) b[i] = (uint16_t)(1000 + i);
  memset(d, 0, sizeof d);
  d[0].strategy = CUBERT_LAYOUT_CONTIGUOUS; d[0].rank = 2; d[0].shape[0] = 3; d[0].shape[1] = 5; d[0].elem_size = 4;
  d[1].strategy = CUBERT_LAYOUT_CONTIGUOUS; d[1].rank = 1; d[1].shape[0] = 10; d[1].elem_size = 2;
  d[2].strategy = CUBERT_LAYOUT_CONTIGUOUS; d[2].rank = 1; d[2].shape[0] = 3; d[2].elem_size = 1;
  data[0] = a; data[1] = b; data[2] = c;
  CHECK_OK(cubert_client_create_tensors_from_slices(env.client, d, data, 3, l, NULL));
  CHECK(l[0].memory.memory.index == l[1].memory.memory.index);
  CHECK(l[1].memory.memory.index == l[2].memory.memory.index);
  if (cts_layout_policy().kind == CUBERT_LAYOUT_POLICY_CONTIGUOUS) {
    /* CPU contiguous (alignment 8): offsets (0,36) (64,12) (88,5), total 96 */
    CHECK_EQ_U64(l[0].memory.size, 96);
    CHECK_EQ_U64(l[0].memory.offset_start, 0);
    CHECK_EQ_U64(l[0].memory.offset_end, 36);
    CHECK_EQ_U64(l[1].memory.offset_start, 64);
    CHECK_EQ_U64(l[1].memory.offset_end, 12);
    CHECK_EQ_U64(l[2].memory.offset_start, 88);
    CHECK_EQ_U64(l[2].memory.offset_end, 5);
  } else { /* CUDA (alignment 512): sizes 60, 20, 3 at 0, 512, 1024; total 1536 */
    CHECK_EQ_U64(l[0].memory.size, 1536);
    CHECK_EQ_U64(l[0].memory.offset_start, 0);
    CHECK_EQ_U64(l[0].memory.offset_end, 1536 - 60);
    CHECK_EQ_U64(l[1].memory.offset_start, 512);
    CHECK_EQ_U64(l[1].memory.offset_end, 1536 - 512 - 20);
    CHECK_EQ_U64(l[2].memory.offset_start, 1024);
    CHECK_EQ_U64(l[2].memory.offset_end, 1536 - 1024 - 3);
  }
  for (i = 0; i < 3; i++) hs[i] = l[i].memory;
  dsts[0] = ra; dsts[1] = rb; dsts[2] = rc;
  sizes[0] = sizeof ra; sizes[1] = sizeof rb; sizes[2] = sizeof rc;
  CHECK_OK(cubert_client_read(env.client, hs, 3, dsts, sizes, NULL));
  CHECK(memcmp(ra, a, sizeof a) == 0);
  CHECK(memcmp(rb, b, sizeof b) == 0);
  CHECK(memcmp(rc, c, sizeof c) == 0);
  for (i = 0; i < 3; i++) CHECK_OK(cubert_client_handle_release(env.client, &l[i].memory, NULL));
  cts_teardown(&env);
}

TEST(cts_empty_tensor_and_write) {
  cts_env_t env;
  uint64_t shape[1] = {8};
  cubert_memory_layout_t layout;
  cubert_layout_descriptor_t d[2];
  cubert_memory_layout_t two[2];
  int32_t data[8], out[8];
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 8; i++) data[i] = -i * 3;
  CHECK_OK(cubert_client_empty_tensor(env.client, 1, shape, 4, &layout, NULL));
  CHECK_OK(cubert_client_write(env.client, &layout.memory, data, sizeof data, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &layout.memory, out, sizeof out, NULL));
  CHECK(memcmp(out, data, sizeof data) == 0);
  /* a write larger than the handle is refused with nothing enqueued */
  CHECK_STATUS(cubert_client_write(env.client, &layout.memory, data, sizeof data + 4, NULL),
               CUBERT_STATUS_OUT_OF_RANGE);
  memset(d, 0, sizeof d);
  d[0].strategy = CUBERT_LAYOUT_OPTIMIZED; d[0].rank = 1; d[0].shape[0] = 4; d[0].elem_size = 4;
  d[1].strategy = CUBERT_LAYOUT_OPTIMIZED; d[1].rank = 1; d[1].shape[0] = 2; d[1].elem_size = 8;
  CHECK_OK(cubert_client_empty_tensors(env.client, d, 2, two, NULL));
  CHECK_EQ_U64(cubert_handle_size_in_used(&two[0].memory), 16);
  CHECK_EQ_U64(cubert_handle_size_in_used(&two[1].memory), 16);
  CHECK_OK(cubert_client_handle_release(env.client, &two[0].memory, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &two[1].memory, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &layout.memory, NULL));
  cts_teardown(&env);
}

TEST(cts_read_bad_inputs_change_nothing) {
  cts_env_t env, other;
  uint8_t data[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  uint8_t out[16];
  cubert_handle_t h, h2, dead;
  cubert_error_t err;
  cts_setup(&env, 0);
  cts_setup(&other, 1);
  CHECK_OK(cubert_client_create_from_slice(env.client, data, 16, &h, NULL));
  /* destination too small */
  CHECK_STATUS(cubert_client_read_one(env.client, &h, out, 8, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_OUT_OF_RANGE);
  /* a handle of another device */
  CHECK_OK(cubert_client_create_from_slice(other.client, data, 4, &h2, NULL));
  CHECK_STATUS(cubert_client_read_one(env.client, &h2, out, 16, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_STATUS(cubert_client_handle_release(env.client, &h2, NULL), CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_OK(cubert_client_handle_release(other.client, &h2, NULL));
  /* a released handle */
  CHECK_OK(cubert_client_create_from_slice(env.client, data, 4, &dead, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &dead, NULL));
  CHECK_STATUS(cubert_client_read_one(env.client, &dead, out, 16, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_client_handle_release(env.client, &dead, NULL), CUBERT_STATUS_INVALID_HANDLE);
  /* NULL arguments */
  CHECK_STATUS(cubert_client_read_one(env.client, NULL, out, 16, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_create_from_slice(env.client, NULL, 4, &h2, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* the valid handle still reads */
  CHECK_OK(cubert_client_read_one(env.client, &h, out, 16, NULL));
  CHECK(memcmp(out, data, 16) == 0);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&other);
  cts_teardown(&env);
}

TEST(cts_sub_handles_keep_the_base_alive) {
  cts_env_t env;
  uint8_t data[64], out[8];
  cubert_handle_t base, sub;
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 64; i++) data[i] = (uint8_t)i;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, 64, &base, NULL));
  CHECK_OK(cubert_client_handle_offset(env.client, &base, 24, 32, &sub, NULL));
  CHECK_EQ_U64(cubert_handle_size_in_used(&sub), 8);
  CHECK_OK(cubert_client_handle_release(env.client, &base, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &sub, out, sizeof out, NULL));
  for (i = 0; i < 8; i++) CHECK_EQ_U64(out[i], 24 + i); /* CubeCL's test_slices */
  CHECK_OK(cubert_client_handle_release(env.client, &sub, NULL));
  cts_teardown(&env);
}

TEST(cts_async_read_with_deadline) {
  cts_env_t env;
  uint32_t data[256], out[256];
  cubert_handle_t h;
  cubert_completion_t completion;
  void *dsts[1];
  uint64_t sizes[1];
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 256; i++) data[i] = (uint32_t)i * 7u;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &h, NULL));
  dsts[0] = out;
  sizes[0] = sizeof out;
  CHECK_OK(cubert_client_read_async(env.client, &h, 1, dsts, sizes, &completion, NULL));
  CHECK_OK(cubert_completion_wait(&completion, 10ull * 1000000000ull, NULL));
  CHECK(memcmp(out, data, sizeof data) == 0);
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_OK(cubert_client_flush(env.client, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  cts_teardown(&env);
}

TEST(cts_memory_usage_and_cleanup) {
  cts_env_t env;
  cubert_memory_usage_t usage;
  cubert_handle_t h;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_empty(env.client, 1 << 20, &h, NULL));
  CHECK_OK(cubert_client_memory_usage(env.client, &usage, NULL));
  CHECK(usage.bytes_in_use >= (1u << 20));
  CHECK(usage.bytes_reserved >= usage.bytes_in_use);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_OK(cubert_client_memory_cleanup(env.client, NULL));
  CHECK_OK(cubert_client_memory_usage(env.client, &usage, NULL));
  CHECK_EQ_U64(usage.bytes_in_use, 0);
  CHECK_OK(cubert_client_allocation_mode(env.client, CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT, NULL));
  CHECK_OK(cubert_client_allocation_mode(env.client, CUBERT_MEMORY_ALLOCATION_MODE_AUTO, NULL));
  CHECK_STATUS(cubert_client_allocation_mode(env.client, (cubert_memory_allocation_mode_t)7, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cts_teardown(&env);
}

TEST(cts_device_registry_load_and_enumerate) {
  cts_env_t env, env2;
  cubert_client_t *loaded = NULL, *clone = NULL;
  cubert_device_id_t ids[4];
  cts_setup(&env, 0);
  cts_setup(&env2, 1);
  CHECK_OK(cubert_client_load(cubert_client_device(env.client), &loaded, NULL));
  CHECK_EQ_U64(cubert_client_device(loaded).index_id, 0);
  CHECK_OK(cubert_client_clone(loaded, &clone, NULL));
  cubert_client_set_stream(clone, 42);
  CHECK_EQ_U64(cubert_client_stream(clone), 42);
  cubert_client_unpin(clone);
  CHECK(cubert_client_device_count_total() >= 2);
  CHECK_EQ_U64(cubert_client_enumerate_devices(cubert_client_device(env.client).type_id, ids, 4),
               2);
  cubert_client_release(clone);
  cubert_client_release(loaded);
  cts_teardown(&env2);
  cts_teardown(&env);
}

/* A failed allocation inside a create is never lost: CubeCL only logs it on
 * the device thread; cubert reserves while the call holds the
 * device, so the create itself returns the error, leaves nothing behind,
 * and the device keeps working. */
TEST(cts_create_beyond_device_memory_fails_cleanly) {
  TEST_REQUIRE_FEATURE(CUBERT_FEATURE_PAGED_POOLS);
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cts_options_t o;
  cubert_client_t *client = NULL;
  cubert_handle_t h;
  cubert_error_t err;
  uint8_t small[16] = {1}, out[16];
  uint32_t live;
  memset(&o, 0, sizeof o);
  o.device_index = 9;
  o.memory_size = 1 << 20; /* 1 MiB pages */
  o.workers = 1;
  CHECK_OK(cts_client_create(a, &o, &client, NULL));
  live = cubert__handle_table_live(cubert__client_handle_table(client));
  CHECK(cubert_client_empty(client, 64u << 20, &h, &err) != CUBERT_STATUS_OK);
  CHECK(err.status == CUBERT_STATUS_BUFFER_TOO_BIG || err.status == CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK_EQ_U64(cubert__handle_table_live(cubert__client_handle_table(client)), live);
  CHECK_OK(cubert_client_flush(client, NULL)); /* nothing left queued */
  CHECK_OK(cubert_client_create_from_slice(client, small, sizeof small, &h, NULL));
  CHECK_OK(cubert_client_read_one(client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[0], 1);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* The allocation-failure loop over a whole client program: the host
 * allocator fails its 1st, 2nd, ... call; every step either works or returns
 * an error, and nothing leaks. */
TEST_EX(cts_host_allocation_failure_loop, 240) {
  uint64_t n;
  int completed = 0;
  for (n = 1; n < 400 && !completed; n++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cts_options_t o;
    cubert_client_t *client = NULL;
    cubert_handle_t h;
    uint8_t data[64], out[64];
    memset(&o, 0, sizeof o);
    o.device_index = 10;
    o.max_streams = 2;
    o.workers = 1;
    o.max_handles = 64;
    memset(data, 7, sizeof data);
    counting_allocator_fail_at(&c, n, 1);
    if (cts_client_create(a, &o, &client, NULL) == CUBERT_STATUS_OK) {
      if (cubert_client_create_from_slice(client, data, sizeof data, &h, NULL) == CUBERT_STATUS_OK) {
        cubert_status_t st = cubert_client_read_one(client, &h, out, sizeof out, NULL);
        CHECK(st == CUBERT_STATUS_OK || st != CUBERT_STATUS_INTERNAL);
        if (st == CUBERT_STATUS_OK) CHECK(memcmp(out, data, sizeof data) == 0);
        CHECK_OK(cubert_client_handle_release(client, &h, NULL));
        if (st == CUBERT_STATUS_OK && c.failures == 0) completed = 1;
      }
      cubert_client_release(client);
    }
    CHECK_MSG(c.live_blocks == 0, "fail at %llu: %lld blocks leaked", (unsigned long long)n,
              (long long)c.live_blocks);
    counting_allocator_destroy(&c);
  }
  CHECK_MSG(completed, "the program never completed without a failure");
}

TEST(cts_io_optimized_vector_sizes_of_the_device) {
  cts_env_t env;
  cubert_device_properties_t p;
  uint32_t sizes[32];
  size_t n = 0;
  cts_setup(&env, 0);
  /* the load width: CPU 512 bits, 4-byte elements -> [16, 8, 4, 2, 1];
   * CUDA 128 bits -> [4, 2, 1] */
  cubert_client_properties(env.client, &p);
  CHECK_OK(cubert_client_io_optimized_vector_sizes(env.client, 4, sizes, 32, &n, NULL));
  CHECK_EQ_U64(sizes[0], p.hardware.load_width / 32);
  CHECK_EQ_U64(n, p.hardware.load_width == 512 ? 5 : p.hardware.load_width == 128 ? 3 : n);
  CHECK_EQ_U64(sizes[n - 1], 1);
  CHECK_STATUS(cubert_client_io_optimized_vector_sizes(env.client, 0, sizes, 32, &n, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cts_teardown(&env);
}

/* The CPU server copies contiguous tensors only: other strides are
 * refused with UnsupportedStrides and nothing is read. */
TEST(cts_read_tensor_rejects_strides_it_cannot_copy) {
  cts_env_t env;
  float data[12], out[12];
  uint64_t shape[2] = {3, 4};
  cubert_memory_layout_t layout;
  cubert_copy_descriptor_t d;
  void *dsts[1];
  uint64_t sizes[1];
  cubert_error_t err;
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 12; i++) data[i] = (float)i;
  CHECK_OK(cubert_client_create_tensor_from_slice(env.client, data, 2, shape, 4, &layout, NULL));
  memset(&d, 0, sizeof d);
  d.binding = layout.memory;
  d.rank = 2;
  d.shape[0] = 3;
  d.shape[1] = 4;
  d.strides[0] = 1; /* transposed: not contiguous */
  d.strides[1] = 3;
  d.elem_size = 4;
  dsts[0] = out;
  sizes[0] = sizeof out;
  memset(out, 0, sizeof out);
  CHECK_STATUS(cubert_client_read_tensor(env.client, &d, 1, dsts, sizes, &err),
               CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_IO_UNSUPPORTED_STRIDES);
  CHECK(out[1] == 0.0f);
  CHECK_OK(cubert_client_handle_release(env.client, &layout.memory, NULL));
  cts_teardown(&env);
}

/* SPDX-License-Identifier: MIT */
/* Conformance: staging buffers, the host bytes type and the pinned create
 * variants. */
#define TEST_REQUIRES (CUBERT_FEATURE_STAGING_BUFFERS)
#include "cts.h"

#include "cubert/cpu.h"
#include "client/client_internal.h" /* the server, for direct checks */

typedef struct owned_t {
  int releases;
  uint64_t released_size;
  unsigned char data[64];
} owned_t;

static void owned_release(void *owner, void *data, uint64_t size) {
  owned_t *o = (owned_t *)owner;
  CHECK(data == o->data);
  o->releases++;
  o->released_size = size;
}

static cubert_bytes_t owned_bytes(owned_t *o, uint64_t size, cubert_allocation_property_t p,
                                  unsigned char fill) {
  cubert_bytes_t b;
  memset(o, 0, sizeof(*o));
  memset(o->data, fill, sizeof o->data);
  b.data = o->data;
  b.size = size;
  b.property = p;
  b.owner = o;
  b.release = owned_release;
  return b;
}

static void release_all(cubert_bytes_t *b, size_t n) {
  size_t i;
  for (i = 0; i < n; i++)
    if (b[i].release) b[i].release(b[i].owner, b[i].data, b[i].size);
}

TEST(cts_reserve_staging_gives_pinned_buffers) {
  cts_env_t env;
  uint64_t sizes[3] = {16, 0, 1000};
  cubert_bytes_t b[3];
  cubert_error_t err;
  size_t i;
  int64_t before;
  cts_setup(&env, 0);
  CHECK(cubert_client_features(env.client) & CUBERT_FEATURE_STAGING);
  before = env.counting.live_blocks;
  CHECK_OK(cubert_client_reserve_staging(env.client, sizes, 3, b, NULL));
  for (i = 0; i < 3; i++) {
    CHECK_EQ_U64(b[i].size, sizes[i]);
    CHECK_EQ_U64(b[i].property, CUBERT_ALLOCATION_PINNED);
  }
  CHECK(b[1].data == NULL && b[1].release == NULL);
  CHECK(b[0].data != NULL && b[2].data != NULL && b[0].release != NULL);
  CHECK_EQ_U64(((uintptr_t)b[2].data) % 16, 0);
  for (i = 0; i < 1000; i++) CHECK(((unsigned char *)b[2].data)[i] == 0);
  memset(b[2].data, 0xAB, 1000); /* writable */
  CHECK_EQ_I64(env.counting.live_blocks, before + 2);
  release_all(b, 3);
  CHECK_EQ_I64(env.counting.live_blocks, before);
  /* count 0 and bad arguments */
  CHECK_OK(cubert_client_reserve_staging(env.client, NULL, 0, NULL, NULL));
  CHECK_STATUS(cubert_client_reserve_staging(env.client, NULL, 1, b, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_reserve_staging(env.client, sizes, 1, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_reserve_staging(NULL, sizes, 1, b, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cts_teardown(&env);
}

/* The server refuses (its allocation fails): plain NATIVE buffers instead;
 * when the fallback fails too: HOST_OUT_OF_MEMORY and nothing is left. */
TEST(cts_reserve_staging_falls_back_to_host_buffers) {
  cts_env_t env;
  uint64_t sizes[2] = {32, 48};
  cubert_bytes_t b[2];
  cubert_error_t err;
  int64_t before;
  cts_setup(&env, 0);
  before = env.counting.live_blocks;
  counting_allocator_fail_at(&env.counting, 1, 0); /* the server's first buffer */
  CHECK_OK(cubert_client_reserve_staging(env.client, sizes, 2, b, NULL));
  CHECK_EQ_U64(b[0].property, CUBERT_ALLOCATION_NATIVE);
  CHECK_EQ_U64(b[1].property, CUBERT_ALLOCATION_NATIVE);
  CHECK_EQ_U64(b[0].size, 32);
  CHECK_EQ_U64(b[1].size, 48);
  CHECK_EQ_I64(env.counting.live_blocks, before + 2);
  release_all(b, 2);
  /* the server's second buffer fails (its first is given back), then the
   * fallback's second buffer fails too */
  counting_allocator_fail_at(&env.counting, 2, 1);
  CHECK_STATUS(cubert_client_reserve_staging(env.client, sizes, 2, b, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_HOST_OUT_OF_MEMORY);
  counting_allocator_fail_at(&env.counting, 0, 0);
  CHECK_EQ_I64(env.counting.live_blocks, before);
  cts_teardown(&env);
}

/* CubeCL's file_only rule: File always, Native/Other unless file_only,
 * Pinned never. Staged buffers keep their content; originals are released. */
TEST(cts_staging_file_only_rule) {
  cts_env_t env;
  owned_t o[4];
  cubert_bytes_t b[4];
  cubert_handle_t h;
  unsigned char out[40];
  int i;
  cts_setup(&env, 0);
  b[0] = owned_bytes(&o[0], 40, CUBERT_ALLOCATION_NATIVE, 1);
  b[1] = owned_bytes(&o[1], 40, CUBERT_ALLOCATION_PINNED, 2);
  b[2] = owned_bytes(&o[2], 40, CUBERT_ALLOCATION_FILE, 3);
  b[3] = owned_bytes(&o[3], 40, CUBERT_ALLOCATION_OTHER, 4);
  CHECK_OK(cubert_client_staging(env.client, b, 4, true, NULL));
  /* only the file buffer was staged */
  CHECK(b[0].data == o[0].data && b[1].data == o[1].data && b[3].data == o[3].data);
  CHECK(b[2].data != o[2].data);
  CHECK_EQ_U64(b[2].property, CUBERT_ALLOCATION_PINNED);
  CHECK_EQ_U64(b[2].size, 40);
  CHECK_EQ_I64(o[2].releases, 1);
  CHECK_EQ_U64(o[2].released_size, 40);
  CHECK_EQ_I64(o[0].releases + o[1].releases + o[3].releases, 0);
  for (i = 0; i < 40; i++) CHECK(((unsigned char *)b[2].data)[i] == 3);
  /* without file_only: native and other too, pinned never */
  CHECK_OK(cubert_client_staging(env.client, b, 4, false, NULL));
  CHECK(b[0].data != o[0].data && b[3].data != o[3].data);
  CHECK(b[1].data == o[1].data);
  CHECK_EQ_I64(o[0].releases, 1);
  CHECK_EQ_I64(o[3].releases, 1);
  CHECK_EQ_I64(o[1].releases, 0);
  CHECK_EQ_I64(o[2].releases, 1); /* the staged file buffer is pinned now: kept */
  CHECK_EQ_U64(b[0].property, CUBERT_ALLOCATION_PINNED);
  /* a staged buffer uploads like any other */
  CHECK_OK(cubert_client_create_from_bytes(env.client, b[3], &h, NULL));
  b[3].release = NULL; /* moved */
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  for (i = 0; i < 40; i++) CHECK(out[i] == 4);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  release_all(b, 4);
  CHECK_EQ_I64(o[1].releases, 1);
  /* nothing to stage / bad arguments */
  CHECK_OK(cubert_client_staging(env.client, NULL, 0, false, NULL));
  CHECK_STATUS(cubert_client_staging(env.client, NULL, 1, false, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_staging(NULL, b, 1, false, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_staging(env.client, b, 65, false, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  b[0].data = NULL;
  b[0].size = 4;
  CHECK_STATUS(cubert_client_staging(env.client, b, 1, false, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cts_teardown(&env);
}

/* The server refuses: staging silently changes nothing (CubeCL). */
TEST(cts_staging_server_refusal_changes_nothing) {
  cts_env_t env;
  owned_t o;
  cubert_bytes_t b;
  cts_setup(&env, 0);
  b = owned_bytes(&o, 24, CUBERT_ALLOCATION_NATIVE, 9);
  counting_allocator_fail_at(&env.counting, 1, 0);
  CHECK_OK(cubert_client_staging(env.client, &b, 1, false, NULL));
  CHECK(b.data == o.data);
  CHECK_EQ_U64(b.property, CUBERT_ALLOCATION_NATIVE);
  CHECK_EQ_I64(o.releases, 0);
  CHECK(env.counting.failures == 1);
  b.release(b.owner, b.data, b.size);
  cts_teardown(&env);
}

TEST(cts_create_from_slice_pinned_round_trip) {
  cts_env_t env;
  uint8_t data[100], out[100];
  cubert_handle_t h, e;
  cubert_error_t err;
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 100; i++) data[i] = (uint8_t)(i * 3);
  CHECK_OK(cubert_client_create_from_slice_pinned(env.client, data, sizeof data, &h, NULL));
  memset(data, 0, sizeof data); /* copied before the call returned */
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  for (i = 0; i < 100; i++) CHECK(out[i] == (uint8_t)(i * 3));
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 100);
  CHECK_OK(cubert_client_create_from_slice_pinned(env.client, NULL, 0, &e, NULL));
  CHECK_EQ_U64(cubert_handle_size_in_used(&e), 0);
  CHECK_STATUS(cubert_client_create_from_slice_pinned(env.client, NULL, 4, &e, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_create_from_slice_pinned(env.client, data, 4, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &e, NULL));
  cts_teardown(&env);
}

TEST(cts_create_tensors_from_slices_pinned_share_one_allocation) {
  cts_env_t env;
  cubert_layout_descriptor_t d[2];
  cubert_memory_layout_t l[2];
  float a[6], b[4], oa[6], ob[4];
  const void *data[2];
  cubert_memory_usage_t u0, u1;
  cubert_error_t err;
  int i;
  cts_setup(&env, 0);
  for (i = 0; i < 6; i++) a[i] = (float)i + 0.5f;
  for (i = 0; i < 4; i++) b[i] = -(float)i;
  memset(d, 0, sizeof d);
  d[0].strategy = CUBERT_LAYOUT_CONTIGUOUS;
  d[0].rank = 2;
  d[0].shape[0] = 2;
  d[0].shape[1] = 3;
  d[0].elem_size = 4;
  d[1].strategy = CUBERT_LAYOUT_CONTIGUOUS;
  d[1].rank = 1;
  d[1].shape[0] = 4;
  d[1].elem_size = 4;
  data[0] = a;
  data[1] = b;
  CHECK_OK(cubert_client_memory_usage(env.client, &u0, NULL));
  CHECK_OK(cubert_client_create_tensors_from_slices_pinned(env.client, d, data, 2, l, NULL));
  CHECK_OK(cubert_client_memory_usage(env.client, &u1, NULL));
  CHECK_EQ_U64(u1.number_allocs - u0.number_allocs, 1); /* one shared allocation */
  CHECK_EQ_U64(l[0].rank, 2);
  CHECK_EQ_U64(l[0].strides[0], 3);
  CHECK_OK(cubert_client_read_one(env.client, &l[0].memory, oa, sizeof oa, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &l[1].memory, ob, sizeof ob, NULL));
  CHECK(memcmp(oa, a, sizeof a) == 0);
  CHECK(memcmp(ob, b, sizeof b) == 0);
  CHECK_OK(cubert_client_handle_release(env.client, &l[0].memory, NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &l[1].memory, NULL));
  /* bad inputs: nothing created, nothing leaked */
  CHECK_STATUS(cubert_client_create_tensors_from_slices_pinned(env.client, d, data, 0, l, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  data[1] = NULL;
  CHECK_STATUS(cubert_client_create_tensors_from_slices_pinned(env.client, d, data, 2, l, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  data[1] = b;
  d[1].shape[0] = UINT64_MAX;
  CHECK_STATUS(cubert_client_create_tensors_from_slices_pinned(env.client, d, data, 2, l, &err),
               CUBERT_STATUS_OUT_OF_RANGE);
  d[1].shape[0] = 4;
  d[1].rank = CUBERT_MAX_RANK + 1;
  CHECK_STATUS(cubert_client_create_tensors_from_slices_pinned(env.client, d, data, 2, l, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  d[1].rank = 1;
  d[1].strategy = (cubert_layout_strategy_t)77; /* the layout refuses: buffers released */
  CHECK(cubert_client_create_tensors_from_slices_pinned(env.client, d, data, 2, l, &err) !=
        CUBERT_STATUS_OK);
  CHECK_OK(cubert_client_memory_usage(env.client, &u1, NULL));
  CHECK_EQ_U64(u1.number_allocs, u0.number_allocs);
  cts_teardown(&env);
}

/* create_bytes with owner-released bytes: the release runs exactly once,
 * after the upload, also when the create fails. */
TEST(cts_bytes_owner_release_runs_once) {
  cts_env_t env;
  owned_t o;
  cubert_bytes_t b;
  cubert_handle_t h;
  unsigned char out[16];
  int i;
  cts_setup(&env, 0);
  b = owned_bytes(&o, 16, CUBERT_ALLOCATION_OTHER, 5);
  CHECK_OK(cubert_client_create_from_bytes(env.client, b, &h, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h, out, sizeof out, NULL));
  CHECK_EQ_I64(o.releases, 1);
  for (i = 0; i < 16; i++) CHECK(out[i] == 5);
  CHECK_OK(cubert_client_handle_release(env.client, &h, NULL));
  b = owned_bytes(&o, 16, CUBERT_ALLOCATION_FILE, 5);
  CHECK_STATUS(cubert_client_create_from_bytes(env.client, b, NULL,
                                               NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_I64(o.releases, 1);
  cts_teardown(&env);
}

/* Sizes no allocator can give: the server refuses, so does the fallback.
 * The server's own argument checks (unreachable through the client). */
TEST(cts_staging_impossible_sizes_and_kit_arguments) {
  cts_env_t env;
  uint64_t huge[2] = {16, UINT64_MAX};
  cubert_bytes_t b[2];
  cubert_error_t err;
  cubert_server_t *server;
  int64_t before;
  cts_setup(&env, 0);
  before = env.counting.live_blocks;
  CHECK_STATUS(cubert_client_reserve_staging(env.client, huge, 2, b, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_HOST_OUT_OF_MEMORY);
  CHECK_EQ_I64(env.counting.live_blocks, before);
  server = env.client->state->server;
  CHECK_STATUS(cubert__server_staging(server, NULL, 1, b, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__server_staging(server, huge, 1, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__server_staging(server, huge, 2, b, &err), CUBERT_STATUS_IO_FAILED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_IO_UNKNOWN);
  CHECK_EQ_I64(env.counting.live_blocks, before); /* the first buffer was given back */
  CHECK_OK(cubert__server_staging(server, NULL, 0, NULL, NULL));
  cts_teardown(&env);
}

/* SPDX-License-Identifier: MIT */
/* Conformance: several devices in one process: ids and
 * properties per device, teardown in any order, to_client /
 * to_client_tensor / change_client_sync between every pair, error paths. */
#include "cts_multi.h"
#include "memory/handle_table.h"

static void create_with_memory(cts_env_t *env, uint32_t index, uint64_t memory_size) {
  cts_options_t o;
  memset(&o, 0, sizeof o);
  o.device_index = index;
  o.max_streams = 4;
  o.workers = 1;
  o.memory_size = memory_size;
  o.threaded = (cts_driver()->flags & CTS_DRIVER_DETERMINISTIC) != 0;
  cts_setup_with(env, &o);
}

TEST(cts_multi_device_ids_and_properties_per_device) {
  cts_env_t env[4];
  cubert_device_id_t ids[8];
  uint32_t i;
  for (i = 0; i < 4; i++) create_with_memory(&env[i], i, (uint64_t)(i + 1) << 24);
  CHECK_EQ_U64(cubert_client_device_count(cts_device_type()), 4);
  CHECK_EQ_U64(cubert_client_enumerate_devices(cts_device_type(), ids, 8), 4);
  for (i = 0; i < 4; i++) {
    cubert_client_t *loaded = NULL;
    cubert_device_properties_t p;
    cubert_device_id_t want;
    cubert_handle_t h;
    uint8_t byte = (uint8_t)(i + 10), out = 0;
    uint32_t k, seen = 0;
    want.type_id = cts_device_type();
    want.index_id = i;
    for (k = 0; k < 4; k++) seen += ids[k].index_id == i && ids[k].type_id == want.type_id;
    CHECK_EQ_U64(seen, 1);
    CHECK_EQ_U64(cubert_client_device(env[i].client).index_id, i);
    /* each device reports its own properties */
    cubert_client_properties(env[i].client, &p);
    CHECK_EQ_U64(p.memory.max_page_size, (uint64_t)(i + 1) << 24);
    /* load finds that device, and its handles carry its index */
    CHECK_OK(cubert_client_load(want, &loaded, NULL));
    CHECK_EQ_U64(cubert_client_device(loaded).index_id, i);
    CHECK_OK(cubert_client_create_from_slice(loaded, &byte, 1, &h, NULL));
    CHECK_EQ_U64(h.device, i);
    CHECK_OK(cubert_client_read_one(env[i].client, &h, &out, 1, NULL));
    CHECK_EQ_U64(out, i + 10);
    CHECK_OK(cubert_client_handle_release(env[i].client, &h, NULL));
    cubert_client_release(loaded);
  }
  for (i = 0; i < 4; i++) cts_teardown(&env[i]);
  CHECK_EQ_U64(cubert_client_device_count(cts_device_type()), 0);
}

TEST(cts_multi_device_duplicate_index_is_refused) {
  cts_env_t env;
  cts_options_t o;
  cubert_client_t *second = NULL;
  cubert_error_t err;
  cts_setup(&env, 3);
  memset(&o, 0, sizeof o);
  o.device_index = 3;
  o.workers = 1;
  CHECK_STATUS(cts_client_create(env.allocator, &o, &second, &err),
               CUBERT_STATUS_ALREADY_EXISTS);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_SERVICE_CREATION);
  CHECK(second == NULL);
  CHECK_EQ_U64(cubert_client_device_count(cts_device_type()), 1);
  cts_teardown(&env);
}

/* Devices with work done on them (including collectives) go away in any
 * order; a released index can be created again. */
TEST(cts_multi_device_teardown_in_any_order) {
  static const uint32_t orders[3][4] = {{2, 0, 3, 1}, {3, 2, 1, 0}, {0, 1, 2, 3}};
  uint32_t o;
  for (o = 0; o < 3; o++) {
    mdev_t m;
    float v[8], out[8];
    cubert_handle_t h[4];
    uint32_t i, k;
    mdev_setup_comm(&m, 4, 0, 0);
    for (i = 0; i < 4; i++) {
      for (k = 0; k < 8; k++) v[k] = (float)(i * 8 + k);
      CHECK_OK(cubert_client_create_from_slice(m.env[i].client, v, sizeof v, &h[i], NULL));
      CHECK_OK(cubert_client_all_reduce(m.env[i].client, &h[i], &h[i], CUBERT_COMM_DTYPE_F32,
                                        m.ids, 4, CUBERT_REDUCE_OPERATION_MEAN, NULL));
    }
    for (i = 0; i < 4; i++) {
      CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
      CHECK_OK(cubert_client_read_one(m.env[i].client, &h[i], out, sizeof out, NULL));
      for (k = 0; k < 8; k++) CHECK(out[k] == (float)(12 + k)); /* mean of 0,8,16,24 + k */
      CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i], NULL));
    }
    for (k = 0; k < 4; k++) {
      i = orders[o][k];
      cts_teardown(&m.env[i]);
      m.env[i].client = NULL;
      CHECK_EQ_U64(cubert_client_device_count(cts_device_type()), 3 - k);
      if (k == 1) {
        /* the released index is free again */
        mdev_create(&m.env[i], i, 0);
        CHECK_EQ_U64(cubert_client_device_count(cts_device_type()), 3);
        cts_teardown(&m.env[i]);
        m.env[i].client = NULL;
      }
    }
    mdev_teardown(&m);
  }
}

/* ---- the seed's runtime test: test_to_client, every pair ---- */

static void to_client_every_pair(uint32_t n, int tensor_path) {
  mdev_t m;
  cubert_error_t err;
  uint32_t a, b, k;
  if (tensor_path)
    mdev_setup_comm(&m, n, 0, 0);
  else
    mdev_setup(&m, n, 0, 0);
  for (a = 0; a < n; a++)
    for (b = 0; b < n; b++) {
      float v[6], out[6];
      cubert_handle_t src, dst;
      if (a == b) continue;
      for (k = 0; k < 6; k++) v[k] = (float)(a * 100 + b * 10 + k) + 0.5f;
      CHECK_OK(cubert_client_create_from_slice(m.env[a].client, v, sizeof v, &src, NULL));
      if (tensor_path) {
        cubert_copy_descriptor_t d;
        memset(&d, 0, sizeof d);
        d.binding = src;
        d.rank = 1;
        d.shape[0] = 6;
        d.strides[0] = 1;
        d.elem_size = 4;
        CHECK_OK(cubert_client_to_client_tensor(m.env[a].client, &d, m.env[b].client,
                                                CUBERT_COMM_DTYPE_F32, &dst, NULL));
      } else {
        CHECK_OK_E(cubert_client_to_client(m.env[a].client, &src, m.env[b].client,
                                           CUBERT_COMM_DTYPE_F32, &dst, &err),
                   err);
      }
      CHECK_EQ_U64(dst.device, m.ids[b].index_id);
      CHECK_EQ_U64(cubert_handle_size_in_used(&dst), sizeof v);
      /* a read on the destination's stream sees the data without further syncs */
      CHECK_OK(cubert_client_read_one(m.env[b].client, &dst, out, sizeof out, NULL));
      for (k = 0; k < 6; k++)
        CHECK_MSG(out[k] == v[k], "%u -> %u [%u]: %g != %g", (unsigned)a, (unsigned)b, (unsigned)k,
                  (double)out[k],
                  (double)v[k]);
      CHECK_OK(cubert_client_handle_release(m.env[a].client, &src, NULL));
      CHECK_OK(cubert_client_handle_release(m.env[b].client, &dst, NULL));
    }
  for (a = 0; a < n; a++) CHECK_OK(cubert_client_sync(m.env[a].client, NULL));
  mdev_teardown(&m);
}

TEST(cts_to_client_every_pair_2_devices) { to_client_every_pair(2, 0); }
TEST(cts_to_client_every_pair_4_devices) { to_client_every_pair(4, 0); }
TEST(cts_to_client_tensor_every_pair_2_devices) { to_client_every_pair(2, 1); }
TEST(cts_to_client_tensor_every_pair_4_devices) { to_client_every_pair(4, 1); }

/* The transfer is ordered after the source's pending writes. */
TEST(cts_to_client_sees_pending_writes) {
  mdev_t m;
  uint32_t v[256], w[256], out[256], k;
  cubert_handle_t src, dst1, dst2;
  cubert_copy_descriptor_t d;
  mdev_setup(&m, 2, 0, 0);
  for (k = 0; k < 256; k++) {
    v[k] = k;
    w[k] = 7 * k + 1;
  }
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, v, sizeof v, &src, NULL));
  CHECK_OK(cubert_client_write(m.env[0].client, &src, w, sizeof w, NULL));
  CHECK_OK(cubert_client_to_client(m.env[0].client, &src, m.env[1].client, CUBERT_COMM_DTYPE_U32,
                                   &dst1, NULL));
  CHECK_OK(cubert_client_write(m.env[0].client, &src, v, sizeof v, NULL));
  CHECK_OK(cubert_client_read_one(m.env[1].client, &dst1, out, sizeof out, NULL));
  if (memcmp(out, w, sizeof w) != 0)
    fprintf(stderr, "to_client read %u %u %u %u, want %u %u %u %u (the second write: %u %u %u %u)\n",
            (unsigned)out[0], (unsigned)out[1], (unsigned)out[2], (unsigned)out[255], (unsigned)w[0],
            (unsigned)w[1], (unsigned)w[2], (unsigned)w[255], (unsigned)v[0], (unsigned)v[1],
            (unsigned)v[2], (unsigned)v[255]);
  CHECK(memcmp(out, w, sizeof w) == 0);
  if (mdev_collectives(&m.env[0])) { /* the tensor path needs collectives */
    memset(&d, 0, sizeof d);
    d.binding = src;
    CHECK_OK(cubert_client_to_client_tensor(m.env[0].client, &d, m.env[1].client,
                                            CUBERT_COMM_DTYPE_U32, &dst2, NULL));
    CHECK_OK(cubert_client_read_one(m.env[1].client, &dst2, out, sizeof out, NULL));
    CHECK(memcmp(out, v, sizeof v) == 0);
    CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst2, NULL));
  }
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst1, NULL));
  mdev_teardown(&m);
}

/* to_client_tensor: the send is refused after the recv was enqueued (host
 * memory exhausted on the source): the call fails, and the queued recv fails
 * on the destination's stream once its peer does not arrive. */
TEST(cts_to_client_tensor_refused_send_fails_the_queued_recv) {
  mdev_t m;
  uint32_t v[4] = {1, 2, 3, 4};
  cubert_handle_t src, dst;
  cubert_copy_descriptor_t d;
  cubert_client_t *fresh;
  cubert_error_t err;
  char msg[512];
  mdev_setup_comm(&m, 2, 0, 200);
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, v, sizeof v, &src, NULL));
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 2, NULL));
  CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, m.ids, 2, NULL));
  /* the send resolves a stream never used on the source: creating it fails */
  CHECK_OK(cubert_client_clone(m.env[0].client, &fresh, NULL));
  cubert_client_set_stream(fresh, 777);
  memset(&d, 0, sizeof d);
  d.binding = src;
  counting_allocator_fail_at(&m.env[0].counting, 1, 1);
  CHECK_STATUS(cubert_client_to_client_tensor(fresh, &d, m.env[1].client, CUBERT_COMM_DTYPE_U32,
                                              &dst, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  counting_allocator_fail_at(&m.env[0].counting, 0, 0);
  CHECK_STATUS(cubert_client_sync(m.env[1].client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  cubert_error_format(&err, msg, sizeof msg);
  CHECK_MSG(cubert_error_has_kind(&err, CUBERT_ERROR_DEADLINE_EXCEEDED), "%s", msg);
  cubert_client_release(fresh);
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src, NULL));
  mdev_teardown(&m);
}

/* Empty buffers move too (nothing to copy). */
TEST(cts_to_client_empty_buffer) {
  mdev_t m;
  cubert_handle_t src, dst;
  cubert_copy_descriptor_t d;
  int tensor;
  mdev_setup(&m, 2, 0, 0);
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, NULL, 0, &src, NULL));
  memset(&d, 0, sizeof d);
  d.binding = src;
  /* the tensor path needs collectives */
  for (tensor = 0; tensor < (mdev_collectives(&m.env[0]) ? 2 : 1); tensor++) {
    if (tensor)
      CHECK_OK(cubert_client_to_client_tensor(m.env[0].client, &d, m.env[1].client,
                                              CUBERT_COMM_DTYPE_F32, &dst, NULL));
    else
      CHECK_OK(cubert_client_to_client(m.env[0].client, &src, m.env[1].client,
                                       CUBERT_COMM_DTYPE_F32, &dst, NULL));
    CHECK_EQ_U64(cubert_handle_size_in_used(&dst), 0);
    CHECK_OK(cubert_client_sync(m.env[1].client, NULL));
    CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst, NULL));
  }
  CHECK_OK(cubert_client_sync(m.env[0].client, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src, NULL));
  mdev_teardown(&m);
}

/* to_client within one device is a copy (change_client_sync path). */
TEST(cts_to_client_same_device_copies) {
  cts_env_t env;
  uint16_t v[5] = {1, 2, 3, 4, 5}, out[5];
  cubert_handle_t src, dst;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_create_from_slice(env.client, v, sizeof v, &src, NULL));
  CHECK_OK(cubert_client_to_client(env.client, &src, env.client, CUBERT_COMM_DTYPE_U8, &dst, NULL));
  CHECK(dst.memory.index != src.memory.index || dst.memory.generation != src.memory.generation);
  CHECK_OK(cubert_client_handle_release(env.client, &src, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &dst, out, sizeof out, NULL));
  CHECK(memcmp(out, v, sizeof v) == 0);
  CHECK_OK(cubert_client_handle_release(env.client, &dst, NULL));
  cts_teardown(&env);
}

TEST(cts_change_client_sync_tensor_is_contiguous_on_destination) {
  mdev_t m;
  uint64_t shape[2] = {3, 5};
  float v[15], out[15];
  cubert_memory_layout_t src, dst;
  cubert_copy_descriptor_t d;
  uint32_t k, r;
  mdev_setup(&m, 2, 0, 0);
  for (k = 0; k < 15; k++) v[k] = (float)k * 1.5f;
  CHECK_OK(cubert_client_create_tensor_from_slice(m.env[0].client, v, 2, shape, 4, &src, NULL));
  memset(&d, 0, sizeof d);
  d.binding = src.memory;
  d.rank = 2;
  for (r = 0; r < 2; r++) {
    d.shape[r] = shape[r];
    d.strides[r] = src.strides[r];
  }
  d.elem_size = 4;
  CHECK_OK(cubert_client_change_client_sync(m.env[0].client, &d, m.env[1].client, &dst, NULL));
  CHECK_EQ_U64(dst.memory.device, m.ids[1].index_id);
  CHECK_EQ_U64(dst.rank, 2);
  CHECK_EQ_U64(dst.strides[0], 5);
  CHECK_EQ_U64(dst.strides[1], 1);
  CHECK_EQ_U64(cubert_handle_size_in_used(&dst.memory), sizeof v);
  CHECK_OK(cubert_client_read_one(m.env[1].client, &dst.memory, out, sizeof out, NULL));
  CHECK(memcmp(out, v, sizeof v) == 0);
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src.memory, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst.memory, NULL));
  mdev_teardown(&m);
}

TEST(cts_to_client_errors_create_nothing) {
  mdev_t m;
  uint8_t v[6] = {1, 2, 3, 4, 5, 6};
  cubert_handle_t src, foreign, dead, dst;
  cubert_copy_descriptor_t d;
  cubert_memory_layout_t layout;
  cubert_handle_table_t *table;
  uint32_t live;
  cubert_error_t err;
  mdev_setup(&m, 2, 0, 0);
  table = cubert__client_handle_table(m.env[1].client);
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, v, sizeof v, &src, NULL));
  CHECK_OK(cubert_client_create_from_slice(m.env[1].client, v, sizeof v, &foreign, NULL));
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, v, sizeof v, &dead, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &dead, NULL));
  live = cubert__handle_table_live(table);
  /* to_client */
  CHECK_STATUS(cubert_client_to_client(NULL, &src, m.env[1].client, CUBERT_COMM_DTYPE_U8, &dst,
                                       &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_to_client(m.env[0].client, &src, m.env[1].client, CUBERT_COMM_DTYPE_U8,
                                       NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_to_client(m.env[0].client, &src, m.env[1].client, 42, &dst, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_to_client(m.env[0].client, &foreign, m.env[1].client,
                                       CUBERT_COMM_DTYPE_U8, &dst, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_STATUS(cubert_client_to_client(m.env[0].client, &dead, m.env[1].client,
                                       CUBERT_COMM_DTYPE_U8, &dst, &err),
               CUBERT_STATUS_INVALID_HANDLE);
  /* change_client_sync */
  memset(&d, 0, sizeof d);
  d.binding = dead;
  CHECK_STATUS(cubert_client_change_client_sync(m.env[0].client, &d, m.env[1].client, &layout,
                                                &err),
               CUBERT_STATUS_INVALID_HANDLE);
  d.binding = src;
  d.rank = CUBERT_MAX_RANK + 1;
  CHECK_STATUS(cubert_client_change_client_sync(m.env[0].client, &d, m.env[1].client, &layout,
                                                &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  d.rank = 2;
  d.shape[0] = UINT64_MAX / 2;
  d.shape[1] = 4;
  d.elem_size = 1;
  CHECK_STATUS(cubert_client_change_client_sync(m.env[0].client, &d, m.env[1].client, &layout,
                                                &err),
               CUBERT_STATUS_OVERFLOW);
  /* to_client_tensor */
  memset(&d, 0, sizeof d);
  d.binding = src;
  CHECK_STATUS(cubert_client_to_client_tensor(m.env[0].client, &d, m.env[0].client,
                                              CUBERT_COMM_DTYPE_U8, &dst, &err),
               CUBERT_STATUS_INVALID_ARGUMENT); /* same device */
  CHECK_STATUS(cubert_client_to_client_tensor(m.env[0].client, &d, m.env[1].client,
                                              CUBERT_COMM_DTYPE_U32, &dst, &err),
               CUBERT_STATUS_INVALID_ARGUMENT); /* 6 bytes are not u32s */
  CHECK_STATUS(cubert_client_to_client_tensor(m.env[0].client, &d, m.env[1].client, 42, &dst,
                                              &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  d.binding = foreign;
  CHECK_STATUS(cubert_client_to_client_tensor(m.env[0].client, &d, m.env[1].client,
                                              CUBERT_COMM_DTYPE_U8, &dst, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_STATUS(cubert_client_to_client_tensor(m.env[0].client, NULL, m.env[1].client,
                                              CUBERT_COMM_DTYPE_U8, &dst, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* nothing was created on the destination; it still works */
  CHECK_EQ_U64(cubert__handle_table_live(table), live);
  CHECK_OK(cubert_client_to_client(m.env[0].client, &src, m.env[1].client, CUBERT_COMM_DTYPE_U8,
                                   &dst, NULL));
  {
    uint8_t out[6];
    CHECK_OK(cubert_client_read_one(m.env[1].client, &dst, out, sizeof out, NULL));
    CHECK(memcmp(out, v, sizeof v) == 0);
  }
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &foreign, NULL));
  mdev_teardown(&m);
}

/* change_client_sync's failures: nothing is created on the destination. */
TEST(cts_change_client_sync_failures_create_nothing) {
  mdev_t m;
  float v[12];
  uint64_t shape[2] = {3, 4};
  cubert_memory_layout_t src, out;
  cubert_copy_descriptor_t d;
  cubert_handle_table_t *table;
  cubert_error_t err;
  uint32_t live, k;
  mdev_setup(&m, 2, 0, 0);
  for (k = 0; k < 12; k++) v[k] = (float)k;
  CHECK_OK(cubert_client_create_tensor_from_slice(m.env[0].client, v, 2, shape, 4, &src, NULL));
  table = cubert__client_handle_table(m.env[1].client);
  live = cubert__handle_table_live(table);
  memset(&d, 0, sizeof d);
  d.binding = src.memory;
  d.rank = 2;
  d.shape[0] = 3;
  d.shape[1] = 4;
  d.strides[0] = src.strides[0];
  d.strides[1] = src.strides[1];
  d.elem_size = 4;
  /* the host buffer cannot be allocated */
  counting_allocator_fail_at(&m.env[0].counting, 1, 0);
  CHECK_STATUS(cubert_client_change_client_sync(m.env[0].client, &d, m.env[1].client, &out, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_HOST_OUT_OF_MEMORY);
  counting_allocator_fail_at(&m.env[0].counting, 0, 0);
  /* the read on the source fails (strides it cannot read) */
  d.strides[0] = 1;
  d.strides[1] = 3;
  CHECK_STATUS(cubert_client_change_client_sync(m.env[0].client, &d, m.env[1].client, &out, &err),
               CUBERT_STATUS_UNSUPPORTED);
  d.strides[0] = src.strides[0];
  d.strides[1] = src.strides[1];
  /* the size overflows through the element size */
  d.elem_size = UINT64_MAX / 8;
  CHECK_STATUS(cubert_client_change_client_sync(m.env[0].client, &d, m.env[1].client, &out, &err),
               CUBERT_STATUS_OVERFLOW);
  d.elem_size = 4;
  /* the upload to the destination cannot copy the data */
  counting_allocator_fail_at(&m.env[1].counting, 1, 1);
  CHECK(cubert_client_change_client_sync(m.env[0].client, &d, m.env[1].client, &out, &err) ==
        CUBERT_STATUS_RESOURCE_EXHAUSTED);
  counting_allocator_fail_at(&m.env[1].counting, 0, 0);
  CHECK_EQ_U64(cubert__handle_table_live(table), live);
  /* and then it works */
  CHECK_OK(cubert_client_change_client_sync(m.env[0].client, &d, m.env[1].client, &out, NULL));
  {
    float back[12];
    CHECK_OK(cubert_client_read_one(m.env[1].client, &out.memory, back, sizeof back, NULL));
    CHECK(memcmp(back, v, sizeof v) == 0);
  }
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &out.memory, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src.memory, NULL));
  mdev_teardown(&m);
}

/* recv refused by the server (the destination cannot be reserved): the
 * client-created handle is released again. */
TEST(cts_recv_refused_by_the_server_releases_its_handle) {
  mdev_t m;
  cubert_handle_t dst;
  cubert_handle_table_t *table;
  cubert_error_t err;
  uint32_t live;
  mdev_setup_comm(&m, 2, 0, 200);
  table = cubert__client_handle_table(m.env[1].client);
  live = cubert__handle_table_live(table);
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 1ull << 44, CUBERT_COMM_DTYPE_U8, m.ids[0], &dst,
                                  &err),
               CUBERT_STATUS_BUFFER_TOO_BIG); /* initialize_memory on the server */
  CHECK_EQ_U64(cubert__handle_table_live(table), live);
  CHECK_OK(cubert_client_sync_collective(m.env[1].client, NULL));
  CHECK_OK(cubert_client_sync(m.env[1].client, NULL)); /* nothing was enqueued */
  mdev_teardown(&m);
}

/* SPDX-License-Identifier: MIT */
/* The server's memory of other libraries (core/server/server_external.c,
 * DLPack: docs/interop.md) over the fake driver: a table without the
 * optional primitives (UNSUPPORTED), an incomplete pair (refused at
 * creation), the native-stream ordering and its failures, a failing
 * memory_import, host memory running out at each allocation of an import,
 * and a lost device at teardown: each deleter exactly once, nothing
 * adopted by a refused call, nothing leaked. */
#include "test.h"
#include "counting_allocator.h"
#include "fake_driver.h"
#include "cubert/client.h"
#include "cubert/dlpack.h"
#include "cubert/driver/server.h"
#include "memory/handle_table.h"

typedef struct producer_t {
  cubert_dlpack_managed_tensor_versioned_t t;
  int64_t shape[1];
  uint64_t data[8];
  int deleted;
} producer_t;

static void producer_deleter(cubert_dlpack_managed_tensor_versioned_t *self) {
  ((producer_t *)self->manager_ctx)->deleted++;
}

static void producer_init(producer_t *p) {
  memset(p, 0, sizeof *p);
  p->shape[0] = 16;
  p->t.version.major = 1;
  p->t.manager_ctx = p;
  p->t.deleter = producer_deleter;
  p->t.dl_tensor.data = p->data;
  p->t.dl_tensor.device.device_type = 1;
  p->t.dl_tensor.ndim = 1;
  p->t.dl_tensor.dtype.code = CUBERT_DLPACK_UINT;
  p->t.dl_tensor.dtype.bits = 32;
  p->t.dl_tensor.dtype.lanes = 1;
  p->t.dl_tensor.shape = p->shape;
}

static void fake_device_memory_device(void *self, int32_t *t, int32_t *id) {
  (void)self;
  *t = 1;
  *id = 0;
}

TEST(server_external_primitives_come_in_pairs) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_driver_t bad = fake_driver;
  cubert_client_t *client = NULL;
  cubert_error_t err;
  fake_device_initialize(&d, a);
  fake_server_options(&o, 78, 0);
  bad.memory_device = fake_device_memory_device; /* without memory_import */
  CHECK_STATUS(cubert_server_client_create(a, &o, &bad, &d, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  if (cubert_config_features() & CUBERT_FEATURE_ERROR_REASONS)
    CHECK(strstr(err.reason, "both or neither") != NULL);
  bad = fake_driver;
  bad.memory_import = fake_driver_full.memory_import;
  CHECK_STATUS(cubert_server_client_create(a, &o, &bad, &d, &client, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(client == NULL);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* A driver without them: no DLPack device, exports and imports UNSUPPORTED
 * (nothing retained, the tensor still the caller's); get_resource_async works. */
TEST(server_external_unsupported_without_primitives) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_handle_t h;
  cubert_copy_descriptor_t desc;
  cubert_dlpack_dtype_t u32 = {CUBERT_DLPACK_UINT, 32, 1};
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_dlpack_imported_t im;
  cubert_resource_t r;
  cubert_completion_t done;
  cubert_error_t err;
  producer_t p;
  uint32_t data[4] = {1, 2, 3, 4};
  int64_t blocks;
  fake_server_options(&o, 78, 1);
  client = fake_client(a, &d, &o, &fake_driver);
  CHECK_EQ_I64(cubert_client_dlpack_device(client).device_type, 0);
  CHECK_EQ_I64(cubert_client_dlpack_device(NULL).device_type, 0);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  memset(&desc, 0, sizeof desc);
  desc.binding = h;
  desc.rank = 1;
  desc.shape[0] = 4;
  desc.strides[0] = 1;
  desc.elem_size = 4;
  blocks = c.live_blocks;
  CHECK_STATUS(cubert_client_dlpack_export(client, &desc, u32, NULL, &t, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION);
  CHECK(t == NULL);
  producer_init(&p);
  CHECK_STATUS(cubert_client_dlpack_import(client, &p.t, NULL, &im, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_I64(p.deleted, 0);
  CHECK_EQ_I64(c.live_blocks, blocks);
  CHECK_OK(cubert_client_get_resource_async(client, &h, &r, &done, NULL));
  CHECK_OK(cubert_completion_wait(&done, UINT64_MAX, NULL));
  CHECK(r.ptr == NULL); /* not host-addressable */
  CHECK_EQ_U64(r.size, 16);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

/* Native streams: an import waits for one, an export makes one wait; a
 * failing order adopts / exports nothing. A failing memory_import too. */
TEST(server_external_native_order_and_driver_refusals) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_handle_table_t *table;
  cubert_dlpack_options_t opt;
  cubert_dlpack_imported_t im;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_dlpack_dtype_t u32 = {CUBERT_DLPACK_UINT, 32, 1};
  cubert_error_t err;
  producer_t p;
  uint32_t live;
  int64_t blocks;
  fake_server_options(&o, 78, 2);
  client = fake_client(a, &d, &o, &fake_driver_full);
  table = cubert__client_handle_table(client);
  producer_init(&p);
  cubert_dlpack_options_initialize(&opt);
  opt.stream_kind = CUBERT_DLPACK_STREAM_NATIVE;
  opt.stream = 0x1234;
  CHECK_OK(cubert_client_dlpack_import(client, &p.t, &opt, &im, NULL));
  CHECK_EQ_I64(d.imports, 1);
  CHECK_EQ_I64(d.native_orders, 1);
  /* export it again to another native stream (the same memory) */
  {
    cubert_copy_descriptor_t desc = im.tensor;
    CHECK_OK(cubert_client_dlpack_export(client, &desc, u32, &opt, &t, NULL));
    CHECK(t->dl_tensor.data == (void *)p.data);
    CHECK(d.native_orders >= 2);
    /* the ordering fails: nothing exported, nothing retained */
    blocks = c.live_blocks;
    d.fail_only = "stream_order_native";
    d.calls = 0;
    d.fail_at = 1;
    {
      cubert_dlpack_managed_tensor_versioned_t *t2 = NULL;
      CHECK_STATUS(cubert_client_dlpack_export(client, &desc, u32, &opt, &t2, &err), CUBERT_STATUS_INTERNAL);
      CHECK(t2 == NULL);
    }
    CHECK_EQ_I64(c.live_blocks, blocks);
    t->deleter(t);
  }
  CHECK_OK(cubert_client_handle_release(client, &im.tensor.binding, NULL));
  CHECK_OK(cubert_client_sync(client, NULL));
  CHECK_EQ_I64(p.deleted, 1);
  /* a failing order on import, a failing memory_import: nothing adopted */
  live = cubert__handle_table_live(table);
  producer_init(&p);
  d.calls = 0;
  d.fail_at = 1;
  CHECK_STATUS(cubert_client_dlpack_import(client, &p.t, &opt, &im, &err), CUBERT_STATUS_INTERNAL);
  d.fail_only = "memory_import";
  d.calls = 0;
  d.fail_at = 1;
  CHECK_STATUS(cubert_client_dlpack_import(client, &p.t, NULL, &im, &err), CUBERT_STATUS_INTERNAL);
  d.fail_at = 0;
  d.fail_only = NULL;
  opt.stream = 0; /* the driver refuses it */
  CHECK_STATUS(cubert_client_dlpack_import(client, &p.t, &opt, &im, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_sync(client, NULL));
  CHECK_EQ_U64(cubert__handle_table_live(table), live);
  CHECK_EQ_I64(p.deleted, 0);
  fake_release(client, &d, &c);
  CHECK_EQ_I64(p.deleted, 0);
}

/* A forged binding past the adopted memory is refused; an export whose
 * ordering fails exports and retains nothing. */
TEST(server_external_forged_offsets_and_failed_share) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_dlpack_imported_t im;
  cubert_dlpack_managed_tensor_versioned_t *t = NULL;
  cubert_dlpack_dtype_t u32 = {CUBERT_DLPACK_UINT, 32, 1};
  cubert_handle_t forged;
  cubert_error_t err;
  producer_t p;
  uint8_t out[64];
  int64_t blocks;
  fake_server_options(&o, 78, 5);
  client = fake_client(a, &d, &o, &fake_driver_full);
  producer_init(&p);
  CHECK_OK(cubert_client_dlpack_import(client, &p.t, NULL, &im, NULL));
  forged = im.tensor.binding;
  forged.offset_start = 65; /* the memory holds 64 bytes */
  CHECK_STATUS(cubert_client_read_one(client, &forged, out, sizeof out, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_OUT_OF_RANGE);
  CHECK_OK(cubert_client_read_one(client, &im.tensor.binding, out, sizeof out, NULL));
  CHECK(memcmp(out, p.data, 64) == 0);
  /* HOST ordering fails (its event cannot be recorded): nothing exported */
  blocks = c.live_blocks;
  d.fail_only = "event_record";
  d.calls = 0;
  d.fail_at = 1;
  CHECK_STATUS(cubert_client_dlpack_export(client, &im.tensor, u32, NULL, &t, &err), CUBERT_STATUS_INTERNAL);
  CHECK(t == NULL);
  d.fail_at = 0;
  d.fail_only = NULL;
  CHECK_EQ_I64(c.live_blocks, blocks);
  CHECK_OK(cubert_client_handle_release(client, &im.tensor.binding, NULL));
  fake_release(client, &d, &c);
  CHECK_EQ_I64(p.deleted, 1);
}

/* Host memory runs out at each allocation of an import in turn: refused,
 * nothing adopted, then it works; the deleter runs once. */
TEST(server_external_import_host_oom) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_dlpack_imported_t im;
  cubert_error_t err;
  producer_t p;
  cubert_status_t st = CUBERT_STATUS_RESOURCE_EXHAUSTED;
  uint64_t n;
  int64_t blocks;
  fake_server_options(&o, 78, 3);
  client = fake_client(a, &d, &o, &fake_driver_full);
  producer_init(&p);
  CHECK_OK(cubert_client_sync(client, NULL)); /* the stream slot exists */
  blocks = c.live_blocks;
  for (n = 1; n < 16 && st != CUBERT_STATUS_OK; n++) {
    counting_allocator_fail_at(&c, n, 0);
    st = cubert_client_dlpack_import(client, &p.t, NULL, &im, &err);
    counting_allocator_fail_at(&c, 0, 0);
    if (st != CUBERT_STATUS_OK) {
      CHECK_EQ_U64(st, CUBERT_STATUS_RESOURCE_EXHAUSTED);
      /* at most the table of imported memory, grown before a later allocation failed */
      CHECK(c.live_blocks <= blocks + 1);
      CHECK_EQ_I64(p.deleted, 0);
    }
  }
  CHECK_OK(st);
  CHECK(n > 3); /* the table's and the handle slot's allocations failed first */
  CHECK_OK(cubert_client_handle_release(client, &im.tensor.binding, NULL));
  CHECK_OK(cubert_client_memory_cleanup(client, NULL)); /* cleanup notices it too */
  CHECK_EQ_I64(p.deleted, 1);
  fake_release(client, &d, &c);
  CHECK_EQ_I64(p.deleted, 1);
}

/* A device lost with adopted memory still held: teardown gives it back
 * anyway, once, without waiting for the device. */
TEST(server_external_lost_device_gives_back_at_teardown) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  fake_device_t d;
  cubert_server_options_t o;
  cubert_client_t *client;
  cubert_dlpack_imported_t im;
  producer_t p;
  fake_server_options(&o, 78, 4);
  client = fake_client(a, &d, &o, &fake_driver_full);
  producer_init(&p);
  CHECK_OK(cubert_client_dlpack_import(client, &p.t, NULL, &im, NULL));
  d.lost = 1;
  d.fail_kind = CUBERT_ERROR_DEVICE_LOST;
  d.calls = 0;
  d.fail_at = 1; /* the next fallible call loses the device */
  CHECK(cubert_client_sync(client, NULL) != CUBERT_STATUS_OK);
  CHECK_EQ_I64(p.deleted, 0);
  fake_release(client, &d, &c);
  CHECK_EQ_I64(p.deleted, 1);
}

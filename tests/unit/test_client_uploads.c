/* SPDX-License-Identifier: MIT */
/* The client's single-allocation path and borrowed uploads, over the fake
 * driver of tests/support (fake_driver.h) under the server (core only): one
 * allocation (empty, create of one buffer) is the memory manager's
 * reservation with no second id, its handle is the reserved id; a driver with CUBERT_DRIVER_BORROWS_UPLOADS
 * gets uploads above CUBERT_DRIVER_BORROW_MIN from the caller's memory in
 * place (the copy flagged CUBERT_COPY_SOURCE_BORROWED, no host copy), and
 * smaller ones copied; a failed upload leaves nothing allocated. */
#include "test.h"
#include "counting_allocator.h"
#include "fake_driver.h"
#include "cubert/driver/server.h"
#include "cubert/cube.h"
#include "cubert/driver/device.h"
#include "memory/handle_table.h"

/* ---- the fake driver of tests/support (fake_driver.h), 8 MiB pages ---- */

static cubert_client_t *up_client(cubert_allocator_t a, fake_device_t *d, uint32_t flags,
                                  cubert_driver_t *driver) {
  cubert_server_options_t o;
  cubert_client_t *client = NULL;
  fake_server_options(&o, 78, 0);
  o.max_handles = 64;
  o.max_streams = 2;
  fake_device_initialize(d, a);
  d->name = "uploads";
  d->max_page_size = 8u << 20;
  *driver = fake_driver;
  driver->name = "uploads";
  driver->flags = flags;
  CHECK_OK(cubert_server_client_create(a, &o, driver, d, &client, NULL));
  return client;
}

/* ---- tests ---- */

/* One allocation: the handle is the reserved id itself (one handle
 * reference, no second id), the layout's padding is in its offsets, and a
 * release gives the slice back to the pool for the next allocation. */
TEST(client_single_allocation_is_one_reserved_id) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_driver_t driver;
  fake_device_t d;
  cubert_client_t *client = up_client(a, &d, 0, &driver);
  cubert_handle_table_t *table = cubert__client_handle_table(client);
  cubert_memory_usage_t usage;
  cubert_handle_t h, h2;
  CHECK_OK(cubert_client_empty(client, 100, &h, NULL));
  CHECK_EQ_U64(cubert__handle_table_live(table), 1);
  CHECK_EQ_U64(cubert__memory_id_handle_count(table, h.memory), 1);
  CHECK_EQ_U64(h.size, 112); /* 100 rounded up to the 16-byte alignment */
  CHECK_EQ_U64(h.offset_start, 0);
  CHECK_EQ_U64(h.offset_end, 12);
  CHECK_EQ_U64(cubert_handle_size_in_used(&h), 100);
  CHECK_OK(cubert_client_memory_usage(client, &usage, NULL));
  CHECK_EQ_U64(usage.number_allocs, 1);
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  CHECK_OK(cubert_client_empty(client, 100, &h2, NULL)); /* reuses the slice */
  CHECK_OK(cubert_client_memory_usage(client, &usage, NULL));
  CHECK_EQ_U64(usage.number_allocs, 1);
  CHECK_OK(cubert_client_handle_release(client, &h2, NULL));
  fake_release(client, &d, &c);
}

/* BORROWS_UPLOADS: an upload of more than CUBERT_DRIVER_BORROW_MIN bytes
 * reads the caller's memory in place (create and write: no host copy, the
 * copy flagged), one of at most that many bytes is copied first; the
 * caller may change its buffer as soon as the call returned. Without the
 * flag (the control) every upload is copied. */
TEST(client_borrowed_uploads_read_in_place) {
  const size_t big = CUBERT_DRIVER_BORROW_MIN + 16u, small = CUBERT_DRIVER_BORROW_MIN;
  uint8_t *data = (uint8_t *)malloc(big), *out = (uint8_t *)malloc(big);
  int k;
  CHECK(data && out);
  for (k = 0; k < 2; k++) {
    counting_allocator_t c;
    cubert_allocator_t a = counting_allocator_initialize(&c);
    cubert_driver_t driver;
    fake_device_t d;
    cubert_client_t *client = up_client(a, &d, k == 0 ? CUBERT_DRIVER_BORROWS_UPLOADS : 0, &driver);
    cubert_handle_t h, hs;
    int64_t before;
    memset(data, 7, big);
    CHECK_OK(cubert_client_empty(client, big, &h, NULL)); /* the page exists */
    CHECK_OK(cubert_client_handle_release(client, &h, NULL));
    before = c.live_bytes;
    c.peak_bytes = before;
    CHECK_OK(cubert_client_create_from_slice(client, data, big, &h, NULL));
    CHECK_EQ_U64(d.last_flags, k == 0 ? CUBERT_COPY_SOURCE_BORROWED : 0u);
    data[5] = 9; /* the caller's buffer is its own again */
    CHECK_OK(cubert_client_write(client, &h, data, big, NULL));
    CHECK_EQ_U64(d.last_flags, k == 0 ? CUBERT_COPY_SOURCE_BORROWED : 0u);
    if (k == 0)
      CHECK_MSG(c.peak_bytes - before < 4096, "peak grew %lld bytes", (long long)(c.peak_bytes - before));
    else
      CHECK_MSG(c.peak_bytes - before >= (int64_t)big, "peak grew %lld bytes",
                (long long)(c.peak_bytes - before));
    data[6] = 1;
    CHECK_OK(cubert_client_read_one(client, &h, out, big, NULL));
    CHECK_EQ_U64(out[5], 9);
    CHECK_EQ_U64(out[6], 7);
    CHECK_OK(cubert_client_create_from_slice(client, data, small, &hs, NULL));
    CHECK_EQ_U64(d.last_flags, 0); /* at the threshold: copied */
    CHECK_OK(cubert_client_handle_release(client, &hs, NULL));
    CHECK_OK(cubert_client_handle_release(client, &h, NULL));
    fake_release(client, &d, &c);
  }
  free(data);
  free(out);
}

static int g_released;
static void count_release(void *owner, void *data, uint64_t size) {
  (void)owner;
  (void)data;
  (void)size;
  g_released++;
}

/* A create whose upload fails leaves nothing: the reserved id is released
 * (its slice goes back to the pool), owned bytes are released once, and
 * the next create works. A reservation that fails (device out of memory)
 * releases owned bytes too. */
TEST(client_single_create_failures_leave_nothing) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_driver_t driver;
  fake_device_t d;
  cubert_client_t *client = up_client(a, &d, CUBERT_DRIVER_BORROWS_UPLOADS, &driver);
  cubert_handle_table_t *table = cubert__client_handle_table(client);
  static uint8_t data[1000];
  cubert_memory_usage_t usage;
  cubert_handle_t h;
  cubert_bytes_t b;
  cubert_error_t err;
  d.fail_copy = 1;
  CHECK_STATUS(cubert_client_create_from_slice(client, data, sizeof data, &h, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* the id is released; its slot stays the pool's until the pool polls */
  CHECK_OK(cubert_client_memory_cleanup(client, NULL));
  CHECK_EQ_U64(cubert__handle_table_live(table), 0);
  b.data = data;
  b.size = sizeof data;
  b.property = CUBERT_ALLOCATION_NATIVE;
  b.owner = NULL;
  b.release = count_release;
  g_released = 0;
  CHECK_STATUS(cubert_client_create_from_bytes(client, b, &h, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_I64(g_released, 1);
  CHECK_OK(cubert_client_memory_cleanup(client, NULL));
  CHECK_EQ_U64(cubert__handle_table_live(table), 0);
  CHECK_OK(cubert_client_memory_usage(client, &usage, NULL));
  CHECK_EQ_U64(usage.number_allocs, 0);
  d.fail_copy = 0;
  /* the device out of memory (a size that needs a new page): the
   * reservation fails, the bytes go */
  b.data = malloc(4u << 20);
  b.size = 4u << 20;
  CHECK(b.data != NULL);
  counting_allocator_fail_at(&c, 1, 1);
  g_released = 0;
  CHECK_STATUS(cubert_client_create_from_bytes(client, b, &h, &err), CUBERT_STATUS_OUT_OF_MEMORY);
  counting_allocator_fail_at(&c, 0, 0);
  free(b.data);
  CHECK_EQ_I64(g_released, 1);
  CHECK_EQ_U64(cubert__handle_table_live(table), 0);
  CHECK_OK(cubert_client_create_from_slice(client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_handle_release(client, &h, NULL));
  fake_release(client, &d, &c);
}

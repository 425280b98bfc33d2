/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_paths.c: the CUDA device's fast paths. An
 * allocation through the pools (empty + release) calls the driver for
 * nothing; uploads above CUBERT_DRIVER_BORROW_MIN read the caller's bytes
 * in place (create and write copy nothing first, the caller may reuse its
 * buffer as soon as they return: also when it is a staging buffer, which
 * the CUDA driver would otherwise DMA from later), including pitched rows
 * wider than a piece; the upload copy mode is reported. Over the fake
 * driver (cuda_paths_*) and on a GPU (cuda_gpu_paths_*: results only).
 */
#include "cuda_test.h"
#include "cubert/driver/driver.h"
#include "cubert/cuda.h"
#include "cubert/os.h"

int cts_cuda_prepare(char *skip, size_t size);

#if defined(__x86_64__) && defined(__SSE2__)
#define PATHS_STREAMING 1u /* the build has non-temporal copies */
#else
#define PATHS_STREAMING 0u
#endif

static char g_skip[CUBERT_ERROR_REASON_SIZE + 16];

typedef struct paths_env_t {
  counting_allocator_t counting;
  cubert_client_t *client;
  const cubert_cuda_loader_t *cu;
} paths_env_t;

static void paths_open(paths_env_t *e, int gpu, const cubert_cuda_options_t *o) {
  cubert_error_t err;
  if (!gpu) fake_knob("CUBERT_LIBCUDA", FAKE_LIBCUDA);
  else if (getenv("CUBERT_LIBCUDA") && strstr(getenv("CUBERT_LIBCUDA"), "cuda-fake"))
    TEST_SKIP("CUDA unavailable: CUBERT_LIBCUDA names the fake driver");
  if (cts_cuda_prepare(g_skip, sizeof g_skip) != 0) TEST_SKIP(g_skip);
  memset(e, 0, sizeof *e);
  CHECK_OK(cubert__cuda_loader_shared(&e->cu, NULL));
  if (cubert_cuda_client_create(counting_allocator_initialize(&e->counting), o, &e->client,
                                &err) != CUBERT_STATUS_OK)
    test_fail(__FILE__, __LINE__, "cannot create the CUDA device: %s", err.reason);
}

static void paths_close(paths_env_t *e) {
  cubert_client_release(e->client);
  CHECK_EQ_I64(e->counting.live_blocks, 0);
  counting_allocator_destroy(&e->counting);
}

static cubert_cuda_client_stats_t stats_of(cubert_client_t *c) {
  cubert_cuda_client_stats_t s;
  CHECK_OK(cubert_cuda_client_stats(c, &s));
  return s;
}

static void fill(uint32_t *p, size_t n, uint32_t seed) {
  size_t i;
  for (i = 0; i < n; i++) p[i] = (uint32_t)i * 2654435761u + seed;
}

static size_t mismatches(const uint32_t *a, const uint32_t *b, size_t n) {
  size_t i, bad = 0;
  for (i = 0; i < n; i++) bad += a[i] != b[i];
  return bad;
}

/* 1000 allocations of 1 MiB and their releases, after the first: no
 * driver call at all (no allocation, free, event, query or sync). */
TEST(cuda_paths_pooled_allocation_calls_no_driver) {
  paths_env_t e;
  fake_cuda_stats_t a, b;
  cubert_handle_t h;
  int i;
  paths_open(&e, 0, NULL);
  CHECK_OK(cubert_client_empty(e.client, 1u << 20, &h, NULL));
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  a = fake_stats(e.cu);
  for (i = 0; i < 1000; i++) {
    CHECK_OK(cubert_client_empty(e.client, 1u << 20, &h, NULL));
    CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  }
  b = fake_stats(e.cu);
  CHECK_EQ_U64(b.mem_alloc_async + b.mem_alloc_sync, a.mem_alloc_async + a.mem_alloc_sync);
  CHECK_EQ_U64(b.mem_free_async + b.mem_free_sync, a.mem_free_async + a.mem_free_sync);
  CHECK_EQ_U64(b.event_records, a.event_records);
  CHECK_EQ_U64(b.event_queries, a.event_queries);
  CHECK_EQ_U64(b.stream_queries, a.stream_queries);
  CHECK_EQ_U64(b.stream_syncs, a.stream_syncs);
  CHECK_EQ_U64(b.ctx_set_current_calls, a.ctx_set_current_calls);
  paths_close(&e);
}

/* create / write of 1 MiB read the caller's bytes in place (no client
 * copy: uploads_borrowed), and the caller's buffer is free again when they
 * return: changing it then changes nothing on the device. The same from a
 * staging buffer (pinned: the driver must not DMA from it later), and for
 * 64 KiB (at the threshold: copied by the client, not borrowed). */
static void in_place_body(int gpu) {
  paths_env_t e;
  const size_t words = 256u << 10, small = CUBERT_DRIVER_BORROW_MIN / 4;
  uint32_t *src = (uint32_t *)malloc(words * 4), *want = (uint32_t *)malloc(words * 4);
  uint32_t *out = (uint32_t *)malloc(words * 4);
  cubert_cuda_client_stats_t s0, s1;
  cubert_handle_t h, hs;
  cubert_bytes_t staging;
  uint64_t size = words * 4;
  CHECK(src && want && out);
  paths_open(&e, gpu, NULL);
  fill(src, words, 1);
  memcpy(want, src, words * 4);
  s0 = stats_of(e.client);
  CHECK_OK(cubert_client_create_from_slice(e.client, src, words * 4, &h, NULL));
  fill(src, words, 99); /* the caller's again */
  CHECK_OK(cubert_client_read_one(e.client, &h, out, words * 4, NULL));
  CHECK_EQ_U64(mismatches(want, out, words), 0);
  s1 = stats_of(e.client);
  CHECK_EQ_U64(s1.uploads_borrowed, s0.uploads_borrowed + 1);
  /* write, in place too */
  memcpy(want, src, words * 4);
  CHECK_OK(cubert_client_write(e.client, &h, src, words * 4, NULL));
  fill(src, words, 5);
  CHECK_OK(cubert_client_read_one(e.client, &h, out, words * 4, NULL));
  CHECK_EQ_U64(mismatches(want, out, words), 0);
  CHECK_EQ_U64(stats_of(e.client).uploads_borrowed, s0.uploads_borrowed + 2);
  /* from a staging buffer, changed right after the write returned */
  CHECK_OK(cubert_client_reserve_staging(e.client, &size, 1, &staging, NULL));
  fill((uint32_t *)staging.data, words, 7);
  memcpy(want, staging.data, words * 4);
  s0 = stats_of(e.client);
  CHECK_OK(cubert_client_write(e.client, &h, staging.data, words * 4, NULL));
  fill((uint32_t *)staging.data, words, 8);
  CHECK_OK(cubert_client_read_one(e.client, &h, out, words * 4, NULL));
  CHECK_EQ_U64(mismatches(want, out, words), 0);
  s1 = stats_of(e.client);
  CHECK_EQ_U64(s1.uploads_borrowed, s0.uploads_borrowed + 1);
  CHECK_EQ_U64(s1.copies_pinned, s0.copies_pinned); /* not a DMA from the caller's chunk */
  staging.release(staging.owner, staging.data, staging.size);
  /* at the threshold: the client copies (not borrowed) */
  s0 = stats_of(e.client);
  CHECK_OK(cubert_client_create_from_slice(e.client, src, small * 4, &hs, NULL));
  CHECK_EQ_U64(stats_of(e.client).uploads_borrowed, s0.uploads_borrowed);
  CHECK_OK(cubert_client_read_one(e.client, &hs, out, small * 4, NULL));
  CHECK_EQ_U64(mismatches(src, out, small), 0);
  CHECK_OK(cubert_client_handle_release(e.client, &hs, NULL));
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  paths_close(&e);
  free(src);
  free(want);
  free(out);
}

TEST(cuda_paths_uploads_read_in_place) { in_place_body(0); }
TEST(cuda_gpu_paths_uploads_read_in_place) { in_place_body(1); }

/* A pitched tensor whose rows are wider than a piece (2 rows of 9 MiB),
 * borrowed: staged row by row, with plain copies (upload_copy CACHED) and
 * with streaming ones (AUTO); the data round-trips and the mode is
 * reported. */
static void wide_rows_body(int gpu) {
  const uint64_t cols = (9u << 20) / 4 + 1, rows = 2; /* rows padded: pitched */
  uint32_t *src = (uint32_t *)malloc(cols * rows * 4), *out = (uint32_t *)malloc(cols * rows * 4);
  uint64_t shape[2];
  int k;
  CHECK(src && out);
  shape[0] = rows;
  shape[1] = cols;
  for (k = 0; k < 2; k++) {
    paths_env_t e;
    cubert_cuda_options_t o;
    cubert_memory_layout_t l;
    cubert_copy_descriptor_t d;
    cubert_cuda_client_stats_t s;
    void *dsts[1];
    uint64_t sizes[1];
    cubert_cuda_options_initialize(&o);
    o.upload_copy = k == 0 ? CUBERT_CUDA_UPLOAD_COPY_CACHED : CUBERT_CUDA_UPLOAD_COPY_AUTO;
    paths_open(&e, gpu, &o);
    s = stats_of(e.client);
    CHECK_EQ_U64(s.upload_streaming, k == 0 ? 0u : PATHS_STREAMING);
    fill(src, cols * rows, 3u + (uint32_t)k);
    CHECK_OK(cubert_client_create_tensor_from_slice(e.client, src, 2, shape, 4, &l, NULL));
    CHECK(l.strides[0] > cols); /* pitched */
    CHECK_EQ_U64(stats_of(e.client).uploads_borrowed, s.uploads_borrowed + 1);
    memset(out, 0, cols * rows * 4);
    memset(&d, 0, sizeof d);
    d.binding = l.memory;
    d.rank = 2;
    d.shape[0] = rows;
    d.shape[1] = cols;
    d.strides[0] = l.strides[0];
    d.strides[1] = 1;
    d.elem_size = 4;
    dsts[0] = out;
    sizes[0] = cols * rows * 4;
    CHECK_OK(cubert_client_read_tensor(e.client, &d, 1, dsts, sizes, NULL));
    CHECK_EQ_U64(mismatches(src, out, cols * rows), 0);
    CHECK_OK(cubert_client_handle_release(e.client, &l.memory, NULL));
    paths_close(&e);
  }
  free(src);
  free(out);
}

TEST(cuda_paths_wide_pitched_rows_borrowed) { wide_rows_body(0); }
TEST(cuda_gpu_paths_wide_pitched_rows_borrowed) { wide_rows_body(1); }

/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_workers.c: the CUDA driver's copy threads
 * (backend-cuda/device/cuda_workers.c: plain and streaming copies, zeroing) and the
 * pinned chunk records in their headers (backend-cuda/device/cuda_staging.c).
 */
#include "driver/cuda_driver.h"
#include "cuda_test.h"

#if defined(__x86_64__) && defined(__SSE2__)
#define CUBERT_TEST_X86_64 1
#else
#define CUBERT_TEST_X86_64 0
#endif

static void copy_case(cuda_workers_t *w, size_t n, int zero) {
  unsigned char *src = (unsigned char *)malloc(n), *dst = (unsigned char *)malloc(n);
  size_t i, bad = 0;
  CHECK(src && dst);
  for (i = 0; i < n; i++) {
    src[i] = (unsigned char)(i * 31u + 7u);
    dst[i] = 0xEE;
  }
  cuda_workers_copy(w, dst, zero ? NULL : src, n);
  for (i = 0; i < n; i++) bad += dst[i] != (zero ? 0 : src[i]);
  CHECK_MSG(bad == 0, "%zu of %zu bytes wrong (zero %d)", bad, n, zero);
  free(src);
  free(dst);
}

/* Copies and zeroing split over 4 threads (sizes that do not divide), again
 * and again (each job starts after every helper left the last one), and the
 * single-thread forms; nothing leaks. */
TEST(cuda_workers_copy_and_zero_in_parallel) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cuda_workers_t *w = NULL, *one = NULL;
  int round;
  CHECK_OK(cuda_workers_create(a, 4, &w));
  CHECK_EQ_U64(cuda_workers_threads(w), 4);
  for (round = 0; round < 20; round++) {
    copy_case(w, (5u << 20) + 13u + (size_t)round * 4099u, round & 1);
    copy_case(w, 1000, 0); /* small: the caller alone */
  }
  CHECK_OK(cuda_workers_create(a, 1, &one));
  CHECK_EQ_U64(cuda_workers_threads(one), 1);
  copy_case(one, 3u << 20, 0);
  CHECK_EQ_U64(cuda_workers_threads(NULL), 1);
  copy_case(NULL, 3u << 20, 1);
  cuda_workers_destroy(w);
  cuda_workers_destroy(one);
  cuda_workers_destroy(NULL);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* Non-temporal copies: every size around the 16-byte head, the 64-byte
 * body and the tail, at every destination misalignment, alone and split
 * over 3 threads (parts of a streaming job); the bytes around untouched. */
TEST(cuda_workers_streaming_copies_every_alignment) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cuda_workers_t *w = NULL;
  static const size_t sizes[] = {0, 1, 15, 16, 63, 64, 255, 256, 257, 1000, 4096 + 77};
  const size_t big = (6u << 20) + 123u;
  unsigned char *src = (unsigned char *)malloc(big + 64), *dst = (unsigned char *)malloc(big + 64);
  size_t i, k, off, bad;
  CHECK(src && dst);
  for (i = 0; i < big + 64; i++) src[i] = (unsigned char)(i * 131u + 5u);
  for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    for (off = 0; off < 16; off++) {
      memset(dst, 0xEE, sizes[k] + 32);
      cuda_workers_copy_streaming(dst + off, src + 3, sizes[k]);
      for (i = 0, bad = 0; i < sizes[k] + 32; i++)
        bad += dst[i] != (i >= off && i < off + sizes[k] ? src[3 + i - off] : 0xEE);
      CHECK_MSG(bad == 0, "size %zu at +%zu: %zu bytes wrong", sizes[k], off, bad);
    }
  }
  CHECK_OK(cuda_workers_create(a, 3, &w));
  for (off = 0; off < 3; off++) {
    memset(dst, 0xEE, big + 64);
    cuda_workers_copy_mode(w, dst + off * 7u, src + off, big, true);
    for (i = 0, bad = 0; i < big; i++) bad += dst[off * 7u + i] != src[off + i];
    CHECK_MSG(bad == 0, "split streaming copy at +%zu: %zu bytes wrong", off * 7u, bad);
    CHECK_EQ_U64(dst[off * 7u + big], 0xEE);
  }
  cuda_workers_copy_mode(w, dst, NULL, big, true); /* zeroing ignores streaming */
  for (i = 0, bad = 0; i < big; i++) bad += dst[i] != 0;
  CHECK_EQ_U64(bad, 0);
  cuda_workers_destroy(w);
  CHECK(cuda_workers_streaming_available() == (sizeof(void *) == 8 && CUBERT_TEST_X86_64));
  free(src);
  free(dst);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(cuda_workers_creation_failure_leaves_nothing) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cuda_workers_t *w = NULL;
  counting_allocator_fail_at(&c, 1, 0);
  CHECK_STATUS(cuda_workers_create(a, 4, &w), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  counting_allocator_fail_at(&c, 2, 0); /* the thread array */
  CHECK_STATUS(cuda_workers_create(a, 4, &w), CUBERT_STATUS_RESOURCE_EXHAUSTED);
  counting_allocator_fail_at(&c, 0, 0);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* A chunk's record sits in its pinned header: found from the data pointer,
 * nothing from the host allocator, and not found once freed. */
TEST(cuda_staging_chunk_record_in_its_pinned_header) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_staging_chunk_t *a = NULL;
  int64_t before;
  fake_env_open(&env);
  before = env.counting.live_blocks;
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 10000, &a, &err));
  CHECK_EQ_I64(env.counting.live_blocks, before);
  CHECK(cubert__cuda_staging_chunk_of(a->ptr) == a);
  CHECK_EQ_U64((uintptr_t)a->ptr % 64, 0);
  CHECK(cubert__cuda_staging_chunk_of(NULL) == NULL);
  CHECK(cubert__cuda_staging_chunk_of((unsigned char *)a->ptr + 64) == NULL);
  memset(a->ptr, 0x5A, a->capacity); /* the whole capacity is usable */
  CHECK(cubert__cuda_staging_chunk_of(a->ptr) == a);
  cubert__cuda_staging_release(env.device, a, NULL);
  CHECK_EQ_U64(cubert__cuda_staging_trim(env.device), 16384);
  fake_env_close(&env);
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_workers.c: the CUDA driver's copy threads
 * (backend-cuda/cuda_workers.c) and the pinned chunk records in their
 * headers (backend-cuda/cuda_staging.c).
 */
#include "cuda_driver.h"
#include "cuda_test.h"

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
  CHECK_OK(cubert_cuda_staging_acquire(env.device, 10000, &a, &err));
  CHECK_EQ_I64(env.counting.live_blocks, before);
  CHECK(cubert_cuda_staging_chunk_of(a->ptr) == a);
  CHECK_EQ_U64((uintptr_t)a->ptr % 64, 0);
  CHECK(cubert_cuda_staging_chunk_of(NULL) == NULL);
  CHECK(cubert_cuda_staging_chunk_of((unsigned char *)a->ptr + 64) == NULL);
  memset(a->ptr, 0x5A, a->capacity); /* the whole capacity is usable */
  CHECK(cubert_cuda_staging_chunk_of(a->ptr) == a);
  cubert_cuda_staging_release(env.device, a, NULL);
  CHECK_EQ_U64(cubert_cuda_staging_trim(env.device), 16384);
  fake_env_close(&env);
}

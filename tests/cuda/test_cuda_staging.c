/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_staging.c: the pinned staging pool (chunks reused,
 * never pinned per upload) and double-buffered uploads, over the fake
 * driver.
 */
#include "cuda_test.h"

TEST(cuda_staging_reuses_chunks) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_staging_chunk_t *a = NULL, *b = NULL;
  cubert_cuda_staging_stats_t st;
  int i;
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 100000, &a, &err));
  CHECK_EQ_U64(a->capacity, 131072); /* the power-of-two class */
  memset(a->ptr, 3, 100000);
  cubert__cuda_staging_release(env.device, a, NULL);
  for (i = 0; i < 50; i++) {
    CHECK_OK(cubert__cuda_staging_acquire(env.device, 70000 + (uint64_t)i, &b, &err));
    CHECK(b == a);
    cubert__cuda_staging_release(env.device, b, NULL);
  }
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.host_allocs, 1);
  CHECK_EQ_U64(st.reuses, 50);
  CHECK_EQ_U64(st.handed_out, 0);
  CHECK_EQ_U64(st.bytes_pinned, 131072);
  CHECK_EQ_U64(fake_stats(&env.cu).host_allocs, 2); /* the chunk + the device's count scratch */
  /* another class is another chunk; small sizes share the smallest class */
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 1, &b, &err));
  CHECK_EQ_U64(b->capacity, 4096);
  cubert__cuda_staging_release(env.device, b, NULL);
  CHECK_EQ_U64(cubert__cuda_staging_trim(env.device), 131072 + 4096);
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.bytes_pinned, 0);
  CHECK_EQ_U64(st.host_frees, 2);
  fake_env_close(&env);
}

TEST(cuda_staging_waits_for_the_chunks_event) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_staging_chunk_t *a = NULL, *b = NULL, *c = NULL;
  cubert_cuda_event_t *e = NULL;
  cubert_cuda_staging_stats_t st;
  fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", "1");
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 8192, &a, &err));
  CHECK_OK(cubert__cuda_event_record(&env.stream, false, &e, &err));
  cubert__cuda_staging_release(env.device, a, e); /* a copy from `a` is in flight */
  /* the event is not done yet (first query): a new chunk */
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 8192, &b, &err));
  CHECK(b != a);
  /* a chunk without a pending use goes in front of `a` */
  cubert__cuda_staging_release(env.device, b, NULL);
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 8192, &c, &err));
  CHECK(c == b); /* ready chunks come first */
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 8192, &b, &err));
  CHECK(b == a); /* and `a` once its event completed (the fake said NOT_READY once) */
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.host_allocs, 2);
  CHECK_EQ_U64(st.handed_out, 2);
  cubert__cuda_staging_release(env.device, b, NULL);
  cubert__cuda_staging_release(env.device, c, NULL);
  fake_env_close(&env);
}

TEST(cuda_staging_trim_keeps_pending_chunks) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_staging_chunk_t *a = NULL;
  cubert_cuda_event_t *e = NULL;
  fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", "1000");
  fake_env_open(&env);
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 8192, &a, &err));
  CHECK_OK(cubert__cuda_event_record(&env.stream, false, &e, &err));
  cubert__cuda_staging_release(env.device, a, e);
  CHECK_EQ_U64(cubert__cuda_staging_trim(env.device), 0);
  /* closing the device waits for the pending copy, then frees the chunk */
  fake_env_close(&env);
}

TEST(cuda_staging_errors) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_staging_chunk_t *a = NULL, *b = NULL;
  fake_knob("CUBERT_FAKE_CUDA_HOST_MEMORY", "150000");
  fake_env_open(&env);
  CHECK_STATUS(cubert__cuda_staging_acquire(env.device, 0, &a, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert__cuda_staging_acquire(env.device, (uint64_t)1 << 50, &a, &err),
               CUBERT_STATUS_BUFFER_TOO_BIG);
  /* pinned memory runs out: the idle chunks are trimmed and it is tried again */
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 65536, &a, &err));
  cubert__cuda_staging_release(env.device, a, NULL);
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 131072, &b, &err));
  CHECK_EQ_U64(fake_stats(&env.cu).host_frees, 1);
  /* and when that does not help either: HOST_OUT_OF_MEMORY */
  CHECK_STATUS(cubert__cuda_staging_acquire(env.device, 131072, &a, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_HOST_OUT_OF_MEMORY);
  cubert__cuda_staging_release(env.device, b, NULL);
  /* above the pinned memory left: nothing pinned, and no host allocation
   * was made for it either (a chunk's record lives in its pinned header) */
  counting_allocator_fail_at(&env.counting, 1, 0);
  CHECK_STATUS(cubert__cuda_staging_acquire(env.device, 1 << 20, &a, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_EQ_U64(env.counting.failures, 0);
  CHECK_EQ_U64(fake_stats(&env.cu).host_allocs, 3); /* scratch + 2 chunks */
  fake_env_close(&env);
}

TEST(cuda_staging_upload_double_buffered) {
  fake_env_t env;
  cubert_error_t err;
  CUdeviceptr d = 0;
  unsigned char *src, *back;
  const uint64_t size = 5 * 65536 + 123;
  cubert_cuda_staging_stats_t st;
  uint64_t i, copies;
  fake_env_open(&env);
  env.device->staging.upload_chunk_bytes = 65536;
  src = (unsigned char *)malloc(size);
  back = (unsigned char *)malloc(size);
  CHECK(src && back);
  for (i = 0; i < size; i++) src[i] = (unsigned char)(i * 131u + 7u);
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, size, &d, &err));
  CHECK_OK(cubert__cuda_staging_upload(&env.stream, d, src, size, &err));
  memset(src, 0, size); /* the source may be reused at once */
  CHECK_OK(cubert__cuda_copy_d2h(&env.stream, back, d, size, &err));
  CHECK_OK(cubert__cuda_stream_synchronize(&env.stream, &err));
  for (i = 0; i < size; i++)
    CHECK_MSG(back[i] == (unsigned char)(i * 131u + 7u), "byte %llu", (unsigned long long)i);
  copies = fake_stats(&env.cu).copies_h2d;
  CHECK_EQ_U64(copies, 6); /* 5 full pieces and the tail */
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.host_allocs, 2); /* two chunks, alternately */
  CHECK_EQ_U64(st.handed_out, 0);
  /* a second upload pins nothing more */
  CHECK_OK(cubert__cuda_staging_upload(&env.stream, d, back, size, &err));
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.host_allocs, 2);
  /* a small upload goes straight from pageable memory; an empty one does nothing */
  CHECK_OK(cubert__cuda_staging_upload(&env.stream, d, back, 100, &err));
  CHECK_OK(cubert__cuda_staging_upload(&env.stream, d, NULL, 0, &err));
  CHECK_STATUS(cubert__cuda_staging_upload(&env.stream, d, NULL, 4, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.host_allocs, 2);
  CHECK_EQ_U64(st.handed_out, 0);
  CHECK_OK(cubert__cuda_memory_free(&env.stream, d, &err));
  free(src);
  free(back);
  fake_env_close(&env);
}

TEST(cuda_staging_upload_failure_returns_the_chunks) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_staging_stats_t st;
  const uint64_t size = 3 * 32768;
  unsigned char *src = (unsigned char *)calloc(1, size);
  CUdeviceptr d = 0;
  CHECK(src != NULL);
  fake_env_open(&env);
  env.device->staging.upload_chunk_bytes = 32768;
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, size, &d, &err));
  CHECK_STATUS(cubert__cuda_staging_upload(&env.stream, 0, src, size, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* the driver refuses the copy: its error, and both chunks back in the pool */
  fake_knob("CUBERT_FAKE_CUDA_COPY_RESULT", "999");
  CHECK_STATUS(cubert__cuda_staging_upload(&env.stream, d, src, size, &err),
               CUBERT_STATUS_IO_FAILED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_IO_UNKNOWN);
  CHECK_REASON_HAS(err, "cuMemcpyHtoDAsync failed: CUDA_ERROR_UNKNOWN");
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.handed_out, 0);
  CHECK_EQ_U64(st.host_allocs, 2);
  CHECK(unsetenv("CUBERT_FAKE_CUDA_COPY_RESULT") == 0);
  CHECK_OK(cubert__cuda_staging_upload(&env.stream, d, src, size, &err));
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.host_allocs, 2);
  /* no pinned memory left at all */
  CHECK_EQ_U64(cubert__cuda_staging_trim(env.device), 2 * 32768);
  fake_knob("CUBERT_FAKE_CUDA_HOST_MEMORY", "64"); /* only the count scratch fits */
  CHECK_STATUS(cubert__cuda_staging_upload(&env.stream, d, src, size, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.handed_out, 0);
  CHECK_OK(cubert__cuda_memory_free(&env.stream, d, &err));
  fake_env_close(&env);
  free(src);
}

/* Staging chunks and events are released from other threads (a client
 * dropping a staging buffer, the GC): the pools take their own locks. */
typedef struct staging_thread_t {
  fake_env_t *env;
  int failures;
} staging_thread_t;

static void *staging_thread(void *user) {
  staging_thread_t *t = (staging_thread_t *)user;
  int i;
  for (i = 0; i < 2000; i++) {
    cubert_cuda_staging_chunk_t *c = NULL;
    if (cubert__cuda_staging_acquire(t->env->device, 4096u << (i % 3), &c, NULL) !=
        CUBERT_STATUS_OK) {
      t->failures++;
      continue;
    }
    ((unsigned char *)c->ptr)[0] = (unsigned char)i;
    cubert__cuda_staging_release(t->env->device, c, NULL);
  }
  return NULL;
}

TEST(cuda_staging_and_events_across_threads) {
  fake_env_t env;
  cubert_error_t err;
  pthread_t th[3];
  staging_thread_t st[3];
  cubert_cuda_staging_stats_t s;
  cubert_cuda_event_t *e = NULL;
  uint64_t live;
  int i;
  fake_env_open(&env);
  for (i = 0; i < 3; i++) {
    st[i].env = &env;
    st[i].failures = 0;
    CHECK(pthread_create(&th[i], NULL, staging_thread, &st[i]) == 0);
  }
  for (i = 0; i < 2000; i++) { /* meanwhile: events recorded here, released here */
    CHECK_OK(cubert__cuda_event_record(&env.stream, false, &e, &err));
    cubert__cuda_event_release(env.device, e);
  }
  for (i = 0; i < 3; i++) {
    CHECK(pthread_join(th[i], NULL) == 0);
    CHECK_EQ_I64(st[i].failures, 0);
  }
  cubert__cuda_staging_stats(env.device, &s);
  CHECK_EQ_U64(s.handed_out, 0);
  CHECK(s.host_allocs <= 9); /* at most one chunk per thread and class */
  CHECK_EQ_U64(s.reuses + s.host_allocs, 6000);
  cubert__cuda_event_pool_counts(env.device, NULL, NULL, &live);
  CHECK_EQ_U64(live, 0);
  fake_env_close(&env);
}

/* Back-to-back uploads: the second one waits for the first one's chunks
 * (their copies are still "in flight": the fake answers NOT_READY) instead
 * of pinning new ones; a plain acquisition pins a new chunk then. */
TEST(cuda_staging_upload_waits_for_its_chunks) {
  fake_env_t env;
  cubert_error_t err;
  cubert_cuda_staging_stats_t st;
  cubert_cuda_staging_chunk_t *c = NULL;
  const uint64_t size = 3 * 65536;
  unsigned char *src = (unsigned char *)calloc(1, size);
  CUdeviceptr d = 0;
  CHECK(src != NULL);
  fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", "1000000");
  fake_env_open(&env);
  env.device->staging.upload_chunk_bytes = 65536;
  CHECK_OK(cubert__cuda_memory_alloc(&env.stream, size, &d, &err));
  CHECK_OK(cubert__cuda_staging_upload(&env.stream, d, src, size, &err));
  CHECK_OK(cubert__cuda_staging_upload(&env.stream, d, src, size, &err));
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.host_allocs, 2);
  CHECK_EQ_U64(st.reuses, 2);
  CHECK_OK(cubert__cuda_staging_acquire(env.device, 65536, &c, &err));
  cubert__cuda_staging_stats(env.device, &st);
  CHECK_EQ_U64(st.host_allocs, 3);
  cubert__cuda_staging_release(env.device, c, NULL);
  CHECK_OK(cubert__cuda_memory_free(&env.stream, d, &err));
  fake_env_close(&env);
  free(src);
}

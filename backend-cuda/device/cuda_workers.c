/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/device/cuda_workers.c: host threads that copy into and out of
 * pinned chunks together. One thread's memcpy from pageable memory into
 * pinned memory runs at about 5-9 GB/s on the H100 machine, a sixth of what
 * the DMA engine takes from pinned memory (55 GB/s); a large upload splits
 * each piece into parts that the helpers and the calling thread copy at the
 * same time, while the DMA engine moves the previous piece.
 *
 * One job at a time (callers take turns on `turn`): the caller publishes the
 * job (its fields, then `generation` with release order), wakes the helpers
 * that sleep, takes parts itself (an atomic part counter), then waits until
 * every helper has left the job (so no helper can still be looking at it
 * when the next one is published). Between jobs a helper spins for
 * WORKERS_SPIN_NS before it sleeps: the pieces of one upload come a few
 * microseconds apart, and waking a sleeping thread costs tens of
 * microseconds in a virtual machine.
 *
 * Streaming copies (x86-64): the destination is written with non-temporal
 * stores, so its lines are neither read first (no read-for-ownership) nor
 * kept in the caches: a third less memory traffic for a copy into a chunk
 * that only the DMA engine reads next.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#if (defined(__x86_64__) || defined(_M_X64)) && defined(__SSE2__)
#include <emmintrin.h>
#define WORKERS_STREAMING 1
#else
#define WORKERS_STREAMING 0
#endif

#include "driver/cuda_driver.h"

/* Below this, a copy is not split (waking threads costs more). */
#define WORKERS_MIN_SPLIT (2u << 20)
/* Parts are at least this big (and 64-byte aligned). */
#define WORKERS_MIN_PART (256u << 10)
/* How long an idle helper (or the caller waiting for the helpers) spins. */
#define WORKERS_SPIN_NS 100000u

struct cuda_workers_t {
  cubert_allocator_t allocator;
  uint32_t helpers;  /* running */
  uint32_t capacity; /* entries of threads[] */
  pthread_t *threads;
  pthread_mutex_t turn; /* one job at a time */
  pthread_mutex_t mutex;
  pthread_cond_t start, done;
  uint64_t generation; /* bumped per job (atomic; written under mutex) */
  uint32_t stop;       /* atomic; written under mutex */
  uint32_t sleepers;   /* helpers in cond_wait (under mutex) */
  /* the job */
  unsigned char *dst;
  const unsigned char *src;
  size_t n, part;
  uint32_t parts;
  uint32_t streaming;
  uint32_t next;     /* atomic: next part to take */
  uint32_t left;     /* atomic: helpers done with the job */
};

static uint64_t now_ns(void) {
  struct timespec ts;
  (void)clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#else
  __asm__ __volatile__("" ::: "memory");
#endif
}

bool cuda_workers_streaming_available(void) { return WORKERS_STREAMING != 0; }

void cuda_workers_copy_streaming(void *dst, const void *src, size_t n) {
#if WORKERS_STREAMING
  unsigned char *d = (unsigned char *)dst;
  const unsigned char *s = (const unsigned char *)src;
  size_t head = (16u - ((uintptr_t)d & 15u)) & 15u;
  if (n < 256) {
    memcpy(d, s, n);
    return;
  }
  memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  while (n >= 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
    __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
    _mm_stream_si128((__m128i *)(void *)d, a);
    _mm_stream_si128((__m128i *)(void *)(d + 16), b);
    _mm_stream_si128((__m128i *)(void *)(d + 32), c);
    _mm_stream_si128((__m128i *)(void *)(d + 48), e);
    s += 64;
    d += 64;
    n -= 64;
  }
  memcpy(d, s, n);
  _mm_sfence(); /* the stores are visible before the caller signals them done */
#else
  memcpy(dst, src, n);
#endif
}

static void copy_part(const cuda_workers_t *w, size_t off, size_t len) {
  if (!w->src) memset(w->dst + off, 0, len);
  else if (w->streaming) cuda_workers_copy_streaming(w->dst + off, w->src + off, len);
  else memcpy(w->dst + off, w->src + off, len);
}

static void run_parts(cuda_workers_t *w) {
  for (;;) {
    uint32_t i = __atomic_fetch_add(&w->next, 1u, __ATOMIC_ACQ_REL);
    size_t off, len;
    if (i >= w->parts) return;
    off = (size_t)i * w->part;
    len = w->n - off < w->part ? w->n - off : w->part;
    copy_part(w, off, len);
  }
}

/* A helper waiting for a job after `seen`: spin, then sleep. Returns the
 * new generation, or 0 to stop. */
static uint64_t helper_wait(cuda_workers_t *w, uint64_t seen) {
  uint64_t g, start = 0;
  uint32_t i;
  for (i = 0;; i++) {
    if (__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) return 0;
    g = __atomic_load_n(&w->generation, __ATOMIC_ACQUIRE);
    if (g != seen) return g;
    if ((i & 63u) == 0) {
      uint64_t t = now_ns();
      if (!start) start = t;
      else if (t - start > WORKERS_SPIN_NS) break;
    }
    relax();
  }
  (void)pthread_mutex_lock(&w->mutex);
  w->sleepers++;
  while (!w->stop && w->generation == seen) (void)pthread_cond_wait(&w->start, &w->mutex);
  w->sleepers--;
  g = w->stop ? 0 : w->generation;
  (void)pthread_mutex_unlock(&w->mutex);
  return g;
}

static void *helper_main(void *arg) {
  cuda_workers_t *w = (cuda_workers_t *)arg;
  uint64_t seen = 0;
  for (;;) {
    seen = helper_wait(w, seen);
    if (!seen) break;
    run_parts(w);
    /* the last to leave wakes a caller that sleeps (under the mutex, so the
     * wake cannot slip between its check and its wait) */
    if (__atomic_add_fetch(&w->left, 1u, __ATOMIC_ACQ_REL) == w->helpers) {
      (void)pthread_mutex_lock(&w->mutex);
      (void)pthread_cond_broadcast(&w->done);
      (void)pthread_mutex_unlock(&w->mutex);
    }
  }
  return NULL;
}

cubert_status_t cuda_workers_create(cubert_allocator_t allocator, uint32_t threads,
                                    cuda_workers_t **out_workers) {
  cuda_workers_t *w = NULL;
  uint32_t i;
  if (cubert_allocator_malloc(allocator, sizeof *w, 0, (void **)&w, NULL) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  memset(w, 0, sizeof *w);
  w->allocator = allocator;
  w->capacity = threads > 1 ? threads - 1 : 0;
  if (w->capacity &&
      cubert_allocator_malloc_array(allocator, w->capacity, sizeof(pthread_t), 0,
                                    (void **)&w->threads, NULL) != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, w, sizeof *w, 0);
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  (void)pthread_mutex_init(&w->turn, NULL);
  (void)pthread_mutex_init(&w->mutex, NULL);
  (void)pthread_cond_init(&w->start, NULL);
  (void)pthread_cond_init(&w->done, NULL);
  for (i = 0; i < w->capacity; i++) {
    if (pthread_create(&w->threads[i], NULL, helper_main, w) != 0) {
      cuda_workers_destroy(w); /* joins the ones started */
      return CUBERT_STATUS_INTERNAL;
    }
    w->helpers = i + 1;
  }
  *out_workers = w;
  return CUBERT_STATUS_OK;
}

void cuda_workers_destroy(cuda_workers_t *w) {
  uint32_t i;
  if (!w) return;
  (void)pthread_mutex_lock(&w->mutex);
  __atomic_store_n(&w->stop, 1u, __ATOMIC_RELEASE);
  (void)pthread_cond_broadcast(&w->start);
  (void)pthread_mutex_unlock(&w->mutex);
  for (i = 0; i < w->helpers; i++) (void)pthread_join(w->threads[i], NULL);
  (void)pthread_cond_destroy(&w->done);
  (void)pthread_cond_destroy(&w->start);
  (void)pthread_mutex_destroy(&w->mutex);
  (void)pthread_mutex_destroy(&w->turn);
  cubert_allocator_free(w->allocator, w->threads, (size_t)w->capacity * sizeof(pthread_t), 0);
  cubert_allocator_free(w->allocator, w, sizeof *w, 0);
}

uint32_t cuda_workers_threads(const cuda_workers_t *w) { return w ? w->helpers + 1 : 1; }

/* The caller waits until every helper left the job: spin, then sleep. */
static void wait_helpers(cuda_workers_t *w) {
  uint64_t start = now_ns();
  uint32_t i;
  for (i = 0; __atomic_load_n(&w->left, __ATOMIC_ACQUIRE) < w->helpers; i++) {
    if ((i & 63u) == 0 && now_ns() - start > WORKERS_SPIN_NS) break;
    relax();
  }
  (void)pthread_mutex_lock(&w->mutex);
  while (__atomic_load_n(&w->left, __ATOMIC_ACQUIRE) < w->helpers)
    (void)pthread_cond_wait(&w->done, &w->mutex);
  (void)pthread_mutex_unlock(&w->mutex);
}

void cuda_workers_copy_mode(cuda_workers_t *w, void *dst, const void *src, size_t n,
                            bool streaming) {
  size_t part;
  uint32_t parts;
  streaming = streaming && WORKERS_STREAMING && src;
  if (!w || w->helpers == 0 || n < WORKERS_MIN_SPLIT) {
    if (!src) memset(dst, 0, n);
    else if (streaming) cuda_workers_copy_streaming(dst, src, n);
    else memcpy(dst, src, n);
    return;
  }
  part = n / (w->helpers + 1);
  if (part < WORKERS_MIN_PART) part = WORKERS_MIN_PART;
  part = (part + 63u) & ~(size_t)63u;
  parts = (uint32_t)((n + part - 1) / part);
  (void)pthread_mutex_lock(&w->turn);
  (void)pthread_mutex_lock(&w->mutex);
  w->dst = (unsigned char *)dst;
  w->src = (const unsigned char *)src;
  w->n = n;
  w->part = part;
  w->parts = parts;
  w->streaming = streaming ? 1u : 0u;
  __atomic_store_n(&w->next, 0u, __ATOMIC_RELAXED);
  __atomic_store_n(&w->left, 0u, __ATOMIC_RELAXED);
  /* publishes the fields above to the helpers that spin */
  __atomic_store_n(&w->generation, w->generation + 1u, __ATOMIC_RELEASE);
  if (w->sleepers) (void)pthread_cond_broadcast(&w->start);
  (void)pthread_mutex_unlock(&w->mutex);
  run_parts(w);
  /* every part taken; each helper leaves the job once its parts are done
   * (one that woke late finds none left and leaves at once) */
  wait_helpers(w);
  (void)pthread_mutex_unlock(&w->turn);
}

void cuda_workers_copy(cuda_workers_t *w, void *dst, const void *src, size_t n) {
  cuda_workers_copy_mode(w, dst, src, n, false);
}

/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/cuda_workers.c: host threads that copy into and out of
 * pinned chunks together. One thread's memcpy from pageable memory into
 * pinned memory runs at about 9 GB/s on the H100 machine, a sixth of what
 * the DMA engine takes from pinned memory (55 GB/s); a large upload splits
 * each piece into parts that the helpers and the calling thread copy at the
 * same time, while the DMA engine moves the previous piece.
 *
 * One job at a time (callers take turns on `turn`): the caller publishes the
 * job under `mutex`, wakes the helpers, takes parts itself (an atomic part
 * counter), then waits until every helper has left the job (so no helper
 * can still be looking at it when the next one is published).
 */
#include <pthread.h>
#include <string.h>

#include "cuda_driver.h"

/* Below this, a copy is not split (waking threads costs more). */
#define WORKERS_MIN_SPLIT (2u << 20)
/* Parts are at least this big (and 64-byte aligned). */
#define WORKERS_MIN_PART (512u << 10)

struct cuda_workers_t {
  cubert_allocator_t allocator;
  uint32_t helpers;  /* running */
  uint32_t capacity; /* entries of threads[] */
  pthread_t *threads;
  pthread_mutex_t turn; /* one job at a time */
  pthread_mutex_t mutex;
  pthread_cond_t start, done;
  uint64_t generation; /* bumped per job */
  int stop;
  /* the job */
  unsigned char *dst;
  const unsigned char *src;
  size_t n, part;
  uint32_t parts;
  uint32_t next;     /* atomic: next part to take */
  uint32_t left;     /* helpers done with the job (under mutex) */
};

static void run_parts(cuda_workers_t *w) {
  for (;;) {
    uint32_t i = __atomic_fetch_add(&w->next, 1u, __ATOMIC_ACQ_REL);
    size_t off, len;
    if (i >= w->parts) return;
    off = (size_t)i * w->part;
    len = w->n - off < w->part ? w->n - off : w->part;
    if (w->src) memcpy(w->dst + off, w->src + off, len);
    else memset(w->dst + off, 0, len);
  }
}

static void *helper_main(void *arg) {
  cuda_workers_t *w = (cuda_workers_t *)arg;
  uint64_t seen = 0;
  (void)pthread_mutex_lock(&w->mutex);
  for (;;) {
    while (!w->stop && w->generation == seen) (void)pthread_cond_wait(&w->start, &w->mutex);
    if (w->stop) break;
    seen = w->generation;
    (void)pthread_mutex_unlock(&w->mutex);
    run_parts(w);
    (void)pthread_mutex_lock(&w->mutex);
    if (++w->left == w->helpers) (void)pthread_cond_broadcast(&w->done);
  }
  (void)pthread_mutex_unlock(&w->mutex);
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
  w->stop = 1;
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

void cuda_workers_copy(cuda_workers_t *w, void *dst, const void *src, size_t n) {
  size_t part;
  uint32_t parts;
  if (!w || w->helpers == 0 || n < WORKERS_MIN_SPLIT) {
    if (src) memcpy(dst, src, n);
    else memset(dst, 0, n);
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
  __atomic_store_n(&w->next, 0u, __ATOMIC_RELEASE);
  w->left = 0;
  w->generation++;
  (void)pthread_cond_broadcast(&w->start);
  (void)pthread_mutex_unlock(&w->mutex);
  run_parts(w);
  /* every part taken; each helper leaves the job once its parts are done
   * (one that woke late finds none left and leaves at once) */
  (void)pthread_mutex_lock(&w->mutex);
  while (w->left < w->helpers) (void)pthread_cond_wait(&w->done, &w->mutex);
  (void)pthread_mutex_unlock(&w->mutex);
  (void)pthread_mutex_unlock(&w->turn);
}

/* SPDX-License-Identifier: MIT */
#include "counting_allocator.h"

#include <stdlib.h>
#include <string.h>

/* Each block carries a header recording its size, so frees with a wrong size
 * are detected (Lua's debug allocator). */
typedef struct block_header_t {
  uint64_t size;
  uint64_t magic;
} block_header_t;

#define COUNTING_MAGIC 0xC0BE47A110CA7EDULL
#define COUNTING_PAD 128 /* header space; keeps alignment up to 128 (CUBERT_FALSE_SHARING_BYTES) */

static void *block_payload(void *raw) { return (unsigned char *)raw + COUNTING_PAD; }
static void *block_raw(void *payload) { return (unsigned char *)payload - COUNTING_PAD; }

static int should_fail(counting_allocator_t *c) {
  c->calls++;
  if (c->fail_at == 0) return 0;
  if (c->calls == c->fail_at || (c->fail_persist && c->calls > c->fail_at)) {
    c->failures++;
    return 1;
  }
  return 0;
}

static void *counting_fn(void *self, void *ptr, size_t old_size, size_t new_size, size_t align) {
  counting_allocator_t *c = (counting_allocator_t *)self;
  void *result = NULL;
  size_t a = align < 16 ? 16 : align;
  pthread_mutex_lock(&c->mutex);
  if (a > COUNTING_PAD) {
    /* Larger alignments are not needed by cubert's bookkeeping. */
    pthread_mutex_unlock(&c->mutex);
    return NULL;
  }
  if (new_size == 0) {
    if (ptr != NULL) {
      block_header_t *h = (block_header_t *)block_raw(ptr);
      if (h->magic != COUNTING_MAGIC || h->size != old_size) c->bad_frees++;
      c->live_blocks--;
      c->live_bytes -= (int64_t)h->size;
      h->magic = 0;
      memset(ptr, 0x55, h->size);
      free(h);
    }
    pthread_mutex_unlock(&c->mutex);
    return NULL;
  }
  if (should_fail(c)) {
    pthread_mutex_unlock(&c->mutex);
    return NULL;
  }
  if (ptr == NULL) {
    void *raw = NULL;
    if (posix_memalign(&raw, COUNTING_PAD, COUNTING_PAD + new_size) == 0) {
      block_header_t *h = (block_header_t *)raw;
      h->size = new_size;
      h->magic = COUNTING_MAGIC;
      result = block_payload(raw);
      memset(result, 0xAA, new_size);
      c->live_blocks++;
      c->live_bytes += (int64_t)new_size;
    }
  } else {
    block_header_t *h = (block_header_t *)block_raw(ptr);
    void *raw = NULL;
    if (h->magic != COUNTING_MAGIC || h->size != old_size) c->bad_frees++;
    if (posix_memalign(&raw, COUNTING_PAD, COUNTING_PAD + new_size) == 0) {
      block_header_t *nh = (block_header_t *)raw;
      size_t keep = old_size < new_size ? old_size : new_size;
      nh->size = new_size;
      nh->magic = COUNTING_MAGIC;
      result = block_payload(raw);
      memcpy(result, ptr, keep);
      if (new_size > keep) memset((unsigned char *)result + keep, 0xAA, new_size - keep);
      c->live_bytes += (int64_t)new_size - (int64_t)h->size;
      h->magic = 0;
      free(h);
    }
  }
  if (c->live_bytes > c->peak_bytes) c->peak_bytes = c->live_bytes;
  pthread_mutex_unlock(&c->mutex);
  return result;
}

cubert_allocator_t counting_allocator_initialize(counting_allocator_t *counting) {
  cubert_allocator_t a;
  memset(counting, 0, sizeof(*counting));
  pthread_mutex_init(&counting->mutex, NULL);
  a.self = counting;
  a.fn = counting_fn;
  return a;
}

void counting_allocator_fail_at(counting_allocator_t *counting, uint64_t n, int persist) {
  pthread_mutex_lock(&counting->mutex);
  counting->calls = 0;
  counting->failures = 0;
  counting->fail_at = n;
  counting->fail_persist = persist;
  pthread_mutex_unlock(&counting->mutex);
}

/* the largest peak of the allocators destroyed since the last take */
static int64_t g_largest_peak;
static pthread_mutex_t g_largest_mutex = PTHREAD_MUTEX_INITIALIZER;

void counting_allocator_destroy(counting_allocator_t *counting) {
  pthread_mutex_lock(&g_largest_mutex);
  if (counting->peak_bytes > g_largest_peak) g_largest_peak = counting->peak_bytes;
  pthread_mutex_unlock(&g_largest_mutex);
  pthread_mutex_destroy(&counting->mutex);
}

int64_t counting_allocator_take_largest_peak(void) {
  int64_t peak;
  pthread_mutex_lock(&g_largest_mutex);
  peak = g_largest_peak;
  g_largest_peak = 0;
  pthread_mutex_unlock(&g_largest_mutex);
  return peak;
}

/* SPDX-License-Identifier: MIT */
/* core/device/device_shards.c: sharded submission beside the device lock
 * (device_shards.h explains the scheme and its handshake). */
#include "device/device_shards.h"
#include "base/atomic.h"

/* A shard's word, alone in its CUBERT_FALSE_SHARING_BYTES span (128: two
 * cache lines; with 64, the shards of streams 2k and 2k+1, written by their
 * threads at every launch and reserve, shared a prefetched line pair). */
#define SHARD_LINE CUBERT_FALSE_SHARING_BYTES

typedef struct shard_t {
  cubert_atomic_u32_t held; /* 1: a thread is inside */
  unsigned char pad_[SHARD_LINE - sizeof(cubert_atomic_u32_t)];
} shard_t;

typedef char shard_spans_apart_[sizeof(shard_t) == SHARD_LINE ? 1 : -1];

struct cubert_device_shards_t {
  shard_t shards[CUBERT_DEVICE_SHARDS]; /* first: the allocation is SHARD_LINE-aligned */
  /* read at every enter, written only with the device lock: a span of its own */
  cubert_atomic_u32_t whole;            /* 1: the device lock's owner wants every shard idle */
  cubert_atomic_u32_t used;             /* bit i: shard i was entered at least once */
  uint32_t depth;                       /* the device lock's recursion depth (under it) */
  cubert_lock_t inner;
  void (*yield)(void);
  cubert_allocator_t allocator;
};

/* ---- the device lock ------------------------------------------------------------------ */

static void shards_wait_idle(cubert_device_shards_t *s) {
#ifdef CUBERT_ATOMIC_SEQ_CST
  uint32_t used, i;
  cubert__atomic_store_u32_seq(&s->whole, 1);
  used = cubert__atomic_load_u32_seq(&s->used);
  for (i = 0; used; i++, used >>= 1) {
    uint32_t spins = 0;
    if (!(used & 1u)) continue;
    while (cubert__atomic_load_u32(&s->shards[i].held)) {
      /* a launch on that stream is being enqueued: short, unless its
       * thread was preempted or its stream's queue is full */
      if (++spins >= 64u && s->yield) {
        s->yield();
        spins = 0;
      }
    }
  }
#else
  (void)s;
#endif
}

static void shards_lock(void *self) {
  cubert_device_shards_t *s = (cubert_device_shards_t *)self;
  s->inner.lock(s->inner.self);
  if (++s->depth == 1u) shards_wait_idle(s);
}

static void shards_unlock(void *self) {
  cubert_device_shards_t *s = (cubert_device_shards_t *)self;
  if (--s->depth == 0u) cubert__atomic_store_u32(&s->whole, 0);
  s->inner.unlock(s->inner.self);
}

cubert_lock_t cubert__device_shards_lock(cubert_device_shards_t *shards) {
  cubert_lock_t l;
  l.lock = shards_lock;
  l.unlock = shards_unlock;
  l.self = shards;
  return l;
}

/* ---- shards ------------------------------------------------------------------------------ */

bool cubert__device_shards_enter(cubert_device_shards_t *s, uint32_t index) {
#ifdef CUBERT_ATOMIC_SEQ_CST
  shard_t *shard = &s->shards[index % CUBERT_DEVICE_SHARDS];
  uint32_t bit = 1u << (index % CUBERT_DEVICE_SHARDS), expected = 0;
  if (cubert__atomic_load_u32(&s->whole)) return false; /* cheap early out */
  if (!(cubert__atomic_load_u32(&s->used) & bit)) (void)cubert__atomic_fetch_or_u32_seq(&s->used, bit);
  if (!cubert__atomic_cas_u32_seq(&shard->held, &expected, 1u)) return false;
  if (cubert__atomic_load_u32_seq(&s->whole)) { /* the device lock's owner came first */
    cubert__atomic_store_u32(&shard->held, 0);
    return false;
  }
  return true;
#else
  (void)s;
  (void)index;
  return false;
#endif
}

bool cubert__device_shards_enter_wait(cubert_device_shards_t *s, uint32_t index, bool patient) {
#ifdef CUBERT_ATOMIC_SEQ_CST
  shard_t *shard = &s->shards[index % CUBERT_DEVICE_SHARDS];
  uint32_t looks = 0, rounds = 0;
  for (;;) {
    if (cubert__device_shards_enter(s, index)) return true;
    /* wait while the device lock or the shard is held, then try again */
    while (looks < CUBERT_DEVICE_SHARDS_WAIT &&
           (cubert__atomic_load_u32(&s->whole) || cubert__atomic_load_u32(&shard->held)))
      looks++;
    if (++looks < CUBERT_DEVICE_SHARDS_WAIT) continue;
    if (!patient || ++rounds > CUBERT_DEVICE_SHARDS_ROUNDS) return false;
    /* the holder keeps it long: wait in the lock itself (the launch then
     * still runs in its shard, not under the lock) */
    shards_lock(s);
    shards_unlock(s);
    looks = 0;
  }
#else
  (void)s;
  (void)index;
  (void)patient;
  return false;
#endif
}

void cubert__device_shards_leave(cubert_device_shards_t *s, uint32_t index) {
  cubert__atomic_store_u32(&s->shards[index % CUBERT_DEVICE_SHARDS].held, 0);
}

/* ---- lifetime ---------------------------------------------------------------------------- */

cubert_status_t cubert__device_shards_create(cubert_allocator_t allocator, cubert_lock_t inner,
                                             void (*yield)(void),
                                             cubert_device_shards_t **out_shards) {
  cubert_device_shards_t *s = NULL;
  if (!out_shards || !inner.lock || !inner.unlock) return CUBERT_STATUS_INVALID_ARGUMENT;
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc(allocator, sizeof(*s), SHARD_LINE, (void **)&s, NULL));
  s->inner = inner;
  s->yield = yield;
  s->allocator = allocator;
  s->depth = 0;
  *out_shards = s; /* zero-filled: no shard held, none used */
  return CUBERT_STATUS_OK;
}

void cubert__device_shards_destroy(cubert_device_shards_t *shards) {
  if (!shards) return;
  cubert_allocator_free(shards->allocator, shards, sizeof(*shards), SHARD_LINE);
}

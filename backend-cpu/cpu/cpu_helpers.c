/* SPDX-License-Identifier: MIT */
/* backend-cpu/cpu/cpu_helpers.c: stream helpers (see cpu_helpers.h). */
#include "cpu/cpu_helpers.h"

#include <string.h>

#include "cpu/cpu_stream.h"

/* One helper: its thread and its hazard pointer, on lines of its own. */
typedef struct cpu_helper_t {
  cubert_os_thread_t thread;
  struct cpu_helpers_t *helpers;
  cpu_stream_t *hazard; /* atomic: the stream this helper is about to use or uses */
  uint32_t next_word;   /* where its next scan starts (fairness) */
  unsigned char pad_[64];
} cpu_helper_t;

struct cpu_helpers_t {
  cubert_allocator_t allocator;
  uint32_t count;
  uint32_t started;       /* threads started (teardown joins these) */
  uint32_t stream_count;
  uint32_t words;         /* of `ready` */
  cpu_stream_t **streams; /* atomic entries: registered streams by slot */
  cpu_helper_t *helper;   /* count entries, 64-aligned */
  cubert_os_mutex_t mutex;
  cubert_os_cond_t cond;  /* helpers sleep here */
  cubert_os_backoff_t backoff;
  int running;            /* atomic */
  uint64_t served;        /* atomic (statistics) */
  uint64_t handed_back;   /* atomic (statistics) */
  unsigned char pad_state_[64];
  uint32_t idle;          /* atomic: helpers awake and looking for offers */
  uint32_t asleep;        /* atomic: helpers waiting on cond (under mutex) */
  unsigned char pad_ready_[64];
  uint64_t ready[(CPU_STREAM_MAX_INDEX + 63) / 64]; /* atomic: offered slots */
};

static int any_ready(cpu_helpers_t *h) {
  uint32_t w;
  for (w = 0; w < h->words; w++)
    if (__atomic_load_n(&h->ready[w], __ATOMIC_SEQ_CST)) return 1;
  return 0;
}

/* Take the offer of `slot` (its bit), true when it was there. */
static int take(cpu_helpers_t *h, uint32_t slot) {
  uint64_t bit = 1ull << (slot & 63u);
  return (__atomic_fetch_and(&h->ready[slot >> 6], ~bit, __ATOMIC_SEQ_CST) & bit) != 0;
}

/* The registered stream of `slot`, announced in *hazard (NULL: gone; the
 * caller clears *hazard when done). */
static cpu_stream_t *protect(cpu_helpers_t *h, cpu_stream_t **hazard, uint32_t slot) {
  cpu_stream_t *s = __atomic_load_n(&h->streams[slot], __ATOMIC_ACQUIRE);
  if (!s) return NULL;
  __atomic_store_n(hazard, s, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&h->streams[slot], __ATOMIC_SEQ_CST) == s) return s;
  __atomic_store_n(hazard, NULL, __ATOMIC_RELEASE);
  return NULL;
}

/* Every helper busy (none idle, none asleep): the offers still pending go to
 * their streams' workers, so none waits behind a helper's long op. */
static void hand_pending_to_workers(cpu_helper_t *me) {
  cpu_helpers_t *h = me->helpers;
  uint32_t w;
  for (w = 0; w < h->words; w++) {
    uint64_t bits = __atomic_load_n(&h->ready[w], __ATOMIC_SEQ_CST);
    while (bits) {
      uint32_t slot = w * 64u + (uint32_t)__builtin_ctzll(bits);
      cpu_stream_t *s;
      bits &= bits - 1u;
      if (!take(h, slot)) continue;
      s = protect(h, &me->hazard, slot);
      if (!s) continue;
      cpu_stream_wake_worker(s);
      __atomic_store_n(&me->hazard, NULL, __ATOMIC_RELEASE);
      __atomic_add_fetch(&h->handed_back, 1u, __ATOMIC_RELAXED);
    }
  }
}

/* A helper about to run ops: if offers are pending and no helper is left
 * idle, wake a sleeping one, or (all busy) hand them to their workers.
 * Dekker with cpu_helpers_offer: the helper decremented `idle` before this
 * look at `ready`, an offer sets `ready` before its look at `idle`. */
static void keep_offers_moving(cpu_helper_t *me) {
  cpu_helpers_t *h = me->helpers;
  int wake_sleeper = 0;
  if (!any_ready(h) || __atomic_load_n(&h->idle, __ATOMIC_SEQ_CST) != 0) return;
  cubert__os_mutex_lock(&h->mutex);
  if (__atomic_load_n(&h->asleep, __ATOMIC_SEQ_CST)) {
    cubert__os_cond_signal(&h->cond);
    wake_sleeper = 1;
  }
  cubert__os_mutex_unlock(&h->mutex);
  if (!wake_sleeper) hand_pending_to_workers(me);
}

static void serve(cpu_helper_t *me, uint32_t slot) {
  cpu_helpers_t *h = me->helpers;
  cpu_stream_t *s = protect(h, &me->hazard, slot);
  if (!s) return;
  if (cpu_stream_help_ops(s, CPU_HELPERS_BATCH)) __atomic_add_fetch(&h->served, 1u, __ATOMIC_RELAXED);
  __atomic_store_n(&me->hazard, NULL, __ATOMIC_RELEASE);
}

/* Take and serve every offer seen in one pass over the bitmap. */
static void serve_offers(cpu_helper_t *me) {
  cpu_helpers_t *h = me->helpers;
  uint32_t i;
  for (i = 0; i < h->words; i++) {
    uint32_t w = (me->next_word + i) % h->words;
    uint64_t bits = __atomic_load_n(&h->ready[w], __ATOMIC_ACQUIRE);
    while (bits) {
      uint32_t slot = w * 64u + (uint32_t)__builtin_ctzll(bits);
      bits &= bits - 1u;
      if (!take(h, slot)) continue;
      __atomic_sub_fetch(&h->idle, 1u, __ATOMIC_SEQ_CST);
      keep_offers_moving(me);
      serve(me, slot);
      __atomic_add_fetch(&h->idle, 1u, __ATOMIC_SEQ_CST);
    }
  }
  me->next_word = (me->next_word + 1u) % h->words;
}

static int look(void *arg) {
  cpu_helpers_t *h = (cpu_helpers_t *)arg;
  return any_ready(h) || !__atomic_load_n(&h->running, __ATOMIC_RELAXED);
}

static void helper_main(void *arg) {
  cpu_helper_t *me = (cpu_helper_t *)arg;
  cpu_helpers_t *h = me->helpers;
  for (;;) {
    if (!cubert__os_backoff_wait(&h->backoff, look, h, UINT64_MAX)) {
      /* asleep: `idle` drops before the look at `ready` (under the mutex,
       * which an offer that saw no idle helper takes to signal) */
      cubert__os_mutex_lock(&h->mutex);
      __atomic_sub_fetch(&h->idle, 1u, __ATOMIC_SEQ_CST);
      __atomic_add_fetch(&h->asleep, 1u, __ATOMIC_SEQ_CST);
      while (__atomic_load_n(&h->running, __ATOMIC_SEQ_CST) && !any_ready(h))
        cubert__os_cond_wait(&h->cond, &h->mutex);
      __atomic_sub_fetch(&h->asleep, 1u, __ATOMIC_SEQ_CST);
      __atomic_add_fetch(&h->idle, 1u, __ATOMIC_SEQ_CST);
      cubert__os_mutex_unlock(&h->mutex);
    }
    if (!__atomic_load_n(&h->running, __ATOMIC_ACQUIRE)) return;
    serve_offers(me);
  }
}

static void helpers_free(cpu_helpers_t *h) {
  cubert__os_cond_deinitialize(&h->cond);
  cubert__os_mutex_deinitialize(&h->mutex);
  cubert_allocator_free(h->allocator, h->streams, h->stream_count * sizeof(cpu_stream_t *), 0);
  cubert_allocator_free(h->allocator, h->helper, h->count * sizeof(cpu_helper_t), 64);
  cubert_allocator_free(h->allocator, h, sizeof(*h), 64);
}

static void stop_and_join(cpu_helpers_t *h) {
  uint32_t i;
  cubert__os_mutex_lock(&h->mutex);
  __atomic_store_n(&h->running, 0, __ATOMIC_SEQ_CST);
  cubert__os_cond_broadcast(&h->cond);
  cubert__os_mutex_unlock(&h->mutex);
  for (i = 0; i < h->started; i++) cubert__os_thread_join(&h->helper[i].thread);
}

cubert_status_t cpu_helpers_create(cubert_allocator_t allocator, uint32_t count,
                                   uint32_t stream_count, cpu_helpers_t **out_helpers) {
  cpu_helpers_t *h = NULL;
  cubert_status_t status;
  uint32_t i;
  *out_helpers = NULL;
  if (count < 1u || count > CPU_HELPERS_MAX || stream_count < 1u ||
      stream_count > CPU_STREAM_MAX_INDEX)
    return CUBERT_STATUS_INVALID_ARGUMENT;
  if (cubert_allocator_malloc(allocator, sizeof(*h), 64, (void **)&h, NULL) != CUBERT_STATUS_OK)
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  memset(h, 0, sizeof(*h));
  h->allocator = allocator;
  h->count = count;
  h->stream_count = stream_count;
  h->words = (stream_count + 63u) / 64u;
  if (cubert_allocator_malloc_array(allocator, count, sizeof(cpu_helper_t), 64,
                                    (void **)&h->helper, NULL) != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, h, sizeof(*h), 64);
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  if (cubert_allocator_malloc_array(allocator, stream_count, sizeof(cpu_stream_t *), 0,
                                    (void **)&h->streams, NULL) != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, h->helper, count * sizeof(cpu_helper_t), 64);
    cubert_allocator_free(allocator, h, sizeof(*h), 64);
    return CUBERT_STATUS_RESOURCE_EXHAUSTED;
  }
  memset(h->helper, 0, count * sizeof(cpu_helper_t));
  memset(h->streams, 0, stream_count * sizeof(cpu_stream_t *));
  status = cubert__os_mutex_initialize(&h->mutex);
  if (status == CUBERT_STATUS_OK) {
    status = cubert__os_cond_initialize(&h->cond);
    if (status != CUBERT_STATUS_OK) cubert__os_mutex_deinitialize(&h->mutex);
  }
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(allocator, h->streams, stream_count * sizeof(cpu_stream_t *), 0);
    cubert_allocator_free(allocator, h->helper, count * sizeof(cpu_helper_t), 64);
    cubert_allocator_free(allocator, h, sizeof(*h), 64);
    return status;
  }
  cubert__os_backoff_initialize(&h->backoff);
  h->running = 1;
  h->idle = count; /* each thread starts awake, looking */
  for (i = 0; i < count; i++) {
    h->helper[i].helpers = h;
    h->helper[i].next_word = i % h->words;
    status = cubert__os_thread_create(&h->helper[i].thread, helper_main, &h->helper[i], 0);
    if (status != CUBERT_STATUS_OK) {
      /* the threads not started never count as idle */
      __atomic_sub_fetch(&h->idle, count - i, __ATOMIC_SEQ_CST);
      stop_and_join(h);
      helpers_free(h);
      return CUBERT_STATUS_RESOURCE_EXHAUSTED;
    }
    h->started = i + 1u;
  }
  *out_helpers = h;
  return CUBERT_STATUS_OK;
}

void cpu_helpers_destroy(cpu_helpers_t *h) {
  if (!h) return;
  stop_and_join(h);
  helpers_free(h);
}

void cpu_helpers_register(cpu_helpers_t *h, cpu_stream_t *s) {
  s->helpers = h;
  __atomic_store_n(&h->streams[s->slot], s, __ATOMIC_RELEASE);
}

void cpu_helpers_unregister(cpu_helpers_t *h, cpu_stream_t *s) {
  uint32_t i;
  __atomic_store_n(&h->streams[s->slot], NULL, __ATOMIC_SEQ_CST);
  (void)take(h, s->slot);
  for (i = 0; i < h->count; i++)
    while (__atomic_load_n(&h->helper[i].hazard, __ATOMIC_SEQ_CST) == s) cubert__os_thread_yield();
  s->helpers = NULL;
}

void cpu_helpers_offer(cpu_helpers_t *h, cpu_stream_t *s) {
  uint32_t slot = s->slot;
  int wake_sleeper = 0;
  __atomic_fetch_or(&h->ready[slot >> 6], 1ull << (slot & 63u), __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&h->idle, __ATOMIC_SEQ_CST) != 0) return; /* one is looking */
  cubert__os_mutex_lock(&h->mutex);
  if (__atomic_load_n(&h->asleep, __ATOMIC_SEQ_CST)) {
    cubert__os_cond_signal(&h->cond);
    wake_sleeper = 1;
  }
  cubert__os_mutex_unlock(&h->mutex);
  /* every helper busy: the stream's own worker, unless a helper took it */
  if (!wake_sleeper && take(h, slot)) {
    cpu_stream_wake_worker(s);
    __atomic_add_fetch(&h->handed_back, 1u, __ATOMIC_RELAXED);
  }
}

uint64_t cpu_helpers_served(const cpu_helpers_t *h) {
  return __atomic_load_n(&h->served, __ATOMIC_ACQUIRE);
}

uint64_t cpu_helpers_handed_back(const cpu_helpers_t *h) {
  return __atomic_load_n(&h->handed_back, __ATOMIC_ACQUIRE);
}

uint32_t cpu_helpers_count(const cpu_helpers_t *h) { return h->count; }

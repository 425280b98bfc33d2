/* SPDX-License-Identifier: MIT */
/* backend-cpu/cpu/cpu_helpers.c: stream helpers (see cpu_helpers.h). */
#include "cpu/cpu_helpers.h"

#include <string.h>

#include "cpu/cpu_stream.h"

/* An awake helper that found no work this long sleeps. */
#define HELPERS_IDLE_NS 200000u
/* A gap this long between two passes: the helper was descheduled (more
 * runnable threads than cores): it sleeps at once (as os_thread.h's
 * backoff). */
#define HELPERS_GAP_NS 20000u
/* A helper's first sleep is bounded (see cpu_helpers.h, "Waking"). */
#define HELPERS_FIRST_SLEEP_NS 1000000u
/* A helper reads at most one stream's tail per this long (cpu_helpers.h,
 * "Pulls"). */
#define HELPERS_PULL_GAP_NS 16000u

/* One helper: its thread and its epoch, on lines of its own. */
typedef struct cpu_helper_t {
  cubert_os_thread_t thread;
  struct cpu_helpers_t *helpers;
  uint64_t epoch;     /* atomic: odd while it looks at registered streams */
  uint32_t next_slot; /* where its next pass starts (fairness) */
  uint64_t next_pull_ns; /* when it may read a stream's tail again */
  unsigned char pad_[64];
} cpu_helper_t;

struct cpu_helpers_t {
  cubert_allocator_t allocator;
  uint32_t count;
  uint32_t started;       /* threads started (teardown joins these) */
  uint32_t stream_count;
  cpu_stream_t **streams; /* atomic entries: registered streams by slot */
  cpu_helper_t *helper;   /* count entries, 64-aligned */
  cubert_os_mutex_t mutex;
  cubert_os_cond_t cond;  /* helpers sleep here */
  int running;            /* atomic */
  uint64_t served;        /* atomic (statistics) */
  uint64_t handed_back;   /* atomic (statistics) */
  unsigned char pad_awake_[64];
  /* read by producers on every commit that finds a worker asleep: written
   * only when a helper falls asleep or wakes */
  uint32_t awake;  /* atomic: helpers not asleep */
  uint32_t asleep; /* atomic: helpers waiting on cond (under mutex) */
  unsigned char pad_busy_[64];
  uint32_t busy; /* atomic: helpers running ops (the helpers' own line) */
  unsigned char pad_end_[64];
};

static cpu_stream_t *registered(cpu_helpers_t *h, uint32_t slot) {
  return __atomic_load_n(&h->streams[slot], __ATOMIC_SEQ_CST); /* after the epoch's entry */
}

static void epoch_enter(cpu_helper_t *me) { __atomic_add_fetch(&me->epoch, 1u, __ATOMIC_SEQ_CST); }
static void epoch_leave(cpu_helper_t *me) { __atomic_add_fetch(&me->epoch, 1u, __ATOMIC_RELEASE); }

/* Wake one sleeping helper, if any sleeps. */
static void wake_one(cpu_helpers_t *h) {
  cubert__os_mutex_lock(&h->mutex);
  if (__atomic_load_n(&h->asleep, __ATOMIC_SEQ_CST)) cubert__os_cond_signal(&h->cond);
  cubert__os_mutex_unlock(&h->mutex);
}

/* Run the stream's ops if it is the helpers' (see cpu_stream_help_ops);
 * true when it ran some. */
static int serve(cpu_helper_t *me, cpu_stream_t *s) {
  cpu_helpers_t *h = me->helpers;
  int ran;
  /* the last free helper going busy keeps one awake if it can, so that a
   * long op here does not hold up the other streams (cpu_helpers.h) */
  if (__atomic_add_fetch(&h->busy, 1u, __ATOMIC_SEQ_CST) >=
          __atomic_load_n(&h->awake, __ATOMIC_SEQ_CST) &&
      __atomic_load_n(&h->asleep, __ATOMIC_SEQ_CST))
    wake_one(h);
  ran = cpu_stream_help_ops(s, CPU_HELPERS_BATCH);
  __atomic_sub_fetch(&h->busy, 1u, __ATOMIC_SEQ_CST);
  if (ran) __atomic_add_fetch(&h->served, 1u, __ATOMIC_RELAXED);
  return ran;
}

/* One pass over the registered streams whose worker sleeps: run the ops
 * of those with work (published, or committed: cpu_stream_helpers_work).
 * True when it ran an op. */
static int pass(cpu_helper_t *me, uint64_t now) {
  cpu_helpers_t *h = me->helpers;
  uint32_t i, n = h->stream_count;
  uint64_t pull_at = now >= me->next_pull_ns ? now : CPU_STREAM_HELPERS_NO_PULL;
  int found = 0;
  epoch_enter(me);
  for (i = 0; i < n; i++) {
    uint32_t slot = (me->next_slot + i) % n;
    cpu_stream_t *s = registered(h, slot);
    int pulled, work;
    if (!s) continue;
    work = cpu_stream_helpers_work(s, pull_at, &pulled);
    if (pulled) { /* one tail per HELPERS_PULL_GAP_NS */
      me->next_pull_ns = now + HELPERS_PULL_GAP_NS;
      pull_at = CPU_STREAM_HELPERS_NO_PULL;
    }
    if (work && serve(me, s)) found = 1;
  }
  epoch_leave(me);
  me->next_slot = (me->next_slot + 1u) % n;
  return found;
}

/* Committed work on a stream the helpers serve (a look, no op run). */
static int pending(cpu_helper_t *me) {
  cpu_helpers_t *h = me->helpers;
  uint32_t i;
  int any = 0;
  epoch_enter(me);
  for (i = 0; i < h->stream_count && !any; i++) {
    cpu_stream_t *s = registered(h, i);
    any = s && cpu_stream_helpers_work(s, 0, NULL);
  }
  epoch_leave(me);
  return any;
}

/* Sleep until woken (or the first sleep's bound passed) with nothing
 * pending. Dekker with the producers (cpu_stream_commit): `awake` drops
 * before the look at the tails; a producer stores its tail before it reads
 * `awake` (relaxed: a commit racing with this can be missed; the first
 * sleep is bounded, and its end looks again). */
static void helper_sleep(cpu_helper_t *me) {
  cpu_helpers_t *h = me->helpers;
  int first = 1;
  cubert__os_mutex_lock(&h->mutex);
  __atomic_sub_fetch(&h->awake, 1u, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&h->asleep, 1u, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&h->running, __ATOMIC_SEQ_CST) && !pending(me)) {
    if (first) {
      (void)cubert__os_cond_timed_wait(&h->cond, &h->mutex, HELPERS_FIRST_SLEEP_NS);
      first = 0;
    } else {
      cubert__os_cond_wait(&h->cond, &h->mutex);
    }
  }
  __atomic_sub_fetch(&h->asleep, 1u, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&h->awake, 1u, __ATOMIC_SEQ_CST);
  cubert__os_mutex_unlock(&h->mutex);
}

static void helper_main(void *arg) {
  cpu_helper_t *me = (cpu_helper_t *)arg;
  cpu_helpers_t *h = me->helpers;
  uint64_t now = cubert__os_clock_ns(), last_work = now, last = now;
  while (__atomic_load_n(&h->running, __ATOMIC_ACQUIRE)) {
    int found = pass(me, now ? now : 1u);
    last = now;
    now = cubert__os_clock_ns();
    if (found) {
      last_work = now;
      continue;
    }
    if (now - last_work >= HELPERS_IDLE_NS || now - last >= HELPERS_GAP_NS) {
      helper_sleep(me);
      now = last_work = cubert__os_clock_ns();
      continue;
    }
    cubert__os_cpu_relax();
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
  h->running = 1;
  h->awake = count; /* each thread starts awake, looking */
  for (i = 0; i < count; i++) {
    h->helper[i].helpers = h;
    h->helper[i].next_slot = (i * stream_count) / count;
    status = cubert__os_thread_create(&h->helper[i].thread, helper_main, &h->helper[i], 0);
    if (status != CUBERT_STATUS_OK) {
      __atomic_sub_fetch(&h->awake, count - i, __ATOMIC_SEQ_CST); /* never started */
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
  /* a helper in a pass may hold the stream (it read the slot before): wait
   * for every pass that began before the store to end */
  for (i = 0; i < h->count; i++) {
    uint64_t e = __atomic_load_n(&h->helper[i].epoch, __ATOMIC_SEQ_CST);
    if (e & 1u)
      while (__atomic_load_n(&h->helper[i].epoch, __ATOMIC_SEQ_CST) == e) cubert__os_thread_yield();
  }
  s->helpers = NULL;
}

int cpu_helpers_awake(const cpu_helpers_t *h) {
  return __atomic_load_n(&h->awake, __ATOMIC_RELAXED) != 0;
}

void cpu_helpers_wake(cpu_helpers_t *h) { wake_one(h); }

void cpu_helpers_handed_back_one(cpu_helpers_t *h) {
  __atomic_add_fetch(&h->handed_back, 1u, __ATOMIC_RELAXED);
}

uint64_t cpu_helpers_served(const cpu_helpers_t *h) {
  return __atomic_load_n(&h->served, __ATOMIC_ACQUIRE);
}

uint64_t cpu_helpers_handed_back(const cpu_helpers_t *h) {
  return __atomic_load_n(&h->handed_back, __ATOMIC_ACQUIRE);
}

uint32_t cpu_helpers_count(const cpu_helpers_t *h) { return h->count; }

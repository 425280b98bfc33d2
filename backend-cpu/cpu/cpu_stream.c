/* SPDX-License-Identifier: MIT */
/* backend-cpu/cpu/cpu_stream.c: simulated streams (see cpu_stream.h). */
#include "cpu/cpu_stream.h"

#include "cpu/cpu_helpers.h"

#include "os/os_obs.h"
#include "os/os_thread.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void deadline_after(struct timespec *ts, uint64_t timeout_ns) {
  clock_gettime(CLOCK_REALTIME, ts);
  ts->tv_sec += (time_t)(timeout_ns / 1000000000ull);
  ts->tv_nsec += (long)(timeout_ns % 1000000000ull);
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

/* A producer facing a full ring spins this long before it sleeps (the idle
 * worker and host waiters adapt theirs: cubert__os_backoff_wait). */
#define STREAM_SPIN_NS 50000u
/* An idle spinning worker looks at the producer's unpublished tail (and the
 * clock) every this many spins (power of two), and after every yield: work
 * nobody flushes starts within tens of microseconds, and the producer's line
 * moves once per pull, not once per op. */
#define STREAM_PULL_SPINS 1024u
/* The worker's first sleep after spinning is bounded (see worker_wait). */
#define STREAM_FIRST_SLEEP_NS 1000000u

/* A spinner's budget: call with *start = 0 first; true once STREAM_SPIN_NS
 * passed since that first call. */
static int spin_budget_spent(uint64_t *start) {
  uint64_t now = cubert__os_clock_ns();
  if (!*start) {
    *start = now;
    return 0;
  }
  return now - *start > STREAM_SPIN_NS;
}

static uint64_t load_head(cpu_stream_t *s) { return __atomic_load_n(&s->head, __ATOMIC_ACQUIRE); }

/* Worker side: ops published so far. published is re-read only when the
 * last value seen is used up; it can lag behind what a pull saw (and so
 * behind head), hence the orderings, never equality. */
static int has_published_work(cpu_stream_t *s) {
  uint64_t p, h = load_head(s);
  if (s->tail_seen > h) return 1;
  p = __atomic_load_n(&s->published, __ATOMIC_ACQUIRE);
  if (p > s->tail_seen) s->tail_seen = p;
  return s->tail_seen > h;
}
/* Worker side: the lazy pull of committed ops not published yet (a read of
 * the producer's line, so not on every spin). */
static int pull_committed(cpu_stream_t *s) {
  s->tail_seen = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
  return s->tail_seen > load_head(s);
}
static int point_done(cpu_stream_t *s, uint64_t seq) {
  return __atomic_load_n(&s->completed, __ATOMIC_ACQUIRE) >= seq;
}
/* Producer side: the worker's progress is re-read only when the last value
 * seen says full. It reads `completed` (equal to head once an op is done;
 * the slot is free by then), whose seq_cst store pairs with `waiters` for a
 * producer that sleeps on a full ring. */
static uint64_t load_progress(cpu_stream_t *s) {
  return __atomic_load_n(&s->completed, __ATOMIC_SEQ_CST);
}
static int has_room(cpu_stream_t *s, uint64_t unused) {
  (void)unused;
  if (s->tail - s->head_seen < s->ring_size) return 1;
  s->head_seen = load_progress(s);
  return s->tail - s->head_seen < s->ring_size;
}

/* The consumer role: one thread at a time runs ops (writes head, completed,
 * fault_marks). Taken with acquire (what the last holder wrote is visible),
 * given back seq_cst (the Dekker pair with a worker about to sleep: see
 * role_release). */
static int role_claim(cpu_stream_t *s) {
  uint32_t free_role = 0;
  return __atomic_load_n(&s->consumer, __ATOMIC_RELAXED) == 0 &&
         __atomic_compare_exchange_n(&s->consumer, &free_role, 1u, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED);
}

/* Queue an error an op raised (the op at `seq`) and log it for waiters. */
static void op_failed(cpu_stream_t *s, const cubert_error_t *error, uint32_t origin,
                      uint64_t origin_seq, uint64_t seq) {
  if (OS_LOG_ON(CUBERT_LOG_LEVEL_WARN)) {
    char what[64];
    (void)snprintf(what, sizeof what, "cpu device %u stream %u: error queued",
                   (unsigned)s->device_index, (unsigned)s->slot);
    cubert__os_log_error(CUBERT_LOG_LEVEL_WARN, what, error);
  }
  pthread_mutex_lock(&s->mutex);
  cubert_error_aggregate(&s->errors, error);
  __atomic_store_n(&s->error_count, s->error_count + 1, __ATOMIC_RELEASE);
  if (s->propagates) {
    cpu_fault_log_add(&s->faults, seq, origin, origin_seq, error);
    __atomic_store_n(&s->fault_total, s->fault_total + 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&s->mutex);
}

/* A wait op at `seq` whose point (w, upto) completed: inherit w's failures
 * logged at or before the point, one at a time (never both mutexes). */
static void inherit_faults(cpu_stream_t *s, cpu_stream_t *w, uint64_t upto, uint64_t seq) {
  cpu_fault_entry_t e;
  uint32_t found;
  if (!s->propagates || !w->propagates || !__atomic_load_n(&w->fault_total, __ATOMIC_ACQUIRE))
    return;
  for (;;) {
    pthread_mutex_lock(&w->mutex);
    found = cpu_fault_log_next(&w->faults, upto, s->slot, s->fault_marks, CPU_STREAM_MAX_INDEX, &e);
    pthread_mutex_unlock(&w->mutex);
    if (!found) return;
    op_failed(s, &e.error, e.origin, e.origin_seq, seq);
  }
}

/* Run one op (its wait, if any, already satisfied) as the consumer: the op
 * at position head + 1. */
static void execute_op(cpu_stream_t *s, cpu_op_t *op) {
  cubert_error_t error;
  cubert_status_t status;
  uint64_t seq = s->head + 1;
  if (op->wait_stream) inherit_faults(s, op->wait_stream, op->wait_seq, seq);
  cubert_error_clear(&error);
  status = op->run ? op->run(s, op->payload, &error) : CUBERT_STATUS_OK;
  if (status != CUBERT_STATUS_OK) {
    if (error.status == CUBERT_STATUS_OK) error.status = status;
    op_failed(s, &error, s->slot, seq, seq);
  }
  if (op->done) (void)op->done(s, op->payload, &error);
}

static void run_op(cpu_stream_t *s, cpu_op_t *op) {
  if (op->wait_stream) {
    if (OS_TRACE_ON()) { /* a cross-stream wait, on the waiting stream's track */
      uint64_t t0 = cubert__os_trace_now();
      char name[48];
      (void)cpu_stream_wait_point(op->wait_stream, op->wait_seq, UINT64_MAX);
      (void)snprintf(name, sizeof name, "wait stream %u op %llu", (unsigned)op->wait_stream->slot,
                     (unsigned long long)op->wait_seq);
      cubert__os_trace_record(s->device_index, OS_TRACE_TID_STREAM + s->slot, OS_TRACE_CAT_WAIT,
                              name, t0, cubert__os_trace_now(), 0, OS_TRACE_FLOW_NONE, 0, NULL,
                              0);
    } else {
      (void)cpu_stream_wait_point(op->wait_stream, op->wait_seq, UINT64_MAX);
    }
  }
  execute_op(s, op);
}

/* Wake host waiters and a producer waiting for room, if any sleeps. */
static void wake_waiters(cpu_stream_t *s) {
  if (__atomic_load_n(&s->waiters, __ATOMIC_SEQ_CST)) {
    pthread_mutex_lock(&s->mutex);
    pthread_cond_broadcast(&s->cond_progress);
    pthread_mutex_unlock(&s->mutex);
  }
}

/* The role's holder: run the op at head and mark it completed. */
static void run_head(cpu_stream_t *s, cpu_op_t *op) {
  uint64_t h = s->head; /* the holder's own field */
  run_op(s, op);
  __atomic_store_n(&s->completed, h + 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->head, h + 1, __ATOMIC_RELEASE);
  wake_waiters(s);
}

/* Work the worker may start: a committed op beyond head and a free role.
 * seq_cst loads: the sleeping side of the Dekker pairs with publishers
 * (published / tail, then sleeping) and role_release (consumer, then
 * sleeping). */
static int claimable_work(cpu_stream_t *s) {
  uint64_t h = __atomic_load_n(&s->head, __ATOMIC_SEQ_CST);
  return (__atomic_load_n(&s->published, __ATOMIC_SEQ_CST) > h ||
          __atomic_load_n(&s->tail, __ATOMIC_SEQ_CST) > h) &&
         __atomic_load_n(&s->consumer, __ATOMIC_SEQ_CST) == 0 &&
         !__atomic_load_n(&s->test_hold_worker, __ATOMIC_RELAXED);
}

/* The helpers may run the stream's ops (cpu_helpers.h): it has some, it
 * carries no collective, and no test holds its worker. */
static int helpers_take_it(cpu_stream_t *s) {
  return s->helpers && !__atomic_load_n(&s->worker_only, __ATOMIC_RELAXED) &&
         !__atomic_load_n(&s->test_hold_worker, __ATOMIC_RELAXED);
}

/* Give the role back; if committed work is left and the worker sleeps (it
 * went to sleep while this thread held the role), wake it: the worker
 * stores `sleeping` before it reads `consumer`, this thread stores
 * `consumer` before it reads `sleeping` (both seq_cst), so one sees the
 * other. */
static void role_release(cpu_stream_t *s) {
  uint64_t h;
  __atomic_store_n(&s->consumer, 0u, __ATOMIC_SEQ_CST);
  if (!__atomic_load_n(&s->sleeping, __ATOMIC_SEQ_CST)) return;
  h = load_head(s);
  if (__atomic_load_n(&s->tail, __ATOMIC_SEQ_CST) > h) {
    pthread_mutex_lock(&s->mutex);
    pthread_cond_signal(&s->cond_work);
    pthread_mutex_unlock(&s->mutex);
  }
}

/* The idle worker's look for work (cubert__os_backoff_wait's condition):
 * published work it can claim (it then holds the role), the unpublished tail
 * every STREAM_PULL_SPINS looks, and the stop. */
typedef struct worker_look_t {
  cpu_stream_t *stream;
  uint32_t looks;
  int stop;
} worker_look_t;

/* The idle worker's pull of the committed ops (*out_work: some), and whether
 * it may stop: the stream stopped and nothing is left. deinitialize stores
 * `running` after the last commit, so a pull after seeing it sees every
 * committed op: `running` is read before the pull. Read after it, a commit
 * made between the two (the stream's last op at teardown: a page's
 * stream-ordered free) was neither pulled nor run, and its memory leaked
 * (the rare "leaked N blocks" of simdiff_threaded_and_deterministic_agree). */
static int worker_stopped(cpu_stream_t *s, int *out_work) {
  void (*hook)(cpu_stream_t *) = __atomic_load_n(&s->test_before_pull, __ATOMIC_ACQUIRE);
  int stopped = !__atomic_load_n(&s->running, __ATOMIC_ACQUIRE);
  if (hook) hook(s);
  *out_work = pull_committed(s);
  return stopped && !*out_work;
}

static int worker_ready(void *arg) {
  worker_look_t *w = (worker_look_t *)arg;
  cpu_stream_t *s = w->stream;
  int work = has_published_work(s);
  if (!work && (++w->looks & (STREAM_PULL_SPINS - 1u)) == 0) {
    if (worker_stopped(s, &work)) {
      w->stop = 1;
      return 1;
    }
  }
  if (!work || __atomic_load_n(&s->test_hold_worker, __ATOMIC_RELAXED) || !role_claim(s))
    return 0; /* nothing, or a helping waiter runs it */
  if (has_published_work(s) || pull_committed(s)) return 1;
  role_release(s); /* the helper ran it meanwhile */
  return 0;
}

/* Worker: wait until it holds the role with an op visible (1) or the stream
 * stopped with every committed op run (0). Spins (adaptive), then sleeps on
 * cond_work. Dekker with cpu_stream_publish: sleeping is
 * published (seq_cst) before published is read again, and a publisher's
 * seq_cst compare-and-swap of published precedes its read of sleeping, so
 * one of the two sees the other; the same with role_release. */
static int worker_wait(cpu_stream_t *s) {
  worker_look_t w;
  int first, work;
  w.stream = s;
  w.looks = 0;
  w.stop = 0;
  for (;;) {
    if (cubert__os_backoff_wait(&s->worker_backoff, worker_ready, &w, UINT64_MAX)) {
      if (!w.stop) return 1;
      /* stopped with nothing left (no waiter helps at teardown) */
      return 0;
    }
    pthread_mutex_lock(&s->mutex);
    __atomic_store_n(&s->sleeping, 1, __ATOMIC_SEQ_CST);
    first = 1;
    for (;;) {
      /* publishers signal once per sleep (wake_sent); cleared before each
       * look at the work (seq_cst both: a publisher whose exchange saw the
       * stale 1 published before this clear, so the look sees its op) */
      __atomic_store_n(&s->wake_sent, 0u, __ATOMIC_SEQ_CST);
      if (claimable_work(s) || !__atomic_load_n(&s->running, __ATOMIC_SEQ_CST)) break;
      if (first) {
        /* A commit's relaxed look at `sleeping` (no fence on the fast path)
         * can miss this sleep while its tail store is still on its way: the
         * first sleep is 1 ms, so such an op starts within 1 ms even if
         * nobody publishes. Later sleeps need a wake-up. */
        struct timespec deadline;
        deadline_after(&deadline, STREAM_FIRST_SLEEP_NS);
        (void)pthread_cond_timedwait(&s->cond_work, &s->mutex, &deadline);
        first = 0;
      } else {
        pthread_cond_wait(&s->cond_work, &s->mutex);
      }
    }
    __atomic_store_n(&s->sleeping, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->mutex);
    /* woken by work (claimed at the next look, which pulls), or stopped */
    if (worker_stopped(s, &work)) return 0;
    w.looks = STREAM_PULL_SPINS - 1u;
  }
}

/* The worker: claims the role when it sees work, runs every op it sees,
 * gives the role back when it caught up (so a waiter may run later ops
 * while the worker is not scheduled). */
static void *worker_main(void *arg) {
  cpu_stream_t *s = (cpu_stream_t *)arg;
  for (;;) {
    if (!worker_wait(s)) break;
    do {
      uint64_t h = s->head;
      cpu_op_t *op = &s->ring[h % s->ring_size];
      if (s->tail_seen > h + 2) /* the op after next, written on the producer's core */
        __builtin_prefetch(&s->ring[(h + 2) % s->ring_size], 0, 3);
      run_head(s, op);
    } while (has_published_work(s));
    role_release(s);
  }
  return NULL;
}

cubert_status_t cpu_stream_initialize(cpu_stream_t *s, cubert_allocator_t allocator, uint32_t slot,
                                      void *owner, cpu_stream_run_fn_t run_until) {
  int deterministic = run_until != NULL;
  memset(s, 0, sizeof(*s));
  s->allocator = allocator;
  s->slot = slot;
  s->owner = owner;
  s->run_until = run_until;
  s->deterministic = deterministic;
  s->ring_size = deterministic ? CPU_STREAM_RING_DETERMINISTIC : CPU_STREAM_RING;
  s->prefetch_write = cubert__os_cpu_has_prefetch_write();
  s->faults.entries = s->fault_entries;
  s->faults.capacity = CPU_STREAM_FAULT_LOG;
  cubert__os_backoff_initialize(&s->worker_backoff);
  cubert__os_backoff_initialize(&s->host_backoff);
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc_array(allocator, (size_t)s->ring_size,
                                                       sizeof(cpu_op_t), 64, (void **)&s->ring,
                                                       NULL));
  pthread_mutex_init(&s->mutex, NULL);
  pthread_cond_init(&s->cond_work, NULL);
  pthread_cond_init(&s->cond_progress, NULL);
  s->running = 1;
  if (deterministic) { /* no worker: the device's step loop runs the ops */
    s->started = 1;
    return CUBERT_STATUS_OK;
  }
  if (pthread_create(&s->thread, NULL, worker_main, s) != 0) {
    pthread_mutex_destroy(&s->mutex);
    pthread_cond_destroy(&s->cond_work);
    pthread_cond_destroy(&s->cond_progress);
    cubert_allocator_free(allocator, s->ring, (size_t)s->ring_size * sizeof(cpu_op_t), 64);
    s->ring = NULL;
    return CUBERT_STATUS_INTERNAL;
  }
  s->started = 1;
  return CUBERT_STATUS_OK;
}

static bool stream_idle_fn(void *arg) { return cpu_stream_idle((cpu_stream_t *)arg); }

void cpu_stream_deinitialize(cpu_stream_t *s) {
  if (!s->started) return;
  /* no helper uses the stream from here on; the worker runs what is left */
  if (s->helpers) cpu_helpers_unregister(s->helpers, s);
  if (s->deterministic) {
    /* run what is queued (other streams' steps too, in the chooser's order);
     * a deadlock cannot hold the teardown: the rest runs in order */
    if (s->run_until(s->owner, stream_idle_fn, s) != CUBERT_STATUS_OK)
      while (!cpu_stream_idle(s)) cpu_stream_step(s);
  } else {
    pthread_mutex_lock(&s->mutex);
    __atomic_store_n(&s->running, 0, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&s->cond_work);
    pthread_mutex_unlock(&s->mutex);
    pthread_join(s->thread, NULL);
  }
  pthread_mutex_destroy(&s->mutex);
  pthread_cond_destroy(&s->cond_work);
  pthread_cond_destroy(&s->cond_progress);
  cubert_allocator_free(s->allocator, s->ring, (size_t)s->ring_size * sizeof(cpu_op_t), 64);
  s->ring = NULL;
  s->started = 0;
}

/* Sleep on cond_progress until pred(s, arg) or the deadline; the caller
 * counts itself in `waiters` first, so the worker wakes it. */
static cubert_status_t sleep_until(cpu_stream_t *s, int (*pred)(cpu_stream_t *, uint64_t),
                                   uint64_t arg, const struct timespec *deadline) {
  cubert_status_t status = CUBERT_STATUS_OK;
  pthread_mutex_lock(&s->mutex);
  __atomic_add_fetch(&s->waiters, 1u, __ATOMIC_SEQ_CST);
  while (!pred(s, arg)) {
    if (!deadline) {
      pthread_cond_wait(&s->cond_progress, &s->mutex);
    } else if (pthread_cond_timedwait(&s->cond_progress, &s->mutex, deadline) == ETIMEDOUT &&
               !pred(s, arg)) {
      status = CUBERT_STATUS_DEADLINE_EXCEEDED;
      break;
    }
  }
  __atomic_sub_fetch(&s->waiters, 1u, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&s->mutex);
  return status;
}

/* Producer facing a full ring: a quarter of the ring is free. */
static int quarter_free(cpu_stream_t *s) {
  s->head_seen = load_progress(s);
  return s->tail - s->head_seen <= s->ring_size - s->ring_size / 4;
}

/* Producer facing a full ring with the consumer role free (the worker is
 * not running: asleep, or not scheduled on a busy machine): run ops on this
 * thread until a quarter of the ring is free, as a waiter helps. */
static int help_room(cpu_stream_t *s) {
  if (__atomic_load_n(&s->worker_only, __ATOMIC_RELAXED) || !role_claim(s)) return 0;
  while (s->tail - s->head > s->ring_size - s->ring_size / 4) {
    run_head(s, &s->ring[s->head % s->ring_size]);
    __atomic_store_n(&s->helped, s->helped + 1u, __ATOMIC_RELAXED); /* the role holder only */
  }
  role_release(s);
  return 1;
}

/* Spin until a quarter of the ring is free (true), helping when the role
 * is free, or STREAM_SPIN_NS passed (false). Progress is read every 32
 * pauses, not on every spin: each read pulls the line the worker writes per
 * op. */
static int wait_for_room(cpu_stream_t *s) {
  uint64_t start = 0;
  uint32_t i, k;
  for (i = 1;; i++) {
    if (quarter_free(s)) return 1;
    if (__atomic_load_n(&s->consumer, __ATOMIC_RELAXED) == 0 && help_room(s)) return 1;
    for (k = 0; k < 32; k++) cubert__os_cpu_relax();
    if ((i & 7u) == 0 && spin_budget_spent(&start)) return 0;
  }
}

static bool stream_has_room(void *arg) { return has_room((cpu_stream_t *)arg, 0) != 0; }

cpu_op_t *cpu_stream_reserve(cpu_stream_t *s) {
  cpu_op_t *op;
  if (!has_room(s, 0)) {
    if (s->deterministic) {
      /* make room by running steps; no step runnable cannot happen (a wait
       * op waits for an already enqueued point), but would run the head op
       * anyway rather than hang */
      if (s->run_until(s->owner, stream_has_room, s) != CUBERT_STATUS_OK)
        cpu_stream_step(s);
    } else if (!help_room(s)) { /* no thread runs the ops: run a quarter of the ring here */
      cpu_stream_publish(s); /* the worker must see what fills the ring */
      if (!wait_for_room(s)) (void)sleep_until(s, has_room, 0, NULL);
    }
  }
  op = &s->ring[s->tail % s->ring_size];
  op->run = NULL;
  op->done = NULL;
  op->wait_stream = NULL;
  op->wait_seq = 0;
  return op;
}

/* Move `published` up to the tail (only forward: a publisher with an older
 * tail loses the race). */
static void publish_index(cpu_stream_t *s) {
  uint64_t t = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
  uint64_t p = __atomic_load_n(&s->published, __ATOMIC_RELAXED);
  while (p < t &&
         !__atomic_compare_exchange_n(&s->published, &p, t, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
  }
}

/* Publish, and wake a sleeping worker; `producer`: the caller is the
 * stream's producer (a commit), which notes that it found the worker
 * asleep (the hot / cold test of cpu_stream_commit). */
static void publish(cpu_stream_t *s, int producer) {
  publish_index(s);
  if (!__atomic_load_n(&s->sleeping, __ATOMIC_SEQ_CST)) return;
  if (producer) s->producer_saw_asleep = 1;
  /* one signal per sleep: a burst of commits that find the worker asleep
   * (it needs a while to be scheduled) makes one system call, not one each */
  if (!__atomic_exchange_n(&s->wake_sent, 1u, __ATOMIC_SEQ_CST)) {
    __atomic_add_fetch(&s->publish_wakes, 1u, __ATOMIC_RELAXED);
    pthread_mutex_lock(&s->mutex);
    pthread_cond_signal(&s->cond_work);
    pthread_mutex_unlock(&s->mutex);
  }
}

void cpu_stream_publish(cpu_stream_t *s) { publish(s, 0); }

void cpu_stream_wake_worker(cpu_stream_t *s) {
  pthread_mutex_lock(&s->mutex);
  pthread_cond_signal(&s->cond_work);
  pthread_mutex_unlock(&s->mutex);
}

int cpu_stream_helpers_work(cpu_stream_t *s, uint64_t now_ns, int *out_pulled) {
  uint64_t h;
  if (out_pulled) *out_pulled = 0;
  if (!__atomic_load_n(&s->sleeping, __ATOMIC_RELAXED) || !helpers_take_it(s) ||
      __atomic_load_n(&s->consumer, __ATOMIC_RELAXED))
    return 0; /* its worker's, or a thread runs its ops */
  h = load_head(s);
  if (__atomic_load_n(&s->published, __ATOMIC_SEQ_CST) > h) return 1;
  if (now_ns == CPU_STREAM_HELPERS_NO_PULL) return 0;
  if (now_ns) {
    if (now_ns - __atomic_load_n(&s->helpers_pulled_ns, __ATOMIC_RELAXED) < CPU_STREAM_HELPERS_PULL_NS)
      return 0;
    __atomic_store_n(&s->helpers_pulled_ns, now_ns, __ATOMIC_RELAXED);
    if (out_pulled) *out_pulled = 1;
  }
  return __atomic_load_n(&s->tail, __ATOMIC_SEQ_CST) > h;
}

int cpu_stream_help_ops(cpu_stream_t *s, uint32_t max_ops) {
  uint32_t n = 0;
  uint64_t t, t0;
  int handover = 0;
  if (!role_claim(s)) return 0; /* a thread runs them */
  t = t0 = __atomic_load_n(&s->tail, __ATOMIC_SEQ_CST);
  while (s->head < t) {
    cpu_op_t *op = &s->ring[s->head % s->ring_size];
    if ((op->wait_stream && !point_done(op->wait_stream, op->wait_seq)) ||
        (s->op_small && !s->op_small(op))) {
      handover = 1; /* a wait that could block, or an op that may be long: the worker's */
      break;
    }
    run_head(s, op);
    if (++n >= max_ops) break;
    if (s->head == t) t = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
  }
  if (n) __atomic_store_n(&s->helper_ops, s->helper_ops + n, __ATOMIC_RELAXED); /* holder only */
  /* handed over, or hot: more ops were committed while this helper ran (or
   * it ran max_ops): the stream's own worker takes over (it batches, and
   * stays awake while launches keep coming); a cold stream (one op now and
   * then, the many-streams case) stays the helpers' */
  if (handover || n >= max_ops || __atomic_load_n(&s->tail, __ATOMIC_SEQ_CST) > t0) {
    __atomic_store_n(&s->consumer, 0u, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&s->helper_handoffs, 1u, __ATOMIC_RELAXED);
    cpu_helpers_handed_back_one(s->helpers);
    cpu_stream_wake_worker(s);
  } else {
    role_release(s);
  }
  return n != 0;
}

uint64_t cpu_stream_commit(cpu_stream_t *s) {
  uint64_t t = s->tail + 1; /* tail: written by this thread only; seq = t */
  __atomic_store_n(&s->tail, t, __ATOMIC_RELEASE);
  /* the slot a few launches ahead: its line was last read by the worker;
   * taking it now keeps that transfer off this thread's next fence (the
   * device lock), which otherwise waits for it on every launch */
  cubert__os_prefetch_write(&s->ring[(t + CPU_STREAM_PREFETCH) % s->ring_size], s->prefetch_write);
  /* publish a full batch, or wake a sleeping worker (a relaxed look: a
   * sleep that begins right now is caught by the next publish, which every
   * wait does first, or at the end of the worker's first, 1 ms sleep) */
  if (__atomic_load_n(&s->sleeping, __ATOMIC_RELAXED)) {
    if (s->producer_saw_asleep && helpers_take_it(s)) {
      /* a cold stream (its last commit found the worker asleep too): the
       * stream helpers poll it (cpu_helpers.h), no wake-up and no shared
       * write; batches are published as usual. With every helper asleep,
       * publish and wake one (a relaxed look at `awake`: a helper falling
       * asleep right now looks again at the end of its first, 1 ms sleep) */
      if (!cpu_helpers_awake(s->helpers)) {
        s->published_seen = t;
        publish_index(s);
        cpu_helpers_wake(s->helpers);
      } else if (t - s->published_seen >= CPU_STREAM_BATCH) {
        s->published_seen = t;
        publish_index(s);
      }
      return t;
    }
    s->published_seen = t;
    publish(s, 1);
  } else {
    if (s->producer_saw_asleep) s->producer_saw_asleep = 0; /* the producer's own line */
    if (t - s->published_seen >= CPU_STREAM_BATCH) {
      s->published_seen = t;
      publish(s, 1);
    }
  }
  return t;
}

int cpu_stream_point_completed(cpu_stream_t *s, uint64_t seq) {
  if (point_done(s, seq)) return 1;
  if (!s->deterministic) cpu_stream_publish(s); /* a poller must not wait on an unpublished op */
  return point_done(s, seq);
}

typedef struct point_t {
  cpu_stream_t *stream;
  uint64_t seq;
  int help; /* the waiter may run ops itself */
} point_t;

static bool point_done_fn(void *arg) {
  point_t *p = (point_t *)arg;
  return point_done(p->stream, p->seq) != 0;
}

/* A waiter on (s, seq) whose consumer role is free: take it and run the ops
 * up to seq on this thread (the worker is not running them: asleep, not
 * scheduled, or about to look). True when the point completed (always, for
 * a committed point). */
static int help_until(cpu_stream_t *s, uint64_t seq) {
  uint64_t h, t;
  if (!role_claim(s)) return 0;
  /* the ops below seq were committed before the caller learned seq; the
   * acquire pairs with the commit's release (their records are visible);
   * never past the tail (a point beyond it is a caller's bug: wait instead) */
  t = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
  for (h = s->head; h < seq && h < t; h = s->head) {
    run_head(s, &s->ring[h % s->ring_size]);
    __atomic_store_n(&s->helped, s->helped + 1u, __ATOMIC_RELAXED); /* the role holder only */
  }
  role_release(s);
  return point_done(s, seq);
}

static int point_ready(void *arg) {
  point_t *p = (point_t *)arg;
  if (point_done(p->stream, p->seq)) return 1;
  return p->help && __atomic_load_n(&p->stream->consumer, __ATOMIC_RELAXED) == 0 &&
         help_until(p->stream, p->seq);
}

void cpu_stream_set_worker_only(cpu_stream_t *s) {
  __atomic_store_n(&s->worker_only, 1, __ATOMIC_RELAXED);
}

/* Host waiters sleep until the point completed, or (when they may help) the
 * role is free with the point not reached. The role's holder broadcasts
 * cond_progress after each op; a holder that gives the role back with ops
 * left wakes the worker (role_release), whose ops wake this waiter: the
 * point is always reached, by this thread or by the worker. */
static int point_done_or_helpable(cpu_stream_t *s, uint64_t seq) {
  return point_done(s, seq) || __atomic_load_n(&s->consumer, __ATOMIC_SEQ_CST) == 0;
}

cubert_status_t cpu_stream_wait_point(cpu_stream_t *s, uint64_t seq, uint64_t timeout_ns) {
  struct timespec deadline;
  point_t p;
  uint64_t deadline_ns = UINT64_MAX;
  if (point_done(s, seq)) return CUBERT_STATUS_OK;
  p.stream = s;
  p.seq = seq;
  p.help = timeout_ns == UINT64_MAX && !__atomic_load_n(&s->worker_only, __ATOMIC_RELAXED);
  if (s->deterministic) /* virtual time: the step loop runs until the point */
    return s->run_until(s->owner, point_done_fn, &p);
  /* no thread runs the stream's ops: run them here, no hand-off */
  if (p.help && point_ready(&p)) return CUBERT_STATUS_OK;
  cpu_stream_publish(s); /* the point may be unpublished; wakes a sleeping worker */
  if (timeout_ns != UINT64_MAX) {
    uint64_t now = cubert__os_clock_ns();
    deadline_ns = timeout_ns < UINT64_MAX - now ? now + timeout_ns : UINT64_MAX - 1;
  }
  for (;;) {
    cubert_status_t st;
    if (cubert__os_backoff_wait(&s->host_backoff, point_ready, &p, deadline_ns))
      return CUBERT_STATUS_OK;
    if (!p.help) {
      if (timeout_ns == UINT64_MAX) return sleep_until(s, point_done, seq, NULL);
      {
        uint64_t now = cubert__os_clock_ns();
        deadline_after(&deadline, deadline_ns > now ? deadline_ns - now : 0);
      }
      return sleep_until(s, point_done, seq, &deadline);
    }
    st = sleep_until(s, point_done_or_helpable, seq, NULL);
    if (st != CUBERT_STATUS_OK || point_done(s, seq)) return st;
  }
}

void cpu_stream_push_error(cpu_stream_t *s, const cubert_error_t *error) {
  if (OS_LOG_ON(CUBERT_LOG_LEVEL_WARN)) {
    char what[64];
    (void)snprintf(what, sizeof what, "cpu device %u stream %u: error queued",
                   (unsigned)s->device_index, (unsigned)s->slot);
    cubert__os_log_error(CUBERT_LOG_LEVEL_WARN, what, error);
  }
  pthread_mutex_lock(&s->mutex);
  cubert_error_aggregate(&s->errors, error);
  __atomic_store_n(&s->error_count, s->error_count + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&s->mutex);
}

cubert_status_t cpu_stream_drain_errors(cpu_stream_t *s, cubert_error_t *out_error) {
  cubert_status_t status = CUBERT_STATUS_OK;
  /* the common case, no error, without the mutex: a push is seen once its
   * op completed (the caller waited for it, acquire) */
  if (__atomic_load_n(&s->error_count, __ATOMIC_ACQUIRE) == 0) return CUBERT_STATUS_OK;
  pthread_mutex_lock(&s->mutex);
  if (s->error_count) {
    if (out_error) *out_error = s->errors;
    status = CUBERT_STATUS_SERVER_UNHEALTHY;
    cubert_error_clear(&s->errors);
    __atomic_store_n(&s->error_count, 0u, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&s->mutex);
  return status;
}

int cpu_stream_has_faults(cpu_stream_t *s) {
  return __atomic_load_n(&s->fault_total, __ATOMIC_ACQUIRE) != 0;
}

uint32_t cpu_stream_error_count(cpu_stream_t *s) {
  uint32_t n;
  pthread_mutex_lock(&s->mutex);
  n = s->error_count;
  pthread_mutex_unlock(&s->mutex);
  return n;
}

/* ---- deterministic mode (cpu_sim.c): the step loop is the consumer ---- */

bool cpu_stream_head_runnable(cpu_stream_t *s, uint64_t *out_seq) {
  cpu_op_t *op;
  if (__atomic_load_n(&s->tail, __ATOMIC_ACQUIRE) == s->head) return false;
  op = &s->ring[s->head % s->ring_size];
  if (op->wait_stream && !point_done(op->wait_stream, op->wait_seq)) return false;
  *out_seq = s->head + 1;
  return true;
}

void cpu_stream_step(cpu_stream_t *s) {
  cpu_op_t *op;
  if (__atomic_load_n(&s->tail, __ATOMIC_ACQUIRE) == s->head) return;
  op = &s->ring[s->head % s->ring_size];
  execute_op(s, op); /* its wait is satisfied (the step loop checked; teardown runs it anyway) */
  __atomic_store_n(&s->completed, s->head + 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&s->head, s->head + 1, __ATOMIC_SEQ_CST);
  wake_waiters(s);
}

bool cpu_stream_idle(cpu_stream_t *s) {
  return __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE) == __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
}

/* Ops start on cache-line boundaries of the 64-aligned ring. */
typedef char cpu_op_is_whole_lines_[sizeof(cpu_op_t) % 64 == 0 ? 1 : -1];

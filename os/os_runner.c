/* SPDX-License-Identifier: MIT */
/*
 * os/os_runner.c: the runner-thread device handle
 * (cubert/driver/device.h; CubeCL's ChannelDeviceHandle). One thread per handle runs tasks, in order,
 * from a bounded multi-producer single-consumer queue of fixed-size records.
 *
 * Queue. A ring of `capacity` (a power of two) cells, each with a sequence
 * number (Vyukov's bounded MPMC queue, used with one consumer). Position p
 * uses cell p & mask; the cell is free for p when seq == p. A producer
 * claims p = tail by advancing `tail` with a compare-and-swap, fills the
 * cell and publishes seq = p + 1. The runner (sole consumer) runs the cell
 * at `head` once seq == head + 1, then releases it with seq = head +
 * capacity. Positions order the tasks, so each thread's tasks run in
 * program order. Positions are 32-bit and wrap (compared by difference).
 * Nothing allocates after create: a non-blocking task's payload is copied
 * into its cell, a blocking call's record lives on the caller's stack.
 *
 * Waiting. Every wait spins briefly (yielding now and then), yields, then
 * blocks on a condition variable:
 *  - the idle runner raises `runner_sleeping` and waits on `runner_cond`;
 *    a producer that published a task wakes it if the flag is up;
 *  - a producer facing a full cell counts itself in `full_waiters` and waits
 *    on `producer_cond`; if the count is non-zero the runner broadcasts each
 *    time it freed half the queue, and before it idles (hysteresis: one
 *    wake-up per half queue, not per task);
 *  - a blocking caller waits on a completion record on its own stack.
 * Each flag/queue pair is a store-then-load on both sides with sequentially
 * consistent atomics (Dekker), and the sleeper re-checks its predicate under
 * the mutex the waker takes to signal, so no wake-up is lost.
 *
 * Shutdown. `gate` counts the producers inside a call (2 per producer) and
 * has bit 0 set once destroy began. A producer that finds the bit set leaves
 * with UNAVAILABLE. The runner stops once the gate reads "closed, nobody
 * inside" and the queue is empty, so every task accepted before or during
 * destroy still runs. The producer whose exit makes the gate read "closed,
 * nobody inside" decrements and signals under the mutex, and the runner
 * decides to stop under that mutex, so nobody touches the handle after the
 * runner may have stopped.
 */
#include <pthread.h>
#include <string.h>

#include "cubert/os.h"
#include "cubert/driver/device.h"
#include "os/os_thread.h"

/* Waits: spin steps (cpu relax; every RUNNER_SPIN_YIELD_MASK + 1-th step
 * yields instead), then yields, then block. Tunable at build time. */
#ifndef RUNNER_IDLE_SPIN
#define RUNNER_IDLE_SPIN 2048u
#endif
#ifndef RUNNER_IDLE_YIELD
#define RUNNER_IDLE_YIELD 64u
#endif
#ifndef RUNNER_CALLER_SPIN
#define RUNNER_CALLER_SPIN 2048u
#endif
#ifndef RUNNER_CALLER_YIELD
#define RUNNER_CALLER_YIELD 16u
#endif
#ifndef RUNNER_FULL_SPIN
#define RUNNER_FULL_SPIN 64u
#endif
#ifndef RUNNER_FULL_YIELD
#define RUNNER_FULL_YIELD 64u
#endif
#ifndef RUNNER_SPIN_YIELD_MASK
#define RUNNER_SPIN_YIELD_MASK 127u
#endif

#define RUNNER_CELL_BYTES 256u
#define RUNNER_GATE_CLOSED 1u
#define RUNNER_GATE_ONE 2u

/* Completion states of a blocking call. */
#define CALL_PENDING 0u
#define CALL_DONE 1u    /* ran; the caller never parked */
#define CALL_PARKED 2u  /* the caller waits on the condition variable */
#define CALL_WOKEN 3u   /* ran, caller signalled under the mutex */

/* A blocking call (submit_blocking or exclusive), on the caller's stack. */
typedef struct runner_call_t {
  uint32_t state; /* atomic: CALL_* */
  cubert_device_task_fn_t fn;           /* submit_blocking, or NULL */
  void *payload;                        /* used in place */
  cubert_device_exclusive_fn_t exclusive_fn;
  void *user;
  cubert_status_t status;               /* exclusive_fn's result */
  pthread_mutex_t mutex;                /* RUNNER_CALL_INIT: cannot fail */
  pthread_cond_t cond;
} runner_call_t;

/* Payload storage, aligned for any scalar a task may keep there. */
typedef union runner_payload_t {
  unsigned char bytes[CUBERT_DEVICE_TASK_PAYLOAD];
  uint64_t u64;
  double f64;
  long double ld;
  void *ptr;
  void (*fnptr)(void);
} runner_payload_t;

typedef struct runner_cell_t {
  uint32_t seq;                /* atomic: p free for position p, p + 1 full */
  cubert_device_task_fn_t fn;  /* non-blocking task */
  runner_call_t *call;         /* blocking call, or NULL */
  cubert_stream_id_t stream;   /* the submitter's stream */
  runner_payload_t payload;    /* copy of a non-blocking task's payload */
} runner_cell_t;

/* Cells padded to a multiple of the cache line. */
typedef union runner_slot_t {
  runner_cell_t cell;
  unsigned char pad[RUNNER_CELL_BYTES];
} runner_slot_t;

typedef char runner_cell_fits_slot[sizeof(runner_cell_t) <= RUNNER_CELL_BYTES ? 1 : -1];

typedef struct runner_t {
  /* Read-only after create. */
  cubert_allocator_t allocator;
  void *context;
  runner_slot_t *slots;
  uint32_t capacity;
  uint32_t mask;
  pthread_t runner_id;          /* written by the runner before create returns */
  cubert_os_thread_t thread;
  cubert_os_mutex_t mutex;
  cubert_os_cond_t runner_cond;   /* wakes the idle runner */
  cubert_os_cond_t producer_cond; /* a cell became free; the runner started */
  unsigned char pad0[64];
  /* Producers. */
  uint32_t tail; /* atomic: next position */
  uint32_t gate; /* atomic: 2 per producer inside, bit 0 = destroy began */
  unsigned char pad1[64];
  /* Flags shared by both sides. */
  uint32_t runner_sleeping; /* atomic */
  uint32_t full_waiters;    /* atomic */
  unsigned char pad2[64];
  /* Runner only (or under mutex). */
  uint32_t head;
  int started;      /* under mutex */
  int self_destroy; /* runner thread only: destroy was called from a task */
} runner_t;

/* ---- small atomics (the OS layer uses the builtins directly) ------- */

static uint32_t load_u32(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static void store_u32(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

static bool runner_is_self(const runner_t *r) {
  return pthread_equal(pthread_self(), r->runner_id) != 0;
}

static runner_cell_t *runner_cell(runner_t *r, uint32_t pos) {
  return &r->slots[pos & r->mask].cell;
}

/* One step of a wait: spin (yielding now and then, so that a thread
 * waiting for this CPU, maybe the one we wait for, can run), then yield.
 * Returns false once the caller should block instead. */
static bool runner_backoff(uint32_t *rounds, uint32_t spin, uint32_t yield) {
  uint32_t n = (*rounds)++;
  if (n < spin && (n & RUNNER_SPIN_YIELD_MASK) != RUNNER_SPIN_YIELD_MASK) {
    cubert__os_cpu_relax();
    return true;
  }
  if (n < spin + yield) {
    cubert__os_thread_yield();
    return true;
  }
  return false;
}

/* ---- the gate ------------------------------------------------------------ */

/* Enter as a producer. false when destroy began (the caller then returns
 * UNAVAILABLE after runner_gate_leave). */
static bool runner_gate_enter(runner_t *r) {
  uint32_t old = __atomic_fetch_add(&r->gate, RUNNER_GATE_ONE, __ATOMIC_SEQ_CST);
  return (old & RUNNER_GATE_CLOSED) == 0;
}

/* Leave. The last producer out of a closed gate wakes the runner, under the
 * mutex (see the header comment: the handle may go away right after). */
static void runner_gate_leave(runner_t *r) {
  uint32_t v = load_u32(&r->gate);
  for (;;) {
    if (v == (RUNNER_GATE_CLOSED | RUNNER_GATE_ONE)) {
      cubert__os_mutex_lock(&r->mutex);
      if (__atomic_sub_fetch(&r->gate, RUNNER_GATE_ONE, __ATOMIC_SEQ_CST) == RUNNER_GATE_CLOSED)
        cubert__os_cond_signal(&r->runner_cond);
      cubert__os_mutex_unlock(&r->mutex);
      return;
    }
    if (__atomic_compare_exchange_n(&r->gate, &v, v - RUNNER_GATE_ONE, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
      return;
  }
}

/* ---- producer side ------------------------------------------------------- */

static void runner_wake(runner_t *r) {
  if (load_u32(&r->runner_sleeping)) {
    cubert__os_mutex_lock(&r->mutex);
    cubert__os_cond_signal(&r->runner_cond);
    cubert__os_mutex_unlock(&r->mutex);
  }
}

/* Whether the queue is full: the cell at `tail` still holds the task
 * published one lap earlier. */
static bool runner_full(runner_t *r) {
  uint32_t pos = load_u32(&r->tail);
  return (int32_t)(load_u32(&runner_cell(r, pos)->seq) - pos) < 0;
}

/* The queue was full: back off, finally block until the runner frees
 * cells. `*rounds` counts the steps of this wait. */
static void runner_wait_not_full(runner_t *r, uint32_t *rounds) {
  if (runner_backoff(rounds, RUNNER_FULL_SPIN, RUNNER_FULL_YIELD)) return;
  __atomic_fetch_add(&r->full_waiters, 1u, __ATOMIC_SEQ_CST);
  cubert__os_mutex_lock(&r->mutex);
  while (runner_full(r)) cubert__os_cond_wait(&r->producer_cond, &r->mutex);
  cubert__os_mutex_unlock(&r->mutex);
  __atomic_fetch_sub(&r->full_waiters, 1u, __ATOMIC_SEQ_CST);
}

/* Claim the cell at `tail` once it is free (Vyukov: its seq equals the
 * position) by advancing `tail`. Returns the cell; the caller fills it and
 * calls runner_publish. A producer that waits holds no position, so a
 * sleeping producer never holds up the runner. */
static runner_cell_t *runner_reserve(runner_t *r, uint32_t *out_pos) {
  uint32_t pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED), rounds = 0;
  for (;;) {
    runner_cell_t *cell = runner_cell(r, pos);
    int32_t diff = (int32_t)(__atomic_load_n(&cell->seq, __ATOMIC_ACQUIRE) - pos);
    if (diff == 0) {
      if (__atomic_compare_exchange_n(&r->tail, &pos, pos + 1u, true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
        *out_pos = pos;
        return cell;
      }
    } else {
      if (diff < 0) runner_wait_not_full(r, &rounds);
      pos = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
    }
  }
}

static void runner_publish(runner_t *r, runner_cell_t *cell, uint32_t pos) {
  store_u32(&cell->seq, pos + 1u);
  runner_wake(r);
}

/* Enqueue a blocking call and wait until the runner completed it. */
static cubert_status_t runner_call(runner_t *r, runner_call_t *call) {
  runner_cell_t *cell;
  uint32_t pos, rounds = 0, expected;
  if (!runner_gate_enter(r)) {
    runner_gate_leave(r);
    return CUBERT_STATUS_UNAVAILABLE;
  }
  cell = runner_reserve(r, &pos);
  cell->fn = NULL;
  cell->call = call;
  cell->stream = cubert_stream_id_current();
  runner_publish(r, cell, pos);
  runner_gate_leave(r); /* the runner will not stop before it ran the call */
  /* From here on only `call` (our stack) is touched. */
  do {
    if (__atomic_load_n(&call->state, __ATOMIC_ACQUIRE) == CALL_DONE) return CUBERT_STATUS_OK;
  } while (runner_backoff(&rounds, RUNNER_CALLER_SPIN, RUNNER_CALLER_YIELD));
  (void)pthread_mutex_lock(&call->mutex);
  expected = CALL_PENDING;
  if (__atomic_compare_exchange_n(&call->state, &expected, CALL_PARKED, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    while (__atomic_load_n(&call->state, __ATOMIC_ACQUIRE) != CALL_WOKEN)
      (void)pthread_cond_wait(&call->cond, &call->mutex);
  }
  (void)pthread_mutex_unlock(&call->mutex);
  return CUBERT_STATUS_OK;
}

/* A pending call. PTHREAD_*_INITIALIZER is default dynamic initialization
 * that cannot fail (POSIX.1-2008), so a blocking call has no error path. */
#define RUNNER_CALL_INIT                                                        \
  { CALL_PENDING, NULL, NULL, NULL, NULL, CUBERT_STATUS_OK,                     \
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER }

static void runner_call_deinitialize(runner_call_t *call) {
  (void)pthread_cond_destroy(&call->cond);
  (void)pthread_mutex_destroy(&call->mutex);
}

/* ---- runner side ------------------------------------------------------- */

static void runner_complete(runner_call_t *call) {
  uint32_t old = __atomic_exchange_n(&call->state, CALL_DONE, __ATOMIC_ACQ_REL);
  if (old == CALL_PARKED) {
    (void)pthread_mutex_lock(&call->mutex);
    __atomic_store_n(&call->state, CALL_WOKEN, __ATOMIC_RELEASE);
    (void)pthread_cond_signal(&call->cond);
    (void)pthread_mutex_unlock(&call->mutex); /* last touch of the caller's record */
  }
}

static bool runner_ready(runner_t *r) {
  return load_u32(&runner_cell(r, r->head)->seq) == r->head + 1u;
}

static void runner_wake_producers(runner_t *r) {
  if (load_u32(&r->full_waiters)) {
    cubert__os_mutex_lock(&r->mutex);
    cubert__os_cond_broadcast(&r->producer_cond);
    cubert__os_mutex_unlock(&r->mutex);
  }
}

/* Run the task at head (it is ready) and release its cell. */
static void runner_run_one(runner_t *r) {
  runner_cell_t *cell = runner_cell(r, r->head);
  runner_call_t *call = cell->call;
  cubert_stream_id_token_t token;
  bool scoped = cubert_stream_id_executes_begin(cell->stream, &token, NULL) == CUBERT_STATUS_OK;
  if (!call) {
    cell->fn(r->context, cell->payload.bytes);
  } else if (call->fn) {
    call->fn(r->context, call->payload);
  } else {
    call->status = call->exclusive_fn(call->user);
  }
  if (scoped) (void)cubert_stream_id_executes_end(&token, NULL);
  store_u32(&cell->seq, r->head + r->capacity);
  r->head++;
  /* Hysteresis: producers blocked on a full queue are woken each time half
   * the queue was freed (and whenever the runner goes idle), not per task. */
  if ((r->head & (r->capacity / 2u - 1u)) == 0) runner_wake_producers(r);
  if (call) runner_complete(call);
}

/* Idle: spin, yield, then sleep until a task is ready or the runner may
 * stop. Returns true when it must stop (decided under the mutex). */
static bool runner_idle(runner_t *r) {
  uint32_t rounds = 0;
  bool stop;
  runner_wake_producers(r);
  do {
    if (runner_ready(r)) return false;
    /* The gate's line is the producers': poll it rarely. */
    if ((rounds & 127u) == 0 && load_u32(&r->gate) == RUNNER_GATE_CLOSED) break;
  } while (runner_backoff(&rounds, RUNNER_IDLE_SPIN, RUNNER_IDLE_YIELD));
  cubert__os_mutex_lock(&r->mutex);
  store_u32(&r->runner_sleeping, 1u);
  while (!runner_ready(r) && load_u32(&r->gate) != RUNNER_GATE_CLOSED)
    cubert__os_cond_wait(&r->runner_cond, &r->mutex);
  store_u32(&r->runner_sleeping, 0u);
  /* Closed with nobody inside: no task can be published any more, so an
   * empty queue now stays empty. */
  stop = !runner_ready(r) && load_u32(&r->gate) == RUNNER_GATE_CLOSED;
  cubert__os_mutex_unlock(&r->mutex);
  return stop;
}

static void runner_free(runner_t *r) {
  cubert_allocator_t allocator = r->allocator;
  cubert__os_cond_deinitialize(&r->producer_cond);
  cubert__os_cond_deinitialize(&r->runner_cond);
  cubert__os_mutex_deinitialize(&r->mutex);
  cubert_allocator_free(allocator, r->slots, (size_t)r->capacity * sizeof(runner_slot_t), 64);
  cubert_allocator_free(allocator, r, sizeof(*r), 64);
}

static void runner_main(void *arg) {
  runner_t *r = (runner_t *)arg;
  cubert__os_mutex_lock(&r->mutex);
  r->runner_id = pthread_self();
  r->started = 1;
  cubert__os_cond_broadcast(&r->producer_cond);
  cubert__os_mutex_unlock(&r->mutex);
  for (;;) {
    if (runner_ready(r)) {
      runner_run_one(r);
    } else if (runner_idle(r)) {
      break;
    }
  }
  if (r->self_destroy) runner_free(r); /* detached: nobody joins */
}

/* ---- vtable ---------------------------------------------------------------- */

static cubert_status_t runner_submit(void *self, cubert_device_task_fn_t fn, const void *payload,
                                     size_t size) {
  runner_t *r = (runner_t *)self;
  runner_cell_t *cell;
  uint32_t pos;
  if (!fn || size > CUBERT_DEVICE_TASK_PAYLOAD || (size && !payload))
    return CUBERT_STATUS_INVALID_ARGUMENT;
  if (runner_is_self(r)) {
    /* Re-entrant: run inline on a private copy, like a queued task. */
    runner_payload_t copy;
    if (size) memcpy(copy.bytes, payload, size);
    fn(r->context, copy.bytes);
    return CUBERT_STATUS_OK;
  }
  if (!runner_gate_enter(r)) {
    runner_gate_leave(r);
    return CUBERT_STATUS_UNAVAILABLE;
  }
  cell = runner_reserve(r, &pos);
  cell->fn = fn;
  cell->call = NULL;
  cell->stream = cubert_stream_id_current();
  if (size) memcpy(cell->payload.bytes, payload, size);
  runner_publish(r, cell, pos);
  runner_gate_leave(r);
  return CUBERT_STATUS_OK;
}

static cubert_status_t runner_submit_blocking(void *self, cubert_device_task_fn_t fn,
                                              void *payload) {
  runner_t *r = (runner_t *)self;
  runner_call_t call = RUNNER_CALL_INIT;
  cubert_status_t status;
  if (!fn) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (runner_is_self(r)) {
    fn(r->context, payload);
    return CUBERT_STATUS_OK;
  }
  call.fn = fn;
  call.payload = payload;
  status = runner_call(r, &call);
  runner_call_deinitialize(&call);
  return status;
}

static cubert_status_t runner_exclusive(void *self, cubert_device_exclusive_fn_t fn, void *user) {
  runner_t *r = (runner_t *)self;
  runner_call_t call = RUNNER_CALL_INIT;
  cubert_status_t status;
  if (!fn) return CUBERT_STATUS_INVALID_ARGUMENT;
  if (runner_is_self(r)) return fn(user);
  call.exclusive_fn = fn;
  call.user = user;
  status = runner_call(r, &call);
  if (status == CUBERT_STATUS_OK) status = call.status;
  runner_call_deinitialize(&call);
  return status;
}

static cubert_status_t runner_flush_queue(void *self) {
  runner_t *r = (runner_t *)self;
  if (runner_is_self(r)) return CUBERT_STATUS_OK;
  /* Tasks run as soon as they are published; flushing only makes sure the
   * runner is awake. After destroy began, destroy drains the queue. */
  if (runner_gate_enter(r)) runner_wake(r);
  runner_gate_leave(r);
  return CUBERT_STATUS_OK;
}

static bool runner_is_blocking(const void *self) {
  (void)self;
  return false;
}

static void runner_destroy(void *self) {
  runner_t *r = (runner_t *)self;
  uint32_t old;
  if (!r) return;
  old = __atomic_fetch_or(&r->gate, RUNNER_GATE_CLOSED, __ATOMIC_SEQ_CST);
  if (runner_is_self(r)) {
    /* Called from a task: the runner drains the queue after this task and
     * frees the handle itself. */
    r->self_destroy = 1;
    (void)pthread_detach(pthread_self());
    return;
  }
  if ((old | RUNNER_GATE_CLOSED) == RUNNER_GATE_CLOSED) {
    cubert__os_mutex_lock(&r->mutex);
    cubert__os_cond_signal(&r->runner_cond);
    cubert__os_mutex_unlock(&r->mutex);
  }
  cubert__os_thread_join(&r->thread);
  runner_free(r);
}

static const cubert_device_handle_vtable_t g_runner_vtable = {
    runner_submit, runner_submit_blocking, runner_exclusive,
    runner_flush_queue, runner_is_blocking, runner_destroy,
};

/* ---- create ---------------------------------------------------------------- */

static cubert_status_t runner_capacity(uint32_t requested, uint32_t *out_capacity) {
  uint32_t capacity = 2u;
  if (requested == 0) requested = CUBERT_DEVICE_RUNNER_QUEUE_DEFAULT;
  if (requested > CUBERT_DEVICE_RUNNER_QUEUE_MAX) return CUBERT_STATUS_INVALID_ARGUMENT;
  while (capacity < requested) capacity <<= 1;
  *out_capacity = capacity;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_device_handle_runner_create(cubert_allocator_t allocator, void *context,
                                                   uint32_t queue_capacity,
                                                   cubert_device_handle_t *out_handle,
                                                   cubert_error_t *out_error) {
  runner_t *r = NULL;
  void *slots = NULL;
  uint32_t capacity = 0, i;
  cubert_status_t status;
  const char *what = "cubert_device_handle_runner_create: the thread could not be started";
  if (!out_handle)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_device_handle_runner_create: out_handle is NULL");
  if (runner_capacity(queue_capacity, &capacity) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "cubert_device_handle_runner_create: queue_capacity above "
                            "CUBERT_DEVICE_RUNNER_QUEUE_MAX");
  CUBERT_RETURN_IF_ERROR(
      cubert_allocator_malloc(allocator, sizeof(*r), 64, (void **)&r, out_error));
  status = cubert_allocator_malloc_array(allocator, capacity, sizeof(runner_slot_t), 64, &slots,
                                         out_error);
  if (status != CUBERT_STATUS_OK) goto fail_allocated;
  r->allocator = allocator;
  r->context = context;
  r->slots = (runner_slot_t *)slots;
  r->capacity = capacity;
  r->mask = capacity - 1u;
  for (i = 0; i < capacity; i++) r->slots[i].cell.seq = i;
  what = "cubert_device_handle_runner_create: a mutex or condition variable could not be made";
  status = cubert__os_mutex_initialize(&r->mutex);
  if (status != CUBERT_STATUS_OK) goto fail_slots;
  status = cubert__os_cond_initialize(&r->runner_cond);
  if (status != CUBERT_STATUS_OK) goto fail_mutex;
  status = cubert__os_cond_initialize(&r->producer_cond);
  if (status != CUBERT_STATUS_OK) goto fail_runner_cond;
  what = "cubert_device_handle_runner_create: the runner thread could not be started";
  status = cubert__os_thread_create(&r->thread, runner_main, r, 0);
  if (status != CUBERT_STATUS_OK) goto fail_producer_cond;
  /* Wait until the runner recorded its id (re-entrancy checks read it). */
  cubert__os_mutex_lock(&r->mutex);
  while (!r->started) cubert__os_cond_wait(&r->producer_cond, &r->mutex);
  cubert__os_mutex_unlock(&r->mutex);
  out_handle->vtable = &g_runner_vtable;
  out_handle->self = r;
  return CUBERT_STATUS_OK;

fail_producer_cond:
  cubert__os_cond_deinitialize(&r->producer_cond);
fail_runner_cond:
  cubert__os_cond_deinitialize(&r->runner_cond);
fail_mutex:
  cubert__os_mutex_deinitialize(&r->mutex);
fail_slots:
  cubert_allocator_free(allocator, slots, (size_t)capacity * sizeof(runner_slot_t), 64);
  cubert_allocator_free(allocator, r, sizeof(*r), 64);
  (void)cubert_error_set(out_error, status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                                        ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                        : CUBERT_ERROR_SERVER_GENERIC,
                         NULL, 0, what);
  if (out_error) out_error->status = status;
  return status;
fail_allocated: /* the record is the allocator's */
  cubert_allocator_free(allocator, r, sizeof(*r), 64);
  return status;
}

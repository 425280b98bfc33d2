/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/cpu/cpu_stream.h: simulated GPU streams. Each stream slot executes
 * its operations strictly in enqueue order on its own worker thread. An
 * operation has a sequence number (1, 2, ...); an event is a point
 * (stream, sequence); a stream waits for another stream's point with a wait
 * operation; the host waits with cpu_stream_wait_point. Errors raised by
 * operations are queued on the stream and drained by flush / sync / read.
 *
 * Threading: enqueue and drain calls come from the server (serialized by the
 * device lock); the worker runs operations; waits may come from any
 * thread. Operations come from a fixed ring per stream (no allocation per
 * enqueue, no lock per enqueue); a full ring makes the enqueuer wait for the
 * worker. Committed operations are published to the worker in batches
 * (CPU_STREAM_BATCH) and at every wait, so a launch writes no shared index;
 * an idle worker also looks at the unpublished tail now and then, so work
 * nobody waits for still starts.
 *
 * Who runs the ops: one thread at a time holds the stream's consumer role
 * (`consumer`) and runs ops in order: the worker, or a host thread that
 * waits on a point of the stream (cpu_stream_wait_point) while the role is
 * free: that waiter runs the ops up to its point itself instead of waiting
 * for the worker to be scheduled (on a machine with more runnable threads
 * than cores a hand-off costs a time slice). A stream marked worker_only
 * (one that carries collectives, which rendezvous with other threads:
 * cpu_stream_set_worker_only) is left to its worker.
 *
 * Waiting adapts to the machine (os_thread.h, cubert__os_backoff_wait): an
 * idle worker and a waiting host spin (up to 50 us; a spinner that finds it
 * was descheduled sleeps at once and spins half as long next time), then
 * sleep; a launch + sync round trip needs no system call in steady state,
 * quiet or busy (the waiter runs the op itself).
 *
 * Failures carried across streams (docs/errors.md, "Errors from a running
 * stream"): on a stream that takes part (`propagates`: the server's regular
 * slots, not its GC and communication streams) every error an op raises is
 * also logged (cpu_fault_log_t); a wait op on another such stream, once
 * the awaited point completed, queues here each failure logged there at or
 * before that point that this stream has not inherited yet (also when the
 * point had completed before the wait was enqueued: cpu_driver.c then
 * enqueues the wait anyway when the other stream ever failed).
 */
#ifndef CUBERT_CPU_STREAM_H
#define CUBERT_CPU_STREAM_H

#include <pthread.h>

#include "cubert/cubert.h"
#include "kernel/cpu_kernel.h"
#include "os/os_thread.h"

#define CPU_STREAM_RING 512
/* Committed ops are published to the worker in batches of this many, and
 * at every wait (cpu_stream_publish): one write of the shared index per
 * batch instead of per op. */
#define CPU_STREAM_BATCH 32
/* The producer takes ownership of the slot this many ops ahead of its tail. */
#define CPU_STREAM_PREFETCH 4
/* Deterministic mode: a smaller ring (a full ring runs steps instead of
 * blocking; creating a device per seed stays cheap). */
#define CPU_STREAM_RING_DETERMINISTIC 64
#define CPU_OP_PAYLOAD 1312 /* with the 32-byte op header: 21 cache lines per op */
/* Padding between the producer's and the worker's hot fields (two lines:
 * the adjacent-line prefetcher pairs them). */
#define CPU_STREAM_LINE 128
/* Failures a stream keeps for the streams that wait on it. */
#define CPU_STREAM_FAULT_LOG 16
/* How often, at most, stream helpers read a cold stream's tail (its
 * unpublished ops start within about this long while helpers are awake, or
 * longer with many streams: cpu_helpers.c paces the reads). */
#define CPU_STREAM_HELPERS_PULL_NS 50000u
/* cpu_stream_helpers_work's now_ns: look at the published index only. */
#define CPU_STREAM_HELPERS_NO_PULL UINT64_MAX
/* Stream indexes there can be: max_streams (<= 255) + the GC and
 * communication streams. */
#define CPU_STREAM_MAX_INDEX 257

typedef struct cpu_stream_t cpu_stream_t;
typedef struct cpu_op_t cpu_op_t;
struct cpu_helpers_t; /* cpu_helpers.h */

/* Deterministic mode: the owner's step loop, run on a thread that must wait
 * (a point, room in the ring, teardown): steps until done(arg), OK, or
 * FAILED_PRECONDITION when no step is runnable first (deadlock). */
typedef bool (*cpu_stream_done_fn_t)(void *arg);
typedef cubert_status_t (*cpu_stream_run_fn_t)(void *owner, cpu_stream_done_fn_t done, void *arg);

/* Runs on the stream's worker. Returns OK or an error it filled in `error`,
 * which is queued on the stream. `done` runs after (also on failure) to
 * release what the op holds. */
typedef cubert_status_t (*cpu_op_fn_t)(cpu_stream_t *stream, void *payload, cubert_error_t *error);
/* True for an op whose cost is bounded and small (a stream helper may run
 * it: cpu_helpers.h). */
typedef int (*cpu_op_small_fn_t)(const cpu_op_t *op);

/* An op's sequence number is its ring position + 1 (not stored). The
 * header is 32 bytes, so a payload's first 32 bytes share its cache line. */
struct cpu_op_t {
  cpu_op_fn_t run;
  cpu_op_fn_t done; /* cleanup; its status is ignored */
  /* wait op: wait for (wait_stream, wait_seq) before running */
  cpu_stream_t *wait_stream;
  uint64_t wait_seq;
  uint64_t payload[CPU_OP_PAYLOAD / 8]; /* 8-aligned storage for the op record */
};

struct cpu_stream_t {
  uint32_t slot;
  pthread_mutex_t mutex;
  pthread_cond_t cond_work;     /* worker: work arrived / shutdown */
  pthread_cond_t cond_progress; /* waiters: an op completed / ring has room */
  pthread_t thread;
  int running;  /* atomic: cleared at deinitialize */
  int started;
  int sleeping; /* atomic: the worker sleeps on cond_work (producer must signal) */
  uint32_t wake_sent; /* atomic: a publisher signalled the sleeping worker (one signal per sleep) */
  uint32_t waiters; /* atomic: threads sleeping on cond_progress */
  cpu_op_t *ring; /* ring_size entries */
  uint64_t ring_size;
  /* Single producer (the server: calls are serialized by the device
   * handle), single consumer (the worker). head and completed are written by
   * the worker only, tail by the producer only (tail is also the sequence
   * of the last committed op); the other side
   * reads them with atomic loads. Each side's fields have their own cache
   * lines (the padding), so an enqueue does not bounce the worker's line.
   * The mutex guards sleeping/waking and the error queue. */
  char pad_producer_[CPU_STREAM_LINE];
  uint64_t tail;      /* atomic: next free slot (ops below it are committed) */
  uint64_t head_seen; /* the producer's last read of the worker's progress */
  int prefetch_write;  /* cubert__os_cpu_has_prefetch_write() */
  uint64_t published_seen; /* the producer's last publication */
  int producer_saw_asleep; /* the producer's: its last commit found the worker asleep */
  char pad_published_[CPU_STREAM_LINE];
  uint64_t published; /* atomic: ops below it are visible to the worker */
  char pad_consumer_[CPU_STREAM_LINE];
  /* The consumer's fields: written by the holder of the consumer role only
   * (atomic stores: other threads read them). */
  uint64_t head;      /* atomic: next op to run (index = head % ring_size) */
  uint64_t completed; /* atomic: sequence of the last completed op */
  uint32_t consumer;  /* atomic: 1 while a thread (the worker or a helping waiter) runs ops */
  uint64_t tail_seen; /* the worker's last read of published or tail (the worker's only) */
  uint64_t helpers_pulled_ns; /* atomic: when a stream helper last read the tail (cpu_helpers.c) */
  char pad_end_[CPU_STREAM_LINE];
  cubert_os_backoff_t worker_backoff; /* the worker's idle wait */
  cubert_os_backoff_t host_backoff;   /* host waiters' waits (shared, a hint) */
  uint64_t helped;                    /* atomic: ops run by waiting host threads (statistics) */
  uint64_t helper_ops;                /* atomic: ops run by the device's helpers (statistics) */
  uint64_t helper_handoffs;           /* atomic: helpers that woke the worker (statistics) */
  uint64_t publish_wakes;             /* atomic: publishers that woke the worker (statistics) */
  /* The device's stream helpers (cpu_helpers.h), NULL: none. While the
   * worker of a cold stream sleeps, they poll the stream instead of a commit
   * waking the worker. Set by cpu_helpers_register before the stream is
   * used. */
  struct cpu_helpers_t *helpers;
  /* Which ops a helper may run (set by the driver); NULL: every op. */
  cpu_op_small_fn_t op_small;
  int worker_only;                    /* atomic: waiting host threads never run its ops */
  /* atomic, tests only: while set the worker claims no op (as a worker that
   * is never scheduled); clearing it wakes nothing */
  uint32_t test_hold_worker;
  /* atomic, tests only (NULL otherwise): called by the idle worker between
   * its read of `running` and its pull of the committed ops, the moment a
   * commit and a stop may arrive (cpu_stream_teardown_runs_an_op_committed_at_the_stop) */
  void (*test_before_pull)(struct cpu_stream_t *stream);
  cubert_error_t errors; /* aggregate of queued errors (SERVER_UNHEALTHY) */
  uint32_t error_count;  /* atomic reads: drains skip the mutex when 0 */
  void *owner; /* the driver's device, for ops and run_until */
  cubert_allocator_t allocator;
  cpu_stream_run_fn_t run_until; /* deterministic: the owner's step loop; NULL: a worker */
  int deterministic; /* no worker: the owner's step loop runs the ops (cpu_sim.c) */
  /* failures carried across streams (see the top); the log under the mutex */
  int propagates;         /* set by the driver after initialize */
  uint32_t fault_total;   /* atomic: failures ever logged (cpu_stream_has_faults) */
  cpu_fault_log_t faults;
  cpu_fault_entry_t fault_entries[CPU_STREAM_FAULT_LOG];
  uint64_t fault_marks[CPU_STREAM_MAX_INDEX]; /* by origin; the consumer's only */
  uint32_t device_index; /* the owner's, for the timeline trace (set by the driver) */
};

/* The op's payload storage, for the op record the driver puts there. */
static inline void *cpu_op_payload(cpu_op_t *op) { return op->payload; }

/* Initialize a stream and start its worker; with run_until (deterministic
 * mode) no worker: the owner's step loop runs the ops. RESOURCE_EXHAUSTED /
 * INTERNAL. */
cubert_status_t cpu_stream_initialize(cpu_stream_t *stream, cubert_allocator_t allocator,
                                      uint32_t slot, void *owner, cpu_stream_run_fn_t run_until);

/* Deterministic mode (cpu_sim.c): true when the stream has a head op whose
 * wait is satisfied (*out_seq: its sequence number). */
bool cpu_stream_head_runnable(cpu_stream_t *stream, uint64_t *out_seq);
/* Run the head op (its wait is not re-checked) and mark it completed. */
void cpu_stream_step(cpu_stream_t *stream);
/* True when no op is queued. */
bool cpu_stream_idle(cpu_stream_t *stream);
/* Run every queued op, stop the worker, free the ring. */
void cpu_stream_deinitialize(cpu_stream_t *stream);

/* Reserve the next op slot (blocks while the ring is full). The caller fills
 * run/done/payload/wait fields and then calls cpu_stream_commit. */
cpu_op_t *cpu_stream_reserve(cpu_stream_t *stream);
/* Commit the reserved op; returns its sequence number. The worker sees it
 * when CPU_STREAM_BATCH ops are committed, when anyone publishes (every wait
 * on a point of the stream does), when the commit finds the worker asleep
 * and wakes it, or when an idle worker's periodic look at the tail finds it
 * (within tens of microseconds; within 1 ms if the worker fell asleep just
 * as the op was committed). Producer (device lock) only; never blocks unless
 * the ring is full (cpu_stream_reserve). */
uint64_t cpu_stream_commit(cpu_stream_t *stream);
/* Make every committed op visible to the worker (and wake it if it sleeps).
 * Any thread; lock-free except the wake. */
void cpu_stream_publish(cpu_stream_t *stream);

/* A stream helper's look (cpu_helpers.c): the stream is the helpers' (its
 * worker sleeps, no thread runs its ops, no collective, no held worker) and
 * has published ops not run yet, or committed ones when no helper read its
 * tail for CPU_STREAM_HELPERS_PULL_NS (each read costs the producer a
 * cache-line transfer at its next commit; now_ns: the clock, 0: read the
 * tail now, CPU_STREAM_HELPERS_NO_PULL: do not read it). *out_pulled (may
 * be NULL) is set to whether it read the tail because its time had come.
 * Lock-free. */
int cpu_stream_helpers_work(cpu_stream_t *stream, uint64_t now_ns, int *out_pulled);
/* A stream helper's turn: if the consumer role is free, run the committed
 * ops in order, at most max_ops, stopping before a wait op whose point is
 * not done or an op that is not small (op_small): the worker is then woken
 * for it (a helper never blocks, and leaves long ops to the worker). A
 * stream that is hot (ops committed while the helper ran them, or max_ops
 * reached) is handed to its worker too. True when it ran an op.
 * Thread-safe. */
int cpu_stream_help_ops(cpu_stream_t *stream, uint32_t max_ops);
/* Wake the stream's worker for its committed ops (what a helper hands
 * over). Thread-safe; takes the stream's mutex. */
void cpu_stream_wake_worker(cpu_stream_t *stream);

/* From now on only the stream's worker runs its ops (a waiting host thread
 * does not help): for a stream whose ops may block on other threads (a
 * collective). Thread-safe; sticky. */
void cpu_stream_set_worker_only(cpu_stream_t *stream);

/* True once (stream, seq) completed. Thread-safe. */
int cpu_stream_point_completed(cpu_stream_t *stream, uint64_t seq);
/* Block until (stream, seq) completed or timeout_ns passed (UINT64_MAX: no
 * timeout). OK or DEADLINE_EXCEEDED. Thread-safe. Without a timeout, while no
 * thread runs the stream's ops (the consumer role is free), the caller runs
 * them itself, in order, up to its point (not on a worker_only stream); with a
 * timeout it only waits (an op it ran could outlast the timeout). seq must
 * be committed (at most the tail). Deterministic mode: runs the device's step loop until the point
 * completed (no timeout: time is virtual); FAILED_PRECONDITION when no step is
 * runnable first (deadlock). */
cubert_status_t cpu_stream_wait_point(cpu_stream_t *stream, uint64_t seq, uint64_t timeout_ns);

/* Queue an error on the stream (worker or producer). */
void cpu_stream_push_error(cpu_stream_t *stream, const cubert_error_t *error);
/* Drain the queued errors: returns OK when none, else SERVER_UNHEALTHY with the
 * aggregate copied into out_error (if not NULL). */
cubert_status_t cpu_stream_drain_errors(cpu_stream_t *stream, cubert_error_t *out_error);
/* Number of queued errors (without draining). */
uint32_t cpu_stream_error_count(cpu_stream_t *stream);
/* True once an op of the stream logged a failure (a point of it that
 * completed then covers what a waiter must inherit). Thread-safe. */
int cpu_stream_has_faults(cpu_stream_t *stream);

#endif

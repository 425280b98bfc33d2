/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_comm.h: the CUDA driver's collective primitives
 * (comm_create / comm_query / comm_destroy / collective of
 * cubert/driver/driver.h) over NCCL and peer copies. Internal to
 * backend-cuda; docs/collectives.md is the guide.
 *
 *   cuda_comm.c        the process-wide table of communicators, the four
 *                      primitives, the comm stream's errors
 *   cuda_comm_round.c  communicators whose members are all in this process
 *                      and more than one: posts, rounds, gates
 *   cuda_comm_direct.c one rank here: a single-member communicator, a rank
 *                      of a process communicator (NCCL called on the
 *                      communication stream itself)
 *   cuda_comm_world.c  process communicators (cubert_cuda_comm_init_rank,
 *                      the unique id handed over through a file)
 *   cuda_comm_watch.c  the watchdog: timeouts, NCCL's asynchronous errors,
 *                      aborts
 *   cuda_comm_mean.c   all_reduce Mean: NCCL's Sum, then x / n (kernels of
 *                      cuda_comm_kernels.h, PTX embedded)
 *
 * A communicator ("group") is one slot of a fixed process-wide table (as
 * the CPU driver's host_comm.c), keyed by the CommunicationId of its
 * sorted device set; each device that joined holds a member record (its
 * driver comm). Locks: g_comm_mutex (cuda_comm_lock) guards the table and
 * every group's bookkeeping; a group's issue_mutex serializes the CUDA and
 * NCCL calls made for the group by any thread (issuing rounds, releasing
 * gates, aborting, destroying). Order: issue_mutex, then g_comm_mutex.
 *
 * Gates (members all in this process, more than one). A member's
 * collective cannot be enqueued by its own thread alone: NCCL needs every
 * rank of a round in one group call (ncclGroupStart / End from one thread,
 * as NCCL documents for several GPUs driven by one thread), and the peers
 * post later, from other threads or later from this one. So the member's
 * communication stream S gets, at the call: an event F (the inputs are
 * ready: S already waits for the producers) and a wait on the member's
 * gate word (cuStreamWaitValue32 >= round). The thread whose post completes
 * a round (the last member to post) issues it, on each member's own stream
 * N: wait F, the NCCL call (or the copy of a send/recv pair), then
 * cuStreamWriteValue32(gate, round). S and everything the server orders after
 * the collective (sync_collective, the pins) stay in call order, nothing
 * blocks the host, and a round whose peers never come is released by the
 * watchdog (the gate written from N, the error queued on S).
 *
 * Direct posts (all_reduce): the post that completes a round while no
 * earlier round is pending and no other thread issues is issued by its own
 * thread before the call returns, so that member's part runs on its S
 * itself, after the fence and before anything the server enqueues later: no
 * F, no gate wait, no N, no gate write for it. The rank's `done` event is
 * recorded once, when the member leaves (on N after S), not after every
 * round: it covers every round of the rank.
 *
 * Lazy posts (all_reduce): the other members' posts enqueue nothing at the
 * call. The post is published, and S remembers it (cuda_drv_stream_t.lazy).
 * If the round is issued before anything else is enqueued on S (a client
 * posting every member back to back: the common case), the issuer enqueues
 * that member's part on S itself, as for a direct post: no F, gate, N wait
 * or gate write. If the device's thread enqueues more work on S first (the
 * next collective, the server's pins or sync_collective event, a fence's
 * wait, a sync), cuda_drv_settle closes the gate first (cuda_comm_settle:
 * F and the gate wait on S, the post switched to N), under the group's
 * issue_mutex so that no issuer runs meanwhile: S keeps the call order.
 * The issuer enqueues on a lazy member's S while holding issue_mutex and
 * clears S's mark after (compare-and-swap: only its own member's).
 */
#ifndef CUBERT_BACKEND_CUDA_COMM_CUDA_COMM_H
#define CUBERT_BACKEND_CUDA_COMM_CUDA_COMM_H

#include "cubert/comm.h"
#include "driver/cuda_driver.h"
#include "comm/cuda_nccl_loader.h"

/* Communicators alive at once in the process (as the CPU driver's). */
#define CUDA_COMM_MAX 32
/* Members per communicator. */
#define CUDA_COMM_MAX_MEMBERS CUBERT_COMMUNICATION_MAX_DEVICES
/* Collectives one member may post ahead of the rounds issued. */
#define CUDA_COMM_RING 256
/* Collectives of a process communicator tracked for the timeout. */
#define CUDA_COMM_TRACK 64
/* Default wait for peers (cubert_cuda_options_t.collective_timeout_ms 0). */
#define CUDA_COMM_DEFAULT_TIMEOUT_MS 60000u
/* How often the watchdog looks. */
#define CUDA_COMM_WATCH_PERIOD_NS 2000000ull

typedef enum cuda_group_kind_e {
  CUDA_GROUP_LOCAL = 0, /* every member is a device of this process */
  CUDA_GROUP_WORLD = 1  /* one rank per process (cuda_comm_world.c) */
} cuda_group_kind_t;

typedef enum cuda_nccl_state_e {
  CUDA_NCCL_NONE = 0,  /* no NCCL communicator made yet */
  CUDA_NCCL_READY = 1, /* nccl[] made */
  CUDA_NCCL_FAILED = 2 /* could not be made: nccl_error says why */
} cuda_nccl_state_t;

/* One member's collective in a round (members all in this process). */
typedef struct cuda_post_t {
  uint32_t kind;  /* cubert_collective_kind_t */
  uint32_t dtype; /* cubert_comm_dtype_t */
  uint32_t op;    /* cubert_reduce_operation_t */
  uint32_t peer;  /* send / recv: the peer's rank */
  uint32_t on_s;  /* all_reduce run on S itself: a direct or lazy post, no gate (above) */
  CUdeviceptr src, dst;
  uint64_t bytes;
  uint64_t posted_ns;
} cuda_post_t;

typedef struct cuda_group_t cuda_group_t;
typedef struct cuda_world_t cuda_world_t;

/* A device's membership of one group: the driver's communicator. Made by
 * comm_create with the device's allocator, freed by comm_destroy. The
 * device's server thread owns the fields marked (own); the rest is under
 * g_comm_mutex (and read by an issuer under issue_mutex). */
typedef struct cuda_member_t {
  cuda_group_t *group;
  uint32_t rank;
  uint32_t ordinal; /* the GPU */
  cuda_drv_t *drv;
  const cubert_cuda_loader_t *cu;
  uint64_t timeout_ns;
  cuda_drv_stream_t *s; /* the server's communication stream (the first collective's) */
  /* gated path (own until the first post, then read by issuers) */
  cubert_cuda_stream_t n;   /* N: where rounds run (handle NULL until made) */
  CUdeviceptr word;         /* the gate word (cubert__cuda_word_alloc: zeroed, not pooled) */
  uint32_t posted;          /* rounds posted (g_comm_mutex) */
  uint32_t closed;          /* the last round whose gate wait is (being) enqueued on S (g_comm_mutex) */
  uint32_t written;         /* gate value enqueued on N (issue_mutex; set under g_comm_mutex) */
  uint32_t lazy_k;          /* the round posted lazily (own; cuda_comm_settle reads it) */
  uint32_t errors_queued;   /* an abort error was queued on S (issue_mutex) */
  uint32_t ran_on_s;        /* a round of it ran on S (direct and lazy posts; g_comm_mutex) */
  const cubert_cuda_function_t *mean[8]; /* Mean kernels by dtype, fetched by the own thread */
  cuda_post_t posts[CUDA_COMM_RING];     /* round k at posts[(k - 1) % RING] */
  CUevent ready[CUDA_COMM_RING];         /* F of round k, raw events (own: created lazily) */
} cuda_member_t;

/* A communicator of the process-wide table. */
struct cuda_group_t {
  uint32_t used;
  uint32_t generation; /* bumped each time the slot is taken (the watchdog checks it) */
  uint32_t kind; /* cuda_group_kind_t */
  uint32_t size; /* members (ranks) */
  uint32_t joined; /* members of this process now */
  uint64_t id;   /* CommunicationId of the device set */
  uint32_t devices[CUDA_COMM_MAX_MEMBERS]; /* sorted index ids: rank = position */
  cuda_member_t *members[CUDA_COMM_MAX_MEMBERS];
  uint64_t left;          /* bit r: rank r joined once and left (while others stay) */
  uint32_t ever;          /* ranks that joined at least once (count) */
  uint32_t aborted;       /* 1: refused from now on, until every member left */
  cubert_error_t abort_error;
  uint32_t issued;        /* rounds issued (local groups) */
  uint32_t issuing;       /* a thread is issuing rounds (g_comm_mutex) */
  uint64_t issued_ns;     /* when the last round was issued */
  uint64_t timeout_ns;    /* the smallest of the members' */
  pthread_mutex_t *issue_mutex; /* the slot's (never copied) */
  /* NCCL (all_reduce), one communicator per rank */
  uint32_t nccl_state;
  cubert_error_t nccl_error;
  const cubert_nccl_loader_t *nl;
  cubert_nccl_comm_t nccl[CUDA_COMM_MAX_MEMBERS];
  /* per rank, kept past a member's leave: its context, GPU and the event
   * recorded after its last issued round (raw; the group destroys it) */
  const cubert_cuda_loader_t *cu;
  CUcontext ctx[CUDA_COMM_MAX_MEMBERS];
  uint32_t ordinals[CUDA_COMM_MAX_MEMBERS];
  CUevent done[CUDA_COMM_MAX_MEMBERS];
  cuda_world_t *world; /* CUDA_GROUP_WORLD */
};

/* ---- cuda_comm.c -------------------------------------------------------------------- */

void cuda_comm_lock(void);
void cuda_comm_unlock(void);
/* The table's slots (the watchdog walks them under the lock). */
cuda_group_t *cuda_comm_slot(uint32_t i);

/* The NCCL library the collectives use: the shared loader, unless a test
 * installed another (cuda_comm_set_nccl). UNSUPPORTED "NCCL unavailable". */
cubert_status_t cuda_comm_nccl(const cubert_nccl_loader_t **out, cubert_error_t *out_error);
/* Tests: use `loader` (NULL: back to the shared one), or, with a failure
 * status, answer that status and record instead. */
void cuda_comm_set_nccl(const cubert_nccl_loader_t *loader, cubert_status_t status,
                        const cubert_error_t *error);

/* Communicators alive (with at least one member in this process). */
uint32_t cuda_comm_live(void);

/* The driver primitives. */
cubert_status_t cuda_comm_create(void *self, const uint32_t *devices, uint32_t count,
                                 uint32_t rank, cubert_driver_comm_t **out_comm,
                                 cubert_error_t *out_error);
cubert_status_t cuda_comm_query(void *self, cubert_driver_comm_t *comm, cubert_error_t *out_error);
void cuda_comm_destroy(void *self, cubert_driver_comm_t *comm);
cubert_status_t cuda_comm_collective(void *self, cubert_driver_comm_t *comm,
                                     const cubert_driver_collective_t *collective,
                                     cubert_driver_stream_t *stream, cubert_error_t *out_error);
/* stream_errors: the communication stream's also polls the device's NCCL
 * communicators (ncclCommGetAsyncError), then the driver's own. */
cubert_status_t cuda_comm_stream_errors(void *self, cubert_driver_stream_t *stream,
                                        cubert_error_t *out_error);

/* Abort `g` (issue_mutex held, g_comm_mutex not): mark it aborted with
 * `cause`, abort its NCCL communicators, release every member's pending
 * gates and queue on each member's S: `posters` for a member with rounds
 * still pending, `others` for the rest (NULL: nothing). */
void cuda_comm_abort(cuda_group_t *g, const cubert_error_t *cause, const cubert_error_t *posters,
                     const cubert_error_t *others);

/* Make `ctx` current on this thread for foreign work and give back what
 * was current (cuda_comm_ctx_restore). The CUDA device layer caches the
 * context it made current per thread: every switch made here is undone. */
CUcontext cuda_comm_ctx_enter(const cubert_cuda_loader_t *cu, CUcontext ctx);
void cuda_comm_ctx_restore(const cubert_cuda_loader_t *cu, CUcontext saved);
/* The same for NCCL's group calls over the contexts ctx[0..n): the context
 * current on this thread is kept when it is one of them (NCCL switches to
 * each rank's GPU itself and back), else ctx[0] is made current. */
CUcontext cuda_comm_ctx_enter_any(const cubert_cuda_loader_t *cu, const CUcontext *ctx, uint32_t n);

/* Monotonic nanoseconds. */
uint64_t cuda_comm_now_ns(void);

/* NCCL calls on communicators of one GPU are made by one thread at a time
 * (NCCL's thread-safety rule: "not safe to issue NCCL operations in
 * parallel to independent communicators located on the same device"): one
 * mutex per GPU ordinal (mod 64), taken around each call; several at once
 * in ascending order (duplicates taken once). Innermost: no other lock is
 * taken while one is held. */
void cuda_comm_nccl_lock(uint32_t ordinal);
void cuda_comm_nccl_unlock(uint32_t ordinal);
void cuda_comm_nccl_lock_all(const uint32_t *ordinals, uint32_t n);
void cuda_comm_nccl_unlock_all(const uint32_t *ordinals, uint32_t n);

/* ---- cuda_comm_round.c: local groups of more than one member --------------------------- */

/* Post one collective of member m on S (the server's thread; see "Gates"). */
cubert_status_t cuda_comm_post(cuda_member_t *m, const cubert_driver_collective_t *c,
                               cuda_drv_stream_t *s, cubert_error_t *out_error);
/* Write m's gate up to every round it posted (issue_mutex held), queuing
 * `error` on its S first (NULL: none). */
void cuda_comm_release(cuda_member_t *m, const cubert_error_t *error);
/* The member leaves (issue_mutex held): its gates released, its stream N
 * and gate word given back in stream order. */
void cuda_comm_member_close(cuda_member_t *m);
/* The watchdog: when the oldest pending round of `g` waited longer than the
 * timeout, abort `g` (posters: DEADLINE_EXCEEDED). Takes the locks. */
void cuda_comm_round_check(cuda_group_t *g, uint32_t generation, uint64_t now_ns);

/* ---- cuda_comm_setup.c: NCCL before the gates ------------------------------------------ */

/* A CUDA device of this process (cubert_cuda_client_create; `owner` its
 * driver object) / its end (every entry of `owner`): the GPU and primary
 * context of device index `index`, for groups whose members did not join
 * yet (g_comm_mutex inside). */
void cuda_comm_device_add(const void *owner, uint32_t index, uint32_t ordinal, CUcontext ctx);
void cuda_comm_device_remove(const void *owner);
/* At an all_reduce post of m, before its gate (the server's thread, no lock
 * held): make the group's NCCL communicators and run their first
 * collectives now when no stream of its GPUs may wait on a gate (every
 * member's GPU known; no member of a local group on those GPUs with a
 * round posted and not issued); else leave them to the issue. A failure of NCCL is kept in the group (the round reports
 * it); returns OK, or UNSUPPORTED "NCCL unavailable". Takes issue_mutex. */
cubert_status_t cuda_comm_setup_early(cuda_member_t *m, cubert_error_t *out_error);
/* A stream of one of these GPUs may wait on a gate (a gate wait enqueued, or
 * about to be, and not written yet, by a member of a local group other than
 * `skip`, not aborted; a lazy post closes none).
 * NCCL's destroy and abort free memory, which then deadlocks on a real
 * driver. Takes g_comm_mutex. */
int cuda_comm_gpus_gated(const uint32_t *ordinals, uint32_t n, const cuda_group_t *skip);
/* Abort the NCCL communicators comms[0..n) (of GPUs ordinals[]; entries set
 * to NULL): now, or, for a GPU where a gate may be closed, later (kept
 * until cuda_comm_nccl_reap finds the GPU free). Then reaps. No lock held
 * but the issue_mutex of `skip`. */
void cuda_comm_nccl_retire(const cubert_nccl_loader_t *nl, cubert_nccl_comm_t *comms,
                           const uint32_t *ordinals, uint32_t n, const cuda_group_t *skip);
/* Abort the kept communicators whose GPU is free of gates now. */
void cuda_comm_nccl_reap(const cuda_group_t *skip);

/* ---- cuda_comm_direct.c: one rank in this process ---------------------------------- */

/* The NCCL communicator of a single-member local group (ncclCommInitAll of
 * its GPU), made at its first all_reduce. issue_mutex held. */
cubert_status_t cuda_comm_single_nccl(cuda_group_t *g, cuda_member_t *m,
                                      cubert_error_t *out_error);
/* One collective of a single-member group or of a process communicator's
 * rank, enqueued on S at once (the server's thread). */
cubert_status_t cuda_comm_direct(cuda_member_t *m, const cubert_driver_collective_t *c,
                                 cuda_drv_stream_t *s, cubert_error_t *out_error);

/* ---- cuda_comm_world.c: process communicators ------------------------------------------ */

/* The process communicator registered for device `index` with `nranks`
 * ranks, or NULL (g_comm_mutex held). */
cuda_world_t *cuda_world_find(uint32_t index, uint32_t nranks);
/* Its rank and NCCL communicator (non-blocking). */
uint32_t cuda_world_rank(const cuda_world_t *w);
cubert_nccl_comm_t cuda_world_comm(const cuda_world_t *w);
/* A group of `w` was made / freed (g_comm_mutex held). */
void cuda_world_attach(cuda_world_t *w, cuda_group_t *g);
void cuda_world_detach(cuda_world_t *w);
/* Abort its NCCL communicator (issue_mutex of its group held). */
void cuda_world_abort_comm(cuda_world_t *w);
/* Track one collective enqueued on S (the event recorded after it) for the
 * watchdog's timeout; and the check itself (takes the locks). */
void cuda_world_track(cuda_world_t *w, cuda_member_t *m);
void cuda_world_check(cuda_group_t *g, uint32_t generation, uint64_t now_ns);
/* Process communicators registered. */
uint32_t cuda_world_live(void);
/* The driver of a device is being destroyed: its process communicator goes
 * (ncclCommDestroy; the server synchronized its streams first). */
void cuda_comm_device_gone(cuda_drv_t *d);

/* ---- cuda_comm_watch.c --------------------------------------------------------------- */

/* A group that needs watching appeared / went away (g_comm_mutex held:
 * the count; the thread is started / stopped by cuda_comm_watch_sync). */
void cuda_comm_watch_add(void);
void cuda_comm_watch_remove(void);
/* Start the watchdog when something needs it, or join it when nothing does
 * (no lock held). */
cubert_status_t cuda_comm_watch_sync(cubert_error_t *out_error);
/* Tests: the next start of the watchdog fails (as a pthread_create that
 * fails would). */
void cuda_comm_watch_fail_next(void);
/* Poll the NCCL communicators of `g` (still the group of `generation`) for
 * an asynchronous error; abort `g` on one (takes the locks; skips a group
 * whose issue_mutex is busy). */
void cuda_comm_poll_async(cuda_group_t *g, uint32_t generation);

/* ---- cuda_comm_mean.c ------------------------------------------------------------------- */

/* The Mean kernel of a reducible dtype, NULL for another. */
const cubert_kernel_t *cuda_comm_mean_kernel(uint32_t dtype);
/* x[i] /= n over `bytes` at `x` on `stream` with the function of that
 * kernel (fetched beforehand on the device's own thread). */
cubert_status_t cuda_comm_mean_launch(cubert_cuda_stream_t *stream,
                                      const cubert_cuda_function_t *f, uint32_t dtype,
                                      CUdeviceptr x, uint64_t bytes, uint32_t n,
                                      cubert_error_t *out_error);
/* The NCCL data type of a cubert dtype (all_reduce), -1 for none. */
int cuda_comm_nccl_type(uint32_t dtype);

#endif /* CUBERT_BACKEND_CUDA_COMM_CUDA_COMM_H */

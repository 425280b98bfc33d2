/* SPDX-License-Identifier: MIT */
/*
 * os/os_comm.h: in-process communicators for the CPU server's
 * collectives (the role NCCL plays for CUDA). Not installed.
 *
 * A communicator is named by the CommunicationId of a set of CPU devices
 * (index ids; rank = position in the sorted list). The devices share it
 * through a small process-wide registry: a fixed table (no allocation)
 * guarded by one mutex; a slot is taken by the first device that joins and
 * freed when the last one leaves.
 *
 * A collective is a rendezvous: the k-th collective every member runs on
 * the communicator meets the k-th of every other member (each member runs
 * its collectives in order, on its communication stream). The last member to
 * arrive checks that the contributions agree and moves the data (under the
 * registry lock); every member then returns the same status.
 *
 * No hang: a member waits at most `timeout_ns` for its peers, then the
 * communicator is aborted (DEADLINE_EXCEEDED for the waiter, UNAVAILABLE for
 * every other member, now and for every later collective on it, until all
 * members left). A member being torn down (os_comm_cancel) waits at most a
 * short grace period, then aborts the communicator the same way.
 */
#ifndef CUBERT_OS_COMM_H
#define CUBERT_OS_COMM_H

#include "cubert/cubert.h"

/* Communicators alive at once in the process. */
#define OS_COMM_MAX 32
/* How long a member being torn down still waits for its peers. */
#define OS_COMM_CANCEL_GRACE_NS 1000000000ull

/* A member's reference to a joined communicator (plain data). */
typedef struct os_comm_ref_t {
  uint32_t slot;
  uint32_t rank;
  uint32_t size;
  uint64_t id;
} os_comm_ref_t;

typedef enum os_comm_kind_e {
  OS_COMM_ALL_REDUCE = 1,
  OS_COMM_SEND = 2,
  OS_COMM_RECV = 3
} os_comm_kind_t;

/* One member's part of a collective. The pointers must stay valid until
 * os_comm_run returned. */
typedef struct os_comm_contrib_t {
  uint32_t kind;     /* os_comm_kind_t */
  uint32_t device;   /* the member's index id */
  uint32_t peer;     /* send: destination index id; recv: source index id */
  uint32_t dtype;    /* cubert_comm_dtype_t */
  uint32_t op;       /* cubert_reduce_operation_t (all_reduce) */
  uint32_t reserved_;
  const unsigned char *src; /* all_reduce, send */
  unsigned char *dst;       /* all_reduce, recv */
  uint64_t bytes;
} os_comm_contrib_t;

/* Sort `devices` (index ids) into out_sorted, compute the communication id
 * of {CPU type, index} ids and self's rank. INVALID_ARGUMENT (NULL, count 0,
 * duplicates), OUT_OF_RANGE (more than CUBERT_COMMUNICATION_MAX_DEVICES),
 * NOT_FOUND (self not in the list). Pure. */
cubert_status_t os_comm_describe(const uint32_t *devices, size_t count, uint32_t self,
                                 uint32_t *out_sorted, uint64_t *out_id, uint32_t *out_rank,
                                 cubert_error_t *out_error);

/* Join (create on first use) the communicator of `devices` as `self`.
 * Codes of os_comm_describe; ALREADY_EXISTS when `self` already joined it
 * (*out_ref is still filled); FAILED_PRECONDITION when it was aborted;
 * RESOURCE_EXHAUSTED when OS_COMM_MAX communicators exist. Thread-safe. */
cubert_status_t os_comm_join(const uint32_t *devices, size_t count, uint32_t self,
                             os_comm_ref_t *out_ref, cubert_error_t *out_error);

/* Run one collective as the member `ref` (blocks: rendezvous). OK, or the
 * round's error (SERVER_VALIDATION when the members disagree on the
 * operation, dtype, op or size), DEADLINE_EXCEEDED, UNAVAILABLE (aborted).
 * Thread-safe. */
cubert_status_t os_comm_run(const os_comm_ref_t *ref, const os_comm_contrib_t *mine,
                            uint64_t timeout_ns, cubert_error_t *out_error);

/* FAILED_PRECONDITION (SERVICE_CREATION) when the member's communicator was
 * aborted, else OK. Thread-safe. */
cubert_status_t os_comm_check(const os_comm_ref_t *ref, cubert_error_t *out_error);

/* The member is being torn down: its waits (current and later) last at most
 * OS_COMM_CANCEL_GRACE_NS more. Thread-safe, non-blocking. */
void os_comm_cancel(const os_comm_ref_t *ref);

/* Leave the communicator (after the member's last os_comm_run returned).
 * Until the member joins again, a peer that waits for it (now or later)
 * aborts the communicator (UNAVAILABLE) instead of waiting for the timeout.
 * The last member frees the slot. Thread-safe. */
void os_comm_leave(const os_comm_ref_t *ref);

/* Number of communicators alive (tests). Thread-safe. */
uint32_t os_comm_live(void);

#endif

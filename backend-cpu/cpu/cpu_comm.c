/* SPDX-License-Identifier: MIT */
/*
 * backend-cpu/cpu/cpu_comm.c: the CPU driver's collective primitives
 * (cubert/driver/driver.h) over the in-process rendezvous of
 * os/os_comm.c (the role NCCL plays for CUDA). The server keeps
 * the bookkeeping (which communicators this device joined, the ordering on
 * its communication stream, the pins); here a communicator is a member's
 * os_comm_ref_t, and a collective an op that rendezvouses with the peers
 * when the communication stream's worker runs it.
 *
 * Deterministic mode has no collectives: a collective blocks until its
 * peers' step loops ran, which one host thread stepping every device cannot
 * do (UNSUPPORTED).
 */
#include "cpu/cpu_driver.h"
#include "os/os_comm.h"

#include <string.h>

struct cpu_comm_t {
  cpu_comm_t *next; /* left, waiting for the device's teardown */
  os_comm_ref_t ref;
  uint32_t used; /* a collective was enqueued on it */
};

typedef struct comm_op_t {
  os_comm_ref_t ref;
  os_comm_contrib_t contrib;
  uint64_t timeout_ns;
} comm_op_t;

typedef char cpu_comm_op_fits_[sizeof(comm_op_t) <= CPU_OP_PAYLOAD ? 1 : -1];

static cpu_comm_t *comm_of(cubert_driver_comm_t *c) { return (cpu_comm_t *)(void *)c; }

cubert_status_t cpu_comm_create(void *self, const uint32_t *devices, uint32_t count, uint32_t rank,
                                cubert_driver_comm_t **out_comm, cubert_error_t *out_error) {
  cpu_device_t *d = (cpu_device_t *)self;
  cpu_comm_t *c = NULL;
  cubert_status_t status;
  (void)rank;
  if (d->deterministic)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0,
                            "collectives need the threaded mode of the CPU device");
  if (cubert_allocator_malloc(d->allocator, sizeof(*c), 0, (void **)&c, NULL) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "communicator");
  status = os_comm_join(devices, count, d->device_index, &c->ref, out_error);
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(d->allocator, c, sizeof(*c), 0);
    return status;
  }
  *out_comm = (cubert_driver_comm_t *)(void *)c;
  return CUBERT_STATUS_OK;
}

cubert_status_t cpu_comm_query(void *self, cubert_driver_comm_t *comm, cubert_error_t *out_error) {
  (void)self;
  return os_comm_check(&comm_of(comm)->ref, out_error);
}

/* Leaving aborts the waits of its collectives (after a grace period); those
 * still queued keep their copy of the reference, so the member leaves only
 * at the device's teardown, after its streams ran everything. A
 * communicator that never carried a collective leaves at once. */
void cpu_comm_destroy(void *self, cubert_driver_comm_t *comm) {
  cpu_device_t *d = (cpu_device_t *)self;
  cpu_comm_t *c = comm_of(comm);
  os_comm_cancel(&c->ref);
  if (!c->used) {
    os_comm_leave(&c->ref);
    cubert_allocator_free(d->allocator, c, sizeof(*c), 0);
    return;
  }
  c->next = d->comms;
  d->comms = c;
}

void cpu_comm_free_all(cpu_device_t *d) {
  while (d->comms) {
    cpu_comm_t *c = d->comms;
    d->comms = c->next;
    os_comm_leave(&c->ref);
    cubert_allocator_free(d->allocator, c, sizeof(*c), 0);
  }
}

static cubert_status_t comm_run(cpu_stream_t *stream, void *payload, cubert_error_t *error) {
  comm_op_t *op = (comm_op_t *)payload;
  (void)stream;
  return os_comm_run(&op->ref, &op->contrib, op->timeout_ns, error);
}

cubert_status_t cpu_collective(void *self, cubert_driver_comm_t *comm,
                               const cubert_driver_collective_t *collective,
                               cubert_driver_stream_t *stream, cubert_error_t *out_error) {
  cpu_device_t *d = (cpu_device_t *)self;
  cpu_comm_t *c = comm_of(comm);
  cpu_stream_t *s = (cpu_stream_t *)(void *)stream;
  cpu_op_t *op;
  comm_op_t *p;
  CUBERT_RETURN_IF_ERROR(os_comm_check(&c->ref, out_error));
  if (collective->kind == CUBERT_COLLECTIVE_ALL_REDUCE &&
      !cubert_comm_dtype_reducible(collective->dtype)) {
    uint64_t f = collective->dtype;
    return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, &f, 1,
                            "all_reduce does not compute on this dtype on the CPU device");
  }
  op = cpu_stream_reserve(s);
  p = (comm_op_t *)cpu_op_payload(op);
  memset(p, 0, sizeof(*p));
  p->ref = c->ref;
  p->timeout_ns = d->collective_timeout_ns;
  p->contrib.kind = collective->kind == CUBERT_COLLECTIVE_ALL_REDUCE ? OS_COMM_ALL_REDUCE
                    : collective->kind == CUBERT_COLLECTIVE_SEND     ? OS_COMM_SEND
                                                                     : OS_COMM_RECV;
  p->contrib.device = d->device_index;
  p->contrib.peer = collective->peer;
  p->contrib.dtype = collective->dtype;
  p->contrib.op = collective->op;
  p->contrib.src = (const unsigned char *)(uintptr_t)collective->src;
  p->contrib.dst = (unsigned char *)(uintptr_t)collective->dst;
  p->contrib.bytes = collective->bytes;
  op->run = comm_run;
  /* it blocks until the peers' workers run theirs: never on a waiting host
   * thread (set before the commit: a waiter that learns of this op sees it) */
  cpu_stream_set_worker_only(s);
  (void)cpu_stream_commit(s);
  c->used = 1;
  return CUBERT_STATUS_OK;
}

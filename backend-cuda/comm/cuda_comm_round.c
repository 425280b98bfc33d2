/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_comm_round.c: communicators whose members are all
 * devices of this process, more than one (cuda_comm.h, "Gates").
 *
 * Round k of a group is the k-th collective of every member. A member's
 * post enqueues on its communication stream S an event F (inputs ready)
 * and a wait for its gate word to reach k, then publishes the post (an
 * all_reduce: only once more work comes to S before the round was issued;
 * until then nothing: a lazy post, cuda_comm.h). The thread whose post
 * completes a round issues it, on each gated member's stream N (on S for
 * a direct or lazy post), under the group's issue_mutex:
 *   - the members must agree (same operation; all_reduce: dtype, op, size;
 *     a send and a recv naming each other, same dtype and size), else every
 *     member gets SERVER_VALIDATION and nothing is written;
 *   - all_reduce: N waits F; ncclAllReduce of every rank in one
 *     ncclGroupStart / End (the NCCL communicators are made at the first
 *     all_reduce by ncclCommInitAll over the members' GPUs); Mean divides
 *     after it (cuda_comm_mean.c);
 *   - send / recv: the receiver's N waits both F, copies (cuMemcpyPeerAsync
 *     between GPUs, peer access enabled once where cuDeviceCanAccessPeer
 *     allows it; cuMemcpyDtoDAsync when both share a GPU); the sender's N
 *     waits for the copy;
 *   - then every member's N writes its gate (cuStreamWriteValue32) and
 *     records the rank's `done` event.
 * A failure of a call is queued on the member's S and the gate is written
 * all the same: S never stays closed.
 */
#include "comm/cuda_comm.h"

#include <string.h>

/* ---- the member's stream N and gate word ---------------------------------------------- */

static void event_destroy_raw(cuda_member_t *m, CUevent *e) {
  if (!*e) return;
  (void)m->cu->cuEventDestroy(*e); /* a pending event is released once it completed */
  *e = NULL;
}

/* Made at the member's first post (its own thread): N, the zeroed word,
 * and S waits for the zeroing. */
static cubert_status_t member_prepare(cuda_member_t *m, cuda_drv_stream_t *s,
                                      cubert_error_t *out_error) {
  cubert_cuda_device_t *dev = m->drv->dev;
  cubert_cuda_event_t *z = NULL;
  cubert_status_t st;
  if (m->n.handle) return CUBERT_STATUS_OK;
  CUBERT_RETURN_IF_ERROR(cubert__cuda_stream_initialize(dev, &m->n, out_error));
  st = cubert__cuda_word_alloc(&m->n, &m->word, out_error);
  if (st == CUBERT_STATUS_OK) st = cubert__cuda_event_record(&m->n, false, &z, out_error);
  if (st == CUBERT_STATUS_OK) {
    st = cubert__cuda_event_wait(&s->s, z, out_error);
    cubert__cuda_event_release(dev, z);
  }
  if (st != CUBERT_STATUS_OK) {
    (void)cubert__cuda_stream_synchronize(&m->n, NULL);
    if (m->word) cubert__cuda_memory_free_now(dev, m->word);
    m->word = 0;
    cubert__cuda_stream_deinitialize(&m->n);
  }
  return st;
}

/* Enqueue "gate := value" on N (issue_mutex held). */
static void gate_write(cuda_member_t *m, uint32_t value) {
  CUresult r;
  if (value <= m->written || !m->n.handle) return; /* nothing closed: n may be in the making */
  if (cubert__cuda_device_enter(m->drv->dev, NULL) != CUBERT_STATUS_OK) return; /* lost */
  r = m->cu->cuStreamWriteValue32(m->n.handle, m->word, value, CU_STREAM_WRITE_VALUE_DEFAULT);
  if (r != CUDA_SUCCESS) {
    cubert_error_t e;
    (void)cubert__cuda_device_fail(m->drv->dev, r, CUBERT_CUDA_OP_GENERIC, "cuStreamWriteValue32",
                                   0, &e);
    if (m->s) cubert__cuda_stream_queue_error(&m->s->s, &e);
    return;
  }
  cuda_comm_lock(); /* (cuda_comm_gpus_gated reads it) */
  m->written = value;
  cuda_comm_unlock();
}

/* The failure of a call made for member m: queued on its S. */
static void member_fail(cuda_member_t *m, CUresult r, const char *what) {
  cubert_error_t e;
  (void)cubert__cuda_device_fail(m->drv->dev, r, CUBERT_CUDA_OP_GENERIC, what, 0, &e);
  if (m->s) cubert__cuda_stream_queue_error(&m->s->s, &e);
}

void cuda_comm_release(cuda_member_t *m, const cubert_error_t *error) {
  uint32_t closed;
  if (error && error->depth && m->s) cubert__cuda_stream_queue_error(&m->s->s, error);
  cuda_comm_lock();
  closed = m->closed;
  cuda_comm_unlock();
  gate_write(m, closed);
}

/* A lazy post of m on S was enqueued by an issuer (or will never be): S no
 * longer needs settling for it. Only m's mark goes: S may carry another
 * member's by now. */
static void lazy_clear(cuda_member_t *m) {
  void *expected = m;
  if (m->s)
    (void)__atomic_compare_exchange_n(&m->s->lazy, &expected, NULL, false, __ATOMIC_RELEASE,
                                      __ATOMIC_RELAXED);
}

static void record_done(cuda_group_t *g, cuda_member_t *m);

void cuda_comm_member_close(cuda_member_t *m) {
  uint32_t i, ran_on_s;
  lazy_clear(m); /* (released: nothing of it may stay on S's mark) */
  if (m->s) m->s->ops++; /* S's point moves (its word's free, `done`) */
  if (m->n.handle) {
    cubert_cuda_event_t *q = NULL;
    cuda_comm_release(m, NULL);
    cuda_comm_lock();
    ran_on_s = m->ran_on_s;
    cuda_comm_unlock();
    /* the rank's `done`: after every round it ran, on N and (direct and lazy posts) on S */
    if (ran_on_s && m->s && cubert__cuda_event_record(&m->s->s, false, &q, NULL) == CUBERT_STATUS_OK) {
      (void)cubert__cuda_event_wait(&m->n, q, NULL);
      cubert__cuda_event_release(m->drv->dev, q);
      q = NULL;
    }
    record_done(m->group, m);
    /* S waits for N's last write before the word goes (stream-ordered on S) */
    if (m->s && cubert__cuda_event_record(&m->n, false, &q, NULL) == CUBERT_STATUS_OK) {
      (void)cubert__cuda_event_wait(&m->s->s, q, NULL);
      cubert__cuda_event_release(m->drv->dev, q);
      cubert__cuda_word_retire(&m->s->s, m->word);
    } else {
      cubert__cuda_word_retire(&m->n, m->word);
    }
    m->word = 0;
    cubert__cuda_stream_deinitialize(&m->n); /* queued work still runs */
  }
  if (cubert__cuda_device_enter(m->drv->dev, NULL) == CUBERT_STATUS_OK)
    for (i = 0; i < CUDA_COMM_RING; i++) event_destroy_raw(m, &m->ready[i]);
}

/* ---- posting ------------------------------------------------------------------------------- */

/* all_reduce: refused at once when NCCL cannot run it (g_comm_mutex held
 * for the duplicate check only). */
static cubert_status_t all_reduce_possible(cuda_member_t *m, const cubert_driver_collective_t *c,
                                           cubert_error_t *out_error) {
  const cubert_nccl_loader_t *nl = NULL;
  cuda_group_t *g = m->group;
  uint32_t i, j;
  CUBERT_RETURN_IF_ERROR(cuda_comm_nccl(&nl, out_error));
  cuda_comm_lock();
  for (i = 0; i < g->size; i++)
    for (j = i + 1; j < g->size; j++)
      if (g->members[i] && g->members[j] && g->members[i]->ordinal == g->members[j]->ordinal) {
        char reason[CUBERT_ERROR_REASON_SIZE];
        uint64_t f[3];
        f[0] = g->devices[i];
        f[1] = g->devices[j];
        f[2] = g->members[i]->ordinal;
        cuda_comm_unlock();
        cubert__cuda_format(reason, sizeof reason,
                            "all_reduce: devices %u and %u share GPU %u; NCCL takes one rank per "
                            "GPU (\"Duplicate GPU detected\", ncclInvalidUsage)",
                            (unsigned)f[0], (unsigned)f[1], (unsigned)f[2]);
        return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, f, 3, reason);
      }
  cuda_comm_unlock();
  if (c->op == CUBERT_REDUCE_OPERATION_MEAN && !m->mean[c->dtype]) {
    const cubert_kernel_t *k = cuda_comm_mean_kernel(c->dtype);
    if (!k)
      return cubert_error_set(out_error, CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION, NULL, 0,
                              "all_reduce Mean: no kernel for this dtype");
    CUBERT_RETURN_IF_ERROR(cubert__cuda_function_get(m->drv->dev, k, &m->mean[c->dtype],
                                                     out_error));
  }
  /* NCCL made before the gate (cuda_comm_setup.c says why) */
  return cuda_comm_setup_early(m, out_error);
}

/* F (a raw event, made once per ring slot) and the gate wait on S. */
static cubert_status_t enqueue_gate(cuda_member_t *m, cuda_drv_stream_t *s, uint32_t k,
                                    cubert_error_t *out_error) {
  cubert_cuda_device_t *dev = m->drv->dev;
  CUevent *f = &m->ready[(k - 1u) % CUDA_COMM_RING];
  CUresult r;
  CUBERT_RETURN_IF_ERROR(cubert__cuda_device_enter(dev, out_error));
  if (!*f) {
    r = m->cu->cuEventCreate(f, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS)
      return cubert__cuda_device_fail(dev, r, CUBERT_CUDA_OP_GENERIC, "cuEventCreate", 0, out_error);
  }
  r = m->cu->cuEventRecord(*f, s->s.handle);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(dev, r, CUBERT_CUDA_OP_GENERIC, "cuEventRecord", 0, out_error);
  r = m->cu->cuStreamWaitValue32(s->s.handle, m->word, k, CU_STREAM_WAIT_VALUE_GEQ);
  if (r != CUDA_SUCCESS)
    return cubert__cuda_device_fail(dev, r, CUBERT_CUDA_OP_GENERIC, "cuStreamWaitValue32", 0,
                                    out_error);
  return CUBERT_STATUS_OK;
}

static void issue_loop(cuda_group_t *g, cuda_member_t *self);

/* Publish m's post of round k (g_comm_mutex held). */
static void post_fill(cuda_group_t *g, cuda_member_t *m, const cubert_driver_collective_t *c,
                      uint32_t k, uint32_t on_s) {
  cuda_post_t *p = &m->posts[(k - 1u) % CUDA_COMM_RING];
  uint32_t i;
  p->kind = c->kind;
  p->dtype = c->dtype;
  p->op = c->op;
  p->peer = 0;
  for (i = 0; i < g->size; i++)
    if (g->devices[i] == c->peer) p->peer = i;
  p->on_s = on_s;
  p->src = (CUdeviceptr)c->src;
  p->dst = (CUdeviceptr)c->dst;
  p->bytes = c->bytes;
  p->posted_ns = cuda_comm_now_ns();
  m->posted = k;
}

/* m's post of round k completes it and this thread may issue it at once:
 * every earlier round issued, nobody issuing, every peer joined and posted
 * round k, not aborted (g_comm_mutex held). */
static int completes_now(const cuda_group_t *g, const cuda_member_t *m, uint32_t k) {
  uint32_t i;
  if (g->aborted || g->issuing || g->joined != g->size || g->issued + 1u != k) return 0;
  for (i = 0; i < g->size; i++)
    if (i != m->rank && (!g->members[i] || g->members[i]->posted < k)) return 0;
  return 1;
}

/* The round can never complete (aborted, or a peer left): queue why on m's
 * S and release its gates (no lock held). */
static void post_refused(cuda_group_t *g, cuda_member_t *m, uint32_t aborted) {
  cubert_error_t e;
  (void)pthread_mutex_lock(g->issue_mutex);
  if (aborted) {
    cuda_comm_lock();
    e = g->abort_error;
    cuda_comm_unlock();
    cuda_comm_release(m, &e);
  } else {
    (void)cubert_error_set(&e, CUBERT_ERROR_DEVICE_LOST, NULL, 0,
                           "a member of the communicator was released: its peers cannot "
                           "complete a collective");
    cuda_comm_abort(g, &e, &e, NULL);
  }
  (void)pthread_mutex_unlock(g->issue_mutex);
}

/* After m's post of round k was published (g_comm_mutex held): whether
 * this thread issues now (*out_issue; g->issuing taken), and whether the
 * round can never complete (returned: 1 aborted, 2 a peer left). */
static uint32_t post_next(cuda_group_t *g, int *out_issue) {
  uint32_t i, ready = 1, peer_left = 0;
  for (i = 0; i < g->size; i++) {
    if (!g->members[i]) {
      ready = 0;
      if (g->left & (1ull << (i & 63u))) peer_left = 1;
    } else if (g->members[i]->posted <= g->issued) {
      ready = 0;
    }
  }
  *out_issue = 0;
  if (g->aborted) return 1;
  if (peer_left) return 2;
  if (ready && !g->issuing) {
    g->issuing = 1;
    *out_issue = 1;
  }
  return 0;
}

cubert_status_t cuda_comm_post(cuda_member_t *m, const cubert_driver_collective_t *c,
                               cuda_drv_stream_t *s, cubert_error_t *out_error) {
  cuda_group_t *g = m->group;
  uint32_t k, closed, refused;
  int issue = 0;
  cubert_status_t st;
  if (c->kind == CUBERT_COLLECTIVE_ALL_REDUCE)
    CUBERT_RETURN_IF_ERROR(all_reduce_possible(m, c, out_error));
  CUBERT_RETURN_IF_ERROR(member_prepare(m, s, out_error));
  cuda_comm_lock();
  if (m->posted - g->issued >= CUDA_COMM_RING) {
    uint64_t f = CUDA_COMM_RING;
    cuda_comm_unlock();
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &f, 1,
                            "too many collectives of this device wait for their peers");
  }
  k = m->posted + 1u;
  if (c->kind == CUBERT_COLLECTIVE_ALL_REDUCE && completes_now(g, m, k)) {
    /* direct: this thread issues round k now, m's part on S (cuda_comm.h) */
    post_fill(g, m, c, k, 1u);
    m->ran_on_s = 1;
    g->issuing = 1;
    cuda_comm_unlock();
    issue_loop(g, m);
    return CUBERT_STATUS_OK;
  }
  if (c->kind == CUBERT_COLLECTIVE_ALL_REDUCE && !g->aborted) {
    /* lazy: nothing enqueued yet; S's next work closes the gate first
     * (cuda_comm_settle), unless the round was issued on S by then */
    post_fill(g, m, c, k, 1u);
    m->ran_on_s = 1;
    refused = post_next(g, &issue);
    if (!refused) {
      m->lazy_k = k;
      __atomic_store_n(&s->lazy, (void *)m, __ATOMIC_RELEASE);
    }
    cuda_comm_unlock();
    if (refused) post_refused(g, m, refused == 1u);
    else if (issue) issue_loop(g, m);
    return CUBERT_STATUS_OK;
  }
  closed = m->closed; /* gated: the gate may be closed from here on (cuda_comm_gpus_gated) */
  m->closed = k;
  cuda_comm_unlock();
  st = enqueue_gate(m, s, k, out_error);
  cuda_comm_lock();
  if (st != CUBERT_STATUS_OK) {
    m->closed = closed;
    cuda_comm_unlock();
    return st;
  }
  post_fill(g, m, c, k, 0u);
  refused = post_next(g, &issue);
  cuda_comm_unlock();
  if (refused) post_refused(g, m, refused == 1u); /* queued: the round can never complete */
  else if (issue) issue_loop(g, m);
  return CUBERT_STATUS_OK;
}

void cuda_comm_settle(cuda_drv_stream_t *s) {
  cuda_member_t *m = (cuda_member_t *)__atomic_load_n(&s->lazy, __ATOMIC_ACQUIRE);
  cuda_group_t *g;
  uint32_t k, close = 0;
  if (!m) return;
  g = m->group;
  (void)pthread_mutex_lock(g->issue_mutex); /* no issuer runs meanwhile */
  cuda_comm_lock();
  k = m->lazy_k;
  if (__atomic_load_n(&s->lazy, __ATOMIC_ACQUIRE) == (void *)m && k && k > g->issued &&
      !g->aborted) {
    /* not issued yet: its part moves to N, behind F and the gate on S */
    m->posts[(k - 1u) % CUDA_COMM_RING].on_s = 0;
    m->closed = k;
    close = 1;
  }
  m->lazy_k = 0;
  lazy_clear(m);
  cuda_comm_unlock();
  if (close) {
    cubert_error_t e;
    if (enqueue_gate(m, s, k, &e) != CUBERT_STATUS_OK) /* S's order cannot be kept */
      cuda_comm_abort(g, &e, &e, &e);
  }
  (void)pthread_mutex_unlock(g->issue_mutex);
}

/* ---- issuing ------------------------------------------------------------------------------- */

/* One round as every member posted it (copied under the lock). */
typedef struct round_t {
  uint32_t k, n;
  cuda_member_t *m[CUDA_COMM_MAX_MEMBERS];
  cuda_post_t p[CUDA_COMM_MAX_MEMBERS];
} round_t;

/* The members agree, or *out_error says how they do not. */
static int round_agrees(const round_t *rd, cubert_error_t *out_error) {
  const cuda_post_t *a = &rd->p[0];
  uint32_t i;
  for (i = 1; i < rd->n; i++)
    if (rd->p[i].kind != a->kind) {
      (void)cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, NULL, 0,
                             "collective members disagree on the operation");
      return 0;
    }
  if (a->kind == CUBERT_COLLECTIVE_ALL_REDUCE) {
    for (i = 1; i < rd->n; i++)
      if (rd->p[i].dtype != a->dtype || rd->p[i].op != a->op || rd->p[i].bytes != a->bytes) {
        uint64_t f[2];
        f[0] = a->bytes;
        f[1] = rd->p[i].bytes;
        (void)cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 2,
                               "all_reduce members disagree on dtype, operation or size");
        return 0;
      }
    return 1;
  }
  (void)cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, NULL, 0,
                         "collective members disagree: a send and a recv must meet");
  return 0;
}

/* send / recv: one of each, naming each other, same dtype and size. */
static int pair_agrees(const round_t *rd, uint32_t *out_sender, cubert_error_t *out_error) {
  uint32_t s;
  if (rd->n != 2 || rd->p[0].kind == rd->p[1].kind ||
      rd->p[0].kind == CUBERT_COLLECTIVE_ALL_REDUCE || rd->p[1].kind == CUBERT_COLLECTIVE_ALL_REDUCE)
    return round_agrees(rd, out_error);
  s = rd->p[0].kind == CUBERT_COLLECTIVE_SEND ? 0u : 1u;
  if (rd->p[s].peer != 1u - s || rd->p[1u - s].peer != s || rd->p[0].dtype != rd->p[1].dtype ||
      rd->p[0].bytes != rd->p[1].bytes) {
    uint64_t f[2];
    f[0] = rd->p[s].bytes;
    f[1] = rd->p[1u - s].bytes;
    (void)cubert_error_set(out_error, CUBERT_ERROR_SERVER_VALIDATION, f, 2,
                           "send and recv disagree on dtype or size");
    return 0;
  }
  *out_sender = s;
  return 1;
}

/* Member i's part of round k was enqueued (or never will be): its gate
 * opens (N), or S's lazy mark goes (its part ran on S). */
static void round_member_done(round_t *rd, uint32_t i) {
  if (rd->p[i].on_s) lazy_clear(rd->m[i]);
  else gate_write(rd->m[i], rd->k);
}

/* Every member: `error` (may be NULL) queued, then its gate opened for round k. */
static void round_finish(round_t *rd, const cubert_error_t *error) {
  uint32_t i;
  for (i = 0; i < rd->n; i++) {
    if (error && rd->m[i]->s) cubert__cuda_stream_queue_error(&rd->m[i]->s->s, error);
    round_member_done(rd, i);
  }
}

/* Record rank r's `done` event on its N (made in its context once). */
static void record_done(cuda_group_t *g, cuda_member_t *m) {
  CUresult r;
  if (cubert__cuda_device_enter(m->drv->dev, NULL) != CUBERT_STATUS_OK) return;
  if (!g->done[m->rank]) {
    r = m->cu->cuEventCreate(&g->done[m->rank], CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS) {
      g->done[m->rank] = NULL;
      member_fail(m, r, "cuEventCreate");
      return;
    }
  }
  r = m->cu->cuEventRecord(g->done[m->rank], m->n.handle);
  if (r != CUDA_SUCCESS) member_fail(m, r, "cuEventRecord");
}

/* N waits for F of round k (of member `of`). */
static void wait_ready(cuda_member_t *on, const cuda_member_t *of, uint32_t k) {
  CUresult r;
  if (cubert__cuda_device_enter(on->drv->dev, NULL) != CUBERT_STATUS_OK) return;
  r = on->cu->cuStreamWaitEvent(on->n.handle, of->ready[(k - 1u) % CUDA_COMM_RING], 0);
  if (r != CUDA_SUCCESS) member_fail(on, r, "cuStreamWaitEvent");
}

/* ---- all_reduce --------------------------------------------------------------------------- */

/* Where member i's part of the round runs: S for a direct or lazy post,
 * else N. */
static cubert_cuda_stream_t *round_stream(round_t *rd, uint32_t i) {
  return rd->p[i].on_s ? &rd->m[i]->s->s : &rd->m[i]->n;
}

/* The NCCL communicators of the group: ncclCommInitAll over the members'
 * GPUs, once. */
static cubert_status_t group_nccl(cuda_group_t *g, round_t *rd, cubert_error_t *out_error) {
  int devlist[CUDA_COMM_MAX_MEMBERS];
  cubert_nccl_comm_t comms[CUDA_COMM_MAX_MEMBERS];
  CUcontext saved;
  uint32_t i;
  int res;
  if (g->nccl_state == CUDA_NCCL_READY) return CUBERT_STATUS_OK;
  if (g->nccl_state == CUDA_NCCL_FAILED) {
    if (out_error) *out_error = g->nccl_error;
    return g->nccl_error.status;
  }
  if (cuda_comm_nccl(&g->nl, &g->nccl_error) != CUBERT_STATUS_OK) {
    g->nccl_state = CUDA_NCCL_FAILED;
    return group_nccl(g, rd, out_error);
  }
  /* (members on one GPU never get here: their all_reduce is refused at the
   * call; ncclCommInitAll would refuse them too, ncclInvalidUsage) */
  for (i = 0; i < rd->n; i++) devlist[i] = (int)rd->m[i]->ordinal;
  memset(comms, 0, sizeof comms);
  saved = cuda_comm_ctx_enter_any(g->cu, g->ctx, rd->n);
  cuda_comm_nccl_lock_all(g->ordinals, rd->n);
  res = (int)g->nl->ncclCommInitAll(comms, (int)rd->n, devlist);
  cuda_comm_nccl_unlock_all(g->ordinals, rd->n);
  cuda_comm_ctx_restore(g->cu, saved);
  if (res != CUBERT_NCCL_SUCCESS) {
    (void)cubert__nccl_error_set(&g->nccl_error, g->nl, res, "ncclCommInitAll");
    g->nccl_state = CUDA_NCCL_FAILED;
    return group_nccl(g, rd, out_error);
  }
  memcpy(g->nccl, comms, rd->n * sizeof comms[0]);
  g->nccl_state = CUDA_NCCL_READY;
  return CUBERT_STATUS_OK;
}

static void issue_all_reduce(cuda_group_t *g, round_t *rd) {
  const cuda_post_t *p = &rd->p[0];
  uint32_t width = cubert_comm_dtype_size(p->dtype), i;
  int type = cuda_comm_nccl_type(p->dtype), res = CUBERT_NCCL_SUCCESS, first_fail = -1;
  cubert_error_t e;
  CUcontext saved;
  if (group_nccl(g, rd, &e) != CUBERT_STATUS_OK) {
    round_finish(rd, &e);
    return;
  }
  for (i = 0; i < rd->n; i++)
    if (!rd->p[i].on_s) wait_ready(rd->m[i], rd->m[i], rd->k);
  saved = cuda_comm_ctx_enter_any(g->cu, g->ctx, rd->n);
  cuda_comm_nccl_lock_all(g->ordinals, rd->n);
  (void)g->nl->ncclGroupStart();
  for (i = 0; i < rd->n; i++) {
    int r = (int)g->nl->ncclAllReduce((const void *)(uintptr_t)rd->p[i].src,
                                      (void *)(uintptr_t)rd->p[i].dst, p->bytes / width,
                                      (cubert_nccl_data_type_t)type, CUBERT_NCCL_SUM, g->nccl[i],
                                      (struct CUstream_st *)round_stream(rd, i)->handle);
    if (r != CUBERT_NCCL_SUCCESS && first_fail < 0) {
      first_fail = (int)i;
      res = r;
    }
  }
  {
    int r = (int)g->nl->ncclGroupEnd();
    if (r != CUBERT_NCCL_SUCCESS && res == CUBERT_NCCL_SUCCESS) res = r;
  }
  cuda_comm_nccl_unlock_all(g->ordinals, rd->n);
  cuda_comm_ctx_restore(g->cu, saved);
  if (res != CUBERT_NCCL_SUCCESS) {
    (void)cubert__nccl_error_set(&e, g->nl, res, "ncclAllReduce");
    if (res == CUBERT_NCCL_INVALID_ARGUMENT || res == CUBERT_NCCL_INVALID_USAGE) {
      round_finish(rd, &e); /* refused: nothing ran, the communicators are fine */
    } else {
      cuda_comm_abort(g, &e, &e, &e); /* the communicators are in an unknown state */
      for (i = 0; i < rd->n; i++)
        if (rd->p[i].on_s) lazy_clear(rd->m[i]);
    }
    return;
  }
  if (p->op == CUBERT_REDUCE_OPERATION_MEAN)
    for (i = 0; i < rd->n; i++) {
      cubert_error_t me;
      if (cuda_comm_mean_launch(round_stream(rd, i), rd->m[i]->mean[p->dtype], p->dtype,
                                rd->p[i].dst, p->bytes, rd->n, &me) != CUBERT_STATUS_OK &&
          rd->m[i]->s)
        cubert__cuda_stream_queue_error(&rd->m[i]->s->s, &me);
    }
  for (i = 0; i < rd->n; i++) round_member_done(rd, i); /* (`done`: at the member's leave) */
}

/* ---- send / recv: a copy ------------------------------------------------------------------ */

/* Peer access from `to`'s context to `from`'s memory, enabled once per GPU
 * pair where the hardware allows it. */
static uint8_t g_peer_state[64][64]; /* 0 unknown, 1 enabled, 2 not possible (g_comm_mutex) */

static void peer_enable(cuda_member_t *to, const cuda_member_t *from, CUcontext from_ctx) {
  CUdevice a = 0, b = 0;
  int can = 0;
  uint8_t state;
  if (to->ordinal >= 64 || from->ordinal >= 64) return;
  cuda_comm_lock();
  state = g_peer_state[to->ordinal][from->ordinal];
  cuda_comm_unlock();
  if (state) return;
  state = 2;
  if (to->cu->cuDeviceGet(&a, (int)to->ordinal) == CUDA_SUCCESS &&
      to->cu->cuDeviceGet(&b, (int)from->ordinal) == CUDA_SUCCESS &&
      to->cu->cuDeviceCanAccessPeer(&can, a, b) == CUDA_SUCCESS && can &&
      cubert__cuda_device_enter(to->drv->dev, NULL) == CUBERT_STATUS_OK) {
    CUresult r = to->cu->cuCtxEnablePeerAccess(from_ctx, 0);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) state = 1;
  }
  cuda_comm_lock();
  g_peer_state[to->ordinal][from->ordinal] = state;
  cuda_comm_unlock();
}

static void issue_pair(cuda_group_t *g, round_t *rd, uint32_t si) {
  cuda_member_t *snd = rd->m[si], *rcv = rd->m[1u - si];
  const cuda_post_t *sp = &rd->p[si], *rp = &rd->p[1u - si];
  CUresult r = CUDA_SUCCESS;
  wait_ready(rcv, snd, rd->k);
  wait_ready(rcv, rcv, rd->k);
  if (sp->bytes) {
    if (g->ctx[snd->rank] == g->ctx[rcv->rank]) {
      if (cubert__cuda_device_enter(rcv->drv->dev, NULL) == CUBERT_STATUS_OK)
        r = rcv->cu->cuMemcpyDtoDAsync(rp->dst, sp->src, sp->bytes, rcv->n.handle);
    } else {
      peer_enable(rcv, snd, g->ctx[snd->rank]);
      if (cubert__cuda_device_enter(rcv->drv->dev, NULL) == CUBERT_STATUS_OK)
        r = rcv->cu->cuMemcpyPeerAsync(rp->dst, g->ctx[rcv->rank], sp->src, g->ctx[snd->rank],
                                       sp->bytes, rcv->n.handle);
    }
    if (r != CUDA_SUCCESS) {
      member_fail(rcv, r, "the copy of a send / recv");
      member_fail(snd, r, "the copy of a send / recv");
    }
  }
  gate_write(rcv, rd->k);
  record_done(g, rcv);
  /* the sender's gate opens after the copy read its source */
  if (g->done[rcv->rank] && cubert__cuda_device_enter(snd->drv->dev, NULL) == CUBERT_STATUS_OK) {
    r = snd->cu->cuStreamWaitEvent(snd->n.handle, g->done[rcv->rank], 0);
    if (r != CUDA_SUCCESS) member_fail(snd, r, "cuStreamWaitEvent");
  }
  gate_write(snd, rd->k);
  record_done(g, snd);
}

/* ---- the issuing loop ---------------------------------------------------------------------- */

static void issue_round(cuda_group_t *g, round_t *rd) {
  cubert_error_t e;
  uint32_t sender = 0;
  if (rd->p[0].kind == CUBERT_COLLECTIVE_ALL_REDUCE) {
    if (!round_agrees(rd, &e)) round_finish(rd, &e);
    else issue_all_reduce(g, rd);
    return;
  }
  if (!pair_agrees(rd, &sender, &e)) round_finish(rd, &e);
  else issue_pair(g, rd, sender);
}

static void issue_loop(cuda_group_t *g, cuda_member_t *self) {
  static round_t rounds[CUDA_COMM_MAX]; /* one per slot: used under its issue_mutex */
  round_t *rd = &rounds[g - cuda_comm_slot(0)];
  uint32_t i;
  (void)pthread_mutex_lock(g->issue_mutex);
  for (;;) {
    int more;
    cuda_comm_lock();
    more = !g->aborted && g->joined == g->size;
    for (i = 0; more && i < g->size; i++)
      if (!g->members[i] || g->members[i]->posted <= g->issued) more = 0;
    if (!more) {
      g->issuing = 0;
      cuda_comm_unlock();
      break;
    }
    rd->k = g->issued + 1u;
    rd->n = g->size;
    for (i = 0; i < g->size; i++) {
      rd->m[i] = g->members[i];
      rd->p[i] = g->members[i]->posts[(rd->k - 1u) % CUDA_COMM_RING];
    }
    cuda_comm_unlock();
    issue_round(g, rd);
    cuda_comm_lock();
    g->issued = rd->k;
    g->issued_ns = cuda_comm_now_ns();
    cuda_comm_unlock();
  }
  (void)pthread_mutex_unlock(g->issue_mutex);
  (void)cubert__cuda_device_enter(self->drv->dev, NULL); /* back to the caller's context */
}

/* ---- timeouts ------------------------------------------------------------------------------- */

void cuda_comm_round_check(cuda_group_t *g, uint32_t generation, uint64_t now_ns) {
  uint64_t oldest = UINT64_MAX, start, timeout = 0;
  uint32_t k, i;
  int expired = 0;
  if (pthread_mutex_trylock(g->issue_mutex) != 0) return; /* busy: the next look */
  cuda_comm_lock();
  if (g->used && g->generation == generation && !g->aborted && g->kind == CUDA_GROUP_LOCAL &&
      g->size > 1) {
    k = g->issued + 1u;
    for (i = 0; i < g->size; i++) {
      const cuda_member_t *m = g->members[i];
      if (m && m->posted >= k && m->posts[(k - 1u) % CUDA_COMM_RING].posted_ns < oldest)
        oldest = m->posts[(k - 1u) % CUDA_COMM_RING].posted_ns;
    }
    start = oldest > g->issued_ns ? oldest : g->issued_ns;
    timeout = g->timeout_ns;
    expired = oldest != UINT64_MAX && now_ns > start && now_ns - start > timeout;
  }
  cuda_comm_unlock();
  if (expired) {
    cubert_error_t e;
    (void)cubert_error_set(&e, CUBERT_ERROR_DEADLINE_EXCEEDED, &timeout, 1,
                           "a collective waited for its peers longer than the collective timeout; "
                           "the communicator is aborted");
    cuda_comm_abort(g, &e, &e, NULL);
  }
  (void)pthread_mutex_unlock(g->issue_mutex);
}

/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/comm/cuda_comm_setup.c: the NCCL communicators of a local group
 * of several GPUs, made before any member's stream waits on a gate
 * (cuda_comm.h, "Gates"; docs/collectives.md, "NCCL before the gates").
 *
 * Why (measured on two H200s, driver 580, NCCL 2.28.3): while a stream of a
 * context waits on a gate word (cuStreamWaitValue32), cuModuleLoadData and
 * cuMemFree in that context wait for the context to drain, holding a lock
 * of the driver: a cuStreamWriteValue32 or cuStreamCreate of another thread
 * in that context then blocks too. NCCL loads its kernels in
 * ncclCommInitAll and sets up its connections (memory, frees) in the first
 * collective of a communicator. So a round issued with the NCCL
 * communicators still to make, while the first member's stream waits for
 * that very round, deadlocks: ncclCommInitAll waits for the gate, the gate
 * for the round. Here the communicators are made, and one small and one
 * larger all_reduce run on scratch buffers and are waited for, at the first
 * all_reduce post of the group, before its gate is enqueued, when no
 * stream of those GPUs may wait on a gate: every member's GPU known
 * (joined, or a CUDA device of this process registered here), and no
 * member of any local group on them with a round posted and not issued.
 * Otherwise the communicators are made when the round is issued, as before
 * (the fallback; docs/collectives.md says when that can hang).
 */
#include "comm/cuda_comm.h"

#include <string.h>

/* CUDA devices of this process: index id -> GPU and primary context. */
#define CUDA_SETUP_DEVICES 64

typedef struct cuda_known_t {
  const void *owner; /* the cuda_drv_t */
  uint32_t used;
  uint32_t index;
  uint32_t ordinal;
  uint32_t reserved_;
  CUcontext ctx;
} cuda_known_t;

static cuda_known_t g_known[CUDA_SETUP_DEVICES]; /* g_comm_mutex */

void cuda_comm_device_add(const void *owner, uint32_t index, uint32_t ordinal, CUcontext ctx) {
  uint32_t i, free_slot = CUDA_SETUP_DEVICES;
  cuda_comm_lock();
  for (i = 0; i < CUDA_SETUP_DEVICES; i++) {
    if (g_known[i].used && g_known[i].index == index) free_slot = i; /* replaced */
    if (!g_known[i].used && free_slot == CUDA_SETUP_DEVICES) free_slot = i;
  }
  if (free_slot < CUDA_SETUP_DEVICES) { /* full: that device's groups take the fallback */
    g_known[free_slot].owner = owner;
    g_known[free_slot].used = 1;
    g_known[free_slot].index = index;
    g_known[free_slot].ordinal = ordinal;
    g_known[free_slot].ctx = ctx;
  }
  cuda_comm_unlock();
}

void cuda_comm_device_remove(const void *owner) {
  uint32_t i;
  cuda_comm_lock();
  for (i = 0; i < CUDA_SETUP_DEVICES; i++)
    if (g_known[i].used && g_known[i].owner == owner) g_known[i].used = 0;
  cuda_comm_unlock();
}

/* Scratch bytes of the warm-up all_reduces (f32): 256 B, then 4 MiB. */
#define CUDA_SETUP_SMALL 64u
#define CUDA_SETUP_LARGE (1u << 20)

/* The communicators over ordinals[] (rank order), then the warm-up: every
 * rank's all_reduce in one group call on a stream of its own, waited for.
 * issue_mutex held. NCCL's result (CUBERT_NCCL_SUCCESS: g->nccl filled). */
static int make_and_warm(cuda_group_t *g, const cubert_cuda_loader_t *cu, const int *ordinals,
                         const CUcontext *ctx, uint32_t n, const char **out_what) {
  cubert_nccl_comm_t comms[CUDA_COMM_MAX_MEMBERS];
  CUstream st[CUDA_COMM_MAX_MEMBERS];
  CUdeviceptr buf[CUDA_COMM_MAX_MEMBERS];
  uint32_t ords[CUDA_COMM_MAX_MEMBERS], i, pass;
  CUcontext saved;
  int res;
  memset(comms, 0, sizeof comms);
  memset(st, 0, sizeof st);
  memset(buf, 0, sizeof buf);
  for (i = 0; i < n; i++) ords[i] = (uint32_t)ordinals[i];
  *out_what = "ncclCommInitAll";
  saved = cuda_comm_ctx_enter(cu, ctx[0]);
  cuda_comm_nccl_lock_all(ords, n);
  res = (int)g->nl->ncclCommInitAll(comms, (int)n, ordinals);
  cuda_comm_nccl_unlock_all(ords, n);
  if (res != CUBERT_NCCL_SUCCESS) {
    cuda_comm_ctx_restore(cu, saved);
    return res;
  }
  for (i = 0; i < n && res == CUBERT_NCCL_SUCCESS; i++) {
    (void)cu->cuCtxSetCurrent(ctx[i]);
    if (cu->cuStreamCreate(&st[i], CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        cu->cuMemAlloc(&buf[i], CUDA_SETUP_LARGE * 4u) != CUDA_SUCCESS ||
        cu->cuMemsetD8Async(buf[i], 0, CUDA_SETUP_LARGE * 4u, st[i]) != CUDA_SUCCESS)
      res = CUBERT_NCCL_UNHANDLED_CUDA_ERROR;
  }
  *out_what = "the first all_reduce of the new NCCL communicators";
  for (pass = 0; pass < 2 && res == CUBERT_NCCL_SUCCESS; pass++) {
    size_t count = pass ? CUDA_SETUP_LARGE : CUDA_SETUP_SMALL;
    int r;
    (void)cu->cuCtxSetCurrent(ctx[0]);
    cuda_comm_nccl_lock_all(ords, n);
    (void)g->nl->ncclGroupStart();
    for (i = 0; i < n; i++) {
      r = (int)g->nl->ncclAllReduce((const void *)(uintptr_t)buf[i], (void *)(uintptr_t)buf[i],
                                    count, CUBERT_NCCL_FLOAT32, CUBERT_NCCL_SUM, comms[i],
                                    (struct CUstream_st *)st[i]);
      if (r != CUBERT_NCCL_SUCCESS && res == CUBERT_NCCL_SUCCESS) res = r;
    }
    r = (int)g->nl->ncclGroupEnd();
    if (r != CUBERT_NCCL_SUCCESS && res == CUBERT_NCCL_SUCCESS) res = r;
    cuda_comm_nccl_unlock_all(ords, n);
  }
  for (i = 0; i < n; i++) {
    (void)cu->cuCtxSetCurrent(ctx[i]);
    if (st[i] && cu->cuStreamSynchronize(st[i]) != CUDA_SUCCESS && res == CUBERT_NCCL_SUCCESS)
      res = CUBERT_NCCL_UNHANDLED_CUDA_ERROR;
    if (buf[i]) (void)cu->cuMemFree(buf[i]);
    if (st[i]) (void)cu->cuStreamDestroy(st[i]);
  }
  if (res != CUBERT_NCCL_SUCCESS) {
    (void)cu->cuCtxSetCurrent(ctx[0]);
    cuda_comm_nccl_lock_all(ords, n);
    for (i = 0; i < n; i++)
      if (comms[i]) (void)g->nl->ncclCommAbort(comms[i]);
    cuda_comm_nccl_unlock_all(ords, n);
  } else {
    memcpy(g->nccl, comms, n * sizeof comms[0]);
  }
  cuda_comm_ctx_restore(cu, saved);
  return res;
}

/* A stream of one of these GPUs may wait on a gate: a member of a local
 * group there (not `skip`, not aborted: those gates were opened) enqueued a
 * gate wait (or is about to) not written yet; a lazy post closes none
 * (g_comm_mutex held). */
static int gpu_gated(const uint32_t *ordinals, uint32_t n, const cuda_group_t *skip) {
  uint32_t s, r, i;
  for (s = 0; s < CUDA_COMM_MAX; s++) {
    const cuda_group_t *o = cuda_comm_slot(s);
    if (!o->used || o == skip || o->aborted || o->kind != CUDA_GROUP_LOCAL || o->size < 2)
      continue;
    for (r = 0; r < o->size; r++) {
      const cuda_member_t *p = o->members[r];
      if (!p || p->closed <= p->written) continue;
      for (i = 0; i < n; i++)
        if (ordinals[i] == p->ordinal) return 1;
    }
  }
  return 0;
}

int cuda_comm_gpus_gated(const uint32_t *ordinals, uint32_t n, const cuda_group_t *skip) {
  int gated;
  cuda_comm_lock();
  gated = gpu_gated(ordinals, n, skip);
  cuda_comm_unlock();
  return gated;
}

/* ---- communicators given up while a gate may be closed ---------------------------------- */

#define CUDA_SETUP_RETIRED 64

typedef struct cuda_retired_t {
  const cubert_nccl_loader_t *nl;
  cubert_nccl_comm_t comm;
  uint32_t ordinal;
  uint32_t reserved_;
} cuda_retired_t;

static cuda_retired_t g_retired[CUDA_SETUP_RETIRED]; /* g_comm_mutex */
static uint32_t g_retired_count;

static void abort_now(const cubert_nccl_loader_t *nl, cubert_nccl_comm_t c, uint32_t ordinal) {
  cuda_comm_nccl_lock(ordinal);
  (void)nl->ncclCommAbort(c);
  cuda_comm_nccl_unlock(ordinal);
}

void cuda_comm_nccl_reap(const cuda_group_t *skip) {
  cuda_retired_t now[CUDA_SETUP_RETIRED];
  uint32_t i = 0, k = 0;
  cuda_comm_lock();
  while (i < g_retired_count) {
    if (!gpu_gated(&g_retired[i].ordinal, 1, skip)) {
      now[k++] = g_retired[i];
      g_retired[i] = g_retired[--g_retired_count];
    } else {
      i++;
    }
  }
  cuda_comm_unlock();
  for (i = 0; i < k; i++) abort_now(now[i].nl, now[i].comm, now[i].ordinal);
}

void cuda_comm_nccl_retire(const cubert_nccl_loader_t *nl, cubert_nccl_comm_t *comms,
                           const uint32_t *ordinals, uint32_t n, const cuda_group_t *skip) {
  uint32_t i;
  for (i = 0; i < n; i++) {
    int later = 0;
    if (!comms[i]) continue;
    cuda_comm_lock();
    if (gpu_gated(&ordinals[i], 1, skip) && g_retired_count < CUDA_SETUP_RETIRED) {
      g_retired[g_retired_count].nl = nl;
      g_retired[g_retired_count].comm = comms[i];
      g_retired[g_retired_count].ordinal = ordinals[i];
      g_retired_count++;
      later = 1;
    }
    cuda_comm_unlock();
    if (!later) abort_now(nl, comms[i], ordinals[i]);
    comms[i] = NULL;
  }
  cuda_comm_nccl_reap(skip);
}

cubert_status_t cuda_comm_setup_early(cuda_member_t *m, cubert_error_t *out_error) {
  cuda_group_t *g = m->group;
  int ordinals[CUDA_COMM_MAX_MEMBERS];
  uint32_t uords[CUDA_COMM_MAX_MEMBERS];
  CUcontext ctx[CUDA_COMM_MAX_MEMBERS];
  const cubert_nccl_loader_t *nl = NULL;
  const cubert_cuda_loader_t *cu;
  uint32_t i, j, n, ok = 1;
  const char *what = "";
  int res;
  if (g->kind != CUDA_GROUP_LOCAL || g->size < 2) return CUBERT_STATUS_OK;
  CUBERT_RETURN_IF_ERROR(cuda_comm_nccl(&nl, out_error));
  (void)pthread_mutex_lock(g->issue_mutex);
  cuda_comm_lock();
  n = g->size;
  cu = g->cu; /* (a member joining writes it, under the lock) */
  if (g->nccl_state != CUDA_NCCL_NONE || g->aborted) ok = 0;
  for (i = 0; ok && i < n; i++) {
    const cuda_member_t *p = g->members[i];
    if (p) {
      ordinals[i] = (int)p->ordinal;
      ctx[i] = g->ctx[i];
      continue;
    }
    ok = 0;
    for (j = 0; j < CUDA_SETUP_DEVICES; j++)
      if (g_known[j].used && g_known[j].index == g->devices[i]) {
        ordinals[i] = (int)g_known[j].ordinal;
        ctx[i] = g_known[j].ctx;
        ok = 1;
        break;
      }
  }
  for (i = 0; ok && i < n; i++)
    for (j = i + 1; j < n; j++)
      if (ordinals[i] == ordinals[j]) ok = 0; /* refused at the call (one rank per GPU) */
  for (i = 0; ok && i < n; i++) uords[i] = (uint32_t)ordinals[i];
  if (ok && gpu_gated(uords, n, NULL)) ok = 0;
  cuda_comm_unlock();
  if (!ok) {
    (void)pthread_mutex_unlock(g->issue_mutex);
    return CUBERT_STATUS_OK; /* made when the round is issued */
  }
  g->nl = nl;
  res = make_and_warm(g, cu, ordinals, ctx, n, &what);
  if (res == CUBERT_NCCL_SUCCESS) {
    cuda_comm_lock(); /* (a member joining writes its entry, under the lock) */
    for (i = 0; i < n; i++) g->ordinals[i] = (uint32_t)ordinals[i];
    cuda_comm_unlock();
    g->nccl_state = CUDA_NCCL_READY;
  } else {
    (void)cubert__nccl_error_set(&g->nccl_error, nl, res, what);
    g->nccl_state = CUDA_NCCL_FAILED; /* the round reports it */
  }
  (void)pthread_mutex_unlock(g->issue_mutex);
  (void)cubert__cuda_device_enter(m->drv->dev, NULL); /* back to the caller's context */
  return CUBERT_STATUS_OK;
}

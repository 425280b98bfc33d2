/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/fake/fake_libcuda_internal.h: what the files of the fake CUDA
 * driver share (fake_libcuda.c: devices, contexts, streams, events,
 * cuGetProcAddress; fake_libcuda_exec.c: memory, copies, modules,
 * launches; fake_libcuda_gates.c: stream memory operations, peer copies;
 * fake_libcuda_async.c: the asynchronous mode's queues). The handle types of cuda.h are completed here. Not installed.
 */
#ifndef CUBERT_TESTS_FAKE_LIBCUDA_INTERNAL_H
#define CUBERT_TESTS_FAKE_LIBCUDA_INTERNAL_H

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>

#include "fake_libcuda.h"

#define FAKE_MAX_DEVICES 8
/* Gates one stream or event keeps at most (fake_libcuda_gates.c). */
#define FAKE_GATES 32

/* A wait of cuStreamWaitValue32 not satisfied yet: open once *addr >= value
 * (cyclic, as the GPU compares). */
typedef struct fake_gate_t {
  const uint32_t *addr;
  uint32_t value;
} fake_gate_t;

typedef struct fake_gates_t {
  uint32_t n;
  fake_gate_t g[FAKE_GATES];
} fake_gates_t;

struct CUctx_st {
  int device;
  int refs;
  CUresult poison; /* sticky context-poisoning error, 0 while healthy */
  unsigned flags;  /* cuDevicePrimaryCtxSetFlags (kept while the context is reset) */
};

/* Work runs at once; completion is only pretended late (EVENT_DELAY), but
 * in stream order: an event found complete completes every event recorded
 * before it on its stream. A stream is freed once destroyed and no event
 * refers to it. */
struct CUstream_st {
  struct CUctx_st *ctx;
  uint64_t recorded;  /* events recorded on it */
  uint64_t completed; /* events known complete: records 1..completed */
  int refs;           /* events whose last record was here */
  int destroyed;
  void *deferred;     /* CUBERT_FAKE_CUDA_DEFER_FREES: blocks freed on it, not yet given back */
  fake_gates_t gates; /* closed waits its later work stands behind */
  struct fake_op_t *ops_head, *ops_tail; /* CUBERT_FAKE_CUDA_ASYNC: work not run yet */
  uint64_t ran;       /* records 1..ran reached by its work (asynchronous mode) */
  struct CUstream_st *live_next; /* the list of streams not destroyed (fake_mutex) */
};

struct CUevent_st {
  struct CUctx_st *ctx;
  unsigned flags;
  int pending;                 /* queries left that answer NOT_READY */
  struct CUstream_st *stream;  /* of the last record (NULL: never recorded) */
  uint64_t seq;                /* its record number there */
  fake_gates_t gates;          /* the stream's closed gates when it was recorded */
};

struct CUmod_st {
  struct CUctx_st *ctx;
  unsigned char *bytes; /* copy of the image (text NUL-terminated) */
  size_t size;
  int elf; /* a real ELF cubin: functions are found by their symbol names */
  struct CUfunc_st *funcs; /* freed with the module */
  unsigned int global_word; /* what cuModuleGetGlobal points at (cubert's markers: 1) */
};

struct CUfunc_st {
  struct CUmod_st *module;
  struct CUfunc_st *next;
  char name[64];
  int dynamic_shared;
};

/* The special stream handles (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) as the
 * NULL stream: work runs at once on every stream, so the default streams'
 * implicit synchronization holds trivially. */
static inline CUstream fake_stream_special(CUstream s) {
  uintptr_t v = (uintptr_t)s;
  return (v == (uintptr_t)CU_STREAM_LEGACY || v == (uintptr_t)CU_STREAM_PER_THREAD) ? NULL : s;
}

/* State, under fake_mutex (fake_current is the calling thread's context). */
extern pthread_mutex_t fake_mutex;
extern int fake_initialized;
extern uint64_t fake_device_used[FAKE_MAX_DEVICES];
extern fake_cuda_stats_t fake_stats_;
extern __thread struct CUctx_st *fake_current;

/* An environment knob as a number (fallback when unset). */
long long fake_knob(const char *name, long long fallback);
/* Context-poisoning CUresult. */
int fake_is_fatal(CUresult r);
/* A sticky error in the current context. As the driver does (seen on two
 * H200s, driver 580): it poisons the whole process, not that context
 * alone. Every context's work then fails with the first such error (a
 * context that was open before the error too, from any thread); a primary
 * context not active yet cannot be made (cuDevicePrimaryCtxRetain returns
 * the error; retaining an active one still succeeds); releasing or
 * resetting contexts does not clear it; device queries, cuCtxSetCurrent and
 * cuCtxGetCurrent still answer. A stream's sync then returns at once, also
 * behind a closed gate. */
void fake_poison(CUresult r);
/* The process's first sticky error, CUDA_SUCCESS while healthy. */
CUresult fake_process_poisoned(void);
/* The current context, healthy; else the error a real driver gives. */
CUresult fake_ctx_check(void);
/* The same, and `s` belongs to the current context. */
CUresult fake_stream_check(CUstream s);
/* Device memory per device (CUBERT_FAKE_CUDA_MEMORY). */
uint64_t fake_device_memory(void);
/* Give back the blocks whose free was deferred on `s` (caller holds
 * fake_mutex). */
void fake_stream_free_deferred(struct CUstream_st *s);
/* Free every device block of `device` (caller holds fake_mutex). */
void fake_blocks_free_device(int device);

/* Gates (fake_libcuda_gates.c; caller holds fake_mutex unless said). */
void fake_gates_prune(fake_gates_t *gates);
/* Add src's closed gates to dst; -1 when dst is full. */
int fake_gates_merge(fake_gates_t *dst, const fake_gates_t *src);
/* Block until the stream's / event's gates opened (without fake_mutex):
 * CUDA_SUCCESS or CUDA_ERROR_TIMEOUT. */
CUresult fake_stream_settle(CUstream s);
CUresult fake_event_settle(CUevent e);
/* fake_stream_check, then fake_stream_settle: for work on the stream. */
CUresult fake_stream_ready(CUstream s);
/* Streams created and not destroyed (fake_mutex). */
extern struct CUstream_st *fake_live_streams;
/* What a context-synchronizing call of a real driver does (seen on two
 * H200s, driver 580: cuModuleLoadData, cuMemFree, NCCL's kernel loading):
 * wait until no stream of `device`'s context stands behind a closed gate.
 * The real driver holds a lock meanwhile, so a write that would open the
 * gate from another thread deadlocks; the fake gives up after
 * CUBERT_FAKE_CUDA_GATE_TIMEOUT_MS with CUDA_ERROR_TIMEOUT. Without
 * fake_mutex. */
CUresult fake_context_drain(int device);
CUresult cubert_fake_cuda_context_drain(int device);
/* 1 when addr lies in memory from cuMemAllocAsync (fake_mutex held): a real
 * driver refuses stream memory operations there (CUDA_ERROR_INVALID_VALUE,
 * seen on an H100 with driver 580). */
int fake_pooled_address(CUdeviceptr addr);
CUresult cubert_fake_cuda_stream_settle(CUstream s);
CUresult cubert_fake_cuda_stream_gate(CUstream s, const uint32_t *addr, uint32_t value);
void cubert_fake_cuda_gate_store(uint32_t *addr, uint32_t value);
CUresult fake_cuStreamWaitValue32(CUstream s, CUdeviceptr addr, cuuint32_t value,
                                  unsigned int flags);
CUresult fake_cuStreamWriteValue32(CUstream s, CUdeviceptr addr, cuuint32_t value,
                                   unsigned int flags);
CUresult fake_cuDeviceCanAccessPeer(int *can, CUdevice a, CUdevice b);
CUresult fake_cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags);
CUresult fake_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                CUcontext src_ctx, size_t n, CUstream s);

/* The asynchronous mode (fake_libcuda_async.c; none of these with fake_mutex
 * held). fake_async_copy / _set / _launch return 1 when they queued the work,
 * 0 when the caller runs it at once (after fake_async_run of the stream). */
struct fake_op_t;
int fake_async_on(void);
void fake_async_run(struct CUstream_st *s, uint64_t upto); /* UINT64_MAX: all */
void fake_async_run_all(void);
int fake_async_copy(CUstream s, void *dst, const void *src, size_t n, int from_host, int to_host);
int fake_async_set(CUstream s, void *dst, unsigned char value, size_t n);
int fake_async_launch(CUstream s, const char *entry, const unsigned grid[3],
                      const unsigned block[3], unsigned shared, void **params);
void fake_async_record(struct CUstream_st *s, uint64_t seq);
void fake_async_wait(struct CUstream_st *s, struct CUstream_st *target, uint64_t seq);
void fake_pinned_add(const void *p, size_t n);
void fake_pinned_remove(const void *p);
/* Drop a reference to a stream (an event's, a queued wait's); frees a
 * destroyed one nothing refers to (fake_mutex held). */
void fake_stream_unref(struct CUstream_st *s);

/* Entry points of fake_libcuda_graph.c (reached through cuGetProcAddress). */
CUresult fake_cuGraphCreate(CUgraph *out, unsigned int flags);
CUresult fake_cuGraphAddKernelNode(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                   const CUDA_KERNEL_NODE_PARAMS_v2 *params);
CUresult fake_cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags);
CUresult fake_cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode n,
                                             const CUDA_KERNEL_NODE_PARAMS_v2 *params);
CUresult fake_cuGraphLaunch(CUgraphExec x, CUstream s);
CUresult fake_cuGraphExecDestroy(CUgraphExec x);
CUresult fake_cuGraphDestroy(CUgraph g);

/* Entry points of fake_libcuda_exec.c (reached through cuGetProcAddress). */
CUresult fake_cuMemAlloc(CUdeviceptr *out, size_t size);
CUresult fake_cuMemFree(CUdeviceptr p);
CUresult fake_cuMemAllocAsync(CUdeviceptr *out, size_t size, CUstream s);
CUresult fake_cuMemFreeAsync(CUdeviceptr p, CUstream s);
CUresult fake_cuMemHostAlloc(void **out, size_t size, unsigned int flags);
CUresult fake_cuMemFreeHost(void *p);
CUresult fake_cuMemHostRegister(void *p, size_t size, unsigned int flags);
CUresult fake_cuMemHostUnregister(void *p);
CUresult fake_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s);
CUresult fake_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s);
CUresult fake_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult fake_cuMemcpy2DAsync(const CUDA_MEMCPY2D *c, CUstream s);
CUresult fake_cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
CUresult fake_cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned int n,
                                 CUjit_option *opts, void **vals);
CUresult fake_cuModuleUnload(CUmodule m);
CUresult fake_cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name);
CUresult fake_cuModuleGetGlobal(CUdeviceptr *out, size_t *bytes, CUmodule m, const char *name);
CUresult fake_cuGraphAddDependencies(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                                     const CUgraphEdgeData *edges, size_t n);
CUresult fake_cuFuncGetAttribute(int *out, CUfunction_attribute a, CUfunction f);
CUresult fake_cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int value);
CUresult fake_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned shared, CUstream s,
                             void **params, void **extra);

#endif /* CUBERT_TESTS_FAKE_LIBCUDA_INTERNAL_H */

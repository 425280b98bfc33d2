/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/driver/cuda_driver.h: the CUDA driver of the server (the driver
 * table of cubert/driver/driver.h over the CUDA device layer,
 * cuda_device.h). Internal to backend-cuda; docs/cuda.md is the guide.
 *
 *   cuda_driver.c     the table: device memory, launches, streams, events
 *   cuda_transfer.c   copies (pageable uploads through pinned chunks filled
 *                     by several threads, staged reads finished when their
 *                     event is waited for), pinned staging buffers
 *   cuda_reports.c    VALIDATE launches: the kernel's bounds-check report
 *                     read back at the stream's next drain
 *   cuda_workers.c    the host threads that fill and empty pinned chunks
 *   cuda_sync.c       how a host thread waits for an event (spin, then
 *                     block), the primary context's scheduling flags
 *   cuda_client.c     cubert_cuda_client_create (cubert/cuda.h)
 *
 * Threads: the server calls the driver with the device held, except
 * event_query / event_synchronize (any thread, concurrently with the rest)
 * and host_free (any thread). What those touch besides the layer's
 * thread-safe parts (the event and staging pools, the lost flag) is under
 * the stream's `outs_mutex` (staged reads) or the driver's `pinned_mutex`
 * (staging buffers handed to users).
 */
#ifndef CUBERT_BACKEND_CUDA_DRIVER_CUDA_DRIVER_H
#define CUBERT_BACKEND_CUDA_DRIVER_CUDA_DRIVER_H

#include "cubert/driver/driver.h"
#include "device/cuda_device.h"

/* Copies up to this many bytes go straight from / to pageable memory (the
 * CUDA driver stages them itself; a small read through a pinned chunk is
 * still preferred, it is asynchronous). */
#define CUDA_DRV_DIRECT_MAX (64u << 10)
/* Reads into pageable memory up to this many bytes land in one pinned chunk
 * and are copied out when the host waits for them (asynchronous); larger
 * ones go through the piece ring and return once they are on the host. */
#define CUDA_DRV_READ_STAGED_MAX (16u << 20)
/* The piece ring of large transfers: pieces of this many bytes... */
#define CUDA_DRV_PIECE (8u << 20)
/* ... in this many pinned chunks (an upload up to PIECES * PIECE bytes never
 * waits for the device). */
#define CUDA_DRV_PIECES 4u
/* VALIDATE reports kept in flight per stream. */
#define CUDA_DRV_REPORTS 32u

/* ---- worker threads (cuda_workers.c) ------------------------------------------ */

typedef struct cuda_workers_t cuda_workers_t;

/* `threads` - 1 helper threads (the caller is the last one); threads <= 1:
 * none (every copy runs on the caller). OK, RESOURCE_EXHAUSTED (memory),
 * INTERNAL (a thread cannot start; none is left running). */
cubert_status_t cuda_workers_create(cubert_allocator_t allocator, uint32_t threads,
                                    cuda_workers_t **out_workers);
/* Join the threads and free. NULL: no-op. */
void cuda_workers_destroy(cuda_workers_t *workers);
/* memcpy(dst, src, n), or memset(dst, 0, n) when src is NULL, split over the
 * helpers and the calling thread; returns when all of it is done. Small
 * copies (or NULL workers) run on the caller alone. Thread-safe (callers take
 * turns). */
void cuda_workers_copy(cuda_workers_t *workers, void *dst, const void *src, size_t n);
/* The same; `streaming`: the copy's stores are non-temporal where
 * cuda_workers_streaming_available (ignored for zeroing and elsewhere). */
void cuda_workers_copy_mode(cuda_workers_t *workers, void *dst, const void *src, size_t n,
                            bool streaming);
/* Helper threads plus the caller (1 for NULL). */
uint32_t cuda_workers_threads(const cuda_workers_t *workers);
/* Whether this build has non-temporal copies (x86-64 with SSE2). */
bool cuda_workers_streaming_available(void);
/* memcpy with non-temporal stores (a plain memcpy where unavailable); the
 * stores are globally visible when it returns. */
void cuda_workers_copy_streaming(void *dst, const void *src, size_t n);

/* ---- the driver's objects ------------------------------------------------------- */

typedef struct cuda_drv_t cuda_drv_t;

/* One VALIDATE launch whose report is on its way back. */
typedef struct cuda_report_pending_t {
  cubert_cuda_event_t *event;       /* after the report's copy to the host */
  const cubert_kernel_t *kernel;    /* for the error's reason */
  uint32_t slot;
  uint32_t reserved_;
} cuda_report_pending_t;

/* The reports of one stream: CUDA_DRV_REPORTS device reports and their
 * pinned mirror (made at the stream's first VALIDATE launch), used as a
 * ring in launch order. */
typedef struct cuda_reports_t {
  CUdeviceptr device;
  cubert_cuda_staging_chunk_t *mirror;
  cuda_report_pending_t pending[CUDA_DRV_REPORTS];
  uint32_t head, count; /* pending[head .. head+count) in launch order */
} cuda_reports_t;

/* A driver stream: the layer's CUstream (and its error queue), the staged
 * reads waiting to be copied out, the VALIDATE reports. */
typedef struct cuda_drv_stream_t {
  cubert_cuda_stream_t s;
  cuda_drv_t *drv;
  uint32_t index;
  uint32_t reserved_;
  /* staged reads, oldest first (chunks linked by `next`), under outs_mutex */
  pthread_mutex_t outs_mutex;
  cubert_cuda_staging_chunk_t *outs_head, *outs_tail;
  uint64_t outs_enqueued; /* staged reads enqueued (their out_seq: 1, 2, ...) */
  cuda_reports_t reports;
  /* Work enqueued so far (launches, copies, records, waits: under the
   * device), and the count up to which an event was found complete without
   * an error (atomic, any thread): when the two are equal nothing ran since,
   * so draining the stream's errors needs no cuStreamQuery (a failure of
   * that work would have failed the event's query or synchronize). */
  uint64_t ops;
  uint64_t clean_ops;
  /* Events recorded with no work between them mark the same point: the
   * work epoch changes (a process-wide count) when work was enqueued since
   * the last record (ops past rec_ops). A stream that waits on an event of
   * `waited` at `waited_epoch` already waits for every later event of that
   * stream in the same epoch: drv_event_wait skips those (the server's fence
   * of each collective on an idle compute stream). Under the device. */
  uint64_t rec_ops;
  uint64_t epoch;
  const void *waited;
  uint64_t waited_epoch;
  /* The last event recorded here (one reference held): a record with no
   * work since it (ops == rec_ops) hands out that event again instead of
   * recording another (the server's fence of each collective on an idle
   * compute stream costs no driver call). Under the device. */
  cubert_cuda_event_t *last;
  /* The communication stream: a collective posted here and not enqueued
   * yet (cuda_comm.h, "Lazy posts": its cuda_member_t), or NULL. Set by the
   * device's thread; cleared by it or by the thread that enqueued the
   * collective (atomic). Any work enqueued here first settles it
   * (cuda_drv_settle). */
  void *lazy;
  /* The argument block of the stream's launches (cuLaunchKernel copies it
   * at the launch): zeroed once, then each launch writes its own slots and
   * clears the ones the launch before used beyond them. */
  cubert_kernel_args_t args;
  /* The functions this stream launched (hits take no lock; cuda_device.h). */
  cubert_cuda_function_memo_t functions;
} cuda_drv_stream_t;

/* Counters (tests, benchmarks). */
typedef struct cuda_drv_stats_t {
  uint64_t copies_direct;      /* straight from / to pageable or device memory */
  uint64_t copies_pinned;      /* host side in a staging buffer: DMA only */
  uint64_t uploads_staged;     /* uploads through pinned pieces */
  uint64_t reads_staged;       /* reads copied out when waited for */
  uint64_t reads_pieced;       /* large reads through the piece ring */
  uint64_t copy_outs;          /* staged reads copied out */
  uint64_t alloc_retries;      /* memory_alloc retried after reclaiming */
  uint64_t dynamic_reads;      /* dynamic cube counts read back */
  uint64_t reports_read;       /* VALIDATE reports read back */
  uint64_t uploads_borrowed;   /* uploads flagged CUBERT_COPY_SOURCE_BORROWED */
  uint64_t sync_spins;         /* waits that ended polling (atomic: any thread) */
  uint64_t sync_blocks;        /* waits that ended in cuEventSynchronize (atomic) */
  uint64_t queries_skipped;    /* error drains without cuStreamQuery */
  uint64_t records_reused;     /* event_record answered with the stream's last event */
  uint64_t plans_created, plan_updates, plan_launches; /* CUDA graphs (cuda_plan.c) */
  uint64_t plan_programmatic_edges; /* graph edges a node's kernel may start early on */
} cuda_drv_stats_t;

struct cuda_drv_t {
  cubert_allocator_t allocator;
  cubert_cuda_device_t *dev;
  cubert_device_properties_t properties;
  uint32_t stream_count;          /* max_streams + 2 (GC, communication) */
  uint32_t upload_threads;        /* of `workers` once made */
  cuda_drv_stream_t **streams;    /* by index, NULL until created */
  cuda_workers_t *workers;        /* made at the first large transfer */
  bool workers_failed;            /* could not be made: the caller copies alone */
  /* staging buffers handed out by host_alloc (chunks linked by next/prev) */
  pthread_mutex_t pinned_mutex;
  cubert_cuda_staging_chunk_t *pinned;
  uint64_t pinned_count;
  cuda_drv_stats_t stats;
  /* set by cubert_cuda_client_create after cuda_drv_create (the options) */
  uint32_t sync_mode;             /* cubert_cuda_sync_mode_t */
  uint32_t upload_streaming;      /* 1: non-temporal stores fill upload chunks */
  uint64_t sync_spin_ns;          /* AUTO's polling time */
  uint32_t context_flags;         /* the primary context's, at creation */
  uint32_t reserved_;
  uint64_t comm_timeout_ns; /* collectives' wait for peers (0: the default; cuda_comm.h) */
};

extern const cubert_driver_t cuda_driver;

/* Create the driver object of GPU `ordinal` over `cu`. OK, or the layer's
 * codes (nothing left behind). */
cubert_status_t cuda_drv_create(cubert_allocator_t allocator, const cubert_cuda_loader_t *cu,
                                uint32_t ordinal, uint32_t max_streams, uint64_t memory_size,
                                uint32_t upload_threads, cuda_drv_t **out_drv,
                                cubert_error_t *out_error);

static inline cuda_drv_t *cuda_drv_of(void *self) { return (cuda_drv_t *)self; }
static inline cuda_drv_stream_t *cuda_drv_stream_of(cubert_driver_stream_t *s) {
  return (cuda_drv_stream_t *)(void *)s;
}

/* A collective posted on `s` without anything enqueued for it yet (a lazy
 * post, cuda_comm.h) must be ordered before the work about to be enqueued:
 * close its gate now (its F and gate wait on s), unless its round was
 * issued already. cuda_comm_round.c; the device's thread, no lock held. */
void cuda_comm_settle(cuda_drv_stream_t *s);
static inline void cuda_drv_settle(cuda_drv_stream_t *s) {
  if (__atomic_load_n(&s->lazy, __ATOMIC_ACQUIRE)) cuda_comm_settle(s);
}

/* The driver's own stream_errors (cuda_driver.c); the table's entry is
 * cuda_comm_stream_errors, which polls NCCL first on the communication
 * stream (cuda_comm.h). */
cubert_status_t cuda_drv_stream_errors(void *self, cubert_driver_stream_t *stream,
                                       cubert_error_t *out_error);

/* ---- cuda_transfer.c ---------------------------------------------------------------- */

cubert_status_t cuda_drv_copy(void *self, const cubert_driver_copy_t *copy,
                              cubert_driver_stream_t *stream, cubert_error_t *out_error);
cubert_status_t cuda_drv_host_alloc(void *self, uint64_t size, void **out_ptr,
                                    cubert_error_t *out_error);
void cuda_drv_host_free(void *self, void *ptr, uint64_t size);
/* Copy out the stream's staged reads with out_seq <= upto (their DMA
 * completed: an event recorded after them did). Any thread. */
void cuda_drv_copy_outs(cuda_drv_stream_t *s, uint64_t upto);
/* Give back the stream's staged reads without copying (teardown, a lost
 * device). */
void cuda_drv_copy_outs_drop(cuda_drv_stream_t *s);
/* Give back every staging buffer still handed out (driver destroy). */
void cuda_drv_pinned_free_all(cuda_drv_t *d);
/* The plan primitives (cuda_plan.c: CUDA graphs; cubert/driver/driver.h). */
cubert_status_t cuda_drv_plan_create(void *self, const cubert_driver_launch_t *launches,
                                     uint32_t count, cubert_driver_plan_t **out_plan,
                                     cubert_error_t *out_error);
cubert_status_t cuda_drv_plan_update(void *self, cubert_driver_plan_t *plan, uint32_t index,
                                     const cubert_driver_launch_t *launch, cubert_error_t *out_error);
cubert_status_t cuda_drv_plan_launch(void *self, cubert_driver_plan_t *plan,
                                     cubert_driver_stream_t *stream, cubert_error_t *out_error);
void cuda_drv_plan_destroy(void *self, cubert_driver_plan_t *plan);

/* ---- cuda_sync.c -------------------------------------------------------------------- */

/* Wait for `e` as d->sync_mode says (timeout_ns UINT64_MAX: no deadline;
 * else poll until it, DEADLINE_EXCEEDED). OK, DEADLINE_EXCEEDED, the lost
 * record. Any thread (the device need not be held). */
cubert_status_t cuda_sync_wait(cuda_drv_t *d, const cubert_cuda_event_t *e, uint64_t timeout_ns,
                               cubert_error_t *out_error);
/* Give GPU `ordinal`'s primary context the scheduling of `schedule`
 * (DEFAULT: leave it) and return its flags in *out_flags. OK or the mapped
 * CUresult of cuDevicePrimaryCtxGetState / SetFlags. */
cubert_status_t cuda_sync_schedule(const cubert_cuda_loader_t *cu, uint32_t ordinal,
                                   cubert_cuda_schedule_t schedule, uint32_t *out_flags,
                                   cubert_error_t *out_error);

/* ---- cuda_reports.c ---------------------------------------------------------------- */

/* Before a VALIDATE launch: a zeroed device report for it on the stream
 * (*out_report), making the ring at the first use and making room by
 * waiting for the oldest report when CUDA_DRV_REPORTS are pending. */
cubert_status_t cuda_reports_prepare(cuda_drv_stream_t *s, CUdeviceptr *out_report,
                                     cubert_error_t *out_error);
/* After it was launched: its copy to the host and the pending entry. A
 * failure here is queued on the stream (the launch itself went through). */
void cuda_reports_launched(cuda_drv_stream_t *s, const cubert_kernel_t *kernel);
/* The reports whose copy completed, in launch order: a violation becomes a
 * SERVER_VALIDATION error on the stream's queue. Never blocks. */
void cuda_reports_collect(cuda_drv_stream_t *s);
/* Free the ring (after the stream was synchronized, or on a lost device). */
void cuda_reports_free(cuda_drv_stream_t *s);

#endif /* CUBERT_BACKEND_CUDA_DRIVER_CUDA_DRIVER_H */

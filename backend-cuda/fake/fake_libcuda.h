/* SPDX-License-Identifier: MIT */
/*
 * backend-cuda/fake/fake_libcuda.h: the fake CUDA driver the CUDA tests load in
 * place of libcuda.so.1 (built by `make CUDA=1` as
 * $(BUILD)/cuda-fake/libcuda.so.1, and $(BUILD)/cuda-fake-nogpa/libcuda.so.1
 * without cuGetProcAddress_v2), and that users install as
 * libcubert-fakecuda.so (-DFAKE_CUDA_INSTALLED; exports only the cu* entry
 * points and cubert_fake_cuda_*: fakecuda.map). docs/cuda.md, "The CUDA
 * driver without a GPU", says what it models and what not. Not installed.
 *
 * It implements the entry points the CUDA driver resolves, on host memory:
 * device pointers are host addresses, streams run everything at once,
 * events complete after CUBERT_FAKE_CUDA_EVENT_DELAY queries, a few kernels
 * have host implementations. Knobs, read from the environment at each call
 * (set them before opening the loader):
 *
 *   CUBERT_FAKE_CUDA_INIT_RESULT     cuInit returns this CUresult (default 0)
 *   CUBERT_FAKE_CUDA_DEVICES         device count (default 1; 0 is allowed)
 *   CUBERT_FAKE_CUDA_DRIVER_VERSION  cuDriverGetVersion (default 13000)
 *   CUBERT_FAKE_CUDA_MISSING         an entry point cuGetProcAddress does not find
 *   CUBERT_FAKE_CUDA_MEMORY          device memory per device (default 256 MiB);
 *                                    allocations past it: CUDA_ERROR_OUT_OF_MEMORY
 *   CUBERT_FAKE_CUDA_HOST_MEMORY     pinned memory in all (default 1 GiB)
 *   CUBERT_FAKE_CUDA_NO_POOLS        1: no memory pools (attribute 0 and
 *                                    cuMemAllocAsync fails with NOT_SUPPORTED)
 *   CUBERT_FAKE_CUDA_DEFER_FREES     1: cuMemFreeAsync gives the memory back only at the
 *                                    stream's next cuStreamSynchronize
 *   CUBERT_FAKE_CUDA_EVENT_DELAY     cuEventQuery answers NOT_READY this many
 *                                    times after each record (default 0)
 *   CUBERT_FAKE_CUDA_COPY_RESULT     1-D host<->device copies return this CUresult
 *   CUBERT_FAKE_CUDA_LAUNCH_RESULT   cuLaunchKernel returns this CUresult; a
 *                                    context-poisoning one poisons the process
 *                                    (every context, as the driver: see
 *                                    fake_poison in fake_libcuda_internal.h)
 *   CUBERT_FAKE_CUDA_FUNC_MAX_THREADS  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
 *                                    (default 1024)
 *   CUBERT_FAKE_CUDA_SET_FLAGS_RESULT  cuDevicePrimaryCtxSetFlags returns this CUresult
 *   CUBERT_FAKE_CUDA_GATE_TIMEOUT_MS work on a stream behind a closed
 *                                    cuStreamWaitValue32 waits at most this
 *                                    long (default 30000), then CUDA_ERROR_TIMEOUT
 *   CUBERT_FAKE_CUDA_WAIT_VALUE_RESULT  cuStreamWaitValue32 returns this CUresult
 *                                    (enqueuing nothing)
 *   CUBERT_FAKE_CUDA_NO_PEER         1: cuDeviceCanAccessPeer answers 0
 *   CUBERT_FAKE_CUDA_UNKNOWN_KERNELS "fail": a launch no host runner ran (no CPU
 *                                    body) returns CUDA_ERROR_NOT_SUPPORTED (said once
 *                                    on stderr); "skip": it is a no-op. Default: fail
 *                                    in libcubert-fakecuda.so, skip in the tests' build
 *   CUBERT_FAKE_CUDA_ASYNC           1: work is queued on its stream and runs when
 *                                    something asks for it (fake_libcuda_async.c),
 *                                    read once per process
 *   (CUBERT_FAKE_CUDA_SEED is libcubert's: the host runner's cube order,
 *    backend-cuda/device/cuda_fake_host.c)
 *   CUBERT_FAKE_CUDA_NO_DRAIN        1: cuMemFree and cuModuleLoadDataEx do not
 *                                    wait for the context's gated streams (by
 *                                    default they do, as the driver; they give
 *                                    up after the gate timeout where it
 *                                    deadlocks: fake_context_drain)
 *
 * Stream memory operations and peer copies: fake_libcuda_gates.c.
 * Events complete in stream order: one found complete completes those
 * recorded before it on its stream; cuStreamSynchronize completes them all.
 * The special stream handles (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) are the
 * NULL stream. Kernels: the host runner installed with
 * cubert_fake_cuda_set_kernel_host runs a launch first (libcubert's loader
 * installs one that runs the launched descriptor's CPU body); then these
 * built-in host implementations (by entry name):
 *   ck_add_scalar_u32        buffer 0 (u32) += scalar 0, one element per unit
 *   fake_fault                launches fine, then poisons the process with
 *                             CUDA_ERROR_ILLEGAL_ADDRESS (seen at the next
 *                             synchronize / query, as on a GPU)
 * Module images: PTX text whose `.visible .entry NAME(` lines name the
 * kernels; "\x7f" "ELF" followed by such text counts as a cubin. An image
 * containing FAKE_SYNTAX_ERROR fails to load (CUDA_ERROR_INVALID_PTX, with a
 * JIT error log); a cubin containing FAKE_CUBIN_FAIL fails with
 * CUDA_ERROR_NO_BINARY_FOR_GPU. The device is compute capability 9.0.
 */
#ifndef CUBERT_TESTS_FAKE_LIBCUDA_H
#define CUBERT_TESTS_FAKE_LIBCUDA_H

#include <stdint.h>

/* Size of the argument block copied from the last launch (params[0]). */
#define FAKE_CUDA_ARGS_BYTES 392

typedef struct fake_cuda_stats_t {
  uint64_t init_calls;
  uint64_t ctx_set_current_calls;
  int64_t contexts_retained;   /* primary context retains - releases */
  uint64_t mem_alloc_async, mem_alloc_sync, mem_free_async, mem_free_sync;
  int64_t device_allocs_live;
  int64_t device_bytes_live;
  uint64_t host_allocs, host_frees, host_registers, host_unregisters;
  int64_t host_bytes_live;
  uint64_t events_created, events_destroyed, event_records;
  uint64_t streams_created, streams_destroyed;
  uint64_t module_loads, module_unloads;
  uint64_t copies_h2d, copies_d2h, copies_d2d, copies_2d, memsets;
  uint64_t launches;
  /* the last launch */
  uint32_t grid[3], block[3];
  uint32_t shared_bytes;
  uint32_t mode;
  uint64_t report;
  char kernel[64];
  unsigned char args[FAKE_CUDA_ARGS_BYTES];
  int last_dynamic_shared_attribute; /* the last cuFuncSetAttribute value */
  /* waits and polls (the CUDA driver's sync modes, skipped stream queries) */
  uint64_t event_queries, event_syncs, stream_queries, stream_syncs;
  uint64_t ctx_set_flags; /* cuDevicePrimaryCtxSetFlags calls that succeeded */
  /* collectives (fake_libcuda_gates.c) */
  uint64_t stream_waits, stream_writes; /* cuStreamWaitValue32 / cuStreamWriteValue32 */
  uint64_t copies_peer, peer_enables;   /* cuMemcpyPeerAsync / cuCtxEnablePeerAccess */
  /* context drains (cuModuleLoadDataEx, cuMemFree, the fake NCCL's kernel
   * loading and set-up): made, and those that found a stream of the context
   * behind a closed gate and waited (a real driver would deadlock there) */
  uint64_t context_drains, context_drains_waited;
  uint64_t stream_wait_events; /* cuStreamWaitEvent calls */
  /* graphs (fake_libcuda_graph.c): cuGraphLaunch calls, instantiations,
   * cuGraphExecKernelNodeSetParams calls, graphs and executable graphs alive */
  uint64_t graph_launches, graph_instantiations, graph_node_updates;
  uint64_t graph_programmatic_edges; /* cuGraphAddDependencies edges of that type */
  int64_t graphs_live, graph_execs_live;
} fake_cuda_stats_t;

/* Runs a kernel on the host, by its entry name, in place of the GPU:
 * `params` as cuLaunchKernel got them (the dialect's args block, the mode
 * word, the report address). Returns CUDA_SUCCESS, or CUDA_ERROR_NOT_FOUND
 * for a kernel it does not know (the fake's built-in kernels are tried
 * then), or any CUresult for cuLaunchKernel to return. */
typedef int (*fake_cuda_kernel_host_fn)(const char *entry, const unsigned grid[3],
                                        const unsigned block[3], unsigned shared_bytes,
                                        void **params);
/* Exported by the fake (dlsym): install the host runner (NULL: none). */
typedef void (*fake_cuda_set_kernel_host_fn)(fake_cuda_kernel_host_fn fn);
void cubert_fake_cuda_set_kernel_host(fake_cuda_kernel_host_fn fn);

/* The asynchronous mode (CUBERT_FAKE_CUDA_ASYNC=1, fake_libcuda_async.c)
 * queues a launch to run later: `capture` copies what the launch needs
 * (entry name and cuLaunchKernel's params) into a token, NULL when it cannot
 * (the launch then runs at once); `run` runs a token's kernel (a CUresult);
 * `release` frees it. Exported by the fake (dlsym): install the three. */
typedef void *(*fake_cuda_kernel_capture_fn)(const char *entry, void **params);
typedef int (*fake_cuda_kernel_run_fn)(void *token, const unsigned grid[3], const unsigned block[3],
                                       unsigned shared_bytes);
typedef void (*fake_cuda_kernel_release_fn)(void *token);
typedef void (*fake_cuda_set_kernel_capture_fn)(fake_cuda_kernel_capture_fn capture,
                                                fake_cuda_kernel_run_fn run,
                                                fake_cuda_kernel_release_fn release);
void cubert_fake_cuda_set_kernel_capture(fake_cuda_kernel_capture_fn capture,
                                         fake_cuda_kernel_run_fn run,
                                         fake_cuda_kernel_release_fn release);

/* Exported by the fake (find it with dlsym): a consistent copy of its counters. */
typedef void (*fake_cuda_stats_fn)(fake_cuda_stats_t *out);
void cubert_fake_cuda_stats(fake_cuda_stats_t *out);

#endif /* CUBERT_TESTS_FAKE_LIBCUDA_H */

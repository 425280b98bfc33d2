/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_external.c: stream order with CUDA code outside
 * cubert (cubert/cuda.h: cubert_cuda_export_event / export_to_stream /
 * import_event / import_stream).
 *
 * The "other library" is the test itself, on the Driver API through the
 * loader's table, in the device's primary context. Its work is held back by
 * a gate (cuStreamWaitValue32 on a word nobody has written yet), which a
 * helper thread opens after writing the data the cubert kernel must see:
 * the GPU and the fake libcuda both hold a stream's later work behind it
 * (the fake: the thread that enqueues it waits, fake_libcuda_gates.c), and
 * an event recorded behind it completes only once it opened. Module loads
 * and frees (context-synchronizing calls, which would deadlock behind a
 * closed gate on a GPU) all happen before the gate closes.
 *
 * Each ordering body runs over the fake (cuda_external_*) and on a GPU
 * (cuda_gpu_external_*, "skipped: CUDA unavailable: <reason>" without one).
 */
#include <pthread.h>
#include <time.h>

#include "cuda_test.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/cuda.h"
#include "cubert/os.h"
#include "cubert_kernels.h"

int cts_cuda_prepare(char *skip, size_t size);

#define WORDS 1024u

static char g_skip[CUBERT_ERROR_REASON_SIZE + 16];

typedef struct ext_env_t {
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  cubert_client_t *client;
  const cubert_cuda_loader_t *cu;
  CUcontext ctx;
  CUstream other, opener;   /* the other library's streams */
  CUdeviceptr gate;         /* the gate word (cuMemAlloc: not pooled) */
  cubert_handle_t in, out;  /* WORDS u32 each */
  CUdeviceptr in_address;   /* in's device address */
  int gpu;
} ext_env_t;

static void use_driver(int gpu) {
  if (!gpu) fake_knob("CUBERT_LIBCUDA", FAKE_LIBCUDA);
  else if (getenv("CUBERT_LIBCUDA") && strstr(getenv("CUBERT_LIBCUDA"), "cuda-fake"))
    TEST_SKIP("CUDA unavailable: CUBERT_LIBCUDA names the fake driver");
  if (cts_cuda_prepare(g_skip, sizeof g_skip) != 0) TEST_SKIP(g_skip);
}

/* in = zeros, out = out <- in * 2 once (loads the module, makes the pools and
 * the staged read's chunk before any gate closes). */
static void ext_open(ext_env_t *e, int gpu) {
  static uint32_t zeros[WORDS];
  uint32_t back[WORDS];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(WORDS / CK_SMALL_BLOCK);
  cubert_resource_t res;
  use_driver(gpu);
  memset(e, 0, sizeof *e);
  e->gpu = gpu;
  e->allocator = counting_allocator_initialize(&e->counting);
  CHECK_OK(cubert_cuda_client_create(e->allocator, NULL, &e->client, NULL));
  CHECK_OK(cubert__cuda_loader_shared(&e->cu, NULL));
  CHECK(e->cu->cuDevicePrimaryCtxRetain(&e->ctx, 0) == CUDA_SUCCESS);
  CHECK(e->cu->cuCtxSetCurrent(e->ctx) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamCreate(&e->other, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamCreate(&e->opener, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  CHECK(e->cu->cuMemAlloc(&e->gate, 64) == CUDA_SUCCESS);
  CHECK(e->cu->cuMemcpyHtoDAsync(e->gate, zeros, 64, e->opener) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamSynchronize(e->opener) == CUDA_SUCCESS);
  CHECK_OK(cubert_client_create_from_slice(e->client, zeros, sizeof zeros, &e->in, NULL));
  CHECK_OK(cubert_client_empty(e->client, sizeof zeros, &e->out, NULL));
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &e->in));
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 1, &e->out));
  CHECK_OK(cubert_client_launch(e->client, &ck_double_u32_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(e->client, &e->out, back, sizeof back, NULL));
  CHECK_OK(cubert_client_get_resource(e->client, &e->in, &res, NULL));
  e->in_address = (CUdeviceptr)res.address;
}

static void ext_close(ext_env_t *e) {
  fake_cuda_stats_t s;
  CHECK(e->cu->cuCtxSetCurrent(e->ctx) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamSynchronize(e->other) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamDestroy(e->other) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamDestroy(e->opener) == CUDA_SUCCESS);
  CHECK(e->cu->cuMemFree(e->gate) == CUDA_SUCCESS);
  CHECK_OK(cubert_client_handle_release(e->client, &e->in, NULL));
  CHECK_OK(cubert_client_handle_release(e->client, &e->out, NULL));
  cubert_client_release(e->client);
  CHECK(e->cu->cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS);
  CHECK_MSG(e->counting.live_blocks == 0, "leaked %lld blocks", (long long)e->counting.live_blocks);
  counting_allocator_destroy(&e->counting);
  if (!e->gpu) { /* no event or stream of these calls left behind */
    s = fake_stats(e->cu);
    CHECK_EQ_U64(s.events_created, s.events_destroyed);
    CHECK_EQ_U64(s.streams_created, s.streams_destroyed);
  }
}

/* The other library closes its stream's gate: its later work waits. */
static void gate_close(ext_env_t *e) {
  uint32_t zero = 0;
  CHECK(e->cu->cuCtxSetCurrent(e->ctx) == CUDA_SUCCESS);
  CHECK(e->cu->cuMemcpyHtoDAsync(e->gate, &zero, 4, e->opener) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamSynchronize(e->opener) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamWaitValue32(e->other, e->gate, 1, CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS);
}

/* The helper: after 50 ms, the other library's data (in = 7 everywhere)
 * lands, then the gate opens. */
static void *producer(void *arg) {
  ext_env_t *e = (ext_env_t *)arg;
  static uint32_t sevens[WORDS];
  struct timespec pause = {0, 50000000};
  uint32_t i;
  for (i = 0; i < WORDS; i++) sevens[i] = 7;
  nanosleep(&pause, NULL);
  CHECK(e->cu->cuCtxSetCurrent(e->ctx) == CUDA_SUCCESS);
  CHECK(e->cu->cuMemcpyHtoDAsync(e->in_address, sevens, sizeof sevens, e->opener) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamSynchronize(e->opener) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamWriteValue32(e->opener, e->gate, 1, 0) == CUDA_SUCCESS);
  CHECK(e->cu->cuStreamSynchronize(e->opener) == CUDA_SUCCESS);
  return NULL;
}

/* out = in * 2 on cubert's stream, read back: how many words are 14. */
static uint32_t double_and_count(ext_env_t *e) {
  uint32_t back[WORDS], i, n = 0;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(WORDS / CK_SMALL_BLOCK);
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 0, &e->in));
  CHECK_OK(cubert_launch_arguments_set_buffer(&args, 1, &e->out));
  CHECK_OK(cubert_client_launch(e->client, &ck_double_u32_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(e->client, &e->out, back, sizeof back, NULL));
  for (i = 0; i < WORDS; i++) n += back[i] == 14;
  return n;
}

/* import: cubert's kernel waits for the other library's gated stream, through
 * an event (import_event) or the stream itself (import_stream); mode 2: no
 * import, the negative control (the fake only: the kernel reads the zeros). */
static void import_body(int gpu, int mode) {
  ext_env_t e;
  pthread_t t;
  CUevent ev = NULL;
  ext_open(&e, gpu);
  gate_close(&e);
  if (mode == 0) {
    CHECK(e.cu->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
    CHECK(e.cu->cuEventRecord(ev, e.other) == CUDA_SUCCESS);
    CHECK_OK(cubert_cuda_import_event(e.client, ev, NULL));
    CHECK(e.cu->cuEventDestroy(ev) == CUDA_SUCCESS); /* allowed right after the call */
  } else if (mode == 1) {
    CHECK_OK(cubert_cuda_import_stream(e.client, e.other, NULL));
  }
  CHECK(pthread_create(&t, NULL, producer, &e) == 0);
  if (mode == 2) CHECK_EQ_U64(double_and_count(&e), 0);
  else CHECK_EQ_U64(double_and_count(&e), WORDS);
  CHECK(pthread_join(t, NULL) == 0);
  ext_close(&e);
}

TEST(cuda_external_import_event_orders_cubert_after_it) { import_body(0, 0); }
TEST(cuda_external_import_stream_orders_cubert_after_it) { import_body(0, 1); }
TEST(cuda_external_without_import_cubert_does_not_wait) { import_body(0, 2); }
TEST(cuda_gpu_external_import_event_orders_cubert_after_it) { import_body(1, 0); }
TEST(cuda_gpu_external_import_stream_orders_cubert_after_it) { import_body(1, 1); }

/* export: cubert's stream waits behind the other library's gate (imported);
 * an exported event and a stream made to wait on cubert are not complete
 * until the gate opens, then they are. */
static void export_body(int gpu) {
  ext_env_t e;
  pthread_t t;
  CUevent ev = NULL, mine = NULL;
  CUstream waiter = NULL;
  ext_open(&e, gpu);
  CHECK(e.cu->cuStreamCreate(&waiter, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  /* nothing pending: the exported event completes at once */
  CHECK_OK(cubert_cuda_export_event(e.client, &mine, NULL));
  CHECK(mine != NULL);
  CHECK(e.cu->cuEventSynchronize(mine) == CUDA_SUCCESS);
  CHECK(e.cu->cuEventDestroy(mine) == CUDA_SUCCESS);
  gate_close(&e);
  CHECK(e.cu->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
  CHECK(e.cu->cuEventRecord(ev, e.other) == CUDA_SUCCESS);
  CHECK_OK(cubert_cuda_import_event(e.client, ev, NULL));
  CHECK(e.cu->cuEventDestroy(ev) == CUDA_SUCCESS);
  mine = NULL;
  CHECK_OK(cubert_cuda_export_event(e.client, &mine, NULL));
  CHECK_OK(cubert_cuda_export_to_stream(e.client, waiter, NULL));
  CHECK(e.cu->cuEventQuery(mine) == CUDA_ERROR_NOT_READY);
  CHECK(e.cu->cuStreamQuery(waiter) == CUDA_ERROR_NOT_READY);
  CHECK(pthread_create(&t, NULL, producer, &e) == 0);
  CHECK(pthread_join(t, NULL) == 0);
  CHECK(e.cu->cuEventSynchronize(mine) == CUDA_SUCCESS);
  CHECK(e.cu->cuStreamSynchronize(waiter) == CUDA_SUCCESS);
  CHECK(e.cu->cuEventQuery(mine) == CUDA_SUCCESS);
  CHECK(e.cu->cuEventDestroy(mine) == CUDA_SUCCESS); /* the caller's to destroy */
  CHECK(e.cu->cuStreamDestroy(waiter) == CUDA_SUCCESS);
  CHECK_EQ_U64(double_and_count(&e), WORDS); /* cubert's stream went on too */
  ext_close(&e);
}

TEST(cuda_external_export_event_and_stream_wait_for_cubert) { export_body(0); }
TEST(cuda_gpu_external_export_event_and_stream_wait_for_cubert) { export_body(1); }

/* The default streams are streams too (the legacy NULL stream, per-thread). */
TEST(cuda_external_default_streams) {
  ext_env_t e;
  ext_open(&e, 0);
  CHECK_OK(cubert_cuda_import_stream(e.client, NULL, NULL));
  CHECK_OK(cubert_cuda_import_stream(e.client, (CUstream)CU_STREAM_PER_THREAD, NULL));
  CHECK_OK(cubert_cuda_export_to_stream(e.client, (CUstream)CU_STREAM_LEGACY, NULL));
  CHECK_EQ_U64(double_and_count(&e), 0); /* in is still zeros */
  ext_close(&e);
}

/* ---- errors ------------------------------------------------------------------------------ */

TEST(cuda_external_refuses_null_arguments) {
  ext_env_t e;
  cubert_error_t err;
  CUevent keep = (CUevent)(uintptr_t)0x1234;
  ext_open(&e, 0);
  CHECK_STATUS(cubert_cuda_export_event(NULL, &keep, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "NULL client");
  CHECK_STATUS(cubert_cuda_export_event(e.client, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "NULL out_event");
  CHECK_STATUS(cubert_cuda_import_event(e.client, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "NULL event");
  CHECK_STATUS(cubert_cuda_import_stream(NULL, NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cuda_export_to_stream(NULL, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(keep == (CUevent)(uintptr_t)0x1234); /* untouched */
  ext_close(&e);
}

/* A client of the CPU driver has no CUDA stream: UNSUPPORTED, with a record. */
TEST(cuda_external_refuses_a_cpu_client) {
  counting_allocator_t counting;
  cubert_allocator_t a = counting_allocator_initialize(&counting);
  cubert_client_t *c = NULL;
  cubert_error_t err;
  CUevent ev = NULL;
  CHECK_OK(cubert_cpu_client_create(a, NULL, &c, NULL));
  CHECK_STATUS(cubert_cuda_export_event(c, &ev, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_I64(err.chain[0], CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION);
  CHECK_REASON_HAS(err, "cubert_cuda_export_event: the client's device is not a CUDA device");
  CHECK(ev == NULL);
  CHECK_STATUS(cubert_cuda_import_event(c, (CUevent)(uintptr_t)0x1234, &err),
               CUBERT_STATUS_UNSUPPORTED);
  CHECK_REASON_HAS(err, "cubert_cuda_import_event");
  CHECK_STATUS(cubert_cuda_import_stream(c, NULL, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_STATUS(cubert_cuda_export_to_stream(c, NULL, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_REASON_HAS(err, "cubert_cuda_export_to_stream");
  cubert_client_release(c);
  CHECK_EQ_I64(counting.live_blocks, 0);
  counting_allocator_destroy(&counting);
}

/* A stream of another GPU's context: cuEventRecord refuses it (the event is
 * cubert's context's), INVALID_ARGUMENT with the driver's code; the event
 * made for it is not left behind, cubert's stream goes on. */
TEST(cuda_external_import_stream_of_another_context) {
  ext_env_t e;
  cubert_error_t err;
  CUcontext ctx1 = NULL;
  CUstream s1 = NULL;
  fake_cuda_stats_t before, after;
  fake_knob("CUBERT_FAKE_CUDA_DEVICES", "2");
  ext_open(&e, 0);
  CHECK(e.cu->cuDevicePrimaryCtxRetain(&ctx1, 1) == CUDA_SUCCESS);
  CHECK(e.cu->cuCtxSetCurrent(ctx1) == CUDA_SUCCESS);
  CHECK(e.cu->cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS);
  before = fake_stats(e.cu);
  CHECK_STATUS(cubert_cuda_import_stream(e.client, s1, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_I64(err.driver_code, CUDA_ERROR_INVALID_HANDLE);
  CHECK_REASON_HAS(err, "cubert_cuda_import_stream: cuEventRecord failed");
  after = fake_stats(e.cu);
  CHECK_EQ_U64(after.events_created - before.events_created,
               after.events_destroyed - before.events_destroyed);
  CHECK_EQ_U64(after.stream_wait_events, before.stream_wait_events); /* nothing enqueued */
  { /* the caller's current context is its own again */
    CUcontext now = NULL;
    CHECK(e.cu->cuCtxGetCurrent(&now) == CUDA_SUCCESS);
    CHECK(now == ctx1);
  }
  CHECK(e.cu->cuCtxSetCurrent(e.ctx) == CUDA_SUCCESS);
  CHECK_EQ_U64(double_and_count(&e), 0);
  { /* an event of the other context: recording it on a stream of this one is
     * refused (the fake as the driver), waiting on it is allowed (as in CUDA) */
    CUevent ev1 = NULL;
    CHECK(e.cu->cuCtxSetCurrent(ctx1) == CUDA_SUCCESS);
    CHECK(e.cu->cuEventCreate(&ev1, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
    CHECK(e.cu->cuEventRecord(ev1, s1) == CUDA_SUCCESS);
    CHECK(e.cu->cuCtxSetCurrent(e.ctx) == CUDA_SUCCESS);
    CHECK(e.cu->cuEventRecord(ev1, e.other) == CUDA_ERROR_INVALID_HANDLE);
    CHECK_OK(cubert_cuda_import_event(e.client, ev1, NULL));
    CHECK(e.cu->cuEventDestroy(ev1) == CUDA_SUCCESS);
  }
  CHECK(e.cu->cuCtxSetCurrent(ctx1) == CUDA_SUCCESS);
  CHECK(e.cu->cuStreamDestroy(s1) == CUDA_SUCCESS);
  CHECK(e.cu->cuDevicePrimaryCtxRelease(1) == CUDA_SUCCESS);
  ext_close(&e);
}

/* A lost device (a kernel faulted): every call answers the lost record at
 * once, nothing is enqueued. */
TEST(cuda_external_on_a_lost_device) {
  static const char fault_ptx[] = "// fake\n.visible .entry fake_fault(\n)\n{\n}\n";
  ext_env_t e;
  cubert_error_t err;
  cubert_kernel_t fault = fake_kernel("fake_fault", fault_ptx, 1, 0, 0);
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_1d(1);
  CUevent ev = NULL, keep = (CUevent)(uintptr_t)0x1234;
  uint64_t waits;
  ext_open(&e, 0);
  CHECK(e.cu->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
  cubert_launch_arguments_initialize(&args);
  CHECK_OK(cubert_client_launch(e.client, &fault, &one, &args, NULL));
  CHECK_STATUS(cubert_client_sync(e.client, &err), CUBERT_STATUS_UNAVAILABLE);
  waits = fake_stats(e.cu).stream_wait_events;
  CHECK_STATUS(cubert_cuda_export_event(e.client, &keep, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  CHECK(keep == (CUevent)(uintptr_t)0x1234);
  CHECK_STATUS(cubert_cuda_import_event(e.client, ev, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_STATUS(cubert_cuda_import_stream(e.client, e.other, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_STATUS(cubert_cuda_export_to_stream(e.client, e.other, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(fake_stats(e.cu).stream_wait_events, waits);
  CHECK(e.cu->cuEventDestroy(ev) == CUDA_SUCCESS);
  /* the process is poisoned (as the driver): the other library's calls fail too */
  CHECK_OK(cubert_client_handle_release(e.client, &e.in, NULL));
  CHECK_OK(cubert_client_handle_release(e.client, &e.out, NULL));
  cubert_client_release(e.client);
  (void)e.cu->cuStreamDestroy(e.other);
  (void)e.cu->cuStreamDestroy(e.opener);
  (void)e.cu->cuDevicePrimaryCtxRelease(0);
  CHECK_MSG(e.counting.live_blocks == 0, "leaked %lld blocks", (long long)e.counting.live_blocks);
  counting_allocator_destroy(&e.counting);
}

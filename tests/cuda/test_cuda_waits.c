/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_waits.c: how the CUDA device waits for the GPU
 * (backend-cuda/device/cuda_sync.c): the sync modes (AUTO polls, then blocks;
 * SPIN; YIELD; BLOCKING), a deadline, the primary context's scheduling
 * flags, and the error drains that skip cuStreamQuery when an event showed
 * the stream idle. Over the fake driver, whose events answer NOT_READY
 * CUBERT_FAKE_CUDA_EVENT_DELAY times after each record; the modes also run
 * on a GPU (cuda_gpu_waits_*: results only).
 */
#include "cuda_test.h"
#include "cubert/cube.h"
#include "cubert/cuda.h"
#include "cubert/os.h"
#include "cubert_kernels.h"

int cts_cuda_prepare(char *skip, size_t size);

static char g_skip[CUBERT_ERROR_REASON_SIZE + 16];

typedef struct waits_env_t {
  counting_allocator_t counting;
  cubert_client_t *client;
  const cubert_cuda_loader_t *cu;
  int gpu;
} waits_env_t;

static void use_driver(int gpu) {
  if (!gpu) fake_knob("CUBERT_LIBCUDA", FAKE_LIBCUDA);
  else if (getenv("CUBERT_LIBCUDA") && strstr(getenv("CUBERT_LIBCUDA"), "cuda-fake"))
    TEST_SKIP("CUDA unavailable: CUBERT_LIBCUDA names the fake driver");
  if (cts_cuda_prepare(g_skip, sizeof g_skip) != 0) TEST_SKIP(g_skip);
}

static void waits_open(waits_env_t *e, int gpu, const cubert_cuda_options_t *o) {
  cubert_error_t err;
  use_driver(gpu);
  memset(e, 0, sizeof *e);
  e->gpu = gpu;
  CHECK_OK(cubert__cuda_loader_shared(&e->cu, NULL));
  if (cubert_cuda_client_create(counting_allocator_initialize(&e->counting), o, &e->client,
                                &err) != CUBERT_STATUS_OK)
    test_fail(__FILE__, __LINE__, "cannot create the CUDA device: %s", err.reason);
}

static void waits_close(waits_env_t *e) {
  cubert_client_release(e->client);
  CHECK_EQ_I64(e->counting.live_blocks, 0);
  counting_allocator_destroy(&e->counting);
}

static cubert_cuda_client_stats_t stats_of(cubert_client_t *c) {
  cubert_cuda_client_stats_t s;
  CHECK_OK(cubert_cuda_client_stats(c, &s));
  return s;
}

/* 1024 u32 doubled (ck_double_u32), synced; the data checked. */
static void double_and_sync(cubert_client_t *c) {
  uint32_t host[1024], out[1024];
  cubert_handle_t h[2];
  cubert_cube_count_t count = cubert_cube_count_new_1d(1024 / CK_SMALL_BLOCK);
  cubert_launch_arguments_t args;
  size_t i, bad = 0;
  for (i = 0; i < 1024; i++) host[i] = (uint32_t)i * 3u;
  CHECK_OK(cubert_client_create_from_slice(c, host, sizeof host, &h[0], NULL));
  CHECK_OK(cubert_client_empty(c, sizeof host, &h[1], NULL));
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 2;
  CHECK_OK(cubert_client_launch(c, &ck_double_u32_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_sync(c, NULL));
  CHECK_OK(cubert_client_read_one(c, &h[1], out, sizeof out, NULL));
  for (i = 0; i < 1024; i++) bad += out[i] != host[i] * 2u;
  CHECK_EQ_U64(bad, 0);
  CHECK_OK(cubert_client_handle_release(c, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(c, &h[1], NULL));
}

/* Every mode gives the right results; the ones that poll end polling, the
 * others in cuEventSynchronize. */
static void modes_body(int gpu) {
  static const cubert_cuda_sync_mode_t modes[4] = {CUBERT_CUDA_SYNC_AUTO, CUBERT_CUDA_SYNC_SPIN,
                                                   CUBERT_CUDA_SYNC_YIELD,
                                                   CUBERT_CUDA_SYNC_BLOCKING};
  int m;
  if (!gpu) fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", "5");
  for (m = 0; m < 4; m++) {
    waits_env_t e;
    cubert_cuda_options_t o;
    cubert_cuda_client_stats_t s;
    cubert_cuda_options_initialize(&o);
    o.sync_mode = modes[m];
    waits_open(&e, gpu, &o);
    double_and_sync(e.client);
    s = stats_of(e.client);
    CHECK_MSG(s.sync_spins + s.sync_blocks >= 2, "mode %d: %llu spins, %llu blocks", m,
              (unsigned long long)s.sync_spins, (unsigned long long)s.sync_blocks);
    if (modes[m] == CUBERT_CUDA_SYNC_BLOCKING) CHECK_EQ_U64(s.sync_spins, 0);
    if (modes[m] == CUBERT_CUDA_SYNC_SPIN || modes[m] == CUBERT_CUDA_SYNC_YIELD)
      CHECK_EQ_U64(s.sync_blocks, 0);
    if (!gpu && modes[m] == CUBERT_CUDA_SYNC_AUTO) CHECK_EQ_U64(s.sync_blocks, 0); /* 5 polls */
    waits_close(&e);
  }
}

TEST(cuda_waits_every_sync_mode) { modes_body(0); }
TEST(cuda_gpu_waits_every_sync_mode) { modes_body(1); }

/* AUTO polls for sync_spin_us, then blocks: an event that stays NOT_READY
 * for a million polls ends in cuEventSynchronize. */
TEST(cuda_waits_auto_blocks_after_its_spin) {
  waits_env_t e;
  cubert_cuda_options_t o;
  cubert_cuda_client_stats_t s0, s1;
  fake_cuda_stats_t f0, f1;
  fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", "1000000");
  cubert_cuda_options_initialize(&o);
  o.sync_spin_us = 20;
  waits_open(&e, 0, &o);
  s0 = stats_of(e.client);
  f0 = fake_stats(e.cu);
  CHECK_OK(cubert_client_sync(e.client, NULL));
  s1 = stats_of(e.client);
  f1 = fake_stats(e.cu);
  CHECK_EQ_U64(s1.sync_blocks, s0.sync_blocks + 1);
  CHECK_EQ_U64(s1.sync_spins, s0.sync_spins);
  CHECK_EQ_U64(f1.event_syncs, f0.event_syncs + 1);
  CHECK(f1.event_queries > f0.event_queries); /* it polled first */
  waits_close(&e);
}

/* A wait with a deadline polls and gives up with DEADLINE_EXCEEDED; the
 * completion stays valid and finishes later. */
TEST(cuda_waits_deadline_exceeded_then_done) {
  waits_env_t e;
  cubert_completion_t done;
  cubert_error_t err;
  fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", "1000000");
  waits_open(&e, 0, NULL);
  CHECK_OK(cubert_client_sync_async(e.client, &done, NULL));
  CHECK_STATUS(cubert_completion_wait(&done, 200000, &err), CUBERT_STATUS_DEADLINE_EXCEEDED);
  fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", "0");
  CHECK_OK(cubert_completion_wait(&done, UINT64_MAX, NULL));
  waits_close(&e);
}

/* The drain after a sync knows the stream idle (its event completed after
 * all its work) and skips cuStreamQuery; a flush after new work polls. A
 * queued error still surfaces at the skipping drain. */
TEST(cuda_waits_drain_skips_the_query_of_an_idle_stream) {
  waits_env_t e;
  cubert_cuda_client_stats_t s0, s1;
  fake_cuda_stats_t f0, f1;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_launch_arguments_t none;
  cubert_cube_count_t four = cubert_cube_count_new_1d(4);
  cubert_launch_arguments_t args;
  cubert_handle_t h[2];
  cubert_error_t err;
  cubert_launch_arguments_initialize(&none);
  fake_knob("CUBERT_FAKE_CUDA_FUNC_MAX_THREADS", "32"); /* below ck_double_u32's 64 */
  waits_open(&e, 0, NULL);
  CHECK_OK(cubert_client_launch(e.client, &ck_empty_kernel, &one, &none, NULL));
  s0 = stats_of(e.client);
  f0 = fake_stats(e.cu);
  CHECK_OK(cubert_client_sync(e.client, NULL));
  s1 = stats_of(e.client);
  f1 = fake_stats(e.cu);
  CHECK_EQ_U64(s1.stream_queries_skipped, s0.stream_queries_skipped + 1);
  CHECK_EQ_U64(f1.stream_queries, f0.stream_queries);
  /* new work, then a flush: the stream may have failed since, so it polls */
  CHECK_OK(cubert_client_launch(e.client, &ck_empty_kernel, &one, &none, NULL));
  CHECK_OK(cubert_client_flush(e.client, NULL));
  f0 = fake_stats(e.cu);
  CHECK_EQ_U64(f0.stream_queries, f1.stream_queries + 1);
  /* a launch the compiled function refuses is queued on the driver's
   * stream: the sync's drain returns it although it skips the query */
  CHECK_OK(cubert_client_empty(e.client, 4096, &h[0], NULL));
  CHECK_OK(cubert_client_empty(e.client, 4096, &h[1], NULL));
  cubert_launch_arguments_initialize(&args);
  args.buffers = h;
  args.buffer_count = 2;
  CHECK_OK(cubert_client_launch(e.client, &ck_double_u32_kernel, &four, &args, NULL));
  s0 = stats_of(e.client);
  CHECK_STATUS(cubert_client_sync(e.client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  s1 = stats_of(e.client);
  CHECK_EQ_U64(s1.stream_queries_skipped, s0.stream_queries_skipped + 1);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_RESOURCE_MAX_UNIT_PER_CUBE);
  CHECK_OK(cubert_client_sync(e.client, NULL)); /* drained */
  CHECK_OK(cubert_client_handle_release(e.client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(e.client, &h[1], NULL));
  waits_close(&e);
}

/* schedule: the primary context's flags are set before the context is
 * made and reported; DEFAULT leaves them; a refused SetFlags fails the
 * creation with its CUresult and leaves nothing behind; unknown enum
 * values are INVALID_ARGUMENT. */
TEST(cuda_waits_schedule_sets_the_context_flags) {
  waits_env_t e;
  cubert_cuda_options_t o;
  cubert_client_t *c = NULL;
  cubert_error_t err;
  counting_allocator_t counting;
  fake_cuda_stats_t f;
  waits_open(&e, 0, NULL); /* DEFAULT: untouched */
  CHECK_EQ_U64(stats_of(e.client).context_flags & CU_CTX_SCHED_MASK, CU_CTX_SCHED_AUTO);
  CHECK_EQ_U64(fake_stats(e.cu).ctx_set_flags, 0);
  waits_close(&e);
  cubert_cuda_options_initialize(&o);
  o.schedule = CUBERT_CUDA_SCHEDULE_BLOCKING;
  o.device.index = 1;
  waits_open(&e, 0, &o);
  CHECK_EQ_U64(stats_of(e.client).context_flags & CU_CTX_SCHED_MASK, CU_CTX_SCHED_BLOCKING_SYNC);
  f = fake_stats(e.cu);
  CHECK_EQ_U64(f.ctx_set_flags, 1);
  double_and_sync(e.client);
  waits_close(&e);
  /* the same again: already set, not set twice */
  waits_open(&e, 0, &o);
  CHECK_EQ_U64(fake_stats(e.cu).ctx_set_flags, 1);
  waits_close(&e);
  /* refused */
  fake_knob("CUBERT_FAKE_CUDA_SET_FLAGS_RESULT", "1");
  o.schedule = CUBERT_CUDA_SCHEDULE_SPIN;
  CHECK_STATUS(cubert_cuda_client_create(counting_allocator_initialize(&counting), &o, &c, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "cuDevicePrimaryCtxSetFlags");
  CHECK_EQ_I64(err.driver_code, 1);
  CHECK(c == NULL);
  CHECK_EQ_I64(counting.live_blocks, 0);
  fake_knob("CUBERT_FAKE_CUDA_SET_FLAGS_RESULT", "0");
  /* unknown values */
  cubert_cuda_options_initialize(&o);
  o.sync_mode = (cubert_cuda_sync_mode_t)9;
  CHECK_STATUS(cubert_cuda_client_create(counting_allocator_initialize(&counting), &o, &c, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "sync mode");
  cubert_cuda_options_initialize(&o);
  o.schedule = (cubert_cuda_schedule_t)9;
  CHECK_STATUS(cubert_cuda_client_create(counting_allocator_initialize(&counting), &o, &c, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "schedule");
  cubert_cuda_options_initialize(&o);
  o.upload_copy = (cubert_cuda_upload_copy_t)9;
  CHECK_STATUS(cubert_cuda_client_create(counting_allocator_initialize(&counting), &o, &c, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "upload copy");
  CHECK(c == NULL);
  CHECK_EQ_I64(counting.live_blocks, 0);
  counting_allocator_destroy(&counting);
}

/* A record on a stream with nothing enqueued since its last record hands
 * out that event again (backend-cuda/driver/cuda_driver.h, `last`): syncs
 * of an idle stream make no cuEventRecord (nor does the server's fence of a
 * collective on an idle compute stream, test_cuda_comm_costs.c); new work
 * makes the next record a real one. */
TEST(cuda_waits_record_on_an_idle_stream_reuses_its_last_event) {
  waits_env_t e;
  fake_cuda_stats_t f0, f1;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_launch_arguments_t none;
  int i;
  cubert_launch_arguments_initialize(&none);
  waits_open(&e, 0, NULL);
  CHECK_OK(cubert_client_launch(e.client, &ck_empty_kernel, &one, &none, NULL));
  f0 = fake_stats(e.cu);
  CHECK_OK(cubert_client_sync(e.client, NULL));
  f1 = fake_stats(e.cu);
  CHECK_EQ_U64(f1.event_records, f0.event_records + 1);
  for (i = 0; i < 3; i++) CHECK_OK(cubert_client_sync(e.client, NULL));
  f0 = fake_stats(e.cu);
  CHECK_EQ_U64(f0.event_records, f1.event_records); /* the same point, three times */
  CHECK_OK(cubert_client_launch(e.client, &ck_empty_kernel, &one, &none, NULL));
  CHECK_OK(cubert_client_sync(e.client, NULL));
  f1 = fake_stats(e.cu);
  CHECK_EQ_U64(f1.event_records, f0.event_records + 1);
  waits_close(&e); /* the stream's reference went with it: nothing leaked */
}

static const char k_waits_fault_ptx[] = "// fake\n.visible .entry fake_fault(\n)\n{\n}\n";

/* The reused event of an idle stream still reports a loss that reached its
 * device: GPU 0's kernel faults (the process's CUDA state is lost); GPU 1's
 * device, idle since its last sync, answers its next sync with the loss
 * naming the first cause, without recording anything. */
TEST(cuda_waits_reused_event_reports_a_lost_process) {
  waits_env_t e;
  cubert_client_t *other = NULL;
  counting_allocator_t oc;
  cubert_cuda_options_t o;
  cubert_kernel_t fault;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_launch_arguments_t none;
  fake_cuda_stats_t f0, f1;
  cubert_error_t err;
  cubert_launch_arguments_initialize(&none);
  fake_knob("CUBERT_FAKE_CUDA_DEVICES", "2");
  waits_open(&e, 0, NULL);
  cubert_cuda_options_initialize(&o);
  o.ordinal = 1;
  o.device.index = 1;
  CHECK_OK_E(cubert_cuda_client_create(counting_allocator_initialize(&oc), &o, &other, &err),
             err);
  CHECK_OK(cubert_client_launch(other, &ck_empty_kernel, &one, &none, NULL));
  CHECK_OK(cubert_client_sync(other, NULL));
  fault = ck_empty_kernel;
  fault.cuda_entry_name = "fake_fault";
  fault.cuda_image = k_waits_fault_ptx;
  fault.cuda_image_size = sizeof k_waits_fault_ptx;
  CHECK_OK(cubert_client_launch(e.client, &fault, &one, &none, NULL));
  CHECK_STATUS(cubert_client_sync(e.client, &err), CUBERT_STATUS_UNAVAILABLE);
  f0 = fake_stats(e.cu);
  CHECK_STATUS(cubert_client_sync(other, &err), CUBERT_STATUS_UNAVAILABLE);
  f1 = fake_stats(e.cu);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_MSG(strstr(err.reason, "CUDA device 0 lost first") != NULL, "%s", err.reason);
  CHECK_EQ_U64(f1.event_records, f0.event_records);
  cubert_client_release(other);
  CHECK_EQ_I64(oc.live_blocks, 0);
  counting_allocator_destroy(&oc);
  waits_close(&e);
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_record.c: recorded sequences on the CUDA device
 * (cubert/record.h, backend-cuda/driver/cuda_plan.c): a recording of
 * CHECKED launches becomes one CUDA graph, instantiated once, its nodes
 * updated in place when scalars or buffers change, replayed by one
 * cuGraphLaunch; VALIDATE launches are replayed launch by launch (their
 * reports are per launch) and their errors reach the stream.
 *
 * Each body runs twice: cuda_record_* over the fake driver (the kernels run
 * on the host; the fake's graph counters are checked), cuda_gpu_record_* on
 * a GPU through libcuda.so.1 ("skipped: CUDA unavailable: <reason>" without
 * one).
 */
#include "cuda_test.h"
#include "cubert/cube.h"
#include "cubert/cuda.h"
#include "cubert/record.h"
#include "cubert_kernels.h"
#include "device/cuda_loader.h"

int cts_cuda_prepare(char *skip, size_t size);

#define N 1024

static char g_skip[CUBERT_ERROR_REASON_SIZE + 16];

typedef struct rec_env_t {
  counting_allocator_t counting;
  cubert_client_t *client;
  int gpu;
} rec_env_t;

static void open_env(rec_env_t *e, int gpu, cubert_bounds_check_mode_t mode) {
  cubert_cuda_options_t o;
  cubert_error_t err;
  char msg[512];
  if (!gpu) fake_knob("CUBERT_LIBCUDA", FAKE_LIBCUDA);
  else if (getenv("CUBERT_LIBCUDA") && strstr(getenv("CUBERT_LIBCUDA"), "cuda-fake"))
    TEST_SKIP("CUDA unavailable: CUBERT_LIBCUDA names the fake driver");
  if (cts_cuda_prepare(g_skip, sizeof g_skip) != 0) TEST_SKIP(g_skip);
  memset(e, 0, sizeof *e);
  e->gpu = gpu;
  cubert_cuda_options_initialize(&o);
  o.device.bounds_check = mode;
  if (cubert_cuda_client_create(counting_allocator_initialize(&e->counting), &o, &e->client, &err) !=
      CUBERT_STATUS_OK) {
    cubert_error_format(&err, msg, sizeof msg);
    test_fail(__FILE__, __LINE__, "cannot create the CUDA device: %s", msg);
  }
}

static void close_env(rec_env_t *e) {
  cubert_client_release(e->client);
  CHECK_MSG(e->counting.live_blocks == 0, "leaked %lld blocks", (long long)e->counting.live_blocks);
  counting_allocator_destroy(&e->counting);
}

/* The fake's counters (zeros on a GPU). */
static fake_cuda_stats_t graph_stats(const rec_env_t *e) {
  const cubert_cuda_loader_t *cu = NULL;
  fake_cuda_stats_t s;
  memset(&s, 0, sizeof s);
  if (e->gpu) return s;
  CHECK_OK(cubert__cuda_loader_shared(&cu, NULL));
  return fake_stats(cu);
}

static cubert_status_t add(cubert_client_t *c, const cubert_handle_t *h, uint32_t delta) {
  cubert_launch_arguments_t a;
  cubert_cube_count_t count = cubert_cube_count_new_1d(N / CK_SMALL_BLOCK);
  cubert_launch_arguments_initialize(&a);
  cubert_launch_arguments_set_buffer(&a, 0, h);
  cubert_launch_arguments_set_u32(&a, 0, delta);
  return cubert_client_launch(c, &ck_add_scalar_u32_kernel, &count, &a, NULL);
}

static void expect(cubert_client_t *c, const cubert_handle_t *h, uint32_t base) {
  static uint32_t v[N];
  uint32_t i;
  CHECK_OK(cubert_client_read_one(c, h, v, sizeof v, NULL));
  for (i = 0; i < N; i++)
    if (v[i] != base + i) {
      CHECK_MSG(0, "element %u is %u, expected %u", i, v[i], base + i);
      return;
    }
}

static void create(cubert_client_t *c, uint32_t base, cubert_handle_t *out) {
  static uint32_t v[N];
  uint32_t i;
  for (i = 0; i < N; i++) v[i] = base + i;
  CHECK_OK(cubert_client_create_from_slice(c, v, sizeof v, out, NULL));
}

/* Ten adds recorded: one graph, instantiated once, one cuGraphLaunch per
 * replay; new scalars and a new buffer update nodes in place. */
static void graph_body(int gpu) {
  rec_env_t e;
  cubert_handle_t a, b;
  cubert_recording_t *rec = NULL;
  cubert_launch_arguments_t s;
  fake_cuda_stats_t s0, s1;
  int i;
  open_env(&e, gpu, CUBERT_BOUNDS_CHECK_AUTO);
  create(e.client, 0, &a);
  create(e.client, 500, &b);
  s0 = graph_stats(&e);
  CHECK_OK(cubert_client_record_begin(e.client, NULL));
  for (i = 0; i < 10; i++) CHECK_OK(add(e.client, &a, (uint32_t)i + 1u));
  CHECK_OK(cubert_client_record_end(e.client, &rec, NULL));
  for (i = 0; i < 3; i++) CHECK_OK(cubert_client_replay(e.client, rec, NULL));
  expect(e.client, &a, 3u * 55u);
  s1 = graph_stats(&e);
  if (!gpu) {
    CHECK_EQ_U64(s1.graph_instantiations - s0.graph_instantiations, 1);
    CHECK_EQ_U64(s1.graph_launches - s0.graph_launches, 3);
    CHECK_EQ_U64(s1.launches - s0.launches, 30); /* each node ran */
    CHECK_EQ_I64(s1.graph_execs_live - s0.graph_execs_live, 1);
    /* the images' sm_90 cubins mark every entry as waiting at its start
     * (include/cubert/kernel.h): nodes 2..10 depend programmatically */
    if (CUBERT_TEST_HAVE_IMAGES)
      CHECK_EQ_U64(s1.graph_programmatic_edges - s0.graph_programmatic_edges, 9);
  }
  /* launch 9 adds 100 instead of 10; slot 0 is now b */
  cubert_launch_arguments_initialize(&s);
  CHECK_OK(cubert_launch_arguments_set_u32(&s, 0, 100));
  CHECK_OK(cubert_recording_set_scalars(rec, 9, &s, NULL));
  CHECK_OK(cubert_recording_set_buffer(rec, 0, &b, NULL));
  CHECK_OK(cubert_client_replay(e.client, rec, NULL));
  expect(e.client, &b, 500u + 45u + 100u);
  expect(e.client, &a, 3u * 55u);
  s1 = graph_stats(&e);
  if (!gpu) {
    CHECK_EQ_U64(s1.graph_instantiations - s0.graph_instantiations, 1); /* updated, not rebuilt */
    CHECK_EQ_U64(s1.graph_node_updates - s0.graph_node_updates, 10);  /* every node uses slot 0 */
    CHECK_EQ_U64(s1.graph_launches - s0.graph_launches, 4);
  }
  /* only the scalar: one node updated */
  CHECK_OK(cubert_launch_arguments_set_u32(&s, 0, 1000));
  CHECK_OK(cubert_recording_set_scalars(rec, 0, &s, NULL));
  CHECK_OK(cubert_client_replay(e.client, rec, NULL));
  expect(e.client, &b, 500u + 2u * 145u + 999u);
  s1 = graph_stats(&e);
  if (!gpu) CHECK_EQ_U64(s1.graph_node_updates - s0.graph_node_updates, 11);
  cubert_recording_destroy(rec);
  s1 = graph_stats(&e);
  if (!gpu) {
    CHECK_EQ_I64(s1.graph_execs_live - s0.graph_execs_live, 0);
    CHECK_EQ_I64(s1.graphs_live - s0.graphs_live, 0);
  }
  CHECK_OK(cubert_client_handle_release(e.client, &a, NULL));
  CHECK_OK(cubert_client_handle_release(e.client, &b, NULL));
  close_env(&e);
}

TEST(cuda_record_replays_one_graph) { graph_body(0); }

/* An entry its image does not mark (here PTX with the entry alone, as an
 * image built before the marks or JIT-compiled from PTX for an older GPU):
 * no programmatic edge, every node waits for the one before in full; the
 * replays compute the same. */
TEST(cuda_record_unmarked_kernels_get_full_edges) {
  static const char ptx[] = "// no marks\n.visible .entry ck_add_scalar_u32(\n)\n{\n}\n";
  static cubert_kernel_t plain;
  cubert_launch_arguments_t a;
  cubert_cube_count_t count = cubert_cube_count_new_1d(N / CK_SMALL_BLOCK);
  rec_env_t e;
  cubert_handle_t h;
  cubert_recording_t *rec = NULL;
  fake_cuda_stats_t s0, s1;
  int i;
  open_env(&e, 0, CUBERT_BOUNDS_CHECK_AUTO);
  plain = ck_add_scalar_u32_kernel;
  plain.cuda_image = ptx;
  plain.cuda_image_size = sizeof ptx;
  create(e.client, 0, &h);
  s0 = graph_stats(&e);
  CHECK_OK(cubert_client_record_begin(e.client, NULL));
  for (i = 0; i < 10; i++) {
    cubert_launch_arguments_initialize(&a);
    cubert_launch_arguments_set_buffer(&a, 0, &h);
    cubert_launch_arguments_set_u32(&a, 0, (uint32_t)i + 1u);
    CHECK_OK(cubert_client_launch(e.client, &plain, &count, &a, NULL));
  }
  CHECK_OK(cubert_client_record_end(e.client, &rec, NULL));
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_replay(e.client, rec, NULL));
  expect(e.client, &h, 2u * 55u);
  s1 = graph_stats(&e);
  CHECK_EQ_U64(s1.graph_instantiations - s0.graph_instantiations, 1);
  CHECK_EQ_U64(s1.graph_launches - s0.graph_launches, 2);
  CHECK_EQ_U64(s1.graph_programmatic_edges - s0.graph_programmatic_edges, 0);
  cubert_recording_destroy(rec);
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  close_env(&e);
}
TEST(cuda_gpu_record_replays_one_graph) { graph_body(1); }

/* VALIDATE launches: no graph; each replay runs them launch by launch and
 * every violation reaches the stream. */
static void validate_body(int gpu) {
  rec_env_t e;
  uint32_t data[8] = {0};
  cubert_handle_t h;
  cubert_recording_t *rec = NULL;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_error_t err;
  fake_cuda_stats_t s0, s1;
  open_env(&e, gpu, CUBERT_BOUNDS_CHECK_VALIDATE);
  CHECK_OK(cubert_client_create_from_slice(e.client, data, sizeof data, &h, NULL));
  s0 = graph_stats(&e);
  CHECK_OK(cubert_client_record_begin(e.client, NULL));
  cubert_launch_arguments_initialize(&args);
  cubert_launch_arguments_set_buffer(&args, 0, &h);
  CHECK_OK(cubert_client_launch_unchecked(e.client, &ck_oob_write_u32_kernel, &one, &args, NULL));
  CHECK_OK(cubert_client_launch_unchecked(e.client, &ck_oob_write_u32_kernel, &one, &args, NULL));
  CHECK_OK(cubert_client_record_end(e.client, &rec, NULL));
  CHECK_OK(cubert_client_replay(e.client, rec, NULL));
  CHECK_OK(cubert_client_replay(e.client, rec, NULL));
  CHECK_STATUS(cubert_client_sync(e.client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&err), 4);
  CHECK_REASON_HAS(err, "ck_oob_write_u32");
  s1 = graph_stats(&e);
  if (!gpu) {
    CHECK_EQ_U64(s1.graph_instantiations - s0.graph_instantiations, 0);
    CHECK_EQ_U64(s1.launches - s0.launches, 4);
  }
  cubert_recording_destroy(rec);
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  close_env(&e);
}

TEST(cuda_record_validate_replays_launch_by_launch) { validate_body(0); }
TEST(cuda_gpu_record_validate_replays_launch_by_launch) { validate_body(1); }

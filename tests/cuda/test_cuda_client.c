/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_client.c: the CUDA device through the client API
 * (cubert_cuda_client_create): transfers on each of the driver's paths
 * (pageable uploads through pinned pieces, staged and pieced reads, pinned
 * staging buffers, pitched tensors), dynamic cube counts, the JIT log of a
 * compilation error, errors mapped from CUresults, reclaim and retry on
 * OUT_OF_MEMORY, VALIDATE reports, and a device lost to an illegal address.
 *
 * Each body runs twice: cuda_client_* over the fake driver (the kernels run
 * on the host: test_cuda_cts_support.c), and cuda_gpu_client_* on a GPU
 * through libcuda.so.1 ("skipped: CUDA unavailable: <reason>" without
 * one). Every test is its own process, so the process-wide loader of each
 * opens the library its test points CUBERT_LIBCUDA at.
 */
#include "cuda_test.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/cuda.h"
#include "cubert/os.h"
#include "cubert_kernels.h"
#include "cuda_test_kernels.h"

int cts_cuda_prepare(char *skip, size_t size);

typedef struct client_env_t {
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  cubert_client_t *client;
  int gpu;
} client_env_t;

static char g_skip[CUBERT_ERROR_REASON_SIZE + 16];

/* Point the process-wide loader at the fake (gpu 0) or leave it on
 * libcuda.so.1 (gpu 1: skip without a GPU), then install the host runner. */
static void driver_use(int gpu) {
  if (!gpu) fake_knob("CUBERT_LIBCUDA", FAKE_LIBCUDA);
  else if (getenv("CUBERT_LIBCUDA") && strstr(getenv("CUBERT_LIBCUDA"), "cuda-fake"))
    TEST_SKIP("CUDA unavailable: CUBERT_LIBCUDA names the fake driver");
  if (cts_cuda_prepare(g_skip, sizeof g_skip) != 0) TEST_SKIP(g_skip);
}

static void client_open(client_env_t *e, int gpu, const cubert_cuda_options_t *options) {
  cubert_cuda_options_t o;
  cubert_error_t err;
  char msg[512];
  driver_use(gpu);
  memset(e, 0, sizeof *e);
  e->gpu = gpu;
  e->allocator = counting_allocator_initialize(&e->counting);
  if (options) o = *options;
  else cubert_cuda_options_initialize(&o);
  if (cubert_cuda_client_create(e->allocator, &o, &e->client, &err) != CUBERT_STATUS_OK) {
    cubert_error_format(&err, msg, sizeof msg);
    test_fail(__FILE__, __LINE__, "cannot create the CUDA device: %s", msg);
  }
}

static void client_close(client_env_t *e) {
  cubert_client_release(e->client);
  e->client = NULL;
  CHECK_MSG(e->counting.live_blocks == 0, "leaked %lld blocks", (long long)e->counting.live_blocks);
  CHECK_EQ_U64(e->counting.bad_frees, 0);
  counting_allocator_destroy(&e->counting);
}

static cubert_cuda_client_stats_t stats_of(cubert_client_t *c) {
  cubert_cuda_client_stats_t s;
  CHECK_OK(cubert_cuda_client_stats(c, &s));
  return s;
}

static void fill(uint32_t *p, size_t n, uint32_t seed) {
  size_t i;
  for (i = 0; i < n; i++) p[i] = (uint32_t)i * 2654435761u + seed;
}

static size_t mismatches(const uint32_t *a, const uint32_t *b, size_t n) {
  size_t i, bad = 0;
  for (i = 0; i < n; i++) bad += a[i] != b[i];
  return bad;
}

/* ---- transfers ------------------------------------------------------------------------ */

/* 40 MiB up and back (ring uploads with 4 threads, a pieced read), 1 MiB and
 * 4 KiB reads (staged, copied out when waited for), a staging buffer both
 * ways (DMA only). */
static void transfers_body(int gpu) {
  client_env_t e;
  cubert_cuda_options_t o;
  const size_t big = 10u << 20, mid = 256u << 10; /* words */
  uint32_t *src = (uint32_t *)malloc(big * 4), *dst = (uint32_t *)malloc(big * 4);
  cubert_handle_t h, hm;
  cubert_completion_t done;
  cubert_cuda_client_stats_t s0, s1;
  cubert_bytes_t pinned[2];
  uint64_t sizes[2];
  void *dsts[1];
  uint64_t dst_sizes[1];
  CHECK(src && dst);
  cubert_cuda_options_initialize(&o);
  o.upload_threads = 4;
  client_open(&e, gpu, &o);
  fill(src, big, 7);
  s0 = stats_of(e.client);
  CHECK_EQ_U64(s0.upload_threads, 4);
  CHECK_OK(cubert_client_create_from_slice(e.client, src, big * 4, &h, NULL));
  memset(dst, 0, big * 4);
  CHECK_OK(cubert_client_read_one(e.client, &h, dst, big * 4, NULL));
  CHECK_EQ_U64(mismatches(src, dst, big), 0);
  s1 = stats_of(e.client);
  CHECK(s1.uploads_staged > s0.uploads_staged);
  CHECK(s1.reads_pieced > s0.reads_pieced);
  /* 1 MiB: one pinned chunk, copied out by the completion's wait */
  CHECK_OK(cubert_client_create_from_slice(e.client, src + 5, mid * 4, &hm, NULL));
  memset(dst, 0, mid * 4);
  dsts[0] = dst;
  dst_sizes[0] = mid * 4;
  s0 = stats_of(e.client);
  CHECK_OK(cubert_client_read_async(e.client, &hm, 1, dsts, dst_sizes, &done, NULL));
  CHECK_OK(cubert_completion_wait(&done, UINT64_MAX, NULL));
  CHECK_EQ_U64(mismatches(src + 5, dst, mid), 0);
  s1 = stats_of(e.client);
  CHECK_EQ_U64(s1.reads_staged, s0.reads_staged + 1);
  CHECK(s1.copy_outs >= s0.copy_outs + 1);
  /* a staging buffer up and back: DMA only */
  sizes[0] = sizes[1] = mid * 4;
  CHECK_OK(cubert_client_reserve_staging(e.client, sizes, 2, pinned, NULL));
  CHECK_EQ_U64(pinned[0].property, CUBERT_ALLOCATION_PINNED);
  memcpy(pinned[0].data, src + 9, mid * 4);
  s0 = stats_of(e.client);
  CHECK_OK(cubert_client_write(e.client, &hm, pinned[0].data, mid * 4, NULL));
  CHECK_OK(cubert_client_read_one(e.client, &hm, pinned[1].data, mid * 4, NULL));
  CHECK_EQ_U64(mismatches(src + 9, (const uint32_t *)pinned[1].data, mid), 0);
  s1 = stats_of(e.client);
  CHECK(s1.copies_pinned >= s0.copies_pinned + 1); /* the read; the client copies a write first */
  pinned[0].release(pinned[0].owner, pinned[0].data, pinned[0].size);
  pinned[1].release(pinned[1].owner, pinned[1].data, pinned[1].size);
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  CHECK_OK(cubert_client_handle_release(e.client, &hm, NULL));
  client_close(&e);
  free(src);
  free(dst);
}

TEST(cuda_client_transfers_take_every_path) { transfers_body(0); }
TEST(cuda_gpu_client_transfers_take_every_path) { transfers_body(1); }

/* Pitched tensors (rows of 4004 bytes, 4096 apart): a small one, and one
 * of 24 MB whose upload and read go through the piece ring in whole rows. */
static void pitched_body(int gpu) {
  client_env_t e;
  uint64_t rows[2] = {3, 6000}, k;
  client_open(&e, gpu, NULL);
  for (k = 0; k < 2; k++) {
    uint64_t shape[2], n = rows[k] * 1001;
    uint32_t *src = (uint32_t *)malloc(n * 4), *dst = (uint32_t *)malloc(n * 4);
    cubert_memory_layout_t l;
    cubert_copy_descriptor_t d;
    void *dsts[1];
    uint64_t sizes[1];
    CHECK(src && dst);
    shape[0] = rows[k];
    shape[1] = 1001;
    fill(src, n, (uint32_t)k);
    memset(dst, 0, n * 4);
    CHECK_OK(cubert_client_create_tensor_from_slice(e.client, src, 2, shape, 4, &l, NULL));
    CHECK_EQ_U64(l.strides[0], 1024); /* 4004 bytes padded to 4096 */
    CHECK_EQ_U64(l.strides[1], 1);
    memset(&d, 0, sizeof d);
    d.binding = l.memory;
    d.rank = 2;
    d.shape[0] = shape[0];
    d.shape[1] = shape[1];
    d.strides[0] = l.strides[0];
    d.strides[1] = 1;
    d.elem_size = 4;
    dsts[0] = dst;
    sizes[0] = n * 4;
    CHECK_OK(cubert_client_read_tensor(e.client, &d, 1, dsts, sizes, NULL));
    CHECK_EQ_U64(mismatches(src, dst, n), 0);
    CHECK_OK(cubert_client_handle_release(e.client, &l.memory, NULL));
    free(src);
    free(dst);
  }
  client_close(&e);
}

TEST(cuda_client_pitched_round_trips) { pitched_body(0); }
TEST(cuda_gpu_client_pitched_round_trips) { pitched_body(1); }

/* ---- launches ------------------------------------------------------------------------- */

static cubert_launch_arguments_t args_of(const cubert_binding_t *b, uint32_t nb, const uint64_t *s,
                                         uint32_t ns) {
  cubert_launch_arguments_t a;
  cubert_launch_arguments_initialize(&a);
  a.buffers = b;
  a.buffer_count = nb;
  a.scalars = s;
  a.scalar_count = ns;
  return a;
}

/* Dynamic counts: read back at launch, a zero one runs nothing, one above
 * the device's maximum is a stream error. */
static void dynamic_body(int gpu) {
  client_env_t e;
  uint32_t data[256], out[256], dims[3] = {4, 1, 1}, zero[3] = {0, 1, 1};
  uint32_t huge[3] = {0x80000000u, 1, 1};
  uint64_t delta = 5;
  cubert_handle_t h, hd, hz, hh;
  cubert_launch_arguments_t args;
  cubert_cube_count_t count;
  cubert_error_t err;
  int i;
  client_open(&e, gpu, NULL);
  for (i = 0; i < 256; i++) data[i] = (uint32_t)i;
  CHECK_OK(cubert_client_create_from_slice(e.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_create_from_slice(e.client, dims, sizeof dims, &hd, NULL));
  CHECK_OK(cubert_client_create_from_slice(e.client, zero, sizeof zero, &hz, NULL));
  CHECK_OK(cubert_client_create_from_slice(e.client, huge, sizeof huge, &hh, NULL));
  args = args_of(&h, 1, &delta, 1);
  count = cubert_cube_count_new_dynamic(&hd); /* 4 cubes of 64: every element */
  CHECK_OK(cubert_client_launch(e.client, &ck_add_scalar_u32_kernel, &count, &args, NULL));
  count = cubert_cube_count_new_dynamic(&hz);
  CHECK_OK(cubert_client_launch(e.client, &ck_add_scalar_u32_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(e.client, &h, out, sizeof out, NULL));
  for (i = 0; i < 256; i++) CHECK_EQ_U64(out[i], (uint32_t)i + 5u);
  count = cubert_cube_count_new_dynamic(&hh);
  CHECK_OK(cubert_client_launch(e.client, &ck_add_scalar_u32_kernel, &count, &args, NULL));
  CHECK_STATUS(cubert_client_flush(e.client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES));
  CHECK_MSG(strstr(err.reason, "2147483648") != NULL, "%s", err.reason); /* the count asked for */
  CHECK_EQ_U64(stats_of(e.client).dynamic_reads, 3);
  CHECK_OK(cubert_client_read_one(e.client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[7], 12); /* nothing ran */
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  CHECK_OK(cubert_client_handle_release(e.client, &hd, NULL));
  CHECK_OK(cubert_client_handle_release(e.client, &hz, NULL));
  CHECK_OK(cubert_client_handle_release(e.client, &hh, NULL));
  client_close(&e);
}

TEST(cuda_client_dynamic_cube_counts) { dynamic_body(0); }
TEST(cuda_gpu_client_dynamic_cube_counts) { dynamic_body(1); }

/* PTX that does not compile: the launch is refused at once with the JIT
 * error log in its reason, nothing runs, the device keeps working. */
static const char k_bad_ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n.visible .entry cuda_test_bad(\n)\n{\n"
    "  FAKE_SYNTAX_ERROR;\n}\n";

static void compile_error_body(int gpu) {
  client_env_t e;
  cubert_kernel_t bad;
  uint32_t data[4] = {1, 2, 3, 4}, out[4];
  uint64_t delta = 1;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_error_t err;
  char log[1024], info[1024];
  client_open(&e, gpu, NULL);
  bad = ck_add_scalar_u32_kernel;
  bad.name = "cuda_test_bad";
  bad.cuda_entry_name = "cuda_test_bad";
  bad.cuda_image = k_bad_ptx;
  bad.cuda_image_size = sizeof k_bad_ptx;
  CHECK_OK(cubert_client_create_from_slice(e.client, data, sizeof data, &h, NULL));
  args = args_of(&h, 1, &delta, 1);
  CHECK_STATUS(cubert_client_launch(e.client, &bad, &one, &args, &err),
               CUBERT_STATUS_COMPILATION_FAILED);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_LAUNCH_COMPILATION));
  /* the fake answers CUDA_ERROR_INVALID_PTX; a real driver picks its own code */
  if (!gpu) CHECK_EQ_I64(err.driver_code, CUDA_ERROR_INVALID_PTX);
  CHECK(err.driver_code != 0);
  CHECK_REASON_HAS(err, "cuModuleLoadDataEx(cuda_test_bad, PTX) failed: CUDA_ERROR_");
  CHECK_OK(cubert_cuda_client_jit_log(e.client, log, info, sizeof log));
  /* the fake's log names the token; ptxas words it its own way */
  CHECK_MSG(strstr(log, gpu ? "error" : "FAKE_SYNTAX_ERROR") != NULL, "JIT error log: %s", log);
  CHECK_OK(cubert_client_launch(e.client, &ck_add_scalar_u32_kernel, &one, &args, NULL));
  CHECK_OK(cubert_client_read_one(e.client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[0], 2); /* the good launch ran, the bad one did not */
  CHECK_EQ_U64(out[3], 5);
  CHECK_STATUS(cubert_cuda_client_jit_log(e.client, log, NULL, 0), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  client_close(&e);
}

TEST(cuda_client_compile_error_keeps_the_jit_log) { compile_error_body(0); }
TEST(cuda_gpu_client_compile_error_keeps_the_jit_log) { compile_error_body(1); }

/* VALIDATE: every violating launch reports (more launches than the report
 * ring holds before a sync), CHECKED ones report nothing. */
static void validate_body(int gpu) {
  client_env_t e;
  cubert_cuda_options_t o;
  uint32_t data[8] = {0};
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_error_t err, first;
  int i;
  cubert_cuda_options_initialize(&o);
  o.device.bounds_check = CUBERT_BOUNDS_CHECK_VALIDATE;
  client_open(&e, gpu, &o);
  CHECK_OK(cubert_client_create_from_slice(e.client, data, sizeof data, &h, NULL));
  args = args_of(&h, 1, NULL, 0);
  for (i = 0; i < 40; i++)
    CHECK_OK(cubert_client_launch_unchecked(e.client, &ck_oob_write_u32_kernel, &one, &args, NULL));
  CHECK_STATUS(cubert_client_sync(e.client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_EQ_U64(cubert_error_aggregate_count(&err), 40);
  CHECK_OK(cubert_error_unhealthy_first(&err, &first));
  CHECK_EQ_U64(cubert_error_kind(&first), CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_EQ_U64(first.field[0], 0); /* buffer slot */
  CHECK_EQ_U64(first.field[1], 8); /* the index written */
  CHECK_EQ_U64(first.field[2], 8); /* the buffer's length */
  CHECK_REASON_HAS(err, "ck_oob_write_u32"); /* the kernel's name */
  CHECK_EQ_U64(stats_of(e.client).reports_read, 40);
  CHECK_OK(cubert_client_launch(e.client, &ck_oob_write_u32_kernel, &one, &args, NULL));
  CHECK_OK(cubert_client_sync(e.client, NULL)); /* checked: nothing reported */
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  client_close(&e);
}

TEST(cuda_client_validate_reports_every_violation) { validate_body(0); }
TEST(cuda_gpu_client_validate_reports_every_violation) { validate_body(1); }

/* ---- memory --------------------------------------------------------------------------------- */

/* An allocation above what the GPU has: OUT_OF_MEMORY with the CUresult
 * kept (after one retry); the device keeps working. */
static void oom_body(int gpu) {
  client_env_t e;
  cubert_cuda_options_t o;
  cubert_cuda_device_info_t info;
  cubert_handle_t h;
  cubert_error_t err;
  uint8_t b[3] = {1, 2, 3}, out[3];
  uint64_t retries;
  cubert_cuda_options_initialize(&o);
  o.device.memory_size = (uint64_t)1 << 44; /* pages as large as asked */
  client_open(&e, gpu, &o);
  CHECK_OK(cubert_cuda_device_info(0, &info, NULL));
  retries = stats_of(e.client).alloc_retries;
  CHECK_STATUS(cubert_client_empty(e.client, info.total_memory * 2, &h, &err),
               CUBERT_STATUS_OUT_OF_MEMORY);
  CHECK(cubert_error_has_kind(&err, CUBERT_ERROR_IO_OUT_OF_MEMORY));
  CHECK_EQ_I64(err.driver_code, CUDA_ERROR_OUT_OF_MEMORY); /* the pools' report is the reason */
  CHECK(stats_of(e.client).alloc_retries > retries);
  CHECK_OK(cubert_client_create_from_slice(e.client, b, sizeof b, &h, NULL));
  CHECK_OK(cubert_client_read_one(e.client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[2], 3);
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  client_close(&e);
}

TEST(cuda_client_out_of_memory_is_reported) { oom_body(0); }
TEST(cuda_gpu_client_out_of_memory_is_reported) { oom_body(1); }

/* Memory freed on one stream but not yet given back (its free has not
 * completed: the fake defers it to the stream's next synchronize) is
 * reclaimed when another stream runs out: every stream is synchronized and
 * the allocation tried again. */
TEST(cuda_client_out_of_memory_reclaims_and_retries) {
  client_env_t e;
  cubert_cuda_options_t o;
  cubert_client_t *a = NULL, *b = NULL;
  cubert_handle_t h;
  fake_knob("CUBERT_FAKE_CUDA_MEMORY", "50331648"); /* 48 MiB */
  fake_knob("CUBERT_FAKE_CUDA_DEFER_FREES", "1");
  cubert_cuda_options_initialize(&o);
  o.device.max_streams = 4;
  o.device.memory_size = 32u << 20;
  client_open(&e, 0, &o);
  CHECK_OK(cubert_client_clone(e.client, &a, NULL));
  CHECK_OK(cubert_client_clone(e.client, &b, NULL));
  cubert_client_set_stream(a, 1);
  cubert_client_set_stream(b, 2);
  CHECK_OK(cubert_client_empty(a, 30u << 20, &h, NULL));
  CHECK_OK(cubert_client_handle_release(a, &h, NULL));
  CHECK_OK(cubert_client_memory_cleanup(a, NULL)); /* its pages go back on stream 1: deferred */
  CHECK_EQ_U64(stats_of(e.client).alloc_retries, 0);
  CHECK_OK(cubert_client_empty(b, 30u << 20, &h, NULL));
  CHECK_EQ_U64(stats_of(e.client).alloc_retries, 1);
  CHECK_OK(cubert_client_handle_release(b, &h, NULL));
  cubert_client_release(a);
  cubert_client_release(b);
  client_close(&e);
}

/* CUresults of work on the GPU come back mapped, raw code and name kept. */
TEST(cuda_client_errors_are_mapped) {
  client_env_t e;
  uint32_t data[4] = {1, 2, 3, 4}, out[4];
  uint64_t delta = 1;
  cubert_handle_t h;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_error_t err, first;
  client_open(&e, 0, NULL);
  CHECK_OK(cubert_client_create_from_slice(e.client, data, sizeof data, &h, NULL));
  args = args_of(&h, 1, &delta, 1);
  /* a launch refused by cuLaunchKernel: a stream error at the next flush */
  fake_knob("CUBERT_FAKE_CUDA_LAUNCH_RESULT", "701");
  CHECK_OK(cubert_client_launch(e.client, &ck_add_scalar_u32_kernel, &one, &args, NULL));
  fake_knob("CUBERT_FAKE_CUDA_LAUNCH_RESULT", "0");
  CHECK_STATUS(cubert_client_flush(e.client, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_OK(cubert_error_unhealthy_first(&err, &first));
  CHECK(cubert_error_has_kind(&first, CUBERT_ERROR_LAUNCH_TOO_MANY_RESOURCES));
  CHECK_EQ_I64(first.driver_code, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  CHECK_REASON_HAS(err, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"); /* the aggregate keeps the text */
  /* a copy the driver refuses: returned by the read itself */
  fake_knob("CUBERT_FAKE_CUDA_COPY_RESULT", "999");
  CHECK(cubert_client_read_one(e.client, &h, out, sizeof out, &err) != CUBERT_STATUS_OK);
  fake_knob("CUBERT_FAKE_CUDA_COPY_RESULT", "0");
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_IO_UNKNOWN);
  CHECK_EQ_I64(err.driver_code, CUDA_ERROR_UNKNOWN);
  CHECK_REASON_HAS(err, "CUDA_ERROR_UNKNOWN");
  /* the device works on */
  CHECK_OK(cubert_client_read_one(e.client, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[3], 4);
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  client_close(&e);
}

/* A wait with a deadline gives up (DEADLINE_EXCEEDED, the completion stays
 * pending) while the event is not complete, and a later wait finishes it
 * and copies the staged read out. */
TEST(cuda_client_wait_with_a_deadline) {
  client_env_t e;
  uint32_t data[64], out[64];
  cubert_handle_t h;
  cubert_completion_t done;
  void *dsts[1];
  uint64_t sizes[1];
  client_open(&e, 0, NULL);
  fill(data, 64, 3);
  CHECK_OK(cubert_client_create_from_slice(e.client, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_sync(e.client, NULL));
  fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", "1000000000"); /* never complete by polling */
  dsts[0] = out;
  sizes[0] = sizeof out;
  memset(out, 0, sizeof out);
  CHECK_OK(cubert_client_read_async(e.client, &h, 1, dsts, sizes, &done, NULL));
  CHECK_STATUS(cubert_completion_wait(&done, 2000000, NULL), CUBERT_STATUS_DEADLINE_EXCEEDED);
  CHECK_EQ_U64(mismatches(data, out, 64), 64); /* not copied out yet */
  CHECK_OK(cubert_completion_wait(&done, UINT64_MAX, NULL)); /* cuEventSynchronize */
  CHECK_EQ_U64(mismatches(data, out, 64), 0);
  fake_knob("CUBERT_FAKE_CUDA_EVENT_DELAY", "0");
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  client_close(&e);
}

/* ---- creation ------------------------------------------------------------------------------- */

TEST(cuda_client_create_refuses_bad_options) {
  cubert_cuda_options_t o;
  cubert_client_t *c = NULL, *cpu = NULL;
  cubert_cuda_client_stats_t st;
  cubert_error_t err;
  client_env_t e;
  client_open(&e, 0, NULL);
  CHECK_STATUS(cubert_cuda_client_create(e.allocator, NULL, NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cubert_cuda_options_initialize(&o);
  CHECK_STATUS(cubert_cuda_client_create(e.allocator, &o, &c, &err),
               CUBERT_STATUS_ALREADY_EXISTS); /* index 0 is taken */
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_SERVICE_CREATION);
  o.device.index = 1;
  o.device.max_streams = 300;
  CHECK_STATUS(cubert_cuda_client_create(e.allocator, &o, &c, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  o.device.max_streams = 0;
  o.profile_level = (cubert_profile_level_t)99;
  CHECK_STATUS(cubert_cuda_client_create(e.allocator, &o, &c, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  o.profile_level = CUBERT_PROFILE_LEVEL_OFF;
  o.ordinal = 3; /* the fake has one GPU */
  CHECK_STATUS(cubert_cuda_client_create(e.allocator, &o, &c, &err), CUBERT_STATUS_OUT_OF_RANGE);
  CHECK(c == NULL);
  /* counters and logs: only for CUDA devices */
  CHECK_STATUS(cubert_cuda_client_stats(NULL, &st), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cuda_client_stats(e.client, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_OK(cubert_cpu_client_create(e.allocator, NULL, &cpu, NULL));
  CHECK_STATUS(cubert_cuda_client_stats(cpu, &st), CUBERT_STATUS_NOT_FOUND);
  cubert_client_release(cpu);
  client_close(&e);
}

/* No driver: a clear "CUDA unavailable" error, and the CPU device works on. */
TEST(cuda_client_without_a_driver_is_unavailable) {
  cubert_client_t *c = NULL, *cpu = NULL;
  cubert_error_t err;
  fake_knob("CUBERT_LIBCUDA", "/nonexistent/libcuda.so.1");
  CHECK_STATUS(cubert_cuda_client_create(cubert_allocator_libc(), NULL, &c, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_SERVICE_CREATION);
  CHECK_MSG(strncmp(err.reason, "CUDA unavailable: ", 18) == 0, "%s", err.reason);
  CHECK(c == NULL);
  CHECK_OK(cubert_cpu_client_create(cubert_allocator_libc(), NULL, &cpu, NULL));
  cubert_client_release(cpu);
}

/* ---- a lost device ------------------------------------------------------------------------- */

static const char k_fault_ptx[] = "// fake\n.visible .entry fake_fault(\n)\n{\n}\n";

static void check_lost(cubert_status_t st, const cubert_error_t *err) {
  CHECK_STATUS(st, CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_MSG(strstr(err->reason, "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL, "%s", err->reason);
}

/* A kernel stores to an address no allocation holds: the fault surfaces at
 * the sync as DEVICE_LOST; every later call returns it at once; the device
 * goes away without hanging or leaking. As the driver does (seen on two
 * H200s), the sticky error loses the whole process's CUDA state: a device
 * on another GPU opened before reports the loss with the first cause (GPU
 * 0's), one opened after cannot be opened (UNAVAILABLE, the first cause);
 * a CPU device keeps working. */
static void check_first_cause(cubert_status_t st, const cubert_error_t *err) {
  check_lost(st, err);
  CHECK_MSG(strstr(err->reason, "CUDA device 0 lost first") != NULL, "%s", err->reason);
}

static void lost_body(int gpu) {
  client_env_t e;
  cubert_client_t *cpu = NULL, *other = NULL, *later = NULL;
  cubert_cpu_options_t co;
  cubert_cuda_options_t o;
  cubert_kernel_t fault;
  uint32_t data[4] = {1, 2, 3, 4}, out[4];
  uint64_t address = 16; /* nothing is mapped there */
  cubert_handle_t h, h2, ho;
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  cubert_error_t err;
  counting_allocator_t oc;
  cubert_allocator_t oa = counting_allocator_initialize(&oc);
  uint32_t gpus = 1;
  CUBERT_KERNEL_DESCRIPTOR(poke, cuda_test_poke_u32, 0, 1, 0, 1, 1, 1);
  if (!gpu) fake_knob("CUBERT_FAKE_CUDA_DEVICES", "2");
  client_open(&e, gpu, NULL);
  fault = poke;
  if (!gpu) { /* the fake's faulting kernel */
    fault.cuda_entry_name = "fake_fault";
    fault.cuda_image = k_fault_ptx;
    fault.cuda_image_size = sizeof k_fault_ptx;
  }
  CHECK_OK(cubert_cuda_device_count(&gpus, NULL));
  if (gpus > 1) { /* a device on GPU 1, working before the fault */
    cubert_cuda_options_initialize(&o);
    o.ordinal = 1;
    o.device.index = 1;
    CHECK_OK_E(cubert_cuda_client_create(oa, &o, &other, &err), err);
    CHECK_OK(cubert_client_create_from_slice(other, data, sizeof data, &ho, NULL));
    CHECK_OK(cubert_client_read_one(other, &ho, out, sizeof out, NULL));
    CHECK_EQ_U64(out[3], 4);
  }
  CHECK_OK(cubert_client_create_from_slice(e.client, data, sizeof data, &h, NULL));
  args = args_of(NULL, 0, &address, 1);
  CHECK_OK(cubert_client_launch(e.client, &fault, &one, &args, NULL)); /* fails later */
  check_lost(cubert_client_sync(e.client, &err), &err);
  CHECK_MSG(strstr(err.reason, "CUDA device 0 lost: ") == err.reason, "%s", err.reason);
  check_lost(cubert_client_sync(e.client, &err), &err);
  check_lost(cubert_client_read_one(e.client, &h, out, sizeof out, &err), &err);
  check_lost(cubert_client_create_from_slice(e.client, data, sizeof data, &h2, &err), &err);
  args = args_of(&h, 1, &address, 1);
  check_lost(cubert_client_launch(e.client, &ck_add_scalar_u32_kernel, &one, &args, &err), &err);
  check_lost(cubert_client_flush(e.client, &err), &err);
  CHECK_OK(cubert_client_handle_release(e.client, &h, NULL));
  client_close(&e); /* no hang, nothing leaked */
  if (gpus > 1) {
    /* GPU 1's device, open before: lost too, naming the first cause */
    check_first_cause(cubert_client_read_one(other, &ho, out, sizeof out, &err), &err);
    check_first_cause(cubert_client_sync(other, &err), &err);
    check_first_cause(cubert_client_create_from_slice(other, data, sizeof data, &h2, &err), &err);
    CHECK_OK(cubert_client_handle_release(other, &ho, NULL));
    cubert_client_release(other); /* no hang */
    CHECK_EQ_I64(oc.live_blocks, 0);
    /* a device opened after the loss: refused at once with the first cause */
    cubert_cuda_options_initialize(&o);
    o.ordinal = 1;
    o.device.index = 2;
    CHECK_STATUS(cubert_cuda_client_create(cubert_allocator_libc(), &o, &later, &err),
                 CUBERT_STATUS_UNAVAILABLE);
    CHECK(later == NULL);
    CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
    CHECK_MSG(strstr(err.reason, "CUDA device 1 cannot be opened: CUDA device 0 lost first") ==
              err.reason, "%s", err.reason);
    CHECK_MSG(strstr(err.reason, "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL, "%s", err.reason);
  }
  counting_allocator_destroy(&oc);
  /* a CPU device keeps working */
  cubert_cpu_options_initialize(&co);
  co.device.index = 7;
  CHECK_OK(cubert_cpu_client_create(cubert_allocator_libc(), &co, &cpu, NULL));
  CHECK_OK(cubert_client_create_from_slice(cpu, data, sizeof data, &h, NULL));
  CHECK_OK(cubert_client_read_one(cpu, &h, out, sizeof out, NULL));
  CHECK_EQ_U64(out[2], 3);
  CHECK_OK(cubert_client_handle_release(cpu, &h, NULL));
  cubert_client_release(cpu);
}

TEST(cuda_client_device_lost_after_an_illegal_address) { lost_body(0); }
TEST(cuda_gpu_client_device_lost_after_an_illegal_address) { lost_body(1); }

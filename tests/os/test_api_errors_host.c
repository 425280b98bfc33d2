/* SPDX-License-Identifier: MIT */
/* The error records of the hosted user-facing calls that gained out_error: client
 * load/clone and the client's handle calls, io_optimized_vector_sizes, the CPU device's
 * simulation and race-checker calls (and the server's), stream-id overrides and policy, the
 * host lock and the runner-thread handle. Each failure leaves its kind and a reason in
 * the record and changes nothing. */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/cubert.h"
#include "cubert/cpu.h"
#include "cubert/os.h"
#include "cubert/inline.h"
#include "cubert/driver/device.h"
#include "cubert/driver/server.h"

static cubert_error_t fresh(void) {
  cubert_error_t e;
  cubert_error_clear(&e);
  return e;
}

static cubert_client_t *cpu_client(cubert_allocator_t a, uint32_t index, uint32_t mode) {
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_error_t e = fresh();
  cubert_cpu_options_initialize(&o);
  o.device.index = index;
  o.workers = 1;
  o.device.max_streams = 2;
  o.mode = mode;
  CHECK_OK(cubert_cpu_client_create(a, &o, &client, &e));
  return client;
}

TEST(api_errors_client_load_and_clone) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_client_t *client = cpu_client(a, 40, CUBERT_CPU_MODE_THREADED);
  cubert_client_t *other = NULL;
  cubert_device_id_t missing = {CUBERT_CPU_DEVICE_TYPE, 41};
  cubert_error_t e = fresh();
  CHECK_STATUS(cubert_client_load(missing, &other, &e), CUBERT_STATUS_NOT_FOUND);
  CHECK_RECORD(e, CUBERT_ERROR_IO_NOT_FOUND, "no device registered");
  CHECK_STATUS(cubert_client_load(cubert_client_device(client), NULL, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_client is NULL");
  CHECK_STATUS(cubert_client_clone(NULL, &other, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "client is NULL");
  CHECK_STATUS(cubert_client_clone(client, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_client is NULL");
  CHECK(other == NULL);
  CHECK_OK(cubert_client_load(cubert_client_device(client), &other, &e));
  cubert_client_release(other);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(api_errors_client_handle_calls) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_client_t *client = cpu_client(a, 42, CUBERT_CPU_MODE_THREADED);
  cubert_handle_t h, clone, sub, foreign;
  uint32_t sizes[4];
  size_t count = 0;
  cubert_error_t e = fresh();
  CHECK_OK(cubert_client_empty(client, 64, &h, &e));
  foreign = h;
  foreign.device = h.device + 1;
  CHECK_STATUS(cubert_client_handle_release(NULL, &h, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "cubert_client_handle_release: client is NULL");
  CHECK_STATUS(cubert_client_handle_release(client, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "handle is NULL");
  CHECK_STATUS(cubert_client_handle_release(client, &foreign, &e),
               CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_RECORD(e, CUBERT_ERROR_DEVICE_MISMATCH, "belongs to another device");
  CHECK_STATUS(cubert_client_handle_clone(client, &h, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_handle is NULL");
  CHECK_STATUS(cubert_client_handle_offset(client, &h, 40, 40, &sub, &e),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_RECORD(e, CUBERT_ERROR_OUT_OF_RANGE, "exceed the handle's size");
  CHECK_EQ_U64(e.field[1], 64);
  CHECK_OK(cubert_client_handle_clone(client, &h, &clone, &e));
  CHECK_OK(cubert_client_handle_release(client, &clone, &e));
  CHECK_OK(cubert_client_handle_release(client, &h, &e));
  /* h is dead now: every call refuses it with INVALID_HANDLE */
  CHECK_STATUS(cubert_client_handle_release(client, &h, &e), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_HANDLE, "the handle is dead");
  CHECK_STATUS(cubert_client_handle_clone(client, &h, &clone, &e), CUBERT_STATUS_INVALID_HANDLE);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_HANDLE, "cubert_client_handle_clone: the handle is dead");
  CHECK_STATUS(cubert_client_handle_offset(client, &h, 1, 1, &sub, &e),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_HANDLE, "cubert_client_handle_offset: the handle is dead");
  CHECK_STATUS(cubert_client_io_optimized_vector_sizes(NULL, 4, sizes, 4, &count, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "client is NULL");
  CHECK_STATUS(cubert_client_io_optimized_vector_sizes(client, 0, sizes, 4, &count, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "elem_size is 0");
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(api_errors_cpu_sim_and_race_calls) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_client_t *threaded = cpu_client(a, 43, CUBERT_CPU_MODE_THREADED);
  cubert_client_t *inline_client = NULL;
  cubert_inline_options_t io;
  cubert_cpu_sim_info_t info;
  cubert_race_counters_t counters;
  cubert_race_report_t report;
  cubert_error_t e = fresh();
  cubert_inline_options_initialize(&io);
  io.device.index = 44;
  CHECK_OK(cubert_inline_client_create(a, &io, &inline_client, &e));
  CHECK_STATUS(cubert_cpu_sim_info(NULL, &info, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "cubert_cpu_sim_info: client is NULL");
  CHECK_STATUS(cubert_cpu_sim_info(threaded, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_info is NULL");
  CHECK_STATUS(cubert_cpu_sim_info(inline_client, &info, &e), CUBERT_STATUS_NOT_FOUND);
  CHECK_RECORD(e, CUBERT_ERROR_IO_NOT_FOUND, "not on a CPU device");
  CHECK_STATUS(cubert_cpu_sim_attach(threaded, NULL, &e), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_RECORD(e, CUBERT_ERROR_FAILED_PRECONDITION, "not in DETERMINISTIC mode");
  CHECK_STATUS(cubert_cpu_sim_drain(threaded, &e), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_RECORD(e, CUBERT_ERROR_FAILED_PRECONDITION, "cubert_cpu_sim_drain");
  CHECK_STATUS(cubert_cpu_race_counters(threaded, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_counters is NULL");
  CHECK_STATUS(cubert_cpu_race_counters(inline_client, &counters, &e), CUBERT_STATUS_NOT_FOUND);
  CHECK_RECORD(e, CUBERT_ERROR_IO_NOT_FOUND, "not on a CPU device");
  CHECK_STATUS(cubert_cpu_race_last_report(threaded, &report, &e), CUBERT_STATUS_NOT_FOUND);
  CHECK_RECORD(e, CUBERT_ERROR_IO_NOT_FOUND, "no race report");
  CHECK_STATUS(cubert_client_race_counters(NULL, &counters, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "cubert_client_race_counters: client is NULL");
  CHECK_STATUS(cubert_client_race_last_report(inline_client, NULL, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_report is NULL");
  CHECK_STATUS(cubert_client_race_seed(NULL, 1, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "cubert_client_race_seed: client is NULL");
  CHECK_OK(cubert_client_race_counters(inline_client, &counters, &e));
  cubert_client_release(inline_client);
  cubert_client_release(threaded);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

static void noop(void *user) { (void)user; }

TEST(api_errors_stream_id_overrides_and_policy) {
  cubert_stream_id_token_t outer, inner;
  cubert_error_t e = fresh();
  CHECK_STATUS(cubert_stream_id_executes_begin(cubert_stream_id_from_value(3), NULL, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_token is NULL");
  CHECK_STATUS(cubert_stream_id_executes_end(NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "token is NULL");
  CHECK_OK(cubert_stream_id_executes_begin(cubert_stream_id_from_value(3), &outer, &e));
  CHECK_OK(cubert_stream_id_executes_begin(cubert_stream_id_from_value(4), &inner, &e));
  CHECK_STATUS(cubert_stream_id_executes_end(&outer, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "not the calling thread's innermost");
  CHECK_EQ_U64(cubert_stream_id_current().value, 4); /* nothing changed */
  CHECK_OK(cubert_stream_id_executes_end(&inner, &e));
  CHECK_OK(cubert_stream_id_executes_end(&outer, &e));
  CHECK_STATUS(cubert_stream_id_executes_end(&outer, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "the token is not active");
  CHECK_STATUS(cubert_stream_id_executes(cubert_stream_id_from_value(1), NULL, NULL, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "fn is NULL");
  CHECK_OK(cubert_stream_id_executes(cubert_stream_id_from_value(1), noop, NULL, &e));
  CHECK_STATUS(cubert_stream_id_set_policy((cubert_stream_policy_t)9, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "unknown policy");
  CHECK_EQ_U64(e.field[0], 9);
  CHECK_EQ_U64(cubert_stream_id_policy(), CUBERT_STREAM_POLICY_PER_THREAD);
}

static void nothing_task(void *context, void *payload) {
  (void)context;
  (void)payload;
}

TEST(api_errors_host_lock_and_runner_handle) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_initialize(&c);
  cubert_lock_t lock;
  cubert_device_handle_t h;
  int context = 0;
  cubert_error_t e = fresh();
  CHECK_STATUS(cubert_os_lock_create(a, NULL, &e), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_lock is NULL");
  CHECK_STATUS(cubert_os_lock_create(cubert_allocator_null(), &lock, &e),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_RECORD(e, CUBERT_ERROR_HOST_OUT_OF_MEMORY, "allocator");
  CHECK_STATUS(cubert_device_handle_runner_create(a, &context, 0, NULL, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "out_handle is NULL");
  CHECK_STATUS(cubert_device_handle_runner_create(a, &context,
                                                  CUBERT_DEVICE_RUNNER_QUEUE_MAX + 1u, &h, &e),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_RECORD(e, CUBERT_ERROR_INVALID_ARGUMENT, "queue_capacity above");
  counting_allocator_fail_at(&c, 2, 0); /* the runner itself, then its slots */
  CHECK_STATUS(cubert_device_handle_runner_create(a, &context, 4, &h, &e),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  CHECK_RECORD(e, CUBERT_ERROR_HOST_OUT_OF_MEMORY, "allocator");
  CHECK_EQ_I64(c.live_blocks, 0); /* nothing left behind */
  CHECK_OK(cubert_device_handle_runner_create(a, &context, 4, &h, &e));
  CHECK_OK(h.vtable->submit_blocking(h.self, nothing_task, NULL));
  h.vtable->destroy(h.self);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

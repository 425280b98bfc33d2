/* The client's staging, profiling and persistent-window paths over a server
 * without staging / profiling / allocation modes, and over a device handle
 * that refuses every call (the fallbacks and error paths the CPU server
 * never takes). */
#include "test.h"
#include "counting_allocator.h"
#include "cubert/client.h"
#include "cubert/cube.h"
#include "cubert/kernel.h"

typedef struct fake_server_t {
  cubert_server_t base;
  int launches;
  int writes;
} fake_server_t;

static void fs_destroy(cubert_server_t *server) { (void)server; }

static cubert_status_t fs_properties(cubert_server_t *server, cubert_device_properties_t *out) {
  (void)server;
  memset(out, 0, sizeof(*out));
  out->memory.alignment = 8;
  return CUBERT_STATUS_OK;
}

static cubert_status_t fs_initialize(cubert_server_t *server, const cubert_handle_t *memory,
                                     uint64_t size, uint64_t stream, cubert_error_t *out_error) {
  (void)server;
  (void)memory;
  (void)size;
  (void)stream;
  (void)out_error;
  return CUBERT_STATUS_OK;
}

static cubert_status_t fs_write(cubert_server_t *server, const cubert_copy_descriptor_t *descs,
                                cubert_bytes_t *data, size_t count, uint64_t stream,
                                cubert_error_t *out_error) {
  size_t i;
  (void)descs;
  (void)stream;
  (void)out_error;
  ((fake_server_t *)server)->writes++;
  for (i = 0; i < count; i++)
    if (data[i].release) data[i].release(data[i].owner, data[i].data, data[i].size);
  return CUBERT_STATUS_OK;
}

static cubert_status_t fs_launch(cubert_server_t *server, const struct cubert_kernel_t *kernel,
                                 const struct cubert_cube_count_t *count,
                                 const cubert_launch_arguments_t *args,
                                 cubert_execution_mode_t execution, cubert_launch_mode_t mode,
                                 uint64_t stream, cubert_error_t *out_error) {
  (void)kernel;
  (void)count;
  (void)args;
  (void)execution;
  (void)mode;
  (void)stream;
  (void)out_error;
  ((fake_server_t *)server)->launches++;
  return CUBERT_STATUS_OK;
}

static const cubert_server_vtable_t g_fake_vtable = {
    "fake", false, fs_destroy, fs_properties, fs_initialize, NULL /* staging */, NULL, fs_write,
    NULL, NULL, fs_launch, NULL, NULL, NULL, NULL /* start_profile */, NULL /* end_profile */,
    NULL /* allocation_mode */, NULL, NULL, NULL, NULL, NULL};

static void no_lock(void *self) { (void)self; }

/* A device handle that refuses every call. */
static cubert_status_t refuse_submit(void *self, cubert_device_task_fn_t fn, const void *p,
                                     size_t n) {
  (void)self;
  (void)fn;
  (void)p;
  (void)n;
  return CUBERT_STATUS_UNAVAILABLE;
}
static cubert_status_t refuse_blocking(void *self, cubert_device_task_fn_t fn, void *p) {
  (void)self;
  (void)fn;
  (void)p;
  return CUBERT_STATUS_UNAVAILABLE;
}
static cubert_status_t refuse_exclusive(void *self, cubert_device_exclusive_fn_t fn, void *u) {
  (void)self;
  (void)fn;
  (void)u;
  return CUBERT_STATUS_UNAVAILABLE;
}
static cubert_status_t refuse_flush(void *self) {
  (void)self;
  return CUBERT_STATUS_UNAVAILABLE;
}
static bool refuse_is_blocking(const void *self) {
  (void)self;
  return true;
}
static void refuse_destroy(void *self) { (void)self; }

static const cubert_device_handle_vtable_t g_refusing = {refuse_submit,   refuse_blocking,
                                                         refuse_exclusive, refuse_flush,
                                                         refuse_is_blocking, refuse_destroy};

typedef struct sink_t {
  char text[1024];
  int calls;
} sink_t;

static void sink_fn(void *self, const char *text, size_t length) {
  sink_t *s = (sink_t *)self;
  s->calls++;
  if (length < sizeof s->text) memcpy(s->text, text, length + 1);
}

static cubert_status_t count_fn(void *user, cubert_error_t *err) {
  (void)err;
  (*(int *)user)++;
  return CUBERT_STATUS_OK;
}

static const cubert_kernel_t k_fake = {"fake_kernel", NULL, NULL, NULL, 0, 0, {1, 1, 1}, 0, 0, 0};

static cubert_status_t launch_once(cubert_client_t *client, cubert_error_t *err) {
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  memset(&args, 0, sizeof args);
  return cubert_client_launch(client, &k_fake, &count, &args, err);
}

static cubert_client_t *fake_client(cubert_allocator_t a, fake_server_t *server,
                                    cubert_device_handle_t handle, uint32_t index) {
  cubert_client_config_t config;
  cubert_client_t *client = NULL;
  memset(&config, 0, sizeof config);
  config.device.type_id = 77;
  config.device.index_id = index;
  config.max_handles = 64;
  config.layout_policy.kind = CUBERT_LAYOUT_POLICY_CONTIGUOUS;
  config.layout_policy.mem_alignment = 8;
  memset(server, 0, sizeof(*server));
  server->base.vtable = &g_fake_vtable;
  CHECK_OK(cubert_client_init(a, &config, &server->base, handle, &client, NULL));
  return client;
}

TEST(client_server_without_staging_or_profiling) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_init(&c);
  fake_server_t server;
  cubert_lock_t lock;
  cubert_device_handle_t handle;
  cubert_client_t *client;
  cubert_bytes_t b;
  cubert_profiling_token_t t;
  cubert_profile_duration_t d;
  cubert_error_t err;
  cubert_handle_t h;
  uint64_t size = 8;
  uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  static sink_t sink;
  int runs = 0;
  lock.self = NULL;
  lock.lock = no_lock;
  lock.unlock = no_lock;
  CHECK_OK(cubert_device_handle_direct_create(a, &server.base, lock, &handle));
  client = fake_client(a, &server, handle, 40);
  /* staging: the server has none -> plain host buffers; staging() no-op */
  CHECK_OK(cubert_client_reserve_staging(client, &size, 1, &b, NULL));
  CHECK_EQ_U64(b.property, CUBERT_ALLOCATION_NATIVE);
  CHECK_EQ_U64(b.size, 8);
  CHECK(b.release != NULL);
  {
    void *before = b.data;
    CHECK_OK(cubert_client_staging(client, &b, 1, false, NULL));
    CHECK(b.data == before);
  }
  b.release(b.owner, b.data, b.size);
  /* the pinned create variant falls back to host buffers and still uploads */
  CHECK_OK(cubert_client_create_from_slice_pinned(client, data, sizeof data, &h, NULL));
  CHECK_EQ_I64(server.writes, 1);
  CHECK_OK(cubert_client_handle_release(client, &h));
  /* profiling tokens: unsupported */
  CHECK_STATUS(cubert_client_profile_start(client, &t, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_IO_UNSUPPORTED_IO_OPERATION);
  t.id = 0;
  CHECK_STATUS(cubert_client_profile_end(client, t, &d, &err), CUBERT_STATUS_UNSUPPORTED);
  /* timed kernel profiling needs tokens: the launch fails, nothing runs */
  CHECK_OK(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_BASIC, sink_fn, &sink, NULL));
  CHECK_STATUS(launch_once(client, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_EQ_I64(server.launches, 0);
  /* execution-only needs no tokens */
  CHECK_OK(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_EXECUTION_ONLY, sink_fn, &sink,
                                       NULL));
  CHECK_OK(launch_once(client, NULL));
  CHECK_EQ_I64(server.launches, 1);
  CHECK_EQ_I64(sink.calls, 1);
  CHECK_EQ_STR(sink.text, "Executing fake_kernel\n");
  /* no allocation modes: the window still runs f */
  CHECK_OK(cubert_client_memory_persistent_allocation(client, count_fn, &runs, NULL));
  CHECK_EQ_I64(runs, 1);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

TEST(client_device_refusing_calls) {
  counting_allocator_t c;
  cubert_allocator_t a = counting_allocator_init(&c);
  fake_server_t server;
  cubert_device_handle_t handle;
  cubert_client_t *client;
  cubert_bytes_t b;
  cubert_profiling_token_t t;
  cubert_profile_duration_t d;
  cubert_error_t err;
  uint64_t size = 16;
  static sink_t sink;
  int runs = 0;
  handle.vtable = &g_refusing;
  handle.self = NULL;
  client = fake_client(a, &server, handle, 41);
  CHECK_STATUS(cubert_client_profile_start(client, &t, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  t.id = 0;
  CHECK_STATUS(cubert_client_profile_end(client, t, &d, &err), CUBERT_STATUS_UNAVAILABLE);
  /* reserve_staging still gives host buffers */
  CHECK_OK(cubert_client_reserve_staging(client, &size, 1, &b, NULL));
  CHECK_EQ_U64(b.property, CUBERT_ALLOCATION_NATIVE);
  b.release(b.owner, b.data, b.size);
  /* persistent window: the mode switch is refused, f does not run */
  CHECK_STATUS(cubert_client_memory_persistent_allocation(client, count_fn, &runs, &err),
               CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_EQ_I64(runs, 0);
  /* profiled launches report the refusal */
  CHECK_OK(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_BASIC, sink_fn, &sink, NULL));
  CHECK_STATUS(launch_once(client, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_U64(cubert_error_kind(&err), CUBERT_ERROR_DEVICE_LOST);
  CHECK_OK(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_EXECUTION_ONLY, sink_fn, &sink,
                                       NULL));
  CHECK_STATUS(launch_once(client, &err), CUBERT_STATUS_UNAVAILABLE);
  CHECK_EQ_I64(server.launches, 0);
  CHECK_EQ_I64(sink.calls, 0);
  cubert_client_release(client);
  CHECK_EQ_I64(c.live_blocks, 0);
  counting_allocator_destroy(&c);
}

/* SPDX-License-Identifier: MIT */
/* A call that returns OK leaves the caller's error record as it was
 * (cubert/cubert.h, "Status and errors"; issue 26): every public function
 * that takes a cubert_error_t is called here on its success path with a
 * record full of a sentinel, and the record is compared byte for byte. The
 * first upload and read of a new stream, the first reservation of a stream
 * (the pools' sizing query) and cubert_client_empty are among them. */
#include "test.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "counting_allocator.h"
#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/comm.h"
#include "cubert/os.h"
#include "cubert/inline.h"
#include "cubert/layout.h"
#include "cubert/memory.h"
#include "cubert/profile.h"
#include "cubert/sim.h"
#include "cubert/trace.h"
#include "cubert_kernels.h"

static cubert_error_t g_sentinel;
static int g_checked;

static void sentinel_initialize(void) {
  memset(&g_sentinel, 0x5A, sizeof g_sentinel);
  g_sentinel.status = CUBERT_STATUS_INTERNAL;
  g_sentinel.depth = 1;
  g_sentinel.chain[0] = (uint16_t)CUBERT_ERROR_SERVER_GENERIC;
  strcpy(g_sentinel.reason, "sentinel: a record the call must not write");
}

/* Run `call` (it passes &e) with e full of the sentinel: OK, e unchanged. */
#define UNTOUCHED(call)                                                                   \
  do {                                                                                    \
    int untouched_status_;                                                                \
    e = g_sentinel;                                                                       \
    untouched_status_ = (int)(call);                                                      \
    CHECK_MSG(untouched_status_ == 0, "%s: %s", #call, test_status_name(untouched_status_)); \
    CHECK_MSG(memcmp(&e, &g_sentinel, sizeof e) == 0, "%s left \"%s\" in the record", #call, \
              e.reason);                                                                  \
    g_checked++;                                                                          \
  } while (0)

static cubert_status_t nothing(void *user, cubert_error_t *out_error) {
  (void)user;
  (void)out_error;
  return CUBERT_STATUS_OK;
}

static void nothing_on_stream(void *user) { (void)user; }

typedef struct thread_arg_t {
  cubert_client_t *client;
  cubert_handle_t handle;
  int checked;
} thread_arg_t;

/* The first upload and read on a stream this thread creates. */
static void *new_stream_thread(void *p) {
  thread_arg_t *t = (thread_arg_t *)p;
  cubert_error_t e;
  cubert_handle_t h;
  uint8_t data[64] = {1}, out[256];
  UNTOUCHED(cubert_client_create_from_slice(t->client, data, sizeof data, &h, &e));
  UNTOUCHED(cubert_client_read_one(t->client, &t->handle, out, sizeof out, &e));
  UNTOUCHED(cubert_client_read_one(t->client, &h, out, sizeof data, &e));
  UNTOUCHED(cubert_client_handle_release(t->client, &h, &e));
  t->checked = 1;
  return NULL;
}

static void client_calls(cubert_client_t *client, cubert_client_t *other, int timed) {
  cubert_error_t e;
  cubert_handle_t h, h2, h3, clone, off, empty, out_h;
  cubert_memory_layout_t layout, layouts[2];
  cubert_layout_descriptor_t descs[2];
  cubert_copy_descriptor_t cd;
  cubert_completion_t completion;
  cubert_resource_t resource;
  cubert_memory_usage_t usage;
  cubert_profile_duration_t duration;
  cubert_profiling_token_t token;
  cubert_client_t *loaded = NULL, *cloned = NULL;
  cubert_bytes_t bytes, staged[1];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_handle_t abc[3];
  float fdata[64] = {1, 2, 3}, fout[64];
  const void *datas[2];
  void *dsts[2];
  uint64_t sizes[2], shape[2] = {4, 4}, staging_size = 64;
  uint32_t vsizes[8];
  size_t nv = 0;
  pthread_t thread;
  thread_arg_t targ;

  UNTOUCHED(cubert_client_create_from_slice(client, fdata, sizeof fdata, &h, &e));
  UNTOUCHED(cubert_client_empty(client, 4096, &empty, &e));
  UNTOUCHED(cubert_client_empty(client, 1u << 20, &h3, &e));
  UNTOUCHED(cubert_client_load(cubert_client_device(client), &loaded, &e));
  cubert_client_release(loaded);
  UNTOUCHED(cubert_client_clone(client, &cloned, &e));
  cubert_client_release(cloned);
  UNTOUCHED(cubert_client_handle_clone(client, &h, &clone, &e));
  UNTOUCHED(cubert_client_handle_offset(client, &h, 4, 4, &off, &e));
  bytes.data = fdata;
  bytes.size = sizeof fdata;
  bytes.property = CUBERT_ALLOCATION_NATIVE;
  bytes.owner = NULL;
  bytes.release = NULL;
  UNTOUCHED(cubert_client_create_from_bytes(client, bytes, &h2, &e));
  UNTOUCHED(cubert_client_create_tensor_from_slice(client, fdata, 2, shape, 4, &layout, &e));
  UNTOUCHED(cubert_client_handle_release(client, &layout.memory, &e));
  memset(descs, 0, sizeof descs);
  descs[0].strategy = descs[1].strategy = CUBERT_LAYOUT_OPTIMIZED;
  descs[0].rank = descs[1].rank = 2;
  descs[0].shape[0] = descs[1].shape[0] = 4;
  descs[0].shape[1] = descs[1].shape[1] = 4;
  descs[0].elem_size = descs[1].elem_size = 4;
  datas[0] = datas[1] = fdata;
  UNTOUCHED(cubert_client_create_tensors_from_slices(client, descs, datas, 2, layouts, &e));
  UNTOUCHED(cubert_client_handle_release(client, &layouts[0].memory, &e));
  UNTOUCHED(cubert_client_handle_release(client, &layouts[1].memory, &e));
  UNTOUCHED(cubert_client_create_tensors_from_slices_pinned(client, descs, datas, 2, layouts, &e));
  UNTOUCHED(cubert_client_handle_release(client, &layouts[0].memory, &e));
  UNTOUCHED(cubert_client_handle_release(client, &layouts[1].memory, &e));
  UNTOUCHED(cubert_client_empty_tensor(client, 2, shape, 4, &layout, &e));
  UNTOUCHED(cubert_client_handle_release(client, &layout.memory, &e));
  UNTOUCHED(cubert_client_empty_tensors(client, descs, 2, layouts, &e));
  UNTOUCHED(cubert_client_handle_release(client, &layouts[0].memory, &e));
  UNTOUCHED(cubert_client_handle_release(client, &layouts[1].memory, &e));
  UNTOUCHED(cubert_client_create_from_slice_pinned(client, fdata, sizeof fdata, &out_h, &e));
  UNTOUCHED(cubert_client_handle_release(client, &out_h, &e));
  UNTOUCHED(cubert_client_write(client, &h, fdata, sizeof fdata, &e));
  UNTOUCHED(cubert_client_reserve_staging(client, &staging_size, 1, staged, &e));
  UNTOUCHED(cubert_client_staging(client, staged, 1, false, &e));
  if (staged[0].release) staged[0].release(staged[0].owner, staged[0].data, staged[0].size);
  /* reads */
  UNTOUCHED(cubert_client_read_one(client, &h, fout, sizeof fout, &e));
  dsts[0] = fout;
  sizes[0] = sizeof fout;
  UNTOUCHED(cubert_client_read(client, &h, 1, dsts, sizes, &e));
  UNTOUCHED(cubert_client_read_async(client, &h, 1, dsts, sizes, &completion, &e));
  UNTOUCHED(cubert_completion_wait(&completion, UINT64_MAX, &e));
  memset(&cd, 0, sizeof cd);
  cd.binding = h;
  cd.rank = 1;
  cd.shape[0] = 64;
  cd.strides[0] = 1;
  cd.elem_size = 4;
  UNTOUCHED(cubert_client_read_tensor(client, &cd, 1, dsts, sizes, &e));
  UNTOUCHED(cubert_client_read_tensor_async(client, &cd, 1, dsts, sizes, &completion, &e));
  UNTOUCHED(cubert_completion_wait(&completion, UINT64_MAX, &e));
  UNTOUCHED(cubert_client_read_one_tensor_async(client, &cd, fout, sizeof fout, &completion, &e));
  UNTOUCHED(cubert_completion_wait(&completion, UINT64_MAX, &e));
  UNTOUCHED(cubert_client_get_resource(client, &h, &resource, &e));
  /* launches, syncs */
  abc[0] = h;
  abc[1] = h;
  abc[2] = empty;
  memset(&args, 0, sizeof args);
  cubert_launch_arguments_initialize(&args);
  args.buffers = abc;
  args.buffer_count = 3;
  UNTOUCHED(cubert_client_launch(client, &ck_add_f32_kernel, &count, &args, &e));
  UNTOUCHED(cubert_client_launch_unchecked(client, &ck_add_f32_kernel, &count, &args, &e));
  UNTOUCHED(cubert_client_flush(client, &e));
  UNTOUCHED(cubert_client_sync(client, &e));
  UNTOUCHED(cubert_client_sync_async(client, &completion, &e));
  UNTOUCHED(cubert_completion_wait(&completion, UINT64_MAX, &e));
  UNTOUCHED(cubert_client_exclusive(client, nothing, NULL, &e));
  if (timed) { /* the inline driver has no clock */
    UNTOUCHED(cubert_client_profile(client, nothing, NULL, "nothing", &duration, &e));
    UNTOUCHED(cubert_client_profile_start(client, &token, &e));
    UNTOUCHED(cubert_client_profile_end(client, token, &duration, &e));
  }
  UNTOUCHED(cubert_client_set_profiling(client, CUBERT_PROFILE_LEVEL_OFF, NULL, NULL, &e));
  UNTOUCHED(cubert_client_memory_usage(client, &usage, &e));
  UNTOUCHED(cubert_client_allocation_mode(client, CUBERT_MEMORY_ALLOCATION_MODE_AUTO, &e));
  UNTOUCHED(cubert_client_memory_persistent_allocation(client, nothing, NULL, &e));
  UNTOUCHED(cubert_client_io_optimized_vector_sizes(client, 4, vsizes, 8, &nv, &e));
  if (other) { /* between two devices of one type */
    UNTOUCHED(cubert_client_to_client(client, &h, other, 0, &out_h, &e));
    UNTOUCHED(cubert_client_handle_release(other, &out_h, &e));
    UNTOUCHED(cubert_client_to_client_tensor(client, &cd, other, 0, &out_h, &e));
    UNTOUCHED(cubert_client_handle_release(other, &out_h, &e));
    UNTOUCHED(cubert_client_change_client_sync(client, &cd, other, &layout, &e));
    UNTOUCHED(cubert_client_handle_release(other, &layout.memory, &e));
  }
  /* a new stream: its first upload and read */
  targ.client = client;
  targ.handle = h;
  targ.checked = 0;
  CHECK(pthread_create(&thread, NULL, new_stream_thread, &targ) == 0);
  CHECK(pthread_join(thread, NULL) == 0);
  CHECK(targ.checked);
  UNTOUCHED(cubert_client_handle_release(client, &off, &e));
  UNTOUCHED(cubert_client_handle_release(client, &clone, &e));
  UNTOUCHED(cubert_client_handle_release(client, &h2, &e));
  UNTOUCHED(cubert_client_handle_release(client, &h3, &e));
  UNTOUCHED(cubert_client_handle_release(client, &empty, &e));
  UNTOUCHED(cubert_client_handle_release(client, &h, &e));
  UNTOUCHED(cubert_client_memory_cleanup(client, &e));
}

TEST(record_untouched_by_every_successful_call) {
  counting_allocator_t counting;
  cubert_allocator_t a = counting_allocator_initialize(&counting);
  cubert_error_t e;
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL, *other = NULL, *inl = NULL;
  int before;
  sentinel_initialize();
  g_checked = 0;
  cubert_cpu_options_initialize(&o);
  o.device.index = 20;
  o.workers = 1;
  UNTOUCHED(cubert_cpu_client_create(a, &o, &client, &e));
  o.device.index = 21;
  UNTOUCHED(cubert_cpu_client_create(a, &o, &other, &e));
  client_calls(client, other, 1);
  {
    cubert_inline_options_t io;
    cubert_inline_options_initialize(&io);
    io.device.index = 22;
    UNTOUCHED(cubert_inline_client_create(a, &io, &inl, &e));
    before = g_checked;
    client_calls(inl, NULL, 0);
    CHECK(g_checked > before);
    cubert_client_release(inl);
  }
  cubert_client_release(other);
  cubert_client_release(client);
  CHECK_EQ_I64(counting.live_blocks, 0);
  CHECK_EQ_I64(counting.live_bytes, 0);
  counting_allocator_destroy(&counting);
  CHECK_MSG(g_checked >= 120, "%d calls checked", g_checked);
}

/* The CPU device's own functions: simulation, race checker; the trace. */
TEST(record_untouched_by_cpu_and_trace_calls) {
  counting_allocator_t counting;
  cubert_allocator_t a = counting_allocator_initialize(&counting);
  cubert_error_t e;
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL;
  cubert_cpu_sim_info_t info;
  cubert_sim_chooser_t chooser;
  uint32_t log[64];
  cubert_handle_t h;
  float data[16] = {1}, out[16];
  cubert_trace_options_t topts;
  cubert_trace_stats_t stats;
  char path[64];
  sentinel_initialize();
  g_checked = 0;
  cubert_cpu_options_initialize(&o);
  o.device.index = 24;
  o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  o.device.race_check = (cubert_config_features() & CUBERT_FEATURE_RACE_CHECKER) ? 1u : 0u;
  UNTOUCHED(cubert_cpu_client_create(a, &o, &client, &e));
  UNTOUCHED(cubert_cpu_sim_info(client, &info, &e));
  UNTOUCHED(cubert_sim_chooser_initialize_seed(&chooser, 11, log, 64, &e));
  UNTOUCHED(cubert_cpu_sim_attach(client, &chooser, &e));
  UNTOUCHED(cubert_client_create_from_slice(client, data, sizeof data, &h, &e));
  UNTOUCHED(cubert_client_read_one(client, &h, out, sizeof out, &e));
  UNTOUCHED(cubert_cpu_sim_drain(client, &e));
  if (o.device.race_check) {
    cubert_race_counters_t counters;
    UNTOUCHED(cubert_cpu_race_counters(client, &counters, &e));
  }
  UNTOUCHED(cubert_client_handle_release(client, &h, &e));
  cubert_client_release(client);
  CHECK_EQ_I64(counting.live_blocks, 0);
  counting_allocator_destroy(&counting);
  snprintf(path, sizeof path, "/tmp/cubert-record-untouched-%ld.json", (long)getpid());
  cubert_trace_options_initialize(&topts);
  topts.path = path;
  UNTOUCHED(cubert_trace_start(&topts, &e));
  UNTOUCHED(cubert_trace_stop(&stats, &e));
  remove(path);
  CHECK(g_checked >= 10);
}

/* The functions outside the client. */
TEST(record_untouched_by_successful_pure_calls) {
  cubert_error_t e;
  cubert_allocator_t libc = cubert_allocator_libc(), arena_alloc;
  cubert_arena_t arena;
  static uint8_t arena_buffer[4096];
  void *p = NULL;
  char text[64];
  size_t len = 0;
  cubert_dim3_t max = {65535, 65535, 65535}, counts;
  cubert_cube_count_selection_t selection;
  cubert_cube_count_t count = cubert_cube_count_new_3d(2, 3, 4);
  cubert_cube_dim_t dim = cubert_cube_dim_new_2d(4, 4);
  uint64_t n = 0, align = 0, id = 0;
  uint32_t vsizes[8];
  size_t nv = 0;
  cubert_device_properties_t props;
  cubert_layout_policy_t policy;
  cubert_layout_descriptor_t desc;
  cubert_layout_t layout;
  cubert_copy_plan_t plan;
  uint64_t shape[2] = {4, 4}, strides[2] = {4, 1};
  cubert_memory_configuration_t config = cubert_memory_configuration_default(false), resolved;
  cubert_memory_pools_config_t pools_config;
  cubert_memory_pool_options_t pools[32];
  cubert_memory_device_properties_t mprops;
  uint32_t npools = 0;
  cubert_profile_summary_t *summary = NULL;
  uint64_t dur = 0, cnt = 0;
  cubert_sim_chooser_t chooser;
  cubert_sim_explorer_t explorer;
  uint32_t log[16], choice[16], arity[16];
  static const uint32_t choices[2] = {0, 0};
  static const uint8_t chooser_bytes[2] = {1, 2};
  cubert_stream_id_token_t token;
  cubert_lock_t lock;
  cubert_device_id_t devices[2];
  sentinel_initialize();
  g_checked = 0;
  /* allocator.h */
  UNTOUCHED(cubert_allocator_malloc(libc, 64, 16, &p, &e));
  UNTOUCHED(cubert_allocator_realloc(libc, p, 64, 128, 16, &p, &e));
  cubert_allocator_free(libc, p, 128, 16);
  UNTOUCHED(cubert_allocator_malloc_array(libc, 4, 16, 0, &p, &e));
  cubert_allocator_free(libc, p, 64, 0);
  UNTOUCHED(cubert_arena_initialize(&arena, arena_buffer, sizeof arena_buffer, &arena_alloc, &e));
  /* cube.h */
  UNTOUCHED(cubert_cube_count_format(&count, text, sizeof text, &len, &e));
  UNTOUCHED(cubert_cube_count_spread(max, 1000, &counts, &e));
  UNTOUCHED(cubert_cube_count_selection_new(max, 1000, &selection, &e));
  UNTOUCHED(cubert_calculate_cube_count_elemwise(max, 1000, dim, &count, &e));
  UNTOUCHED(cubert_cube_dim_num_elems(dim, &n, &e));
  memset(&props, 0, sizeof props);
  props.hardware.max_units_per_cube = 1024;
  props.hardware.max_cube_dim.x = props.hardware.max_cube_dim.y = 1024;
  props.hardware.max_cube_dim.z = 64;
  props.hardware.plane_size_max = 32;
  props.hardware.load_width = 128;
  props.hardware.max_vector_size = 16;
  UNTOUCHED(cubert_cube_dim_new(&props.hardware, 4096, &dim, &e));
  UNTOUCHED(cubert_io_optimized_vector_sizes_from_limits(16, 128, 4, vsizes, 8, &nv, &e));
  UNTOUCHED(cubert_io_optimized_vector_sizes(&props.hardware, 4, vsizes, 8, &nv, &e));
  /* layout.h */
  UNTOUCHED(cubert_layout_optimal_align(64, 4, 512, &align, &e));
  policy.kind = CUBERT_LAYOUT_POLICY_PITCHED;
  policy.mem_alignment = 512;
  memset(&desc, 0, sizeof desc);
  desc.strategy = CUBERT_LAYOUT_OPTIMIZED;
  desc.rank = 2;
  desc.shape[0] = desc.shape[1] = 4;
  desc.elem_size = 4;
  UNTOUCHED(cubert_layout_policy_apply(&policy, &desc, 1, &layout, &n, &e));
  UNTOUCHED(cubert_copy_plan(2, shape, strides, 4, &plan, &e));
  /* memory.h: the sizing query (capacity 0) answers OUT_OF_RANGE, not OK */
  mprops.max_page_size = (uint64_t)1 << 30;
  mprops.alignment = 8;
  UNTOUCHED(cubert_memory_configuration_pools(&config, mprops, pools, 32, &npools, &e));
  memset(&pools_config, 0, sizeof pools_config);
  pools_config.kind = CUBERT_MEMORY_POOLS_PRESET_SUB_SLICES;
  UNTOUCHED(cubert_memory_configuration_resolve(&config, &pools_config, mprops, false, pools, 32,
                                                &resolved, &e));
  /* profile.h */
  UNTOUCHED(cubert_profile_summary_create(libc, CUBERT_PROFILE_LEVEL_BASIC, 8, 256, &summary, &e));
  UNTOUCHED(cubert_profile_summary_record(summary, "k", 100, &e));
  UNTOUCHED(cubert_profile_summary_lookup(summary, "k", &dur, &cnt, &e));
  cubert_profile_summary_destroy(summary);
  /* sim.h */
  UNTOUCHED(cubert_sim_chooser_initialize_seed(&chooser, 7, log, 16, &e));
  UNTOUCHED(cubert_sim_chooser_initialize_replay(&chooser, choices, 2, log, 16, &e));
  UNTOUCHED(cubert_sim_chooser_initialize_bytes(&chooser, chooser_bytes, 2, log, 16, &e));
  UNTOUCHED(cubert_sim_chooser_initialize_pct(&chooser, 7, 2, 100, log, 16, &e));
  UNTOUCHED(cubert_sim_explorer_initialize(&explorer, choice, arity, 16, &e));
  UNTOUCHED(cubert_sim_chooser_initialize_explore(&chooser, &explorer, log, 16, &e));
  /* host.h */
  UNTOUCHED(cubert_stream_id_executes_begin(cubert_stream_id_allocate(), &token, &e));
  UNTOUCHED(cubert_stream_id_executes_end(&token, &e));
  UNTOUCHED(cubert_stream_id_executes(cubert_stream_id_allocate(), nothing_on_stream, NULL, &e));
  UNTOUCHED(cubert_stream_id_set_policy(cubert_stream_id_policy(), &e));
  UNTOUCHED(cubert_os_lock_create(libc, &lock, &e));
  cubert_os_lock_destroy(lock);
  UNTOUCHED(cubert_log_set_level(cubert_log_level(), &e));
  /* comm.h */
  devices[0].type_id = devices[1].type_id = 1;
  devices[0].index_id = 0;
  devices[1].index_id = 1;
  UNTOUCHED(cubert_communication_id(devices, 2, &id, &e));
  CHECK(g_checked >= 30);
}

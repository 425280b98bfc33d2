/* SPDX-License-Identifier: MIT */
/* tools/cubert-info: every device's properties (like deviceQuery / clinfo)
 * and its memory pool layout.
 *
 *   cubert-info [-n DEVICES] [-w WORKERS] [-m MEMORY_BYTES]
 *
 * Creates DEVICES CPU devices (default 1) and prints, for each registered
 * device: identity, features, hardware limits, memory properties, timing
 * method, the io-optimized vector sizes, the dynamic memory pools its memory
 * manager uses, and its memory usage. In a CUDA=1 build it then lists the
 * CUDA devices with their properties, or prints the one line
 * "CUDA: unavailable: <reason>" (no driver, no GPU, ...), which is not an
 * error. Exit status 0, 1 on an error, 2 on a bad option; -h / --help
 * prints the usage on stdout (exit 0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cubert/client.h"
#include "cubert/cpu.h"
#include "cubert/os.h"
#include "cubert/kernel.h"
#include "cubert/memory.h"
#if defined(CUBERT_HAVE_BACKEND_CUDA)
#include "cubert/cuda.h"
#endif

#define MAX_DEVICES 64
#define MAX_POOLS 256

static const struct {
  uint64_t bit;
  const char *name;
} k_features[] = {
    {CUBERT_FEATURE_DYNAMIC_CUBE_COUNT, "dynamic-cube-count"},
    {CUBERT_FEATURE_SHARED_MEMORY, "shared-memory"},
    {CUBERT_FEATURE_CHECKED_EXECUTION, "checked-execution"},
    {CUBERT_FEATURE_UNALIGNED_IO, "unaligned-io"},
    {CUBERT_FEATURE_COLLECTIVES, "collectives"},
    {CUBERT_FEATURE_STAGING, "staging"},
    {CUBERT_FEATURE_PLANE, "plane"},
};

static const char *bytes_text(uint64_t bytes, char *buf, size_t size) {
  (void)cubert_memory_bytes_format(bytes, buf, size);
  return buf;
}

static const char *opt_u64(uint64_t v, char *buf, size_t size) {
  if (v == CUBERT_MEMORY_NONE) snprintf(buf, size, "none");
  else (void)cubert_memory_bytes_format(v, buf, size);
  return buf;
}

static void print_pools(const cubert_device_properties_t *p) {
  cubert_memory_configuration_t config = cubert_memory_configuration_default(false);
  cubert_memory_pool_options_t pools[MAX_POOLS];
  uint32_t count = 0, i;
  cubert_error_t err;
  char a[32], b[32], c[32], msg[256];
  if (cubert_memory_configuration_pools(&config, p->memory, pools, MAX_POOLS, &count, &err) !=
      CUBERT_STATUS_OK) {
    cubert_error_format(&err, msg, sizeof msg);
    printf("  Memory pools:                       unavailable (%s)\n", msg);
    return;
  }
  printf("  Memory pools (SubSlices preset):    %u dynamic + 1 persistent\n", (unsigned)count);
  printf("    %-4s %-10s %-12s %-14s %-12s\n", "#", "type", "page size", "max slice", "max pool");
  for (i = 0; i < count; i++) {
    const cubert_memory_pool_options_t *o = &pools[i];
    switch (o->type) {
      case CUBERT_MEMORY_POOL_SLICED:
        printf("    %-4u %-10s %-12s %-14s %-12s\n", (unsigned)i, "sliced",
               bytes_text(o->page_size, a, sizeof a), opt_u64(o->max_slice_size, b, sizeof b),
               opt_u64(o->max_pool_size, c, sizeof c));
        break;
      case CUBERT_MEMORY_POOL_EXCLUSIVE:
        if (o->max_alloc_size == 0) {
          printf("    %-4u %-10s zero-size allocations\n", (unsigned)i, "exclusive");
          break;
        }
        printf("    %-4u %-10s one page per allocation, up to %s\n", (unsigned)i, "exclusive",
               bytes_text(o->max_alloc_size, a, sizeof a));
        break;
      case CUBERT_MEMORY_POOL_DIRECT:
      default:
        printf("    %-4u %-10s reclaim at %s\n", (unsigned)i, "direct",
               opt_u64(o->reclaim_at, a, sizeof a));
        break;
    }
  }
  printf("    %-4s %-10s exact-fit slices, released by explicit cleanups only\n", "255",
         "persistent");
}

static int print_device(cubert_device_id_t id) {
  cubert_client_t *client = NULL;
  cubert_device_properties_t p;
  const cubert_hardware_properties_t *hw = &p.hardware;
  cubert_memory_usage_t usage;
  uint32_t sizes[16];
  size_t nsizes = 0, i;
  uint64_t features;
  char a[32];
  if (cubert_client_load(id, &client, NULL) != CUBERT_STATUS_OK) {
    fprintf(stderr, "cubert-info: cannot load device %u:%u\n", (unsigned)id.type_id,
            (unsigned)id.index_id);
    return 1;
  }
  cubert_client_properties(client, &p);
  features = cubert_client_features(client);
  printf("Device %u:%u \"%s\"\n", (unsigned)id.type_id, (unsigned)id.index_id, p.name);
  printf("  Features:                           ");
  for (i = 0; i < sizeof k_features / sizeof k_features[0]; i++)
    if (features & k_features[i].bit) printf("%s ", k_features[i].name);
  printf("\n");
  printf("  Timing method:                      %s\n",
         p.timing_method == CUBERT_TIMING_DEVICE ? "device" : "system (host clock around syncs)");
  printf("  Kernel profiling level:             %s\n",
         cubert_profile_level_name(cubert_client_profiling_level(client)));
  printf("  Load width:                         %u bits\n", (unsigned)hw->load_width);
  printf("  Plane size (min, max):              %u, %u\n", (unsigned)hw->plane_size_min,
         (unsigned)hw->plane_size_max);
  printf("  Max buffers per kernel:             %u (+ 1 binding for a dynamic cube count)\n",
         (unsigned)CUBERT_KERNEL_MAX_BUFFERS);
  printf("  Max shared memory per cube:         %s\n",
         bytes_text(hw->max_shared_memory_size, a, sizeof a));
  printf("  Max units per cube:                 %u\n", (unsigned)hw->max_units_per_cube);
  printf("  Max cube dim (x, y, z):             (%u, %u, %u)\n", (unsigned)hw->max_cube_dim.x,
         (unsigned)hw->max_cube_dim.y, (unsigned)hw->max_cube_dim.z);
  printf("  Max cube count (x, y, z):           (%u, %u, %u)\n", (unsigned)hw->max_cube_count.x,
         (unsigned)hw->max_cube_count.y, (unsigned)hw->max_cube_count.z);
  printf("  Streaming multiprocessors:          %u\n",
         (unsigned)hw->num_streaming_multiprocessors);
  printf("  CPU cores:                          %u\n", (unsigned)hw->num_cpu_cores);
  if (hw->max_vector_size == UINT64_MAX)
    printf("  Max vector size:                    unbounded\n");
  else
    printf("  Max vector size:                    %llu\n", (unsigned long long)hw->max_vector_size);
  if (cubert_client_io_optimized_vector_sizes(client, 4, sizes, 16, &nsizes,
                                              NULL) == CUBERT_STATUS_OK) {
    printf("  IO-optimized vector sizes (f32):    ");
    for (i = 0; i < nsizes && i < 16; i++) printf("%u ", (unsigned)sizes[i]);
    printf("\n");
  }
  printf("  Max page size:                      %s\n",
         bytes_text(p.memory.max_page_size, a, sizeof a));
  printf("  Memory alignment:                   %llu bytes\n",
         (unsigned long long)p.memory.alignment);
  print_pools(&p);
  if (cubert_client_memory_usage(client, &usage, NULL) == CUBERT_STATUS_OK) {
    printf("  Memory usage:                       %llu allocation(s), %s in use, ",
           (unsigned long long)usage.number_allocs, bytes_text(usage.bytes_in_use, a, sizeof a));
    printf("%s reserved\n", bytes_text(usage.bytes_reserved, a, sizeof a));
  }
  cubert_client_release(client);
  return 0;
}

#if defined(CUBERT_HAVE_BACKEND_CUDA)
/* The CUDA devices (cubert/cuda.h), after the CPU ones. */
static int print_cuda_devices(void) {
  static const char prefix[] = "CUDA unavailable: ";
  cubert_error_t err;
  uint32_t n = 0, i;
  int rc = 0;
  char a[32];
  if (cubert_cuda_device_count(&n, &err) != CUBERT_STATUS_OK) {
    const char *reason = err.reason;
    if (strncmp(reason, prefix, sizeof prefix - 1) == 0) reason += sizeof prefix - 1;
    printf("CUDA: unavailable: %s\n", reason);
    return 0;
  }
  printf("CUDA: %u device(s)\n\n", (unsigned)n);
  for (i = 0; i < n; i++) {
    cubert_cuda_device_info_t info;
    const cubert_hardware_properties_t *hw = &info.properties.hardware;
    if (cubert_cuda_device_info(i, &info, &err) != CUBERT_STATUS_OK) {
      fprintf(stderr, "cubert-info: CUDA device %u: %s\n", (unsigned)i, err.reason);
      rc = 1;
      continue;
    }
    printf("CUDA device %u \"%s\"\n", (unsigned)i, info.properties.name);
    printf("  Compute capability:                 %u.%u\n", (unsigned)info.compute_major,
           (unsigned)info.compute_minor);
    printf("  Driver version:                     %d.%d\n", info.driver_version / 1000,
           info.driver_version % 1000 / 10);
    printf("  PCI bus id:                         %s\n", info.pci_bus_id[0] ? info.pci_bus_id : "?");
    printf("  Global memory:                      %s\n", bytes_text(info.total_memory, a, sizeof a));
    printf("  Streaming multiprocessors:          %u\n",
           (unsigned)hw->num_streaming_multiprocessors);
    printf("  SM clock / memory clock:            %u MHz / %u MHz\n",
           (unsigned)(info.clock_khz / 1000), (unsigned)(info.memory_clock_khz / 1000));
    printf("  Memory bus width:                   %u bits\n", (unsigned)info.memory_bus_width);
    printf("  L2 cache:                           %s\n", bytes_text(info.l2_cache_bytes, a, sizeof a));
    printf("  Plane (warp) size:                  %u\n", (unsigned)hw->plane_size_max);
    printf("  Max units per cube:                 %u\n", (unsigned)hw->max_units_per_cube);
    printf("  Max cube dim (x, y, z):             (%u, %u, %u)\n", (unsigned)hw->max_cube_dim.x,
           (unsigned)hw->max_cube_dim.y, (unsigned)hw->max_cube_dim.z);
    printf("  Max cube count (x, y, z):           (%u, %u, %u)\n", (unsigned)hw->max_cube_count.x,
           (unsigned)hw->max_cube_count.y, (unsigned)hw->max_cube_count.z);
    printf("  Max shared memory per cube:         %s (opt-in; ",
           bytes_text(hw->max_shared_memory_size, a, sizeof a));
    printf("%s by default)\n", bytes_text(info.max_shared_memory_per_block, a, sizeof a));
    printf("  Registers per cube:                 %u\n", (unsigned)info.registers_per_block);
    printf("  Stream-ordered allocation:          %s\n",
           info.async_alloc ? "yes (cuMemAllocAsync)" : "no (cuMemAlloc)");
    printf("  Max page size:                      %s\n",
           bytes_text(info.properties.memory.max_page_size, a, sizeof a));
    printf("  Memory alignment:                   %llu bytes\n",
           (unsigned long long)info.properties.memory.alignment);
    print_pools(&info.properties);
    printf("\n");
  }
  return rc;
}
#endif

static int parse_u64(const char *s, uint64_t *out) {
  char *end = NULL;
  unsigned long long v;
  if (!s || !*s) return 0;
  v = strtoull(s, &end, 10);
  if (!end || *end) return 0;
  *out = v;
  return 1;
}

static void usage(FILE *to) {
  fprintf(to,
          "usage: cubert-info [-n DEVICES] [-w WORKERS] [-m MEMORY_BYTES] [-h|--help]\n"
          "Creates DEVICES CPU devices (1..%d, default 1) and prints each registered device's\n"
          "properties, memory pool layout and memory usage (sizes in KiB/MiB/GiB); a CUDA=1\n"
          "build then lists the CUDA devices.\n"
          "  -n DEVICES      CPU devices to create\n"
          "  -w WORKERS      kernel worker threads per CPU device (0..1024; 0: online CPUs - 1)\n"
          "  -m MEMORY_BYTES memory size of each CPU device\n"
          "Exit status: 0, 1 on an error, 2 on a bad option.\n",
          MAX_DEVICES);
}

int main(int argc, char **argv) {
  uint64_t devices = 1, workers = 0, memory = 0;
  cubert_client_t *clients[MAX_DEVICES];
  cubert_device_id_t ids[MAX_DEVICES];
  size_t n, i;
  uint64_t d;
  int argi, rc = 0;
  for (argi = 1; argi < argc; argi += 2) {
    uint64_t *target = NULL;
    if (!strcmp(argv[argi], "-h") || !strcmp(argv[argi], "--help")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(argv[argi], "-n")) target = &devices;
    else if (!strcmp(argv[argi], "-w")) target = &workers;
    else if (!strcmp(argv[argi], "-m")) target = &memory;
    if (!target || argi + 1 >= argc || !parse_u64(argv[argi + 1], target)) {
      fprintf(stderr, "cubert-info: bad option '%s'\n", argv[argi]);
      usage(stderr);
      return 2;
    }
  }
  if (devices < 1 || devices > MAX_DEVICES || workers > 1024) {
    fprintf(stderr, "cubert-info: -n must be 1..%d and -w at most 1024\n", MAX_DEVICES);
    return 2;
  }
  for (d = 0; d < devices; d++) {
    cubert_cpu_options_t o;
    cubert_error_t err;
    char msg[256];
    cubert_cpu_options_initialize(&o);
    o.device.index = (uint32_t)d;
    o.workers = (uint32_t)workers;
    if (memory) o.device.memory_size = memory;
    if (cubert_cpu_client_create(cubert_allocator_libc(), &o, &clients[d], &err) !=
        CUBERT_STATUS_OK) {
      cubert_error_format(&err, msg, sizeof msg);
      fprintf(stderr, "cubert-info: cannot create CPU device %llu: %s\n", (unsigned long long)d,
              msg);
      while (d-- > 0) cubert_client_release(clients[d]);
      return 1;
    }
  }
  n = cubert_client_enumerate_devices(UINT16_MAX, ids, MAX_DEVICES);
  printf("cubert %d.%d.%d: %zu device(s)\n\n", CUBERT_VERSION_MAJOR, CUBERT_VERSION_MINOR,
         CUBERT_VERSION_PATCH, n);
  for (i = 0; i < n && i < MAX_DEVICES; i++) {
    rc |= print_device(ids[i]);
    printf("\n");
  }
  for (d = 0; d < devices; d++) cubert_client_release(clients[d]);
#if defined(CUBERT_HAVE_BACKEND_CUDA)
  rc |= print_cuda_devices();
#endif
  return rc;
}

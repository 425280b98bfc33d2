/* SPDX-License-Identifier: MIT */
/* tools/cubert_sim.c: the seed sweep behind `make sim SEEDS=N`.
 *
 *   cubert_sim [SEEDS [FIRST]]
 *
 * Runs a race-free program over four streams (cross-stream bindings, GC
 * reclamations, reads) on a deterministic CPU server with the race checker
 * on, twice per seed, and counts violations: a wrong result, a race report,
 * a deadlock, or two runs of one seed with different trace hashes or choice
 * logs. Every violation prints the seed and its choice log (replay it with
 * cubert_cpu_options_t.replay). Prints seeds run, violations and the slowest
 * seed; exits 1 when there was a violation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cubert/cpu.h"
#include "cubert/cube.h"
#include "cubert/os.h"
#include "cubert/kernel.h"
#include "cubert_kernels.h"

#define N 64u
#define STREAMS 4
#define LOG_CAP 4096u

/* Kernels of the kernel library (examples/kernels/cubert_kernels.h). */
CUBERT_KERNEL_DESCRIPTOR(tool_add_kernel, ck_add_scalar_u32, 1, 1, 0, N, 1, 1);
CUBERT_KERNEL_DESCRIPTOR_RO(tool_mix_kernel, ck_mix_u32, 2, 0, 0, N, 1, 1, 0x1u);

typedef struct run_t {
  uint64_t trace, reports, deadlocks;
  size_t log_len;
  uint32_t log[LOG_CAP];
  uint32_t out[3][N];
  int failed; /* an API call failed */
} run_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int launch(cubert_client_t *c, const cubert_kernel_t *k, const cubert_handle_t *b,
                  uint32_t nb, uint64_t scalar) {
  cubert_launch_arguments_t a;
  cubert_cube_count_t count = cubert_cube_count_new_single();
  cubert_launch_arguments_initialize(&a);
  a.buffers = b;
  a.buffer_count = nb;
  a.scalars = &scalar;
  a.scalar_count = k->scalar_count;
  return cubert_client_launch(c, k, &count, &a, NULL) != CUBERT_STATUS_OK;
}

static void run(uint64_t seed, run_t *r) {
  cubert_cpu_options_t o;
  cubert_client_t *client = NULL, *s[STREAMS];
  cubert_handle_t x, w, y, pair[2];
  uint32_t data[N], i;
  cubert_cpu_sim_info_t info;
  cubert_race_counters_t rc;
  int k, f = 0;
  memset(r, 0, sizeof(*r));
  cubert_cpu_options_initialize(&o);
  o.mode = CUBERT_CPU_MODE_DETERMINISTIC;
  o.seed = seed;
  o.device.race_check = 1;
  o.device.max_streams = 8;
  o.device.max_handles = 1u << 12;
  o.device.memory_size = 1u << 16;
  o.log_capacity = LOG_CAP;
  if (cubert_cpu_client_create(cubert_allocator_libc(), &o, &client, NULL) != CUBERT_STATUS_OK) {
    r->failed = 1;
    return;
  }
  for (k = 0; k < STREAMS; k++) {
    f |= cubert_client_clone(client, &s[k], NULL) != CUBERT_STATUS_OK;
    if (!f) cubert_client_set_stream(s[k], (uint64_t)k + 1);
  }
  if (f) {
    r->failed = 1;
    cubert_client_release(client);
    return;
  }
  for (i = 0; i < N; i++) data[i] = i;
  f |= cubert_client_create_from_slice(s[0], data, sizeof data, &x, NULL) != CUBERT_STATUS_OK;
  f |= cubert_client_create_from_slice(s[3], data, sizeof data, &w, NULL) != CUBERT_STATUS_OK;
  f |= cubert_client_create_from_slice(s[1], data, sizeof data, &y, NULL) != CUBERT_STATUS_OK;
  if (!f) {
    f |= launch(s[0], &tool_add_kernel, &x, 1, 1);
    f |= launch(s[3], &tool_add_kernel, &w, 1, 2);
    pair[0] = x;
    pair[1] = y;
    f |= launch(s[1], &tool_mix_kernel, pair, 2, 0); /* B waits for A */
    pair[0] = w;
    f |= launch(s[1], &tool_mix_kernel, pair, 2, 0); /* and for D */
    f |= cubert_client_read_one(s[1], &y, r->out[0], sizeof r->out[0], NULL) != CUBERT_STATUS_OK;
    f |= cubert_client_read_one(s[0], &x, r->out[1], sizeof r->out[1], NULL) != CUBERT_STATUS_OK;
    f |= cubert_client_read_one(s[3], &w, r->out[2], sizeof r->out[2], NULL) != CUBERT_STATUS_OK;
    /* C consumes y (made on B): C waits for B; a GC task pins y */
    {
      cubert_handle_t z;
      f |= cubert_client_create_from_slice(s[2], data, sizeof data, &z, NULL) != CUBERT_STATUS_OK;
      pair[0] = y;
      pair[1] = z;
      f |= launch(s[2], &tool_mix_kernel, pair, 2, 0); /* C waits for B */
      f |= cubert_client_sync(s[2], NULL) != CUBERT_STATUS_OK;
      cubert_client_handle_release(client, &z, NULL);
    }
    cubert_client_handle_release(client, &x, NULL);
    cubert_client_handle_release(client, &w, NULL);
    cubert_client_handle_release(client, &y, NULL);
  }
  f |= cubert_cpu_sim_drain(client, NULL) != CUBERT_STATUS_OK;
  f |= cubert_cpu_sim_info(client, &info, NULL) != CUBERT_STATUS_OK;
  f |= cubert_cpu_race_counters(client, &rc, NULL) != CUBERT_STATUS_OK;
  r->trace = info.trace_hash;
  r->deadlocks = info.deadlocks;
  r->reports = rc.reports;
  r->log_len = info.log_len < LOG_CAP ? info.log_len : LOG_CAP;
  memcpy(r->log, info.log, r->log_len * sizeof(uint32_t));
  r->failed = f;
  for (k = 0; k < STREAMS; k++) cubert_client_release(s[k]);
  cubert_client_release(client);
}

static int result_ok(const run_t *r) {
  uint32_t i;
  for (i = 0; i < N; i++) {
    uint32_t x = i + 1, w = i + 2, y = (i * 3u + x) * 3u + w;
    if (r->out[0][i] != y || r->out[1][i] != x || r->out[2][i] != w) return 0;
  }
  return 1;
}

static void print_log(const char *why, uint64_t seed, const run_t *r) {
  size_t i;
  fprintf(stderr, "VIOLATION (%s): seed %llu trace 0x%016llx log [", why,
          (unsigned long long)seed, (unsigned long long)r->trace);
  for (i = 0; i < r->log_len; i++) fprintf(stderr, "%s%u", i ? "," : "", r->log[i]);
  fprintf(stderr, "]\n");
}

int main(int argc, char **argv) {
  static run_t a, b;
  uint64_t seeds = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000;
  uint64_t first = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
  uint64_t seed, violations = 0, mismatches = 0, slowest = first;
  double worst = 0, t0 = now_ms();
  if (argc > 3 || (argc > 1 && argv[1][0] == '-') || (argc > 2 && argv[2][0] == '-')) {
    int help = argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0);
    fprintf(help ? stdout : stderr,
            "usage: cubert_sim [SEEDS [FIRST]] [-h|--help]\nRuns a race-free program on a "
            "deterministic CPU server twice per seed (SEEDS from FIRST, default 10000 from 1) and "
            "counts violations.\n");
    return help ? 0 : 2;
  }
  if (seeds == 0) {
    fprintf(stderr, "usage: %s [SEEDS [FIRST]] (SEEDS >= 1)\n", argv[0]);
    return 2;
  }
  for (seed = first; seed < first + seeds; seed++) {
    double t = now_ms();
    const char *why = NULL;
    run(seed, &a);
    run(seed, &b);
    t = now_ms() - t;
    if (t > worst) {
      worst = t;
      slowest = seed;
    }
    if (a.failed || b.failed)
      why = "an API call failed";
    else if (a.trace != b.trace || a.log_len != b.log_len ||
             memcmp(a.log, b.log, a.log_len * sizeof(uint32_t)) != 0) {
      why = "trace mismatch";
      mismatches++;
    } else if (!result_ok(&a) || memcmp(a.out, b.out, sizeof a.out) != 0)
      why = "wrong result";
    else if (a.reports || b.reports)
      why = "race report";
    else if (a.deadlocks || b.deadlocks)
      why = "deadlock";
    if (why) {
      violations++;
      print_log(why, seed, &a);
    }
  }
  printf("seeds run: %llu (%llu..%llu, each twice), violations: %llu, trace mismatches: %llu, "
         "slowest seed: %llu (%.3f ms for both runs), %.1f s total, %.0f seeds/s\n",
         (unsigned long long)seeds, (unsigned long long)first,
         (unsigned long long)(first + seeds - 1), (unsigned long long)violations,
         (unsigned long long)mismatches, (unsigned long long)slowest, worst,
         (now_ms() - t0) / 1e3, (double)seeds / ((now_ms() - t0) / 1e3));
  return violations ? 1 : 0;
}

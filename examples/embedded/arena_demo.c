/* SPDX-License-Identifier: MIT */
/*
 * examples/embedded/arena_demo.c: cubert on a host with no threads and no malloc
 * (docs/embedding.md). Built and run on the build machine and, bare metal, on a
 * Cortex-M4F under QEMU with an 8 KiB stack (`make check-embedded-demo`, part of
 * `make test-cortex-m`).
 *
 * All of cubert's memory comes from one static 64 KiB buffer, given through the
 * allocator interface (cubert_arena_initialize: a bump allocator). Kernels run on the
 * inline driver, in the caller, one cube after another. The pipeline, in rounds:
 *
 *   x, y          uploaded once (cubert_client_create_from_slice); x rewritten every round
 *   z = 2 x + y   ck_axpy_f32
 *   p = sum(z)    ck_reduce_sum_f32: one partial sum per cube of CK_BLOCK elements
 *   read z and p  checked against the same arithmetic on the host (exact: small integers)
 *
 * Then it proves that running out of memory is an answer, never a crash: it runs the
 * same demo in arenas of every size from 0 up to what the demo needs, in steps of
 * SWEEP_STEP bytes. Every run either completes with the right results or fails with an
 * out-of-memory status (RESOURCE_EXHAUSTED or OUT_OF_MEMORY) and an error record that
 * says so, and every run gives back every byte it took (a counting wrapper over the
 * arena). It prints the peak arena use, the smallest arena that runs the demo and, on
 * the target, the deepest stack used (painted).
 *
 * The small configuration: one stream slot, a 16-entry handle table, no lock (one
 * thread), no clock, no race checker, and one direct memory pool (each buffer is one
 * allocation of its own size, given back when released) instead of the SubSlices
 * preset, whose pages are sized for large devices.
 *
 * Exit status 0 when everything held. Output goes through demo_write: stdout here, the
 * semihosting console on the target (CUBERT_DEMO_BARE_METAL: no stdio, no libc beyond
 * memcpy/memset/memmove is linked).
 */
#include <string.h>

#include "cubert/cubert.h"
#include "cubert/inline.h"
#include "cubert/memory.h"
#include "cubert_kernels.h"

#ifndef CUBERT_DEMO_BARE_METAL
#define CUBERT_DEMO_BARE_METAL 0
#endif

#if CUBERT_DEMO_BARE_METAL
#include "embedded_target.h" /* tests/embedded/cortex-m: semihosting, the painted stack */
static void demo_write(const char *text) { embedded_write0(text); }
/* A fault stops the run (status 3): the demo has nowhere to resume. */
embedded_resume_fn_t embedded_fault_hook(void) { return NULL; }
#else
#include <stdio.h>
static void demo_write(const char *text) { fputs(text, stdout); }
#endif

#define ARENA_BYTES (64u * 1024u)
#define N 1024u /* elements of x, y, z */
#define ROUNDS 3u
#define PARTIALS (N / CK_BLOCK)
#define SWEEP_STEP 32u

/* ---- output without printf -------------------------------------------------------------- */

static void write_u32(uint32_t v) {
  char buf[11];
  int i = 10;
  buf[i] = 0;
  do {
    buf[--i] = (char)('0' + v % 10u);
    v /= 10u;
  } while (v);
  demo_write(buf + i);
}

static void write_line(const char *a, uint32_t v, const char *b) {
  demo_write(a);
  write_u32(v);
  demo_write(b);
}

/* ---- the host's allocator: the arena, counted ------------------------------------------- */

/* Live bytes and blocks over the arena, to check that a run gives everything back. */
typedef struct counted_arena_t {
  cubert_arena_t arena;
  cubert_allocator_t inner;
  size_t live_bytes;
  size_t live_blocks;
} counted_arena_t;

static void *counted_fn(void *self, void *ptr, size_t old_size, size_t new_size, size_t align) {
  counted_arena_t *c = (counted_arena_t *)self;
  void *out = c->inner.fn(c->inner.self, ptr, old_size, new_size, align);
  if (new_size == 0) {
    if (ptr) {
      c->live_bytes -= old_size;
      c->live_blocks--;
    }
  } else if (out) {
    c->live_bytes += new_size - (ptr ? old_size : 0);
    if (!ptr) c->live_blocks++;
  }
  return out;
}

static cubert_allocator_t counted_arena_initialize(counted_arena_t *c, void *buffer,
                                                   size_t size) {
  cubert_allocator_t a;
  c->live_bytes = 0;
  c->live_blocks = 0;
  (void)cubert_arena_initialize(&c->arena, buffer, size, &c->inner, NULL);
  a.self = c;
  a.fn = counted_fn;
  return a;
}

/* ---- the pipeline ------------------------------------------------------------------------- */

typedef struct demo_result_t {
  cubert_status_t status;
  const char *step;      /* the step that failed */
  cubert_error_t error;  /* its record */
  uint32_t mismatches;   /* results that differ from the host's */
  size_t peak;           /* the arena's high-water mark */
  size_t peak_round2;    /* ... after the second round (the first to write x) */
  size_t used_round2;    /* bytes of the arena in use after the second round */
  size_t used_last;      /* ... after the last round */
  size_t live_bytes;     /* bytes not given back after the client was released */
  size_t live_blocks;
} demo_result_t;

/* The host's data: x changes every round; small integers keep every sum exact. */
static float g_x[N], g_y[N], g_z[N], g_p[PARTIALS];

static void fill_x(uint32_t round) {
  uint32_t i;
  for (i = 0; i < N; i++) g_x[i] = (float)((i + round) % 7u);
}

static uint32_t check_round(void) {
  uint32_t i, c, bad = 0;
  for (i = 0; i < N; i++)
    if (g_z[i] != 2.0f * g_x[i] + g_y[i]) bad++;
  for (c = 0; c < PARTIALS; c++) {
    float want = 0.0f;
    for (i = c * CK_BLOCK; i < (c + 1u) * CK_BLOCK; i++) want += 2.0f * g_x[i] + g_y[i];
    if (g_p[c] != want) bad++;
  }
  return bad;
}

static int step_failed(demo_result_t *r, cubert_status_t status, const char *step) {
  if (status == CUBERT_STATUS_OK) return 0;
  r->status = status;
  r->step = step;
  return 1;
}

/* Runs the rounds on a client; the handles are released by the caller. */
static void run_rounds(cubert_client_t *client, const cubert_handle_t *h,
                       counted_arena_t *arena, demo_result_t *r) {
  const uint64_t bytes = N * sizeof(float);
  uint64_t alpha = cubert_kernel_f32_bits(2.0f);
  cubert_cube_count_t count = cubert_cube_count_new_1d(PARTIALS);
  cubert_binding_t axpy_buffers[3], sum_buffers[2];
  cubert_launch_arguments_t axpy, sum;
  uint32_t round;
  axpy_buffers[0] = h[0];
  axpy_buffers[1] = h[1];
  axpy_buffers[2] = h[2];
  cubert_launch_arguments_initialize(&axpy);
  axpy.buffers = axpy_buffers;
  axpy.buffer_count = 3;
  axpy.scalars = &alpha;
  axpy.scalar_count = 1;
  sum_buffers[0] = h[2];
  sum_buffers[1] = h[3];
  cubert_launch_arguments_initialize(&sum);
  sum.buffers = sum_buffers;
  sum.buffer_count = 2;
  sum.scalars = NULL;
  sum.scalar_count = 0;
  for (round = 0; round < ROUNDS; round++) {
    fill_x(round);
    if (round > 0 &&
        step_failed(r, cubert_client_write(client, &h[0], g_x, bytes, &r->error), "write x"))
      return;
    if (step_failed(r, cubert_client_launch(client, &ck_axpy_f32_kernel, &count, &axpy, &r->error),
                    "launch axpy") ||
        step_failed(r, cubert_client_launch(client, &ck_reduce_sum_f32_kernel, &count, &sum,
                                            &r->error),
                    "launch reduce") ||
        step_failed(r, cubert_client_read_one(client, &h[2], g_z, bytes, &r->error), "read z") ||
        step_failed(r, cubert_client_read_one(client, &h[3], g_p, sizeof g_p, &r->error),
                    "read partial sums"))
      return;
    r->mismatches += check_round();
    if (round == 1) {
      r->peak_round2 = arena->arena.high_water;
      r->used_round2 = arena->arena.used;
    }
    r->used_last = arena->arena.used;
  }
}

/* Uploads and allocates the four buffers (counting them in *made), then runs the rounds. */
static void run_pipeline(cubert_client_t *client, cubert_handle_t *h, uint32_t *made,
                         counted_arena_t *arena, demo_result_t *r) {
  const uint64_t bytes = N * sizeof(float);
  if (step_failed(r, cubert_client_create_from_slice(client, g_x, bytes, &h[0], &r->error), "upload x"))
    return;
  *made = 1;
  if (step_failed(r, cubert_client_create_from_slice(client, g_y, bytes, &h[1], &r->error), "upload y"))
    return;
  *made = 2;
  if (step_failed(r, cubert_client_empty(client, bytes, &h[2], &r->error), "allocate z")) return;
  *made = 3;
  if (step_failed(r, cubert_client_empty(client, sizeof g_p, &h[3], &r->error),
                  "allocate the partial sums"))
    return;
  *made = 4;
  run_rounds(client, h, arena, r);
}

/* One whole run in `size` bytes of `buffer`: create, pipeline, release. */
static void demo_run(unsigned char *buffer, size_t size, demo_result_t *r) {
  static const cubert_memory_pool_options_t direct = {CUBERT_MEMORY_POOL_DIRECT, 0,
                                                      CUBERT_MEMORY_NONE, CUBERT_MEMORY_NONE,
                                                      0, 0, CUBERT_MEMORY_NONE};
  counted_arena_t arena;
  cubert_allocator_t allocator = counted_arena_initialize(&arena, buffer, size);
  cubert_inline_options_t options;
  cubert_client_t *client = NULL;
  cubert_handle_t h[4];
  uint32_t made = 0, i;
  memset(r, 0, sizeof *r);
  cubert_inline_options_initialize(&options);
  options.device.max_streams = 1;
  options.device.max_handles = 16;
  options.device.memory_size = ARENA_BYTES;
  options.memory_config.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  options.memory_config.pools = &direct;
  options.memory_config.pool_count = 1;
  for (i = 0; i < N; i++) g_y[i] = (float)(i % 5u);
  fill_x(0);
  if (!step_failed(r, cubert_inline_client_create(allocator, &options, &client, &r->error),
                   "create the inline device")) {
    run_pipeline(client, h, &made, &arena, r);
    for (i = 0; i < made; i++) (void)cubert_client_handle_release(client, &h[i], NULL);
    cubert_client_release(client);
  }
  r->peak = arena.arena.high_water;
  r->live_bytes = arena.live_bytes;
  r->live_blocks = arena.live_blocks;
}

/* ---- main: the demo, then the sweep ------------------------------------------------------- */

static unsigned char g_arena[ARENA_BYTES] __attribute__((aligned(64)));

static int is_out_of_memory(const demo_result_t *r) {
  return r->status == CUBERT_STATUS_RESOURCE_EXHAUSTED || r->status == CUBERT_STATUS_OUT_OF_MEMORY ||
         cubert_error_has_kind(&r->error, CUBERT_ERROR_HOST_OUT_OF_MEMORY) ||
         cubert_error_has_kind(&r->error, CUBERT_ERROR_IO_OUT_OF_MEMORY);
}

static void write_error(const demo_result_t *r) {
  char text[256];
  demo_write(r->step);
  demo_write(": ");
  demo_write(cubert_status_name(r->status));
  demo_write(": ");
  (void)cubert_error_format(&r->error, text, sizeof text);
  demo_write(text);
  demo_write("\n");
}

/* Every arena below the demo's need, SWEEP_STEP bytes apart: each run is an
 * out-of-memory answer (or a complete, correct run), nothing is left allocated. */
static int sweep(size_t need) {
  size_t size, ooms = 0, runs = 0, smallest = 0;
  demo_result_t r;
  int failures = 0;
  for (size = 0;; size += SWEEP_STEP) {
    if (size > need) size = need; /* the last run: exactly the peak */
    demo_run(g_arena, size, &r);
    runs++;
    if (r.live_bytes || r.live_blocks) {
      write_line("sweep: arena of ", (uint32_t)size, " bytes: ");
      write_line("", (uint32_t)r.live_bytes, " bytes not given back\n");
      failures++;
    }
    if (r.status == CUBERT_STATUS_OK) {
      if (r.mismatches) {
        write_line("sweep: arena of ", (uint32_t)size, " bytes: wrong results\n");
        failures++;
      }
      if (!smallest) smallest = size;
    } else if (is_out_of_memory(&r) && r.step) {
      if (ooms == 0) {
        write_line("sweep: arena of ", (uint32_t)size, " bytes: ");
        write_error(&r);
      }
      ooms++;
    } else {
      write_line("sweep: arena of ", (uint32_t)size, " bytes: not an out-of-memory answer: ");
      write_error(&r);
      failures++;
    }
    if (size == need) break;
  }
  write_line("sweep: ", (uint32_t)runs, " arenas of 0 to ");
  write_line("", (uint32_t)need, " bytes, ");
  write_line("", (uint32_t)SWEEP_STEP, " bytes apart: ");
  write_line("", (uint32_t)ooms, " out-of-memory answers, ");
  write_line("", (uint32_t)(runs - ooms), " complete runs, ");
  write_line("", (uint32_t)failures, " failures; smallest arena that runs the demo: ");
  write_line("", (uint32_t)smallest, " bytes\n");
  if (!smallest) {
    demo_write("sweep: no arena up to the demo's peak ran it\n");
    failures++;
  }
  return failures;
}

int main(void) {
  demo_result_t r;
  int failures = 0;
  demo_write("arena_demo: inline driver, one stream, 16 handles, one direct pool, ");
  write_line("", ARENA_BYTES, "-byte static arena\n");
  demo_run(g_arena, sizeof g_arena, &r);
  if (r.status != CUBERT_STATUS_OK) {
    demo_write("arena_demo: ");
    write_error(&r);
    return 1;
  }
  write_line("arena_demo: ", ROUNDS, " rounds of z = 2x + y and sum(z) over ");
  write_line("", N, " floats: ");
  write_line("", r.mismatches, " mismatches\n");
  write_line("arena_demo: peak arena use ", (uint32_t)r.peak, " bytes of ");
  write_line("", ARENA_BYTES, "; in use after round 2: ");
  write_line("", (uint32_t)r.used_round2, " bytes, after round ");
  write_line("", ROUNDS, ": ");
  write_line("", (uint32_t)r.used_last, " bytes\n");
  if (r.mismatches) failures++;
  /* a steady state: later rounds take nothing more from the arena */
  if (r.peak != r.peak_round2 || r.used_last != r.used_round2) {
    demo_write("arena_demo: the arena kept growing after the second round\n");
    failures++;
  }
  if (r.live_bytes || r.live_blocks) {
    write_line("arena_demo: ", (uint32_t)r.live_bytes, " bytes not given back\n");
    failures++;
  }
  failures += sweep(r.peak);
#if CUBERT_DEMO_BARE_METAL
  write_line("arena_demo: deepest stack ", (uint32_t)embedded_stack_used(), " bytes of ");
  write_line("", (uint32_t)embedded_stack_size(), " (painted)\n");
  if (embedded_stack_used() >= embedded_stack_size()) {
    demo_write("arena_demo: the stack overflowed\n");
    failures++;
  }
#endif
  demo_write(failures ? "arena_demo FAILED\n" : "arena_demo ok\n");
  return failures ? 1 : 0;
}

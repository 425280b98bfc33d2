/* SPDX-License-Identifier: MIT */
/*
 * tests/cts/test_cts_line.c: line access (cubert/kernel_line.h) on every
 * driver: f32x4 lines walked with CUBERT_UNIT_FOR by cubes of a
 * non-power-of-two size over a buffer whose length is not a multiple of the
 * line, every line width (2, 4, 8 and 16 bytes), lines at the bounds
 * (checked as a unit in CHECKED, reported in VALIDATE), and a misaligned
 * line view.
 */
#include <string.h>

#include "cts.h"
#include "cubert/cubert.h"
#include "cts_kernels_launch.h"

CUBERT_KERNEL_DESCRIPTOR(cts_line_axpy_kernel, cts_line_axpy_f32x4, 2, 2, 0, 7, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(cts_line_inc_u8x2_kernel, cts_line_inc_u8x2, 2, 0, 0, 5, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(cts_line_inc_u16x2_kernel, cts_line_inc_u16x2, 2, 0, 0, 5, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(cts_line_inc_u32x2_kernel, cts_line_inc_u32x2, 2, 0, 0, 5, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(cts_line_inc_u8x16_kernel, cts_line_inc_u8x16, 2, 0, 0, 5, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(cts_line_inc_f64x2_kernel, cts_line_inc_f64x2, 2, 0, 0, 5, 1, 1);
CUBERT_KERNEL_DESCRIPTOR(cts_line_edges_kernel, cts_line_edges_u32x4, 2, 0, 0, 1, 1, 1);

static void two_buffers(cubert_launch_arguments_t *args, const cubert_handle_t *h) {
  cubert_launch_arguments_initialize(args);
  CHECK_OK(cubert_launch_arguments_set_buffer(args, 0, &h[0]));
  CHECK_OK(cubert_launch_arguments_set_buffer(args, 1, &h[1]));
}

TEST(cts_line_unit_for_walks_f32x4_lines) {
  enum { N = 4 * 37 + 3 }; /* 37 whole lines and 3 floats the line view leaves out */
  cts_env_t env;
  float a[N], out[N], got[N];
  cubert_handle_t h[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(4); /* 11 lines per cube, 7 units */
  uint32_t i, mode;
  cts_setup(&env, 0);
  for (mode = 0; mode < 3; mode++) {
    for (i = 0; i < N; i++) {
      a[i] = (float)i * 0.5f;
      out[i] = 1.0f;
    }
    CHECK_OK(cubert_client_create_from_slice(env.client, a, sizeof a, &h[0], NULL));
    CHECK_OK(cubert_client_create_from_slice(env.client, out, sizeof out, &h[1], NULL));
    two_buffers(&args, h);
    CHECK_OK(cubert_launch_arguments_set_f32(&args, 0, 2.0f));
    CHECK_OK(cubert_launch_arguments_set_u32(&args, 1, 11));
    if (mode == 0)
      CHECK_OK(cubert_client_launch(env.client, &cts_line_axpy_kernel, &count, &args, NULL));
    else /* the device's bounds-check mode is AUTO: UNCHECKED */
      CHECK_OK(cubert_client_launch_unchecked(env.client, &cts_line_axpy_kernel, &count, &args,
                                              NULL));
    CHECK_OK(cubert_client_read_one(env.client, &h[1], got, sizeof got, NULL));
    for (i = 0; i < N; i++) {
      float want = i < 4 * 37 ? (float)i * 0.5f * 2.0f + 1.0f : 1.0f;
      if (got[i] != want) {
        CHECK_MSG(0, "mode %u: out[%u] = %g, want %g", (unsigned)mode, (unsigned)i, (double)got[i], (double)want);
        break;
      }
    }
    CHECK_OK(cubert_client_handle_release(env.client, &h[0], NULL));
    CHECK_OK(cubert_client_handle_release(env.client, &h[1], NULL));
  }
  cts_teardown(&env);
}

/* One width: bytes of `line` each, `lines` whole lines plus `extra` bytes. */
/* A lane of `lane` bytes (1, 2 or 4) as a number, in the host's byte order (a memcpy into
 * the low bytes of a u64 is the high bytes on a big-endian host). */
static uint64_t load_lane(const unsigned char *p, uint32_t lane) {
  uint8_t b1;
  uint16_t b2;
  uint32_t b4;
  if (lane == 1) {
    memcpy(&b1, p, 1);
    return b1;
  }
  if (lane == 2) {
    memcpy(&b2, p, 2);
    return b2;
  }
  memcpy(&b4, p, 4);
  return b4;
}

static void inc_case(cts_env_t *env, const cubert_kernel_t *kernel, uint32_t line,
                     uint32_t lines, uint32_t extra, int is_f64) {
  unsigned char in[16 * 23 + 15], out[16 * 23 + 15];
  const uint32_t size = line * lines + extra;
  cubert_handle_t h[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d((lines + 4) / 5);
  uint32_t i;
  CHECK(size <= sizeof in);
  for (i = 0; i < size; i++) in[i] = (unsigned char)(i * 7u);
  if (is_f64) {
    double d;
    for (i = 0; i + 8 <= size; i += 8) {
      d = (double)i;
      memcpy(in + i, &d, 8);
    }
  }
  memset(out, 0xAB, sizeof out);
  CHECK_OK(cubert_client_create_from_slice(env->client, in, size, &h[0], NULL));
  CHECK_OK(cubert_client_create_from_slice(env->client, out, size, &h[1], NULL));
  two_buffers(&args, h);
  CHECK_OK(cubert_client_launch(env->client, kernel, &count, &args, NULL));
  memset(out, 0, sizeof out);
  CHECK_OK(cubert_client_read_one(env->client, &h[1], out, size, NULL));
  if (is_f64) {
    for (i = 0; i + 8 <= line * lines; i += 8) {
      double d;
      memcpy(&d, out + i, 8);
      CHECK_MSG(d == (double)i + 1.0, "f64 at byte %u: %g", (unsigned)i, d);
    }
  } else {
    uint32_t lane = line == 2 && kernel == &cts_line_inc_u16x2_kernel ? 2u
                    : kernel == &cts_line_inc_u32x2_kernel            ? 4u
                    : kernel == &cts_line_inc_u16x2_kernel            ? 2u
                                                                      : 1u;
    for (i = 0; i < line * lines; i += lane) {
      uint64_t x = load_lane(in + i, lane), y = load_lane(out + i, lane);
      if (y != ((x + 1u) & ((lane == 8 ? 0 : (1ull << (8 * lane))) - 1u))) {
        CHECK_MSG(0, "%s byte %u: %llu, want %llu + 1", kernel->name, (unsigned)i, (unsigned long long)y,
                  (unsigned long long)x);
        break;
      }
    }
  }
  for (i = line * lines; i < size; i++) /* the partial line is not part of the view */
    CHECK_MSG(out[i] == 0xAB, "%s: byte %u past the last whole line written", kernel->name, (unsigned)i);
  CHECK_OK(cubert_client_handle_release(env->client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env->client, &h[1], NULL));
}

TEST(cts_line_every_width) {
  cts_env_t env;
  cts_setup(&env, 0);
  inc_case(&env, &cts_line_inc_u8x2_kernel, 2, 23, 1, 0);    /* 2 bytes */
  inc_case(&env, &cts_line_inc_u16x2_kernel, 4, 23, 3, 0);   /* 4 bytes */
  inc_case(&env, &cts_line_inc_u32x2_kernel, 8, 23, 4, 0);   /* 8 bytes */
  inc_case(&env, &cts_line_inc_u8x16_kernel, 16, 23, 15, 0); /* 16 bytes */
  inc_case(&env, &cts_line_inc_f64x2_kernel, 16, 9, 8, 1);   /* 16 bytes of doubles */
  cts_teardown(&env);
}

/* in: 10 u32 (2 whole u32x4 lines + 2); out: 10 u32 of 5. */
static void edges(cts_env_t *env, cubert_execution_mode_t mode, uint32_t *got,
                  cubert_status_t *flush, cubert_error_t *err) {
  uint32_t in[10], out[10], i;
  cubert_handle_t h[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t one = cubert_cube_count_new_single();
  for (i = 0; i < 10; i++) {
    in[i] = 100u + i;
    out[i] = 5u;
  }
  CHECK_OK(cubert_client_create_from_slice(env->client, in, sizeof in, &h[0], NULL));
  CHECK_OK(cubert_client_create_from_slice(env->client, out, sizeof out, &h[1], NULL));
  two_buffers(&args, h);
  if (mode == CUBERT_EXECUTION_CHECKED)
    CHECK_OK(cubert_client_launch(env->client, &cts_line_edges_kernel, &one, &args, NULL));
  else
    CHECK_OK(cubert_client_launch_unchecked(env->client, &cts_line_edges_kernel, &one, &args,
                                            NULL));
  cubert_error_clear(err);
  *flush = cubert_client_sync(env->client, err);
  CHECK_OK(cubert_client_read_one(env->client, &h[1], got, 10 * sizeof(uint32_t), NULL));
  CHECK_OK(cubert_client_handle_release(env->client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env->client, &h[1], NULL));
}

TEST(cts_line_bounds_are_checked_as_a_unit) {
  cts_env_t env;
  cts_options_t options;
  uint32_t got[10], i;
  cubert_status_t st;
  cubert_error_t err, first;
  cts_setup(&env, 0);
  edges(&env, CUBERT_EXECUTION_CHECKED, got, &st, &err);
  CHECK_OK(st);
  for (i = 0; i < 4; i++) CHECK_EQ_U64(got[i], 104u + i); /* the last whole line */
  for (i = 4; i < 8; i++) CHECK_EQ_U64(got[i], 0u);       /* the partial line: zeros */
  CHECK_EQ_U64(got[8], 5u); /* the store at line 2 dropped whole (room for 2 of 4 lanes) */
  CHECK_EQ_U64(got[9], 5u);
  cts_teardown(&env);
  /* VALIDATE (the device's bounds-check mode): the first violation is the
   * load of line 2 (index in lines, length in lines) */
  memset(&options, 0, sizeof options);
  options.bounds_check = CUBERT_BOUNDS_CHECK_VALIDATE;
  cts_setup_with(&env, &options);
  edges(&env, CUBERT_EXECUTION_VALIDATE, got, &st, &err);
  CHECK_STATUS(st, CUBERT_STATUS_SERVER_UNHEALTHY);
  CHECK_OK(cubert_error_unhealthy_first(&err, &first));
  CHECK_EQ_U64(cubert_error_kind(&first), CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_EQ_U64(first.field[0], 0); /* buffer slot */
  CHECK_EQ_U64(first.field[1], 2); /* line index */
  CHECK_EQ_U64(first.field[2], 2); /* view length in lines */
  CHECK_EQ_U64(first.field[3], 0); /* a load */
  CHECK_EQ_U64(got[8], 5u);
  cts_teardown(&env);
}

TEST(cts_line_misaligned_view_is_refused_outside_unchecked) {
  cts_env_t env;
  uint32_t data[13], got[13], i;
  cubert_handle_t whole, h[2];
  cubert_launch_arguments_t args;
  cubert_cube_count_t count = cubert_cube_count_new_1d(2); /* 10 units for 6 lines */
  cts_setup(&env, 0);
  for (i = 0; i < 13; i++) data[i] = i;
  CHECK_OK(cubert_client_create_from_slice(env.client, data, sizeof data, &whole, NULL));
  /* in: bytes [4, 52) of `whole`, 4 bytes off the 8-byte alignment of u32x2 */
  CHECK_OK(cubert_client_handle_offset(env.client, &whole, 4, 0, &h[0], NULL));
  CHECK_OK(cubert_client_create_from_slice(env.client, data, 48, &h[1], NULL));
  two_buffers(&args, h);
  CHECK_OK(cubert_client_launch(env.client, &cts_line_inc_u32x2_kernel, &count, &args, NULL));
  CHECK_OK(cubert_client_read_one(env.client, &h[1], got, 48, NULL));
  for (i = 0; i < 12; i++) CHECK_EQ_U64(got[i], 1u); /* every load was out of bounds: 0 + 1 */
  CHECK_OK(cubert_client_handle_release(env.client, &h[0], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &h[1], NULL));
  CHECK_OK(cubert_client_handle_release(env.client, &whole, NULL));
  cts_teardown(&env);
}

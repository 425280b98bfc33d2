/* SPDX-License-Identifier: MIT */
/* Conformance: collectives among devices of one process:
 * all_reduce over every dtype, their ordering after the producers and
 * before the consumers, one host thread per device. A device without
 * collectives answers UNSUPPORTED (single member test); the others are
 * skipped there. Errors, send/recv and limits: test_cts_collective_errors.c. */
#include "cts_multi.h"

#include <pthread.h>

#include "cubert/cpu.h"
#include "memory/handle_table.h"

/* ---- the seed's runtime test: test_all_reduce_sync_collective ---- */

static void all_reduce_sync_collective(uint32_t n, uint32_t first_index) {
  mdev_t m;
  cubert_handle_t h[MDEV_MAX][8];
  float buf[100], out[100];
  uint32_t i, j, k;
  float index_sum = 0;
  mdev_setup_comm(&m, n, first_index, 0);
  for (i = 0; i < n; i++) {
    index_sum += (float)m.ids[i].index_id;
    for (j = 0; j < 8; j++) {
      for (k = 0; k < 100; k++) buf[k] = (float)(m.ids[i].index_id + j);
      h[i][j] = mdev_make_f32(m.env[i].client, buf, 100);
    }
  }
  /* every all_reduce first, then one sync_collective per device */
  for (i = 0; i < n; i++)
    for (j = 0; j < 8; j++)
      CHECK_OK(cubert_client_all_reduce(m.env[i].client, &h[i][j], &h[i][j],
                                        CUBERT_COMM_DTYPE_F32, m.ids, n,
                                        CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < n; i++) CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
  for (i = 0; i < n; i++)
    for (j = 0; j < 8; j++) {
      mdev_read_f32(m.env[i].client, &h[i][j], out, 100);
      for (k = 0; k < 100; k++)
        CHECK_MSG(out[k] == index_sum + (float)(j * n), "device %u handle %u [%u]: %g != %g", (unsigned)i,
                  (unsigned)j, (unsigned)k, (double)out[k], (double)(index_sum + (float)(j * n)));
      CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i][j], NULL));
    }
  mdev_teardown(&m);
}

TEST(cts_all_reduce_sync_collective_2_devices) { all_reduce_sync_collective(2, 0); }
TEST(cts_all_reduce_sync_collective_4_devices) { all_reduce_sync_collective(4, 0); }
TEST(cts_all_reduce_sync_collective_sparse_indices) { all_reduce_sync_collective(3, 5); }

/* ---- every dtype, Sum and Mean ---- */

static double gen_value(uint32_t dtype, uint32_t dev, uint32_t e) {
  switch (dtype) {
    case CUBERT_COMM_DTYPE_F32:
    case CUBERT_COMM_DTYPE_F64:
      return (double)e * 0.5 - (double)dev * 1.25;
    case CUBERT_COMM_DTYPE_I8:
    case CUBERT_COMM_DTYPE_I32:
    case CUBERT_COMM_DTYPE_I64:
      return (double)((int)e * 7 - (int)dev * 5 - 3);
    default:
      return (double)(e * 7 + dev * 5 + 3);
  }
}

static void put(uint32_t dtype, unsigned char *p, double v) {
  switch (dtype) {
    case CUBERT_COMM_DTYPE_F32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case CUBERT_COMM_DTYPE_F64: { memcpy(p, &v, 8); break; }
    case CUBERT_COMM_DTYPE_I8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case CUBERT_COMM_DTYPE_U8: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
    case CUBERT_COMM_DTYPE_I32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    case CUBERT_COMM_DTYPE_U32: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    case CUBERT_COMM_DTYPE_I64: { int64_t x = (int64_t)v; memcpy(p, &x, 8); break; }
    case CUBERT_COMM_DTYPE_U64: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
    default: test_fail(__FILE__, __LINE__, "dtype %u", (unsigned)dtype);
  }
}

static double get(uint32_t dtype, const unsigned char *p) {
  switch (dtype) {
    case CUBERT_COMM_DTYPE_F32: { float x; memcpy(&x, p, 4); return x; }
    case CUBERT_COMM_DTYPE_F64: { double x; memcpy(&x, p, 8); return x; }
    case CUBERT_COMM_DTYPE_I8: { int8_t x; memcpy(&x, p, 1); return x; }
    case CUBERT_COMM_DTYPE_U8: { uint8_t x; memcpy(&x, p, 1); return x; }
    case CUBERT_COMM_DTYPE_I32: { int32_t x; memcpy(&x, p, 4); return x; }
    case CUBERT_COMM_DTYPE_U32: { uint32_t x; memcpy(&x, p, 4); return (double)x; }
    case CUBERT_COMM_DTYPE_I64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case CUBERT_COMM_DTYPE_U64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    default: test_fail(__FILE__, __LINE__, "dtype %u", (unsigned)dtype);
  }
}

static int is_float(uint32_t dtype) {
  return dtype == CUBERT_COMM_DTYPE_F32 || dtype == CUBERT_COMM_DTYPE_F64;
}

#define NE 6

TEST(cts_all_reduce_every_dtype_sum_and_mean) {
  static const uint32_t dtypes[] = {CUBERT_COMM_DTYPE_F32, CUBERT_COMM_DTYPE_F64,
                                    CUBERT_COMM_DTYPE_I32, CUBERT_COMM_DTYPE_I64,
                                    CUBERT_COMM_DTYPE_U32, CUBERT_COMM_DTYPE_U64,
                                    CUBERT_COMM_DTYPE_I8,  CUBERT_COMM_DTYPE_U8};
  const uint32_t n = 3;
  mdev_t m;
  size_t t;
  int op;
  mdev_setup_comm(&m, n, 0, 0);
  for (t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
    for (op = 0; op < 2; op++) {
      uint32_t dtype = dtypes[t], w = cubert_comm_dtype_size(dtype), i, e;
      unsigned char buf[NE * 8], out[NE * 8];
      cubert_handle_t src[3], dst[3];
      for (i = 0; i < n; i++) {
        for (e = 0; e < NE; e++) put(dtype, buf + e * w, gen_value(dtype, i, e));
        CHECK_OK(cubert_client_create_from_slice(m.env[i].client, buf, NE * w, &src[i], NULL));
        CHECK_OK(cubert_client_empty(m.env[i].client, NE * w, &dst[i], NULL));
        CHECK_OK(cubert_client_all_reduce(m.env[i].client, &src[i], &dst[i], dtype, m.ids, n,
                                          (cubert_reduce_operation_t)op, NULL));
      }
      for (i = 0; i < n; i++) {
        CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
        CHECK_OK(cubert_client_read_one(m.env[i].client, &dst[i], out, NE * w, NULL));
        for (e = 0; e < NE; e++) {
          double sum = 0, want;
          uint32_t r;
          for (r = 0; r < n; r++) sum += gen_value(dtype, r, e);
          if (op == CUBERT_REDUCE_OPERATION_SUM)
            want = sum;
          else if (is_float(dtype))
            want = sum / n;
          else
            want = (double)((long long)sum / (long long)n); /* truncation toward zero */
          if (dtype == CUBERT_COMM_DTYPE_F32) want = (double)(float)want;
          CHECK_MSG(get(dtype, out + e * w) == want, "dtype %u op %d dev %u [%u]: %g != %g",
                    (unsigned)dtype, op, (unsigned)i, (unsigned)e, get(dtype, out + e * w), want);
        }
        /* the source is untouched */
        CHECK_OK(cubert_client_read_one(m.env[i].client, &src[i], out, NE * w, NULL));
        CHECK(get(dtype, out + w) == gen_value(dtype, i, 1));
        CHECK_OK(cubert_client_handle_release(m.env[i].client, &src[i], NULL));
        CHECK_OK(cubert_client_handle_release(m.env[i].client, &dst[i], NULL));
      }
    }
  }
  mdev_teardown(&m);
}

/* Integer Mean truncates toward zero; integer Sum wraps (cubert/comm.h). */
TEST(cts_all_reduce_integer_mean_truncates_and_sum_wraps) {
  mdev_t m;
  int32_t a[2] = {-7, 7}, b[2] = {0, 0}, c[2] = {0, 1}, out[2];
  uint8_t ua = 200, ub = 100, uout = 0;
  int8_t sa = 100, sb = 100, sout = 0;
  cubert_handle_t h[3], u[2], s[2];
  int32_t *vals[3];
  uint32_t i;
  vals[0] = a;
  vals[1] = b;
  vals[2] = c;
  mdev_setup_comm(&m, 3, 0, 0);
  for (i = 0; i < 3; i++) {
    CHECK_OK(cubert_client_create_from_slice(m.env[i].client, vals[i], sizeof a, &h[i], NULL));
    CHECK_OK(cubert_client_all_reduce(m.env[i].client, &h[i], &h[i], CUBERT_COMM_DTYPE_I32, m.ids,
                                      3, CUBERT_REDUCE_OPERATION_MEAN, NULL));
  }
  for (i = 0; i < 3; i++) {
    CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
    CHECK_OK(cubert_client_read_one(m.env[i].client, &h[i], out, sizeof out, NULL));
    CHECK_EQ_I64(out[0], -2); /* -7/3 = -2.33: truncated, not floored (-3) */
    CHECK_EQ_I64(out[1], 2);  /* 8/3 = 2.67: truncated, not rounded (3) */
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i], NULL));
  }
  /* two of the three devices: a pair communicator */
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, &ua, 1, &u[0], NULL));
  CHECK_OK(cubert_client_create_from_slice(m.env[1].client, &ub, 1, &u[1], NULL));
  CHECK_OK(cubert_client_create_from_slice(m.env[0].client, &sa, 1, &s[0], NULL));
  CHECK_OK(cubert_client_create_from_slice(m.env[1].client, &sb, 1, &s[1], NULL));
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_all_reduce(m.env[i].client, &u[i], &u[i], CUBERT_COMM_DTYPE_U8, m.ids,
                                      2, CUBERT_REDUCE_OPERATION_SUM, NULL));
    CHECK_OK(cubert_client_all_reduce(m.env[i].client, &s[i], &s[i], CUBERT_COMM_DTYPE_I8, m.ids,
                                      2, CUBERT_REDUCE_OPERATION_SUM, NULL));
  }
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
    CHECK_OK(cubert_client_read_one(m.env[i].client, &u[i], &uout, 1, NULL));
    CHECK_OK(cubert_client_read_one(m.env[i].client, &s[i], &sout, 1, NULL));
    CHECK_EQ_U64(uout, (300u % 256u));
    CHECK_EQ_I64(sout, -56); /* 200 wraps to -56 */
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &u[i], NULL));
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &s[i], NULL));
  }
  mdev_teardown(&m);
}

/* A communicator of one device: all_reduce copies (Sum) or keeps (Mean). */
TEST(cts_all_reduce_single_member_communicator) {
  cts_env_t env;
  cubert_device_id_t self;
  uint64_t v[3] = {5, 6, 7}, out[3] = {0, 0, 0};
  cubert_handle_t src, dst;
  int op;
  cts_setup(&env, 6);
  self = cubert_client_device(env.client);
  CHECK_OK(cubert_client_create_from_slice(env.client, v, sizeof v, &src, NULL));
  if (!cts_has_collectives(env.client)) {
    /* deterministic mode (one host thread steps every device) and the inline
     * driver refuse collectives, cleanly */
    cubert_error_t err;
    CHECK_STATUS(cubert_client_all_reduce(env.client, &src, &src, CUBERT_COMM_DTYPE_U64, &self, 1,
                                          CUBERT_REDUCE_OPERATION_SUM, &err),
                 CUBERT_STATUS_UNSUPPORTED);
    if (!(cubert_config_features() & CUBERT_FEATURE_COLLECTIVE_OPS)) /* the library has none */
      CHECK(cubert_error_kind(&err) == CUBERT_ERROR_COMPILED_OUT);
    else if (cts_driver_is("cuda")) /* the CUDA driver without NCCL */
      CHECK(strstr(err.reason, "NCCL unavailable") != NULL);
    else if (cubert_config_features() & CUBERT_FEATURE_ERROR_REASONS) /* the core's reason */
      CHECK(strstr(err.reason, env.deterministic ? "threaded mode" : "no collectives") != NULL);
    printf("%s: collectives refused (UNSUPPORTED); the rest of this test needs them\n",
           cts_server_name());
    CHECK_OK(cubert_client_read_one(env.client, &src, out, sizeof out, NULL));
    CHECK(memcmp(out, v, sizeof v) == 0); /* nothing was written */
    CHECK_OK(cubert_client_handle_release(env.client, &src, NULL));
    cts_teardown(&env);
    return;
  }
  for (op = 0; op < 2; op++) {
    CHECK_OK(cubert_client_empty(env.client, sizeof v, &dst, NULL));
    CHECK_OK(cubert_client_all_reduce(env.client, &src, &dst, CUBERT_COMM_DTYPE_U64, &self, 1,
                                      (cubert_reduce_operation_t)op, NULL));
    CHECK_OK(cubert_client_sync_collective(env.client, NULL));
    CHECK_OK(cubert_client_read_one(env.client, &dst, out, sizeof out, NULL));
    CHECK(memcmp(out, v, sizeof v) == 0);
    CHECK_OK(cubert_client_handle_release(env.client, &dst, NULL));
  }
  CHECK_OK(cubert_client_handle_release(env.client, &src, NULL));
  cts_teardown(&env);
  CHECK_EQ_U64(mdev_live_communicators(), 0);
}

/* ---- ordering: after the producer, visible after sync_collective ---- */

TEST(cts_all_reduce_orders_after_writes_on_the_stream) {
  mdev_t m;
  float zero[64], v[64], out[64];
  cubert_handle_t h[2];
  uint32_t i, k, round;
  memset(zero, 0, sizeof zero);
  mdev_setup_comm(&m, 2, 0, 0);
  for (i = 0; i < 2; i++) h[i] = mdev_make_f32(m.env[i].client, zero, 64);
  for (round = 1; round <= 5; round++) {
    for (i = 0; i < 2; i++) {
      for (k = 0; k < 64; k++) v[k] = (float)(round * 100 + i * 10 + k);
      /* the write is enqueued on the stream: the collective must see it */
      CHECK_OK(cubert_client_write(m.env[i].client, &h[i], v, sizeof v, NULL));
      CHECK_OK(cubert_client_all_reduce(m.env[i].client, &h[i], &h[i], CUBERT_COMM_DTYPE_F32,
                                        m.ids, 2, CUBERT_REDUCE_OPERATION_SUM, NULL));
      CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
    }
    for (i = 0; i < 2; i++) {
      mdev_read_f32(m.env[i].client, &h[i], out, 64);
      for (k = 0; k < 64; k++) CHECK(out[k] == (float)(2 * (round * 100 + k) + 10));
    }
  }
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i], NULL));
  mdev_teardown(&m);
}

TEST(cts_all_reduce_data_produced_on_another_stream) {
  mdev_t m;
  cubert_client_t *producer[2], *consumer[2];
  float v[32], out[32];
  cubert_handle_t h[2];
  uint32_t i, k;
  mdev_setup_comm(&m, 2, 0, 0);
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_clone(m.env[i].client, &producer[i], NULL));
    CHECK_OK(cubert_client_clone(m.env[i].client, &consumer[i], NULL));
    cubert_client_set_stream(producer[i], 1001);
    cubert_client_set_stream(consumer[i], 1002);
    for (k = 0; k < 32; k++) v[k] = (float)(i + 1) * (float)k;
    h[i] = mdev_make_f32(producer[i], v, 32); /* produced on stream 1001 */
  }
  for (i = 0; i < 2; i++)
    CHECK_OK(cubert_client_all_reduce(consumer[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(consumer[i], NULL));
    mdev_read_f32(consumer[i], &h[i], out, 32);
    for (k = 0; k < 32; k++) CHECK(out[k] == 3.0f * (float)k);
    CHECK_OK(cubert_client_handle_release(consumer[i], &h[i], NULL));
    cubert_client_release(producer[i]);
    cubert_client_release(consumer[i]);
  }
  mdev_teardown(&m);
}

/* The collective holds its bindings until it ran: handles released right
 * after the call do not let their memory be reused underneath it. */
TEST(cts_all_reduce_keeps_released_buffers_until_it_ran) {
  mdev_t m;
  float v[2][64], junk[64], out[64];
  cubert_handle_t src[2], dst[2], filler[16];
  cubert_memory_id_t released;
  uint32_t i, k;
  mdev_setup_comm(&m, 2, 0, 0);
  for (k = 0; k < 64; k++) {
    v[0][k] = (float)k;
    v[1][k] = (float)(1000 + k);
    junk[k] = -1.0f;
  }
  for (i = 0; i < 2; i++) {
    src[i] = mdev_make_f32(m.env[i].client, v[i], 64);
    CHECK_OK(cubert_client_empty(m.env[i].client, sizeof out, &dst[i], NULL));
  }
  /* device 0 enqueues; its collective waits for device 1 */
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &src[0], &dst[0], CUBERT_COMM_DTYPE_F32,
                                    m.ids, 2, CUBERT_REDUCE_OPERATION_SUM, NULL));
  released = src[0].memory;
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src[0], NULL));
  /* the pending collective still holds the memory */
  CHECK(cubert__memory_id_is_alive(cubert__client_handle_table(m.env[0].client), released));
  for (k = 0; k < 16; k++) filler[k] = mdev_make_f32(m.env[0].client, junk, 64);
  CHECK_OK(cubert_client_sync(m.env[0].client, NULL)); /* the fillers are written */
  CHECK_OK(cubert_client_all_reduce(m.env[1].client, &src[1], &dst[1], CUBERT_COMM_DTYPE_F32,
                                    m.ids, 2, CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
    mdev_read_f32(m.env[i].client, &dst[i], out, 64);
    for (k = 0; k < 64; k++) CHECK(out[k] == (float)(1000 + 2 * k));
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &dst[i], NULL));
  }
  /* it ran: the memory is let go */
  CHECK(!cubert__memory_id_is_alive(cubert__client_handle_table(m.env[0].client), released));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &src[1], NULL));
  for (k = 0; k < 16; k++) CHECK_OK(cubert_client_handle_release(m.env[0].client, &filler[k],
                                                                 NULL));
  mdev_teardown(&m);
}

/* One thread per device, many rounds: the rendezvous under concurrency. */
typedef struct worker_t {
  mdev_t *m;
  uint32_t i;
  int ok;
} worker_t;

static void *reduce_worker(void *arg) {
  worker_t *w = (worker_t *)arg;
  cubert_client_t *c = w->m->env[w->i].client;
  int64_t v[16], out[16];
  cubert_handle_t h;
  uint32_t round, k, n = w->m->n;
  w->ok = 1;
  for (k = 0; k < 16; k++) v[k] = 0;
  if (cubert_client_create_from_slice(c, v, sizeof v, &h, NULL) != CUBERT_STATUS_OK) {
    w->ok = 0;
    return NULL;
  }
  for (round = 0; round < 30; round++) {
    for (k = 0; k < 16; k++) v[k] = (int64_t)(w->i * 1000 + round * 16 + k);
    if (cubert_client_write(c, &h, v, sizeof v, NULL) != CUBERT_STATUS_OK ||
        cubert_client_all_reduce(c, &h, &h, CUBERT_COMM_DTYPE_I64, w->m->ids, n,
                                 CUBERT_REDUCE_OPERATION_SUM, NULL) != CUBERT_STATUS_OK ||
        cubert_client_sync_collective(c, NULL) != CUBERT_STATUS_OK ||
        cubert_client_read_one(c, &h, out, sizeof out, NULL) != CUBERT_STATUS_OK) {
      w->ok = 0;
      break;
    }
    for (k = 0; k < 16; k++) {
      int64_t want = (int64_t)(1000 * (n * (n - 1) / 2) + n * (round * 16 + k));
      if (out[k] != want) w->ok = 0;
    }
  }
  (void)cubert_client_handle_release(c, &h, NULL);
  return NULL;
}

TEST(cts_all_reduce_one_thread_per_device) {
  mdev_t m;
  pthread_t threads[4];
  worker_t workers[4];
  uint32_t i;
  mdev_setup_comm(&m, 4, 0, 0);
  for (i = 0; i < 4; i++) {
    workers[i].m = &m;
    workers[i].i = i;
    workers[i].ok = 0;
    CHECK(pthread_create(&threads[i], NULL, reduce_worker, &workers[i]) == 0);
  }
  for (i = 0; i < 4; i++) CHECK(pthread_join(threads[i], NULL) == 0);
  for (i = 0; i < 4; i++) CHECK_MSG(workers[i].ok, "device %u saw a wrong result", (unsigned)i);
  mdev_teardown(&m);
}

/* One thread per device: all_reduce, then a ring of send/recv (even devices
 * send first, odd ones receive first, so the blocking pairs match). */
static void *ring_worker(void *arg) {
  worker_t *w = (worker_t *)arg;
  cubert_client_t *c = w->m->env[w->i].client;
  uint32_t n = w->m->n, i = w->i, next = (i + 1) % n, prev = (i + n - 1) % n, round, k;
  int32_t a[8], b[8], out[8];
  cubert_handle_t ha, hb, hr;
  cubert_copy_descriptor_t d;
  w->ok = 1;
  memset(a, 0, sizeof a);
  if (cubert_client_create_from_slice(c, a, sizeof a, &ha, NULL) != CUBERT_STATUS_OK ||
      cubert_client_create_from_slice(c, a, sizeof a, &hb, NULL) != CUBERT_STATUS_OK) {
    w->ok = 0;
    return NULL;
  }
  memset(&d, 0, sizeof d);
  d.binding = hb;
  for (round = 0; round < 20 && w->ok; round++) {
    int failed = 0;
    for (k = 0; k < 8; k++) {
      a[k] = (int32_t)(i * 100 + round + k);
      b[k] = (int32_t)(i * 1000 + round * 10 + k);
    }
    failed |= cubert_client_write(c, &ha, a, sizeof a, NULL) != CUBERT_STATUS_OK;
    failed |= cubert_client_write(c, &hb, b, sizeof b, NULL) != CUBERT_STATUS_OK;
    failed |= cubert_client_all_reduce(c, &ha, &ha, CUBERT_COMM_DTYPE_I32, w->m->ids, n,
                                       CUBERT_REDUCE_OPERATION_SUM, NULL) != CUBERT_STATUS_OK;
    if (i % 2 == 0) {
      failed |= cubert_client_send(c, &d, CUBERT_COMM_DTYPE_I32, w->m->ids[next], NULL) !=
                CUBERT_STATUS_OK;
      failed |= cubert_client_recv(c, sizeof b, CUBERT_COMM_DTYPE_I32, w->m->ids[prev], &hr,
                                   NULL) != CUBERT_STATUS_OK;
    } else {
      failed |= cubert_client_recv(c, sizeof b, CUBERT_COMM_DTYPE_I32, w->m->ids[prev], &hr,
                                   NULL) != CUBERT_STATUS_OK;
      failed |= cubert_client_send(c, &d, CUBERT_COMM_DTYPE_I32, w->m->ids[next], NULL) !=
                CUBERT_STATUS_OK;
    }
    failed |= cubert_client_sync_collective(c, NULL) != CUBERT_STATUS_OK;
    if (failed) {
      w->ok = 0;
      break;
    }
    if (cubert_client_read_one(c, &ha, out, sizeof out, NULL) != CUBERT_STATUS_OK) w->ok = 0;
    for (k = 0; k < 8 && w->ok; k++)
      if (out[k] != (int32_t)(100 * (n * (n - 1) / 2) + n * (round + k))) w->ok = 0;
    if (cubert_client_read_one(c, &hr, out, sizeof out, NULL) != CUBERT_STATUS_OK) w->ok = 0;
    for (k = 0; k < 8 && w->ok; k++)
      if (out[k] != (int32_t)(prev * 1000 + round * 10 + k)) w->ok = 0;
    (void)cubert_client_handle_release(c, &hr, NULL);
  }
  (void)cubert_client_handle_release(c, &ha, NULL);
  (void)cubert_client_handle_release(c, &hb, NULL);
  return NULL;
}

TEST(cts_all_reduce_and_send_recv_ring_one_thread_per_device) {
  mdev_t m;
  pthread_t threads[4];
  worker_t workers[4];
  uint32_t i;
  mdev_setup_comm(&m, 4, 0, 0);
  for (i = 0; i < 4; i++) {
    workers[i].m = &m;
    workers[i].i = i;
    workers[i].ok = 0;
    CHECK(pthread_create(&threads[i], NULL, ring_worker, &workers[i]) == 0);
  }
  for (i = 0; i < 4; i++) CHECK(pthread_join(threads[i], NULL) == 0);
  for (i = 0; i < 4; i++) CHECK_MSG(workers[i].ok, "device %u saw a wrong result", (unsigned)i);
  mdev_teardown(&m);
}

/* Conformance: collectives among devices of one process (spec 1.6, 2.3,
 * 8): ensure_init_collective, all_reduce, send/recv, sync_collective, their
 * ordering and their error paths (enqueue-time and rendezvous-time). A
 * device without collectives answers UNSUPPORTED (single member test); the
 * others are skipped there. */
#include "cts_multi.h"

#include <pthread.h>

#include "cubert/cpu.h"

/* ---- helpers ---- */

static cubert_handle_t make_f32(cubert_client_t *c, const float *v, size_t n) {
  cubert_handle_t h;
  CHECK_OK(cubert_client_create(c, v, n * sizeof(float), &h, NULL));
  return h;
}

static void read_f32(cubert_client_t *c, const cubert_handle_t *h, float *out, size_t n) {
  CHECK_OK(cubert_client_read_one(c, h, out, n * sizeof(float), NULL));
}

static void sync_all(mdev_t *m) {
  uint32_t i;
  for (i = 0; i < m->n; i++) {
    CHECK_OK(cubert_client_sync_collective(m->env[i].client, NULL));
    CHECK_OK(cubert_client_sync(m->env[i].client, NULL));
  }
}

/* After sync_collective, the device's next sync reports a queued collective
 * error whose innermost kind is `kind`. */
static void expect_queued(cubert_client_t *c, cubert_error_kind_t kind) {
  cubert_error_t err;
  char msg[512];
  CHECK_OK(cubert_client_sync_collective(c, NULL));
  CHECK_STATUS(cubert_client_sync(c, &err), CUBERT_STATUS_SERVER_UNHEALTHY);
  cubert_error_format(&err, msg, sizeof msg);
  CHECK_MSG(cubert_error_has_kind(&err, kind), "expected %s in: %s", cubert_error_kind_name(kind),
            msg);
  /* drained: the stream is healthy again */
  CHECK_OK(cubert_client_sync(c, NULL));
}

/* ---- the seed's runtime test (spec 8): test_all_reduce_sync_collective ---- */

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
      h[i][j] = make_f32(m.env[i].client, buf, 100);
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
      read_f32(m.env[i].client, &h[i][j], out, 100);
      for (k = 0; k < 100; k++)
        CHECK_MSG(out[k] == index_sum + (float)(j * n), "device %u handle %u [%u]: %g != %g", i, j,
                  k, (double)out[k], (double)(index_sum + (float)(j * n)));
      CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i][j]));
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
    default: test_fail(__FILE__, __LINE__, "dtype %u", dtype);
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
    default: test_fail(__FILE__, __LINE__, "dtype %u", dtype);
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
        CHECK_OK(cubert_client_create(m.env[i].client, buf, NE * w, &src[i], NULL));
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
                    dtype, op, i, e, get(dtype, out + e * w), want);
        }
        /* the source is untouched */
        CHECK_OK(cubert_client_read_one(m.env[i].client, &src[i], out, NE * w, NULL));
        CHECK(get(dtype, out + w) == gen_value(dtype, i, 1));
        CHECK_OK(cubert_client_handle_release(m.env[i].client, &src[i]));
        CHECK_OK(cubert_client_handle_release(m.env[i].client, &dst[i]));
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
    CHECK_OK(cubert_client_create(m.env[i].client, vals[i], sizeof a, &h[i], NULL));
    CHECK_OK(cubert_client_all_reduce(m.env[i].client, &h[i], &h[i], CUBERT_COMM_DTYPE_I32, m.ids,
                                      3, CUBERT_REDUCE_OPERATION_MEAN, NULL));
  }
  for (i = 0; i < 3; i++) {
    CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
    CHECK_OK(cubert_client_read_one(m.env[i].client, &h[i], out, sizeof out, NULL));
    CHECK_EQ_I64(out[0], -2); /* -7/3 = -2.33: truncated, not floored (-3) */
    CHECK_EQ_I64(out[1], 2);  /* 8/3 = 2.67: truncated, not rounded (3) */
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i]));
  }
  /* two of the three devices: a pair communicator */
  CHECK_OK(cubert_client_create(m.env[0].client, &ua, 1, &u[0], NULL));
  CHECK_OK(cubert_client_create(m.env[1].client, &ub, 1, &u[1], NULL));
  CHECK_OK(cubert_client_create(m.env[0].client, &sa, 1, &s[0], NULL));
  CHECK_OK(cubert_client_create(m.env[1].client, &sb, 1, &s[1], NULL));
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
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &u[i]));
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &s[i]));
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
  CHECK_OK(cubert_client_create(env.client, v, sizeof v, &src, NULL));
  if (!cts_has_collectives(env.client)) {
    /* deterministic mode (one host thread steps every device) and the inline
     * driver refuse collectives, cleanly */
    cubert_error_t err;
    CHECK_STATUS(cubert_client_all_reduce(env.client, &src, &src, CUBERT_COMM_DTYPE_U64, &self, 1,
                                          CUBERT_REDUCE_OPERATION_SUM, &err),
                 CUBERT_STATUS_UNSUPPORTED);
    CHECK(strstr(err.reason, env.deterministic ? "threaded mode" : "no collectives") != NULL);
    printf("%s: collectives refused (UNSUPPORTED); the rest of this test needs them\n",
           cts_server_name());
    CHECK_OK(cubert_client_read_one(env.client, &src, out, sizeof out, NULL));
    CHECK(memcmp(out, v, sizeof v) == 0); /* nothing was written */
    CHECK_OK(cubert_client_handle_release(env.client, &src));
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
    CHECK_OK(cubert_client_handle_release(env.client, &dst));
  }
  CHECK_OK(cubert_client_handle_release(env.client, &src));
  cts_teardown(&env);
  CHECK_EQ_U64(mdev_live_communicators(), 0);
}

/* ---- ordering (spec 8): after the producer, visible after sync_collective ---- */

TEST(cts_all_reduce_orders_after_writes_on_the_stream) {
  mdev_t m;
  float zero[64], v[64], out[64];
  cubert_handle_t h[2];
  uint32_t i, k, round;
  memset(zero, 0, sizeof zero);
  mdev_setup_comm(&m, 2, 0, 0);
  for (i = 0; i < 2; i++) h[i] = make_f32(m.env[i].client, zero, 64);
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
      read_f32(m.env[i].client, &h[i], out, 64);
      for (k = 0; k < 64; k++) CHECK(out[k] == (float)(2 * (round * 100 + k) + 10));
    }
  }
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i]));
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
    CHECK_OK(cubert_client_clone(m.env[i].client, &producer[i]));
    CHECK_OK(cubert_client_clone(m.env[i].client, &consumer[i]));
    cubert_client_set_stream(producer[i], 1001);
    cubert_client_set_stream(consumer[i], 1002);
    for (k = 0; k < 32; k++) v[k] = (float)(i + 1) * (float)k;
    h[i] = make_f32(producer[i], v, 32); /* produced on stream 1001 */
  }
  for (i = 0; i < 2; i++)
    CHECK_OK(cubert_client_all_reduce(consumer[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(consumer[i], NULL));
    read_f32(consumer[i], &h[i], out, 32);
    for (k = 0; k < 32; k++) CHECK(out[k] == 3.0f * (float)k);
    CHECK_OK(cubert_client_handle_release(consumer[i], &h[i]));
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
    src[i] = make_f32(m.env[i].client, v[i], 64);
    CHECK_OK(cubert_client_empty(m.env[i].client, sizeof out, &dst[i], NULL));
  }
  /* device 0 enqueues; its collective waits for device 1 */
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &src[0], &dst[0], CUBERT_COMM_DTYPE_F32,
                                    m.ids, 2, CUBERT_REDUCE_OPERATION_SUM, NULL));
  released = src[0].memory;
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src[0]));
  /* the pending collective still holds the memory */
  CHECK(cubert_memory_id_is_alive(cubert_client_handle_table(m.env[0].client), released));
  for (k = 0; k < 16; k++) filler[k] = make_f32(m.env[0].client, junk, 64);
  CHECK_OK(cubert_client_sync(m.env[0].client, NULL)); /* the fillers are written */
  CHECK_OK(cubert_client_all_reduce(m.env[1].client, &src[1], &dst[1], CUBERT_COMM_DTYPE_F32,
                                    m.ids, 2, CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
    read_f32(m.env[i].client, &dst[i], out, 64);
    for (k = 0; k < 64; k++) CHECK(out[k] == (float)(1000 + 2 * k));
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &dst[i]));
  }
  /* it ran: the memory is let go */
  CHECK(!cubert_memory_id_is_alive(cubert_client_handle_table(m.env[0].client), released));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &src[1]));
  for (k = 0; k < 16; k++) CHECK_OK(cubert_client_handle_release(m.env[0].client, &filler[k]));
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
  if (cubert_client_create(c, v, sizeof v, &h, NULL) != CUBERT_STATUS_OK) {
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
  (void)cubert_client_handle_release(c, &h);
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
  for (i = 0; i < 4; i++) CHECK_MSG(workers[i].ok, "device %u saw a wrong result", i);
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
  if (cubert_client_create(c, a, sizeof a, &ha, NULL) != CUBERT_STATUS_OK ||
      cubert_client_create(c, a, sizeof a, &hb, NULL) != CUBERT_STATUS_OK) {
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
    (void)cubert_client_handle_release(c, &hr);
  }
  (void)cubert_client_handle_release(c, &ha);
  (void)cubert_client_handle_release(c, &hb);
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
  for (i = 0; i < 4; i++) CHECK_MSG(workers[i].ok, "device %u saw a wrong result", i);
  mdev_teardown(&m);
}

/* ---- send / recv ---- */

TEST(cts_send_recv_moves_bytes) {
  mdev_t m;
  double v[10], out[10];
  cubert_handle_t src, dst;
  cubert_copy_descriptor_t d;
  uint32_t k;
  mdev_setup_comm(&m, 2, 0, 0);
  for (k = 0; k < 10; k++) v[k] = 1.5 * k - 4;
  CHECK_OK(cubert_client_create(m.env[0].client, v, sizeof v, &src, NULL));
  memset(&d, 0, sizeof d);
  d.binding = src;
  d.rank = 1;
  d.shape[0] = 10;
  d.strides[0] = 1;
  d.elem_size = 8;
  CHECK_OK(cubert_client_recv(m.env[1].client, sizeof v, CUBERT_COMM_DTYPE_F64, m.ids[0], &dst,
                              NULL));
  CHECK_EQ_U64(dst.device, m.ids[1].index_id);
  CHECK_EQ_U64(cubert_handle_size_in_used(&dst), sizeof v);
  CHECK_OK(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_F64, m.ids[1], NULL));
  CHECK_OK(cubert_client_sync_collective(m.env[1].client, NULL));
  CHECK_OK(cubert_client_read_one(m.env[1].client, &dst, out, sizeof out, NULL));
  for (k = 0; k < 10; k++) CHECK(out[k] == v[k]);
  /* the sender's data is untouched and the sender's streams are healthy */
  sync_all(&m);
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst));
  mdev_teardown(&m);
}

TEST(cts_send_recv_argument_errors) {
  mdev_t m;
  uint32_t v[4] = {1, 2, 3, 4};
  cubert_handle_t src, dst, other, dead;
  cubert_copy_descriptor_t d;
  cubert_device_id_t alien;
  cubert_error_t err;
  mdev_setup_comm(&m, 2, 0, 0);
  CHECK_OK(cubert_client_create(m.env[0].client, v, sizeof v, &src, NULL));
  CHECK_OK(cubert_client_create(m.env[1].client, v, sizeof v, &other, NULL));
  CHECK_OK(cubert_client_create(m.env[0].client, v, sizeof v, &dead, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &dead));
  memset(&d, 0, sizeof d);
  d.binding = src;
  d.rank = 1;
  d.shape[0] = 4;
  d.strides[0] = 1;
  d.elem_size = 4;
  alien.type_id = 77;
  alien.index_id = 1;
  /* send to itself */
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[0], &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_INVALID_ARGUMENT);
  /* recv from itself */
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_U32, m.ids[1], &dst, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* peer of another backend type */
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, alien, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_U32, alien, &dst, &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  /* unknown dtype */
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, 99, m.ids[1], &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 16, 99, m.ids[0], &dst, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* size not a multiple of the dtype width */
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 6, CUBERT_COMM_DTYPE_U32, m.ids[0], &dst, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, 99, m.ids[1], &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* source binding of another device / released */
  d.binding = other;
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], &err),
               CUBERT_STATUS_DEVICE_MISMATCH);
  d.binding = dead;
  CHECK_STATUS(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], &err),
               CUBERT_STATUS_INVALID_HANDLE);
  CHECK_STATUS(cubert_client_send(m.env[0].client, NULL, CUBERT_COMM_DTYPE_U32, m.ids[1], &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_U32, m.ids[0], NULL, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  /* nothing was enqueued: a valid pair still matches */
  d.binding = src;
  CHECK_OK(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], NULL));
  CHECK_OK(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_U32, m.ids[0], &dst, NULL));
  sync_all(&m);
  {
    uint32_t out[4];
    CHECK_OK(cubert_client_read_one(m.env[1].client, &dst, out, sizeof out, NULL));
    CHECK(memcmp(out, v, sizeof v) == 0);
  }
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &other));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst));
  mdev_teardown(&m);
}

TEST(cts_send_recv_size_or_dtype_mismatch_is_queued_on_both) {
  mdev_t m;
  uint32_t v[4] = {1, 2, 3, 4}, out[8];
  cubert_handle_t src, dst;
  cubert_copy_descriptor_t d;
  mdev_setup_comm(&m, 2, 0, 0);
  CHECK_OK(cubert_client_create(m.env[0].client, v, sizeof v, &src, NULL));
  memset(&d, 0, sizeof d);
  d.binding = src;
  /* size mismatch: 16 bytes sent, 32 expected */
  CHECK_OK(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], NULL));
  CHECK_OK(cubert_client_recv(m.env[1].client, 32, CUBERT_COMM_DTYPE_U32, m.ids[0], &dst, NULL));
  expect_queued(m.env[0].client, CUBERT_ERROR_SERVER_VALIDATION);
  expect_queued(m.env[1].client, CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst));
  /* dtype mismatch (same size) */
  CHECK_OK(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], NULL));
  CHECK_OK(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_F32, m.ids[0], &dst, NULL));
  expect_queued(m.env[0].client, CUBERT_ERROR_SERVER_VALIDATION);
  expect_queued(m.env[1].client, CUBERT_ERROR_SERVER_VALIDATION);
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst));
  /* the communicator is still usable */
  CHECK_OK(cubert_client_send(m.env[0].client, &d, CUBERT_COMM_DTYPE_U32, m.ids[1], NULL));
  CHECK_OK(cubert_client_recv(m.env[1].client, 16, CUBERT_COMM_DTYPE_U32, m.ids[0], &dst, NULL));
  sync_all(&m);
  CHECK_OK(cubert_client_read_one(m.env[1].client, &dst, out, sizeof out, NULL));
  CHECK(memcmp(out, v, sizeof v) == 0);
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &src));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &dst));
  mdev_teardown(&m);
}

/* ---- all_reduce errors found before anything is enqueued ---- */

TEST(cts_all_reduce_argument_errors_enqueue_nothing) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4}, out[4];
  cubert_handle_t h[2], small, other_stream, foreign, dead, odd;
  cubert_client_t *pinned;
  cubert_device_id_t ids[CUBERT_COMMUNICATION_MAX_DEVICES + 1], dup[2], alien[2], without_self[1];
  cubert_error_t err;
  cubert_client_t *c0;
  uint32_t i;
  mdev_setup_comm(&m, 2, 0, 0);
  c0 = m.env[0].client;
  for (i = 0; i < 2; i++) h[i] = make_f32(m.env[i].client, v, 4);
  small = make_f32(c0, v, 2);
  CHECK_OK(cubert_client_create(c0, v, 6, &odd, NULL));
  foreign = make_f32(m.env[1].client, v, 4);
  dead = make_f32(c0, v, 4);
  CHECK_OK(cubert_client_handle_release(c0, &dead));
  CHECK_OK(cubert_client_clone(c0, &pinned));
  cubert_client_set_stream(pinned, 4242);
  other_stream = make_f32(pinned, v, 4);
  for (i = 0; i <= CUBERT_COMMUNICATION_MAX_DEVICES; i++) {
    ids[i].type_id = m.ids[0].type_id;
    ids[i].index_id = i;
  }
  dup[0] = m.ids[0];
  dup[1] = m.ids[0];
  alien[0] = m.ids[0];
  alien[1].type_id = 77;
  alien[1].index_id = 1;
  without_self[0] = m.ids[1];

#define AR(src, dst, dtype, devs, n, op, want)                                            \
  do {                                                                                  \
    cubert_error_clear(&err);                                                           \
    CHECK_STATUS(cubert_client_all_reduce(c0, (src), (dst), (dtype), (devs), (n), (op), &err), \
                 (want));                                                               \
    CHECK(err.status == (want));                                                        \
  } while (0)
  AR(&h[0], &h[0], 99, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM, CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2, (cubert_reduce_operation_t)7,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F16, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_UNSUPPORTED);
  AR(&odd, &odd, CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &small, CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_OUT_OF_RANGE);
  AR(&h[0], &other_stream, CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK(cubert_error_kind(&err) == CUBERT_ERROR_SERVER_VALIDATION);
  AR(&foreign, &foreign, CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_DEVICE_MISMATCH);
  AR(&dead, &dead, CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_HANDLE);
  AR(NULL, &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, NULL, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 0, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, dup, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_INVALID_ARGUMENT);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, alien, 2, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_DEVICE_MISMATCH);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, without_self, 1, CUBERT_REDUCE_OPERATION_SUM,
     CUBERT_STATUS_DEVICE_MISMATCH);
  AR(&h[0], &h[0], CUBERT_COMM_DTYPE_F32, ids, CUBERT_COMMUNICATION_MAX_DEVICES + 1,
     CUBERT_REDUCE_OPERATION_SUM, CUBERT_STATUS_OUT_OF_RANGE);
#undef AR
  /* nothing was enqueued: the streams are healthy and a valid round matches */
  sync_all(&m);
  for (i = 0; i < 2; i++)
    CHECK_OK(cubert_client_all_reduce(m.env[i].client, &h[i], &h[i], CUBERT_COMM_DTYPE_F32, m.ids,
                                      2, CUBERT_REDUCE_OPERATION_MEAN, NULL));
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
    read_f32(m.env[i].client, &h[i], out, 4);
    CHECK(memcmp(out, v, sizeof v) == 0); /* mean of two equal inputs */
    CHECK_OK(cubert_client_sync(m.env[i].client, NULL));
  }
  CHECK_OK(cubert_client_handle_release(c0, &small));
  CHECK_OK(cubert_client_handle_release(c0, &odd));
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &foreign));
  CHECK_OK(cubert_client_handle_release(pinned, &other_stream));
  cubert_client_release(pinned);
  for (i = 0; i < 2; i++) CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i]));
  mdev_teardown(&m);
}

/* ---- errors found at the rendezvous: queued on every member ---- */

TEST(cts_all_reduce_member_mismatch_is_queued_and_leaves_data) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4}, out[4];
  cubert_handle_t h[2], big;
  cubert_copy_descriptor_t d;
  uint32_t i;
  mdev_setup_comm(&m, 2, 0, 0);
  for (i = 0; i < 2; i++) h[i] = make_f32(m.env[i].client, v, 4);
  /* dtype mismatch: F32 against I32 (same size) */
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_all_reduce(m.env[1].client, &h[1], &h[1], CUBERT_COMM_DTYPE_I32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) expect_queued(m.env[i].client, CUBERT_ERROR_SERVER_VALIDATION);
  /* op mismatch */
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_all_reduce(m.env[1].client, &h[1], &h[1], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_MEAN, NULL));
  for (i = 0; i < 2; i++) expect_queued(m.env[i].client, CUBERT_ERROR_SERVER_VALIDATION);
  /* size mismatch */
  big = make_f32(m.env[1].client, v, 2);
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_all_reduce(m.env[1].client, &big, &big, CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) expect_queued(m.env[i].client, CUBERT_ERROR_SERVER_VALIDATION);
  /* operation mismatch: all_reduce against send on the pair's communicator */
  memset(&d, 0, sizeof d);
  d.binding = h[1];
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_send(m.env[1].client, &d, CUBERT_COMM_DTYPE_F32, m.ids[0], NULL));
  for (i = 0; i < 2; i++) expect_queued(m.env[i].client, CUBERT_ERROR_SERVER_VALIDATION);
  /* no destination was written; the communicator still works */
  for (i = 0; i < 2; i++) {
    read_f32(m.env[i].client, &h[i], out, 4);
    CHECK(memcmp(out, v, sizeof v) == 0);
    CHECK_OK(cubert_client_all_reduce(m.env[i].client, &h[i], &h[i], CUBERT_COMM_DTYPE_F32, m.ids,
                                      2, CUBERT_REDUCE_OPERATION_SUM, NULL));
  }
  for (i = 0; i < 2; i++) {
    CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
    read_f32(m.env[i].client, &h[i], out, 4);
    CHECK(out[0] == 2 && out[3] == 8);
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i]));
  }
  CHECK_OK(cubert_client_handle_release(m.env[1].client, &big));
  mdev_teardown(&m);
}

/* ---- no hang: peers that never arrive ---- */

TEST(cts_all_reduce_missing_peer_times_out_and_aborts) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4}, out[4];
  cubert_handle_t h;
  cubert_error_t err;
  uint64_t t0;
  mdev_setup_comm(&m, 2, 0, 200);
  h = make_f32(m.env[0].client, v, 4);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, m.ids, 2, NULL));
  t0 = mdev_now_ms();
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h, &h, CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  expect_queued(m.env[0].client, CUBERT_ERROR_DEADLINE_EXCEEDED);
  CHECK_MSG(mdev_now_ms() - t0 < 10000, "took %llu ms", (unsigned long long)(mdev_now_ms() - t0));
  read_f32(m.env[0].client, &h, out, 4);
  CHECK(memcmp(out, v, sizeof v) == 0);
  /* aborted: the late peer cannot join a new round */
  CHECK_STATUS(cubert_client_all_reduce(m.env[0].client, &h, &h, CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                        CUBERT_REDUCE_OPERATION_SUM, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &h));
  mdev_teardown(&m);
  /* once every member left, the same device set starts afresh */
  mdev_setup_comm(&m, 2, 0, 200);
  {
    cubert_handle_t g[2];
    uint32_t i;
    for (i = 0; i < 2; i++) g[i] = make_f32(m.env[i].client, v, 4);
    for (i = 0; i < 2; i++)
      CHECK_OK(cubert_client_all_reduce(m.env[i].client, &g[i], &g[i], CUBERT_COMM_DTYPE_F32,
                                        m.ids, 2, CUBERT_REDUCE_OPERATION_SUM, NULL));
    for (i = 0; i < 2; i++) {
      CHECK_OK(cubert_client_sync_collective(m.env[i].client, NULL));
      read_f32(m.env[i].client, &g[i], out, 4);
      CHECK(out[1] == 4);
      CHECK_OK(cubert_client_handle_release(m.env[i].client, &g[i]));
    }
  }
  mdev_teardown(&m);
}

/* Members that disagree on the device set meet in different communicators:
 * each side times out instead of hanging. */
TEST(cts_all_reduce_different_device_sets_time_out) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4}, out[4];
  cubert_handle_t h[2];
  uint32_t i;
  mdev_setup_comm(&m, 3, 0, 200);
  for (i = 0; i < 2; i++) h[i] = make_f32(m.env[i].client, v, 4);
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h[0], &h[0], CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_all_reduce(m.env[1].client, &h[1], &h[1], CUBERT_COMM_DTYPE_F32, m.ids, 3,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  for (i = 0; i < 2; i++) {
    expect_queued(m.env[i].client, CUBERT_ERROR_DEADLINE_EXCEEDED);
    read_f32(m.env[i].client, &h[i], out, 4);
    CHECK(memcmp(out, v, sizeof v) == 0);
    CHECK_OK(cubert_client_handle_release(m.env[i].client, &h[i]));
  }
  mdev_teardown(&m);
}

TEST(cts_release_with_pending_collective_does_not_hang) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4};
  cubert_handle_t h;
  cubert_error_t err;
  uint64_t t0;
  mdev_setup_comm(&m, 2, 0, 0); /* default timeout: 60 s, longer than this test's budget */
  h = make_f32(m.env[0].client, v, 4);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, m.ids, 2, NULL));
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h, &h, CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &h));
  t0 = mdev_now_ms();
  cts_teardown(&m.env[0]); /* the pending collective is cancelled after the grace period */
  m.env[0].client = NULL;
  CHECK_MSG(mdev_now_ms() - t0 < 10000, "teardown took %llu ms",
            (unsigned long long)(mdev_now_ms() - t0));
  /* the communicator was aborted: the survivor gets an error, not a hang */
  CHECK_STATUS(cubert_client_ensure_init_collective(m.env[1].client, m.ids, 2, &err),
               CUBERT_STATUS_FAILED_PRECONDITION);
  mdev_teardown(&m);
}

TEST(cts_released_peer_aborts_waiting_collective) {
  mdev_t m;
  float v[4] = {1, 2, 3, 4};
  cubert_handle_t h;
  uint64_t t0;
  mdev_setup_comm(&m, 2, 0, 0); /* default timeout: 60 s */
  h = make_f32(m.env[0].client, v, 4);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 2, NULL));
  CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, m.ids, 2, NULL));
  /* device 1 leaves without ever taking part */
  cts_teardown(&m.env[1]);
  m.env[1].client = NULL;
  t0 = mdev_now_ms();
  CHECK_OK(cubert_client_all_reduce(m.env[0].client, &h, &h, CUBERT_COMM_DTYPE_F32, m.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  expect_queued(m.env[0].client, CUBERT_ERROR_DEVICE_LOST);
  CHECK_MSG(mdev_now_ms() - t0 < 10000, "took %llu ms", (unsigned long long)(mdev_now_ms() - t0));
  CHECK_OK(cubert_client_handle_release(m.env[0].client, &h));
  mdev_teardown(&m);
}

/* ---- ensure_init_collective and sync_collective ---- */

TEST(cts_ensure_init_collective_is_idempotent_and_order_free) {
  mdev_t m;
  cubert_device_id_t rev[3];
  mdev_setup_comm(&m, 3, 0, 0);
  rev[0] = m.ids[2];
  rev[1] = m.ids[0];
  rev[2] = m.ids[1];
  CHECK_EQ_U64(mdev_live_communicators(), 0);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 3, NULL));
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 3, NULL));
  CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, rev, 3, NULL));
  CHECK_EQ_U64(mdev_live_communicators(), 1); /* one communicator for the set */
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 2, NULL));
  CHECK_EQ_U64(mdev_live_communicators(), 2);
  mdev_teardown(&m);
}

TEST(cts_ensure_init_collective_limits) {
  mdev_t m;
  cubert_device_id_t pair[2];
  cubert_error_t err;
  uint32_t k;
  mdev_setup_comm(&m, 3, 0, 0);
  /* one device joins at most 16 communicators */
  pair[0] = m.ids[0];
  for (k = 1; k <= 16; k++) {
    pair[1].type_id = m.ids[0].type_id;
    pair[1].index_id = 100 + k;
    CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, pair, 2, NULL));
  }
  pair[1].index_id = 200;
  CHECK_STATUS(cubert_client_ensure_init_collective(m.env[0].client, pair, 2, &err),
               CUBERT_STATUS_OUT_OF_RANGE);
  /* the process holds at most 32 communicators */
  pair[0] = m.ids[1];
  for (k = 1; k <= 16; k++) {
    pair[1].index_id = 300 + k;
    CHECK_OK(cubert_client_ensure_init_collective(m.env[1].client, pair, 2, NULL));
  }
  CHECK_EQ_U64(mdev_live_communicators(), 32);
  pair[0] = m.ids[2];
  pair[1].index_id = 400;
  CHECK_STATUS(cubert_client_ensure_init_collective(m.env[2].client, pair, 2, &err),
               CUBERT_STATUS_RESOURCE_EXHAUSTED);
  /* a released device leaves its communicators: the slots come back */
  cts_teardown(&m.env[0]);
  m.env[0].client = NULL;
  CHECK_EQ_U64(mdev_live_communicators(), 16);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[2].client, pair, 2, NULL));
  CHECK_EQ_U64(mdev_live_communicators(), 17);
  mdev_teardown(&m);
}

TEST(cts_sync_collective_without_collectives_is_a_no_op) {
  cts_env_t env;
  cts_setup(&env, 0);
  CHECK_OK(cubert_client_sync_collective(env.client, NULL));
  CHECK_OK(cubert_client_sync(env.client, NULL));
  CHECK_STATUS(cubert_client_sync_collective(NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_ensure_init_collective(NULL, NULL, 0, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_client_ensure_init_collective(env.client, NULL, 1, NULL),
               CUBERT_STATUS_INVALID_ARGUMENT);
  cts_teardown(&env);
}

TEST(cts_collective_state_allocation_failure) {
  mdev_t m;
  cubert_error_t err;
  uint64_t n;
  cubert_status_t status = CUBERT_STATUS_RESOURCE_EXHAUSTED;
  mdev_setup_comm(&m, 2, 0, 0);
  /* the first comm_init allocates the driver's communicator, the kit's
   * communication state, its stream and the stream's ring: each failure is
   * reported and leaves nothing behind */
  for (n = 1; n <= 16 && status != CUBERT_STATUS_OK; n++) {
    counting_allocator_fail_at(&m.env[0].counting, n, 0);
    status = cubert_client_ensure_init_collective(m.env[0].client, m.ids, 2, &err);
    counting_allocator_fail_at(&m.env[0].counting, 0, 0);
    if (status == CUBERT_STATUS_OK) break;
    CHECK_STATUS(status, CUBERT_STATUS_RESOURCE_EXHAUSTED);
    CHECK(cubert_error_kind(&err) == CUBERT_ERROR_HOST_OUT_OF_MEMORY);
    CHECK_EQ_U64(mdev_live_communicators(), 0);
  }
  CHECK_OK(status);
  CHECK_MSG(n >= 4, "only %llu allocation(s) in the first comm_init", (unsigned long long)n - 1);
  CHECK_EQ_U64(mdev_live_communicators(), 1);
  CHECK_OK(cubert_client_ensure_init_collective(m.env[0].client, m.ids, 2, NULL)); /* idempotent */
  mdev_teardown(&m);
}

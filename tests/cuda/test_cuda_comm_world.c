/* SPDX-License-Identifier: MIT */
/*
 * tests/cuda/test_cuda_comm_world.c: process communicators
 * (cubert_cuda_comm_init_rank): one rank per process, the unique id given
 * or handed over through a file. Ranks run here as threads of one process
 * (each with its own device and its own NCCL communicator, meeting through
 * the fake NCCL's shared-memory segment, as processes would) and, once, as
 * forked processes. Then what must not hang: a collective whose peer never
 * takes part (the watchdog's timeout), a peer that went away (NCCL's
 * asynchronous error), an init whose peers never come; and every argument
 * error. cuda_gpu_comm_world_* run on the machine's GPUs (two needed).
 */
#include "cuda_comm_test.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cubert/cpu.h"
#include "cubert/os.h"

typedef struct rank_t {
  comm_env_t *e;
  uint32_t device; /* which of e's devices */
  uint32_t rank, nranks;
  const cubert_cuda_comm_id_t *id;
  const char *id_file;
  uint32_t timeout_ms;
  cubert_status_t status;
  cubert_error_t err;
} rank_t;

static void *init_main(void *arg) {
  rank_t *r = (rank_t *)arg;
  cubert_cuda_comm_options_t o;
  cubert_cuda_comm_options_initialize(&o);
  o.rank = r->rank;
  o.nranks = r->nranks;
  o.id = r->id;
  o.id_file = r->id_file;
  o.timeout_ms = r->timeout_ms;
  r->status = cubert_cuda_comm_init_rank(r->e->c[r->device], &o, &r->err);
  return NULL;
}

/* Device i of e becomes rank i (threads: each init blocks until all joined). */
static void world_init(comm_env_t *e, uint32_t timeout_ms, const char *id_file) {
  pthread_t t[COMM_MAX];
  rank_t r[COMM_MAX];
  cubert_cuda_comm_id_t id;
  uint32_t i;
  char msg[512];
  if (!id_file) CHECK_OK(cubert_cuda_comm_unique_id(&id, NULL));
  for (i = 0; i < e->n; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].e = e;
    r[i].device = i;
    r[i].rank = i;
    r[i].nranks = e->n;
    r[i].id = id_file ? NULL : &id;
    r[i].id_file = id_file;
    r[i].timeout_ms = timeout_ms;
    CHECK(pthread_create(&t[i], NULL, init_main, &r[i]) == 0);
  }
  for (i = 0; i < e->n; i++) CHECK(pthread_join(t[i], NULL) == 0);
  for (i = 0; i < e->n; i++) {
    cubert_error_format(&r[i].err, msg, sizeof msg);
    CHECK_MSG(r[i].status == CUBERT_STATUS_OK, "rank %u: %s", (unsigned)i, msg);
  }
}

typedef struct work_t {
  comm_env_t *e;
  uint32_t rank;
  int ok;
} work_t;

/* Each rank: Sum, Mean, and a send / recv ring between ranks 0 and 1. */
static void *work_main(void *arg) {
  work_t *w = (work_t *)arg;
  cubert_client_t *c = w->e->c[w->rank];
  uint32_t n = w->e->n, k;
  float v[16], out[16];
  cubert_handle_t h, got;
  cubert_copy_descriptor_t d;
  int op;
  w->ok = 1;
  for (op = 0; op < 2; op++) {
    for (k = 0; k < 16; k++) v[k] = (float)(w->rank * 100 + k);
    if (cubert_client_create_from_slice(c, v, sizeof v, &h, NULL) != CUBERT_STATUS_OK ||
        cubert_client_all_reduce(c, &h, &h, CUBERT_COMM_DTYPE_F32, w->e->ids, n,
                                 (cubert_reduce_operation_t)op, NULL) != CUBERT_STATUS_OK ||
        cubert_client_sync_collective(c, NULL) != CUBERT_STATUS_OK ||
        cubert_client_read_one(c, &h, out, sizeof out, NULL) != CUBERT_STATUS_OK) {
      w->ok = 0;
      return NULL;
    }
    for (k = 0; k < 16; k++) {
      float sum = (float)(100 * (n * (n - 1) / 2) + n * k);
      if (out[k] != (op ? sum / (float)n : sum)) w->ok = 0;
    }
    if (w->rank < 2 && n == 2) { /* 0 sends its result to 1 */
      memset(&d, 0, sizeof d);
      d.binding = h;
      if (w->rank == 0) {
        if (cubert_client_send(c, &d, CUBERT_COMM_DTYPE_F32, w->e->ids[1], NULL) != CUBERT_STATUS_OK)
          w->ok = 0;
      } else if (cubert_client_recv(c, sizeof v, CUBERT_COMM_DTYPE_F32, w->e->ids[0], &got,
                                    NULL) != CUBERT_STATUS_OK ||
                 cubert_client_sync_collective(c, NULL) != CUBERT_STATUS_OK ||
                 cubert_client_read_one(c, &got, v, sizeof v, NULL) != CUBERT_STATUS_OK ||
                 memcmp(v, out, sizeof v) != 0 ||
                 cubert_client_handle_release(c, &got, NULL) != CUBERT_STATUS_OK) {
        w->ok = 0;
      }
    }
    if (cubert_client_sync_collective(c, NULL) != CUBERT_STATUS_OK ||
        cubert_client_sync(c, NULL) != CUBERT_STATUS_OK ||
        cubert_client_handle_release(c, &h, NULL) != CUBERT_STATUS_OK)
      w->ok = 0;
  }
  return NULL;
}

static void world_work(comm_env_t *e) {
  pthread_t t[COMM_MAX];
  work_t w[COMM_MAX];
  uint32_t i;
  for (i = 0; i < e->n; i++) {
    w[i].e = e;
    w[i].rank = i;
    w[i].ok = 0;
    CHECK(pthread_create(&t[i], NULL, work_main, &w[i]) == 0);
  }
  for (i = 0; i < e->n; i++) CHECK(pthread_join(t[i], NULL) == 0);
  for (i = 0; i < e->n; i++) CHECK_MSG(w[i].ok, "rank %u saw a wrong result", (unsigned)i);
}

static void two_ranks_body(int gpu) {
  comm_env_t e;
  comm_use(gpu, 2);
  comm_open(&e, 2, 0);
  world_init(&e, 0, NULL);
  CHECK_EQ_U64(cuda_world_live(), 2);
  world_work(&e);
  if (!gpu) {
    fake_nccl_stats_t s = comm_nccl_stats();
    CHECK_EQ_U64(s.init_rank, 2);
    CHECK_EQ_U64(s.all_reduces, 4);         /* enqueued on the communication streams */
    CHECK_EQ_U64(s.sends + s.recvs, 4);     /* across processes: NCCL */
    CHECK_EQ_U64(s.group_ends, 0);
  }
  comm_close(&e); /* the devices go, and their process communicators with them */
}

TEST(cuda_comm_world_two_ranks) { two_ranks_body(0); }
TEST(cuda_gpu_comm_world_two_ranks) { two_ranks_body(1); }

/* The id through a file, four ranks. */
TEST(cuda_comm_world_id_file_four_ranks) {
  comm_env_t e;
  char dir[] = "/tmp/cubert-world-XXXXXX", path[64];
  comm_use(0, 4);
  comm_open(&e, 4, 0);
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/nccl-id", dir);
  world_init(&e, 10000, path);
  CHECK(access(path, F_OK) != 0); /* rank 0 removed it once everyone joined */
  world_work(&e);
  comm_close(&e);
  CHECK(rmdir(dir) == 0);
}

/* Two processes (fork), the id through a file: the multiprocess example's
 * scheme. Each child reports through its exit status. */
static int child_rank(uint32_t rank, const char *path) {
  comm_env_t e;
  cubert_cuda_comm_options_t o;
  cubert_handle_t h;
  float v[4] = {1, 2, 3, 4}, out[4];
  uint32_t k;
  int ok = 1;
  comm_open(&e, 2, 0); /* both devices made, only ours used (index = rank) */
  cubert_cuda_comm_options_initialize(&o);
  o.rank = rank;
  o.nranks = 2;
  o.id_file = path;
  o.timeout_ms = 20000;
  if (cubert_cuda_comm_init_rank(e.c[rank], &o, NULL) != CUBERT_STATUS_OK) return 2;
  for (k = 0; k < 4; k++) v[k] *= (float)(rank + 1);
  if (cubert_client_create_from_slice(e.c[rank], v, sizeof v, &h, NULL) != CUBERT_STATUS_OK ||
      cubert_client_all_reduce(e.c[rank], &h, &h, CUBERT_COMM_DTYPE_F32, e.ids, 2,
                               CUBERT_REDUCE_OPERATION_SUM, NULL) != CUBERT_STATUS_OK ||
      cubert_client_sync_collective(e.c[rank], NULL) != CUBERT_STATUS_OK ||
      cubert_client_read_one(e.c[rank], &h, out, sizeof out, NULL) != CUBERT_STATUS_OK)
    return 3;
  for (k = 0; k < 4; k++) ok &= out[k] == 3.0f * (float)(k + 1);
  (void)cubert_client_handle_release(e.c[rank], &h, NULL);
  comm_close(&e);
  return ok ? 0 : 4;
}

TEST(cuda_comm_world_two_processes) {
  char dir[] = "/tmp/cubert-world-XXXXXX", path[64];
  pid_t pid[2];
  int status[2] = {-1, -1}, waited = 0, i;
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/nccl-id", dir);
  fflush(stdout);
  for (i = 0; i < 2; i++) {
    pid[i] = fork();
    CHECK(pid[i] >= 0);
    if (pid[i] == 0) {
      comm_use(0, 2);
      _exit(child_rank((uint32_t)i, path));
    }
  }
  for (i = 0; i < 2; i++) { /* at most 60 s */
    while (waitpid(pid[i], &status[i], WNOHANG) == 0 && waited < 60000) {
      struct timespec ts = {0, 1000000};
      nanosleep(&ts, NULL);
      waited++;
    }
    if (waited >= 60000) kill(pid[i], SIGKILL);
  }
  for (i = 0; i < 2; i++)
    CHECK_MSG(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0, "rank %d: status %d", i,
              status[i]);
  (void)rmdir(dir);
}

/* ---- nothing hangs ------------------------------------------------------------------------ */

/* A collective NCCL never completes (a peer that never takes part): the
 * watchdog aborts it after the communicator's timeout; the sync returns the
 * error. */
TEST(cuda_comm_world_stuck_collective_is_aborted) {
  comm_env_t e;
  cubert_handle_t h[2];
  float v[4] = {1, 2, 3, 4}, out[4];
  cubert_error_t err;
  uint64_t t0;
  uint32_t i;
  fake_knob("CUBERT_FAKE_NCCL_STUCK", "1");
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  world_init(&e, 300, NULL);
  for (i = 0; i < 2; i++) {
    h[i] = comm_f32(e.c[i], v, 4);
    CHECK_OK(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                      CUBERT_REDUCE_OPERATION_SUM, NULL));
  }
  t0 = cuda_comm_now_ns();
  for (i = 0; i < 2; i++) comm_expect_queued(e.c[i], CUBERT_ERROR_DEADLINE_EXCEEDED, "aborted");
  CHECK_MSG(cuda_comm_now_ns() - t0 < 10000000000ull, "took %llu ms",
            (unsigned long long)((cuda_comm_now_ns() - t0) / 1000000));
  for (i = 0; i < 2; i++) {
    comm_read_f32(e.c[i], &h[i], out, 4);
    CHECK(memcmp(out, v, sizeof v) == 0); /* it never ran */
    CHECK_STATUS(cubert_client_all_reduce(e.c[i], &h[i], &h[i], CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                          CUBERT_REDUCE_OPERATION_SUM, &err),
                 CUBERT_STATUS_FAILED_PRECONDITION);
    CHECK_OK(cubert_client_handle_release(e.c[i], &h[i], NULL));
  }
  comm_close(&e);
}

/* The peer's device (its process, say) went away: NCCL reports an
 * asynchronous error, the watchdog aborts, the sync returns it. */
TEST(cuda_comm_world_peer_gone_reports_the_async_error) {
  comm_env_t e;
  cubert_handle_t h;
  float v[4] = {1, 2, 3, 4};
  fake_knob("CUBERT_FAKE_NCCL_TIMEOUT_MS", "300");
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  world_init(&e, 0, NULL);
  cubert_client_release(e.c[1]); /* rank 1 leaves */
  e.c[1] = NULL;
  CHECK_EQ_I64(e.counting[1].live_blocks, 0);
  counting_allocator_destroy(&e.counting[1]);
  h = comm_f32(e.c[0], v, 4);
  CHECK_OK(cubert_client_all_reduce(e.c[0], &h, &h, CUBERT_COMM_DTYPE_F32, e.ids, 2,
                                    CUBERT_REDUCE_OPERATION_SUM, NULL));
  comm_expect_queued(e.c[0], CUBERT_ERROR_DEVICE_LOST, "ncclRemoteError");
  CHECK_OK(cubert_client_handle_release(e.c[0], &h, NULL));
  comm_close(&e);
}

TEST(cuda_comm_world_init_without_peers_times_out) {
  comm_env_t e;
  cubert_cuda_comm_id_t id;
  cubert_cuda_comm_options_t o;
  cubert_error_t err;
  comm_use(0, 2);
  comm_open(&e, 1, 0);
  CHECK_OK(cubert_cuda_comm_unique_id(&id, NULL));
  cubert_cuda_comm_options_initialize(&o);
  o.nranks = 2;
  o.id = &id;
  o.timeout_ms = 200;
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_DEADLINE_EXCEEDED);
  CHECK_REASON_HAS(err, "did not all join");
  CHECK_EQ_U64(cuda_world_live(), 0);
  comm_close(&e);
}

/* ---- argument errors ---------------------------------------------------------------------- */

TEST(cuda_comm_world_argument_errors) {
  comm_env_t e;
  cubert_cuda_comm_id_t id;
  cubert_cuda_comm_options_t o;
  cubert_cpu_options_t co;
  cubert_client_t *cpu = NULL;
  cubert_error_t err;
  comm_use(0, 2);
  comm_open(&e, 1, 0);
  memset(&id, 0, sizeof id);
  cubert_cuda_comm_options_initialize(&o);
  cubert_cuda_comm_options_initialize(NULL);
  o.nranks = 2;
  o.id = &id;
  CHECK_STATUS(cubert_cuda_comm_init_rank(NULL, &o, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.nranks = 1;
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.nranks = 65;
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.nranks = 2;
  o.rank = 2;
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.rank = 0;
  o.id_file = "/tmp/x";
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "exactly one of id and id_file");
  o.id = NULL;
  o.id_file = "";
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.id_file = NULL;
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  o.id = &id;
  CHECK_STATUS(cubert_cuda_comm_unique_id(NULL, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  /* not a CUDA device */
  cubert_cpu_options_initialize(&co);
  co.device.index = 40;
  CHECK_OK(cubert_cpu_client_create(cubert_allocator_libc(), &co, &cpu, NULL));
  CHECK_STATUS(cubert_cuda_comm_init_rank(cpu, &o, &err), CUBERT_STATUS_DEVICE_MISMATCH);
  cubert_client_release(cpu);
  /* an id NCCL does not know */
  o.timeout_ms = 100;
  CHECK(cubert_cuda_comm_init_rank(e.c[0], &o, &err) != CUBERT_STATUS_OK);
  CHECK_REASON_HAS(err, "ncclCommInitRankConfig failed: ncclInvalidArgument");
  CHECK_EQ_U64(cuda_world_live(), 0);
  comm_close(&e);
}

TEST(cuda_comm_world_needs_nccl_2_14) {
  comm_env_t e;
  cubert_cuda_comm_id_t id;
  cubert_cuda_comm_options_t o;
  cubert_error_t err;
  fake_knob("CUBERT_FAKE_NCCL_VERSION", "21304");
  comm_use(0, 2);
  comm_open(&e, 1, 0);
  memset(&id, 0, sizeof id);
  cubert_cuda_comm_options_initialize(&o);
  o.nranks = 2;
  o.id = &id;
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_REASON_HAS(err, "NCCL unavailable: process communicators need NCCL 2.14");
  CHECK_REASON_HAS(err, "this is 2.13.4");
  comm_close(&e);
}

TEST(cuda_comm_world_nccl_missing) {
  comm_env_t e;
  cubert_cuda_comm_id_t id;
  cubert_cuda_comm_options_t o;
  cubert_error_t err;
  fake_knob("CUBERT_LIBNCCL", CUBERT_TEST_BUILD_DIR "/no-such-dir/libnccl.so.2");
  comm_use(0, 2);
  comm_open(&e, 1, 0);
  CHECK_STATUS(cubert_cuda_comm_unique_id(&id, &err), CUBERT_STATUS_UNSUPPORTED);
  CHECK_REASON_HAS(err, "NCCL unavailable: cannot load");
  memset(&id, 0, sizeof id);
  cubert_cuda_comm_options_initialize(&o);
  o.nranks = 2;
  o.id = &id;
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_UNSUPPORTED);
  comm_close(&e);
}

TEST(cuda_comm_world_id_file_errors) {
  comm_env_t e;
  cubert_cuda_comm_options_t o;
  cubert_error_t err;
  char dir[] = "/tmp/cubert-world-XXXXXX", path[64];
  FILE *f;
  comm_use(0, 2);
  comm_open(&e, 1, 0);
  CHECK(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/nccl-id", dir);
  cubert_cuda_comm_options_initialize(&o);
  o.nranks = 2;
  o.rank = 1;
  o.id_file = path;
  o.timeout_ms = 100;
  /* rank 0 never writes it */
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_DEADLINE_EXCEEDED);
  CHECK_REASON_HAS(err, "rank 0 wrote no NCCL id");
  /* something else is there */
  f = fopen(path, "wb");
  CHECK(f != NULL);
  fputs("not an id", f);
  fclose(f);
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "not a cubert NCCL id");
  CHECK(remove(path) == 0);
  /* rank 0 cannot write it */
  o.rank = 0;
  snprintf(path, sizeof path, "%s/no-such-dir/nccl-id", dir);
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_IO_FAILED);
  CHECK_EQ_U64(cuda_world_live(), 0);
  comm_close(&e);
  CHECK(rmdir(dir) == 0);
}

/* A device has one process communicator; its collectives must rank it as
 * the communicator does. */
TEST(cuda_comm_world_rank_rules) {
  comm_env_t e;
  cubert_cuda_comm_id_t id;
  cubert_cuda_comm_options_t o;
  cubert_error_t err;
  comm_use(0, 2);
  comm_open(&e, 2, 0);
  world_init(&e, 0, NULL);
  CHECK_OK(cubert_cuda_comm_unique_id(&id, NULL));
  cubert_cuda_comm_options_initialize(&o);
  o.nranks = 2;
  o.id = &id;
  o.timeout_ms = 100;
  CHECK_STATUS(cubert_cuda_comm_init_rank(e.c[0], &o, &err), CUBERT_STATUS_FAILED_PRECONDITION);
  CHECK_REASON_HAS(err, "has a process communicator already");
  comm_close(&e);
  /* device 0 is rank 1, device 1 rank 0: the device list {0, 1} ranks them
   * the other way round, which the join refuses */
  comm_open(&e, 2, 0);
  {
    pthread_t t[2];
    rank_t r[2];
    uint32_t i;
    CHECK_OK(cubert_cuda_comm_unique_id(&id, NULL));
    for (i = 0; i < 2; i++) {
      memset(&r[i], 0, sizeof r[i]);
      r[i].e = &e;
      r[i].device = i;
      r[i].rank = 1u - i;
      r[i].nranks = 2;
      r[i].id = &id;
      CHECK(pthread_create(&t[i], NULL, init_main, &r[i]) == 0);
    }
    for (i = 0; i < 2; i++) CHECK(pthread_join(t[i], NULL) == 0);
    for (i = 0; i < 2; i++) CHECK_OK(r[i].status);
  }
  CHECK_STATUS(cubert_client_ensure_init_collective(e.c[0], e.ids, 2, &err),
               CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_REASON_HAS(err, "ranks this device differently");
  CHECK_EQ_U64(cuda_comm_live(), 0);
  comm_close(&e);
}

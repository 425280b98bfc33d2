/* backend-cpu/cpu_stream.c: simulated streams (see cpu_stream.h). */
#include "cpu_stream.h"
#include "cpu_server.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static void deadline_after(struct timespec *ts, uint64_t timeout_ns) {
  clock_gettime(CLOCK_REALTIME, ts);
  ts->tv_sec += (time_t)(timeout_ns / 1000000000ull);
  ts->tv_nsec += (long)(timeout_ns % 1000000000ull);
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

static void run_op(cpu_stream_t *s, cpu_op_t *op) {
  cubert_error_t error;
  cubert_status_t status;
  if (op->wait_stream) (void)cpu_stream_wait_point(op->wait_stream, op->wait_seq, UINT64_MAX);
  cubert_error_clear(&error);
  status = op->run ? op->run(s, op->payload, &error) : CUBERT_STATUS_OK;
  if (status != CUBERT_STATUS_OK) {
    if (error.status == CUBERT_STATUS_OK) error.status = status;
    cpu_stream_push_error(s, &error);
  }
  if (op->done) (void)op->done(s, op->payload, &error);
}

static void *worker_main(void *arg) {
  cpu_stream_t *s = (cpu_stream_t *)arg;
  pthread_mutex_lock(&s->mutex);
  for (;;) {
    cpu_op_t *op;
    while (s->head == s->tail && s->running) pthread_cond_wait(&s->cond_work, &s->mutex);
    if (s->head == s->tail && !s->running) break;
    op = &s->ring[s->head % s->ring_size];
    pthread_mutex_unlock(&s->mutex);
    run_op(s, op);
    pthread_mutex_lock(&s->mutex);
    s->completed = op->seq;
    s->head++;
    pthread_cond_broadcast(&s->cond_progress);
  }
  pthread_mutex_unlock(&s->mutex);
  return NULL;
}

cubert_status_t cpu_stream_initialize(cpu_stream_t *s, cubert_allocator_t allocator, uint32_t slot,
                                      void *server, int deterministic) {
  memset(s, 0, sizeof(*s));
  s->allocator = allocator;
  s->slot = slot;
  s->server = server;
  s->deterministic = deterministic;
  s->ring_size = deterministic ? CPU_STREAM_RING_DETERMINISTIC : CPU_STREAM_RING;
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc_array(allocator, (size_t)s->ring_size,
                                                       sizeof(cpu_op_t), 64, (void **)&s->ring));
  pthread_mutex_init(&s->mutex, NULL);
  pthread_cond_init(&s->cond_work, NULL);
  pthread_cond_init(&s->cond_progress, NULL);
  s->running = 1;
  if (deterministic) {
    s->started = 1;
    return CUBERT_STATUS_OK;
  }
  if (pthread_create(&s->thread, NULL, worker_main, s) != 0) {
    pthread_mutex_destroy(&s->mutex);
    pthread_cond_destroy(&s->cond_work);
    pthread_cond_destroy(&s->cond_progress);
    cubert_allocator_free(allocator, s->ring, (size_t)s->ring_size * sizeof(cpu_op_t), 64);
    s->ring = NULL;
    return CUBERT_STATUS_INTERNAL;
  }
  s->started = 1;
  return CUBERT_STATUS_OK;
}

static bool stream_idle_fn(void *arg) { return cpu_stream_idle((cpu_stream_t *)arg); }

void cpu_stream_deinitialize(cpu_stream_t *s) {
  if (!s->started) return;
  if (s->deterministic) {
    /* run what is queued (other streams' steps too, in the chooser's order);
     * a deadlock cannot hold the teardown: the rest runs in order */
    if (cpu_sim_run_until((cpu_server_t *)s->server, stream_idle_fn, s) != CUBERT_STATUS_OK)
      while (!cpu_stream_idle(s)) cpu_stream_step(s);
  } else {
    pthread_mutex_lock(&s->mutex);
    s->running = 0;
    pthread_cond_broadcast(&s->cond_work);
    pthread_mutex_unlock(&s->mutex);
    pthread_join(s->thread, NULL);
  }
  pthread_mutex_destroy(&s->mutex);
  pthread_cond_destroy(&s->cond_work);
  pthread_cond_destroy(&s->cond_progress);
  cubert_allocator_free(s->allocator, s->ring, (size_t)s->ring_size * sizeof(cpu_op_t), 64);
  s->ring = NULL;
  s->started = 0;
}

static bool stream_has_room(void *arg) {
  cpu_stream_t *s = (cpu_stream_t *)arg;
  bool room;
  pthread_mutex_lock(&s->mutex);
  room = s->tail - s->head < s->ring_size;
  pthread_mutex_unlock(&s->mutex);
  return room;
}

cpu_op_t *cpu_stream_reserve(cpu_stream_t *s) {
  cpu_op_t *op;
  /* deterministic: make room by running steps; no step runnable cannot
   * happen (a wait op waits for an already enqueued point), but would run
   * the head op anyway rather than hang */
  if (s->deterministic && !stream_has_room(s) &&
      cpu_sim_run_until((cpu_server_t *)s->server, stream_has_room, s) != CUBERT_STATUS_OK)
    cpu_stream_step(s);
  pthread_mutex_lock(&s->mutex);
  while (s->tail - s->head >= s->ring_size) pthread_cond_wait(&s->cond_progress, &s->mutex);
  op = &s->ring[s->tail % s->ring_size];
  pthread_mutex_unlock(&s->mutex);
  op->run = NULL;
  op->done = NULL;
  op->wait_stream = NULL;
  op->wait_seq = 0;
  return op;
}

uint64_t cpu_stream_commit(cpu_stream_t *s) {
  uint64_t seq;
  pthread_mutex_lock(&s->mutex);
  seq = ++s->enqueued;
  s->ring[s->tail % s->ring_size].seq = seq;
  s->tail++;
  pthread_cond_signal(&s->cond_work);
  pthread_mutex_unlock(&s->mutex);
  return seq;
}

int cpu_stream_point_completed(cpu_stream_t *s, uint64_t seq) {
  int done;
  pthread_mutex_lock(&s->mutex);
  done = s->completed >= seq;
  pthread_mutex_unlock(&s->mutex);
  return done;
}

typedef struct point_t {
  cpu_stream_t *stream;
  uint64_t seq;
} point_t;

static bool point_done_fn(void *arg) {
  point_t *p = (point_t *)arg;
  return cpu_stream_point_completed(p->stream, p->seq) != 0;
}

cubert_status_t cpu_stream_wait_point(cpu_stream_t *s, uint64_t seq, uint64_t timeout_ns) {
  struct timespec deadline;
  cubert_status_t status = CUBERT_STATUS_OK;
  if (s->deterministic) {
    point_t p;
    p.stream = s;
    p.seq = seq;
    if (point_done_fn(&p)) return CUBERT_STATUS_OK;
    return cpu_sim_run_until((cpu_server_t *)s->server, point_done_fn, &p);
  }
  if (timeout_ns != UINT64_MAX) deadline_after(&deadline, timeout_ns);
  pthread_mutex_lock(&s->mutex);
  while (s->completed < seq) {
    if (timeout_ns == UINT64_MAX) {
      pthread_cond_wait(&s->cond_progress, &s->mutex);
    } else if (pthread_cond_timedwait(&s->cond_progress, &s->mutex, &deadline) == ETIMEDOUT &&
               s->completed < seq) {
      status = CUBERT_STATUS_DEADLINE_EXCEEDED;
      break;
    }
  }
  pthread_mutex_unlock(&s->mutex);
  return status;
}

void cpu_stream_push_error(cpu_stream_t *s, const cubert_error_t *error) {
  pthread_mutex_lock(&s->mutex);
  cubert_error_aggregate(&s->errors, error);
  s->error_count++;
  pthread_mutex_unlock(&s->mutex);
}

cubert_status_t cpu_stream_drain_errors(cpu_stream_t *s, cubert_error_t *out_error) {
  cubert_status_t status = CUBERT_STATUS_OK;
  pthread_mutex_lock(&s->mutex);
  if (s->error_count) {
    if (out_error) *out_error = s->errors;
    status = CUBERT_STATUS_SERVER_UNHEALTHY;
    cubert_error_clear(&s->errors);
    s->error_count = 0;
  }
  pthread_mutex_unlock(&s->mutex);
  return status;
}

uint32_t cpu_stream_error_count(cpu_stream_t *s) {
  uint32_t n;
  pthread_mutex_lock(&s->mutex);
  n = s->error_count;
  pthread_mutex_unlock(&s->mutex);
  return n;
}

bool cpu_stream_head_runnable(cpu_stream_t *s, uint64_t *out_seq) {
  cpu_op_t *op = NULL;
  pthread_mutex_lock(&s->mutex);
  if (s->head != s->tail) op = &s->ring[s->head % s->ring_size];
  pthread_mutex_unlock(&s->mutex);
  if (!op) return false;
  if (op->wait_stream && !cpu_stream_point_completed(op->wait_stream, op->wait_seq)) return false;
  *out_seq = op->seq;
  return true;
}

void cpu_stream_step(cpu_stream_t *s) {
  cpu_op_t *op = NULL;
  cubert_error_t error;
  cubert_status_t status;
  pthread_mutex_lock(&s->mutex);
  if (s->head != s->tail) op = &s->ring[s->head % s->ring_size];
  pthread_mutex_unlock(&s->mutex);
  if (!op) return;
  cubert_error_clear(&error);
  status = op->run ? op->run(s, op->payload, &error) : CUBERT_STATUS_OK;
  if (status != CUBERT_STATUS_OK) {
    if (error.status == CUBERT_STATUS_OK) error.status = status;
    cpu_stream_push_error(s, &error);
  }
  if (op->done) (void)op->done(s, op->payload, &error);
  pthread_mutex_lock(&s->mutex);
  s->completed = op->seq;
  s->head++;
  pthread_cond_broadcast(&s->cond_progress);
  pthread_mutex_unlock(&s->mutex);
}

bool cpu_stream_idle(cpu_stream_t *s) {
  bool idle;
  pthread_mutex_lock(&s->mutex);
  idle = s->head == s->tail;
  pthread_mutex_unlock(&s->mutex);
  return idle;
}

/* backend-cpu/cpu/cpu_gc.c: the GC of the CPU server. The multi-stream pins
 * bindings shared across streams until the consumer's event completed (spec
 * 6.2); the server hands every pending GC task to a ring. Threaded mode: a GC
 * thread waits for each task's event and only then releases the pins.
 * Deterministic mode: no thread; the oldest task whose event completed is a
 * step of the server's step loop (cpu_sim.c). */
#include "cpu/cpu_server.h"

#include <string.h>

#define GC_RING 1024

static void *gc_main(void *arg) {
  cpu_server_t *s = (cpu_server_t *)arg;
  pthread_mutex_lock(&s->gc_mutex);
  for (;;) {
    cubert_stream_gc_task_t task;
    while (s->gc_head == s->gc_tail && s->gc_running) pthread_cond_wait(&s->gc_cond, &s->gc_mutex);
    if (s->gc_head == s->gc_tail) break;
    task = s->gc_ring[s->gc_head % GC_RING];
    pthread_mutex_unlock(&s->gc_mutex);
    /* a failed wait cannot leave the pins held forever: release anyway */
    (void)cubert_stream_gc_task_wait(&task, NULL);
    cpu_gc_release_task(s, &task);
    pthread_mutex_lock(&s->gc_mutex);
    s->gc_head++;
    s->gc_released++;
    pthread_cond_broadcast(&s->gc_cond);
  }
  pthread_mutex_unlock(&s->gc_mutex);
  return NULL;
}

void cpu_gc_release_task(cpu_server_t *s, cubert_stream_gc_task_t *task) {
  cubert_memory_id_t ids[CPU_MAX_BINDINGS];
  uint32_t slots[CPU_MAX_BINDINGS];
  uint32_t i, n = 0;
  cubert_race_event_t token;
  if (!s->race || !task->event_) {
    cubert_stream_gc_task_release(task);
    return;
  }
  /* the race checker: a pinned buffer that dies with this release may be
   * reused from now on: every access must happen before the task's event
   * (or before the reuse point on the buffer's own slot) */
  token = cpu_event_race_take(task->event_);
  for (i = 0; i < task->pin_count_ && n < CPU_MAX_BINDINGS; i++) {
    ids[n] = task->pins_[i].memory;
    slots[n] = (uint32_t)(task->pins_[i].stream % s->max_streams);
    n++;
  }
  cubert_stream_gc_task_release(task);
  pthread_mutex_lock(&s->race_mutex);
  for (i = 0; i < n; i++)
    if (!cubert_memory_id_is_alive(s->table, ids[i]) &&
        cubert_race_reclaim_at_event(s->race, cubert_race_buffer_id(ids[i]), slots[i], token) !=
            CUBERT_STATUS_OK)
      s->race_errors++;
  if (cubert_race_event_release(s->race, token) != CUBERT_STATUS_OK) s->race_errors++;
  pthread_mutex_unlock(&s->race_mutex);
}

cubert_status_t cpu_gc_start(cpu_server_t *s, cubert_error_t *out_error) {
  if (cubert_allocator_malloc_array(s->allocator, GC_RING, sizeof(cubert_stream_gc_task_t), 0,
                                    (void **)&s->gc_ring) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "gc queue");
  pthread_mutex_init(&s->gc_mutex, NULL);
  pthread_cond_init(&s->gc_cond, NULL);
  s->gc_running = 1;
  if (!s->deterministic && pthread_create(&s->gc_thread, NULL, gc_main, s) != 0) {
    pthread_mutex_destroy(&s->gc_mutex);
    pthread_cond_destroy(&s->gc_cond);
    cubert_allocator_free(s->allocator, s->gc_ring, GC_RING * sizeof(cubert_stream_gc_task_t), 0);
    s->gc_ring = NULL;
    return cubert_error_set(out_error, CUBERT_ERROR_SERVER_GENERIC, NULL, 0,
                            "cannot start the GC thread");
  }
  s->gc_started = 1;
  return CUBERT_STATUS_OK;
}

static bool gc_has_room(void *arg) {
  cpu_server_t *s = (cpu_server_t *)arg;
  bool room;
  pthread_mutex_lock(&s->gc_mutex);
  room = s->gc_tail - s->gc_head < GC_RING;
  pthread_mutex_unlock(&s->gc_mutex);
  return room;
}

static bool gc_empty(void *arg) {
  cpu_server_t *s = (cpu_server_t *)arg;
  bool empty;
  pthread_mutex_lock(&s->gc_mutex);
  empty = s->gc_head == s->gc_tail;
  pthread_mutex_unlock(&s->gc_mutex);
  return empty;
}

/* Server thread: move every pending task of the multi-stream to the GC ring. */
void cpu_gc_hand_off(cpu_server_t *s) {
  cubert_stream_gc_task_t task;
  if (!s->gc_started) {
    (void)cubert_multi_stream_gc_collect(s->multi);
    return;
  }
  while (cubert_multi_stream_gc_take(s->multi, &task)) {
    /* deterministic: a full ring makes room by running steps (the oldest
     * task's event is enqueued, so a step is always runnable) */
    if (s->deterministic && !gc_has_room(s)) (void)cpu_sim_run_until(s, gc_has_room, s);
    pthread_mutex_lock(&s->gc_mutex);
    while (s->gc_tail - s->gc_head >= GC_RING) pthread_cond_wait(&s->gc_cond, &s->gc_mutex);
    s->gc_ring[s->gc_tail % GC_RING] = task;
    s->gc_tail++;
    pthread_cond_broadcast(&s->gc_cond);
    pthread_mutex_unlock(&s->gc_mutex);
  }
}

/* Wait until everything handed off so far was released. */
void cpu_gc_drain(cpu_server_t *s) {
  if (!s->gc_started) return;
  if (s->deterministic) {
    if (cpu_sim_run_until(s, gc_empty, s) != CUBERT_STATUS_OK)
      while (!gc_empty(s)) cpu_gc_step(s); /* unreachable: release in order */
    return;
  }
  pthread_mutex_lock(&s->gc_mutex);
  while (s->gc_head != s->gc_tail) pthread_cond_wait(&s->gc_cond, &s->gc_mutex);
  pthread_mutex_unlock(&s->gc_mutex);
}

bool cpu_gc_runnable(cpu_server_t *s, uint64_t *out_index) {
  cubert_stream_gc_task_t *task = NULL;
  uint64_t head = 0;
  if (!s->gc_started) return false;
  pthread_mutex_lock(&s->gc_mutex);
  if (s->gc_head != s->gc_tail) {
    head = s->gc_head;
    task = &s->gc_ring[head % GC_RING];
  }
  pthread_mutex_unlock(&s->gc_mutex);
  if (!task || (task->event_ && !cpu_event_completed(task->event_))) return false;
  *out_index = head;
  return true;
}

void cpu_gc_step(cpu_server_t *s) {
  cubert_stream_gc_task_t task;
  pthread_mutex_lock(&s->gc_mutex);
  if (s->gc_head == s->gc_tail) {
    pthread_mutex_unlock(&s->gc_mutex);
    return;
  }
  task = s->gc_ring[s->gc_head % GC_RING];
  pthread_mutex_unlock(&s->gc_mutex);
  cpu_gc_release_task(s, &task);
  pthread_mutex_lock(&s->gc_mutex);
  s->gc_head++;
  s->gc_released++;
  pthread_cond_broadcast(&s->gc_cond);
  pthread_mutex_unlock(&s->gc_mutex);
}

void cpu_gc_stop(cpu_server_t *s) {
  if (!s->gc_started) return;
  if (s->deterministic) {
    cpu_gc_drain(s);
  } else {
    pthread_mutex_lock(&s->gc_mutex);
    s->gc_running = 0;
    pthread_cond_broadcast(&s->gc_cond);
    pthread_mutex_unlock(&s->gc_mutex);
    pthread_join(s->gc_thread, NULL);
  }
  pthread_mutex_destroy(&s->gc_mutex);
  pthread_cond_destroy(&s->gc_cond);
  cubert_allocator_free(s->allocator, s->gc_ring, GC_RING * sizeof(cubert_stream_gc_task_t), 0);
  s->gc_ring = NULL;
  s->gc_started = 0;
}

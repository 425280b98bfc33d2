/* backend-cpu/cpu_gc.c: the GC thread of the CPU server. The multi-stream
 * pins bindings shared across streams until the consumer's event completed
 * (spec 6.2); the server hands every pending GC task to this thread, which
 * waits for the task's event and only then releases the pins. */
#include "cpu_server.h"

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
    cubert_stream_gc_task_release(&task);
    pthread_mutex_lock(&s->gc_mutex);
    s->gc_head++;
    s->gc_released++;
    pthread_cond_broadcast(&s->gc_cond);
  }
  pthread_mutex_unlock(&s->gc_mutex);
  return NULL;
}

cubert_status_t cpu_gc_start(cpu_server_t *s, cubert_error_t *out_error) {
  if (cubert_allocator_malloc_array(s->allocator, GC_RING, sizeof(cubert_stream_gc_task_t), 0,
                                    (void **)&s->gc_ring) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "gc queue");
  pthread_mutex_init(&s->gc_mutex, NULL);
  pthread_cond_init(&s->gc_cond, NULL);
  s->gc_running = 1;
  if (pthread_create(&s->gc_thread, NULL, gc_main, s) != 0) {
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

/* Server thread: move every pending task of the multi-stream to the GC thread. */
void cpu_gc_hand_off(cpu_server_t *s) {
  cubert_stream_gc_task_t task;
  if (!s->gc_started) {
    (void)cubert_multi_stream_gc_collect(s->multi);
    return;
  }
  while (cubert_multi_stream_gc_take(s->multi, &task)) {
    pthread_mutex_lock(&s->gc_mutex);
    while (s->gc_tail - s->gc_head >= GC_RING) pthread_cond_wait(&s->gc_cond, &s->gc_mutex);
    s->gc_ring[s->gc_tail % GC_RING] = task;
    s->gc_tail++;
    pthread_cond_broadcast(&s->gc_cond);
    pthread_mutex_unlock(&s->gc_mutex);
  }
}

/* Wait until the GC thread released everything handed to it so far. */
void cpu_gc_drain(cpu_server_t *s) {
  if (!s->gc_started) return;
  pthread_mutex_lock(&s->gc_mutex);
  while (s->gc_head != s->gc_tail) pthread_cond_wait(&s->gc_cond, &s->gc_mutex);
  pthread_mutex_unlock(&s->gc_mutex);
}

void cpu_gc_stop(cpu_server_t *s) {
  if (!s->gc_started) return;
  pthread_mutex_lock(&s->gc_mutex);
  s->gc_running = 0;
  pthread_cond_broadcast(&s->gc_cond);
  pthread_mutex_unlock(&s->gc_mutex);
  pthread_join(s->gc_thread, NULL);
  pthread_mutex_destroy(&s->gc_mutex);
  pthread_cond_destroy(&s->gc_cond);
  cubert_allocator_free(s->allocator, s->gc_ring, GC_RING * sizeof(cubert_stream_gc_task_t), 0);
  s->gc_ring = NULL;
  s->gc_started = 0;
}

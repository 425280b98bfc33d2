/* SPDX-License-Identifier: MIT */
/* tests/os/cpu_stream_fixture.h: waits the bare-stream tests share
 * (test_cpu_stream.c, test_cpu_helpers.c): they poll the stream's fields
 * without publishing or helping, which would hide the path under test. */
#ifndef CUBERT_TEST_CPU_STREAM_FIXTURE_H
#define CUBERT_TEST_CPU_STREAM_FIXTURE_H

#include <time.h>

#include "cpu/cpu_stream.h"

static inline void sleep_ms(long ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

static inline uint64_t completed(cpu_stream_t *s) {
  return __atomic_load_n(&s->completed, __ATOMIC_SEQ_CST);
}

/* Poll (without publishing) until `completed` reaches seq; false after 10 s. */
static inline int completed_within(cpu_stream_t *s, uint64_t seq) {
  int i;
  for (i = 0; i < 10000; i++) {
    if (completed(s) >= seq) return 1;
    sleep_ms(1);
  }
  return 0;
}

/* Poll until the stream's worker sleeps; false after 5 s. */
static inline int asleep_within(cpu_stream_t *s) {
  int i;
  for (i = 0; i < 5000 && !__atomic_load_n(&s->sleeping, __ATOMIC_SEQ_CST); i++) sleep_ms(1);
  return __atomic_load_n(&s->sleeping, __ATOMIC_SEQ_CST) != 0;
}

#endif

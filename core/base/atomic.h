/* SPDX-License-Identifier: MIT */
/*
 * core/base/atomic.h: the only place core touches atomics. GCC/Clang __atomic
 * builtins on 32-bit and pointer-sized values (Cortex-M4 has no lock-free
 * 64-bit atomics). Build with -DCUBERT_SINGLE_THREADED=1 to get plain loads
 * and stores for single-threaded hosts, or with -DCUBERT_ATOMIC_CRITICAL_SECTION=1
 * for targets without atomic read-modify-write instructions (Cortex-M0): every
 * operation is then plain accesses inside the host's cubert_critical_enter() /
 * cubert_critical_exit() (cubert/critical_section.h, docs/embedding.md).
 */
#ifndef CUBERT_CORE_ATOMIC_H
#define CUBERT_CORE_ATOMIC_H

#include <stdint.h>
#include <stdbool.h>

typedef struct cubert_atomic_u32_t {
  volatile uint32_t value;
} cubert_atomic_u32_t;

#if defined(CUBERT_SINGLE_THREADED) && CUBERT_SINGLE_THREADED && \
    defined(CUBERT_ATOMIC_CRITICAL_SECTION) && CUBERT_ATOMIC_CRITICAL_SECTION
#error "CUBERT_SINGLE_THREADED and CUBERT_ATOMIC_CRITICAL_SECTION exclude each other"
#endif

#if defined(CUBERT_SINGLE_THREADED) && CUBERT_SINGLE_THREADED

static inline uint32_t cubert__atomic_load_u32(const cubert_atomic_u32_t *a) { return a->value; }
static inline void cubert__atomic_store_u32(cubert_atomic_u32_t *a, uint32_t v) { a->value = v; }
static inline uint32_t cubert__atomic_fetch_add_u32(cubert_atomic_u32_t *a, uint32_t v) {
  uint32_t old = a->value;
  a->value = old + v;
  return old;
}
static inline uint32_t cubert__atomic_fetch_sub_u32(cubert_atomic_u32_t *a, uint32_t v) {
  uint32_t old = a->value;
  a->value = old - v;
  return old;
}
static inline uint32_t cubert__atomic_fetch_and_u32(cubert_atomic_u32_t *a, uint32_t v) {
  uint32_t old = a->value;
  a->value = old & v;
  return old;
}
static inline uint32_t cubert__atomic_fetch_or_u32(cubert_atomic_u32_t *a, uint32_t v) {
  uint32_t old = a->value;
  a->value = old | v;
  return old;
}
static inline bool cubert__atomic_cas_u32(cubert_atomic_u32_t *a, uint32_t *expected,
                                          uint32_t desired) {
  if (a->value == *expected) {
    a->value = desired;
    return true;
  }
  *expected = a->value;
  return false;
}
static inline void *cubert__atomic_load_ptr(void *const volatile *p) { return *p; }
static inline void cubert__atomic_store_ptr(void *volatile *p, void *v) { *p = v; }
static inline bool cubert__atomic_cas_ptr(void *volatile *p, void **expected, void *desired) {
  if (*p == *expected) {
    *p = desired;
    return true;
  }
  *expected = *p;
  return false;
}

#elif defined(CUBERT_ATOMIC_CRITICAL_SECTION) && CUBERT_ATOMIC_CRITICAL_SECTION

/* Each operation: one enter, plain accesses, one leave (the hooks are the barriers). */
#include "cubert/critical_section.h"

static inline uint32_t cubert__atomic_load_u32(const cubert_atomic_u32_t *a) {
  cubert_critical_state_t s = cubert_critical_enter();
  uint32_t v = a->value;
  cubert_critical_exit(s);
  return v;
}
static inline void cubert__atomic_store_u32(cubert_atomic_u32_t *a, uint32_t v) {
  cubert_critical_state_t s = cubert_critical_enter();
  a->value = v;
  cubert_critical_exit(s);
}
static inline uint32_t cubert__atomic_fetch_add_u32(cubert_atomic_u32_t *a, uint32_t v) {
  cubert_critical_state_t s = cubert_critical_enter();
  uint32_t old = a->value;
  a->value = old + v;
  cubert_critical_exit(s);
  return old;
}
static inline uint32_t cubert__atomic_fetch_sub_u32(cubert_atomic_u32_t *a, uint32_t v) {
  cubert_critical_state_t s = cubert_critical_enter();
  uint32_t old = a->value;
  a->value = old - v;
  cubert_critical_exit(s);
  return old;
}
static inline uint32_t cubert__atomic_fetch_and_u32(cubert_atomic_u32_t *a, uint32_t v) {
  cubert_critical_state_t s = cubert_critical_enter();
  uint32_t old = a->value;
  a->value = old & v;
  cubert_critical_exit(s);
  return old;
}
static inline uint32_t cubert__atomic_fetch_or_u32(cubert_atomic_u32_t *a, uint32_t v) {
  cubert_critical_state_t s = cubert_critical_enter();
  uint32_t old = a->value;
  a->value = old | v;
  cubert_critical_exit(s);
  return old;
}
static inline bool cubert__atomic_cas_u32(cubert_atomic_u32_t *a, uint32_t *expected,
                                          uint32_t desired) {
  cubert_critical_state_t s = cubert_critical_enter();
  bool same = a->value == *expected;
  if (same) a->value = desired;
  else *expected = a->value;
  cubert_critical_exit(s);
  return same;
}
static inline void *cubert__atomic_load_ptr(void *const volatile *p) {
  cubert_critical_state_t s = cubert_critical_enter();
  void *v = *p;
  cubert_critical_exit(s);
  return v;
}
static inline void cubert__atomic_store_ptr(void *volatile *p, void *v) {
  cubert_critical_state_t s = cubert_critical_enter();
  *p = v;
  cubert_critical_exit(s);
}
static inline bool cubert__atomic_cas_ptr(void *volatile *p, void **expected, void *desired) {
  cubert_critical_state_t s = cubert_critical_enter();
  bool same = *p == *expected;
  if (same) *p = desired;
  else *expected = *p;
  cubert_critical_exit(s);
  return same;
}

#else

static inline uint32_t cubert__atomic_load_u32(const cubert_atomic_u32_t *a) {
  return __atomic_load_n(&a->value, __ATOMIC_ACQUIRE);
}
static inline void cubert__atomic_store_u32(cubert_atomic_u32_t *a, uint32_t v) {
  __atomic_store_n(&a->value, v, __ATOMIC_RELEASE);
}
static inline uint32_t cubert__atomic_fetch_add_u32(cubert_atomic_u32_t *a, uint32_t v) {
  return __atomic_fetch_add(&a->value, v, __ATOMIC_ACQ_REL);
}
static inline uint32_t cubert__atomic_fetch_sub_u32(cubert_atomic_u32_t *a, uint32_t v) {
  return __atomic_fetch_sub(&a->value, v, __ATOMIC_ACQ_REL);
}
static inline uint32_t cubert__atomic_fetch_and_u32(cubert_atomic_u32_t *a, uint32_t v) {
  return __atomic_fetch_and(&a->value, v, __ATOMIC_ACQ_REL);
}
static inline uint32_t cubert__atomic_fetch_or_u32(cubert_atomic_u32_t *a, uint32_t v) {
  return __atomic_fetch_or(&a->value, v, __ATOMIC_ACQ_REL);
}
static inline bool cubert__atomic_cas_u32(cubert_atomic_u32_t *a, uint32_t *expected,
                                          uint32_t desired) {
  return __atomic_compare_exchange_n(&a->value, expected, desired, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
}
static inline void *cubert__atomic_load_ptr(void *const volatile *p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void cubert__atomic_store_ptr(void *volatile *p, void *v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline bool cubert__atomic_cas_ptr(void *volatile *p, void **expected, void *desired) {
  return __atomic_compare_exchange_n(p, expected, desired, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
}

/* Sequentially consistent forms, for the one store-then-load handshake that
 * needs a total order (core/device/device_shards.c: a thread announces itself,
 * then looks at the other side's word). Only this branch has them
 * (CUBERT_ATOMIC_SEQ_CST 1): single-threaded and critical-section builds
 * have no concurrent launches to order. */
#define CUBERT_ATOMIC_SEQ_CST 1
static inline uint32_t cubert__atomic_load_u32_seq(const cubert_atomic_u32_t *a) {
  return __atomic_load_n(&a->value, __ATOMIC_SEQ_CST);
}
static inline void cubert__atomic_store_u32_seq(cubert_atomic_u32_t *a, uint32_t v) {
  __atomic_store_n(&a->value, v, __ATOMIC_SEQ_CST);
}
static inline uint32_t cubert__atomic_fetch_or_u32_seq(cubert_atomic_u32_t *a, uint32_t v) {
  return __atomic_fetch_or(&a->value, v, __ATOMIC_SEQ_CST);
}
static inline bool cubert__atomic_cas_u32_seq(cubert_atomic_u32_t *a, uint32_t *expected,
                                              uint32_t desired) {
  return __atomic_compare_exchange_n(&a->value, expected, desired, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST);
}

#endif

#endif /* CUBERT_CORE_ATOMIC_H */

/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/cortex-m/atomic8.c: the 8-byte __atomic calls gcc emits for the kernel
 * dialect's u64/i64 atomics (include/cubert/kernel_atomic.h) on a Cortex-M4, which has no
 * 64-bit atomic instruction and no libatomic in newlib (harness only). The harness runs the
 * inline driver on one core with no interrupt handler touching test memory, so each call
 * runs with interrupts masked (PRIMASK) around a plain access: atomic with respect to
 * everything that runs here. A program with threads or interrupt handlers on such a target
 * provides its own (docs/embedding.md).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static uint32_t irq_save(void) {
  uint32_t primask;
  __asm__ volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
  return primask;
}
static void irq_restore(uint32_t primask) {
  __asm__ volatile("msr primask, %0" ::"r"(primask) : "memory");
}

uint64_t __atomic_load_8(const volatile void *ptr, int order);
void __atomic_store_8(volatile void *ptr, uint64_t value, int order);
uint64_t __atomic_exchange_8(volatile void *ptr, uint64_t value, int order);
bool __atomic_compare_exchange_8(volatile void *ptr, void *expected, uint64_t desired, bool weak,
                                 int success, int failure);

uint64_t __atomic_load_8(const volatile void *ptr, int order) {
  uint32_t s = irq_save();
  uint64_t v = *(const volatile uint64_t *)ptr;
  (void)order;
  irq_restore(s);
  return v;
}

void __atomic_store_8(volatile void *ptr, uint64_t value, int order) {
  uint32_t s = irq_save();
  (void)order;
  *(volatile uint64_t *)ptr = value;
  irq_restore(s);
}

uint64_t __atomic_exchange_8(volatile void *ptr, uint64_t value, int order) {
  uint32_t s = irq_save();
  uint64_t old = *(volatile uint64_t *)ptr;
  (void)order;
  *(volatile uint64_t *)ptr = value;
  irq_restore(s);
  return old;
}

bool __atomic_compare_exchange_8(volatile void *ptr, void *expected, uint64_t desired, bool weak,
                                 int success, int failure) {
  uint32_t s = irq_save();
  uint64_t cur = *(volatile uint64_t *)ptr, want;
  bool ok;
  (void)weak;
  (void)success;
  (void)failure;
  memcpy(&want, expected, sizeof want);
  ok = cur == want;
  if (ok) *(volatile uint64_t *)ptr = desired;
  else memcpy(expected, &cur, sizeof cur);
  irq_restore(s);
  return ok;
}

/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/cortex-m/embedded_target.h: what the bare-metal start-up (startup.c)
 * offers the embedded test runner: the painted stack, the harness heap, semihosting
 * output for faults.
 */
#ifndef CUBERT_EMBEDDED_TARGET_H
#define CUBERT_EMBEDDED_TARGET_H

#include <stddef.h>

/* Paints the unused part of the stack (below the caller's frame) with a pattern. */
void embedded_stack_paint(void);
/* Bytes of stack ever used since the last paint (the deepest word not still painted). */
size_t embedded_stack_used(void);
size_t embedded_stack_size(void);
/* High-water mark of the harness heap (newlib malloc through _sbrk) and its size. */
size_t embedded_heap_peak(void);
size_t embedded_heap_size(void);
/* Writes a NUL-terminated string straight to the semihosting console (no stdio). */
void embedded_write0(const char *text);
/* Called by the fault handler after it printed the fault: returns the function the
 * faulting thread resumes in (it must not return: the runner's longjmp out of the test),
 * or NULL when no test is running (the run then ends with status 3). */
typedef void (*embedded_resume_fn_t)(void);
embedded_resume_fn_t embedded_fault_hook(void);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * tests/embedded/critical_section_host.h: a host implementation of the critical-section
 * hook (cubert/critical_section.h) over an error-checking pthread mutex, which counts
 * the sections and traps on nesting, for running the unit tests with the core built
 * with CUBERT_ATOMIC_CRITICAL_SECTION=1 (make check-cortex-m0).
 */
#ifndef CUBERT_TESTS_CRITICAL_SECTION_HOST_H
#define CUBERT_TESTS_CRITICAL_SECTION_HOST_H

#include <stdint.h>

/* Sections entered and left so far, and whether one is open now. */
uint64_t critical_section_host_enters(void);
uint64_t critical_section_host_exits(void);
int critical_section_host_open(void);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * cubert/driver/arith.h: overflow-checked size arithmetic, the primitives
 * every size computation of the library goes through. Hot-path helpers:
 * they return a status only (OVERFLOW, INVALID_ARGUMENT), no error record
 * (the caller that owns an out_error writes the record). Pure, thread-safe,
 * non-blocking, no allocation.
 */
#ifndef CUBERT_DRIVER_ARITH_H
#define CUBERT_DRIVER_ARITH_H

#include "cubert/base.h"
#include "cubert/status.h"

CUBERT_EXTERN_C_BEGIN

/* *out = a * b; CUBERT_STATUS_OVERFLOW (out untouched) on overflow. */
CUBERT_API cubert_status_t cubert_size_mul(size_t a, size_t b, size_t *out);
CUBERT_API cubert_status_t cubert_size_add(size_t a, size_t b, size_t *out);
/* *out = a * b + c. */
CUBERT_API cubert_status_t cubert_size_mul_add(size_t a, size_t b, size_t c, size_t *out);
/* Round up to a multiple of align (align a power of two, else
 * CUBERT_STATUS_INVALID_ARGUMENT); CUBERT_STATUS_OVERFLOW when it wraps. */
CUBERT_API cubert_status_t cubert_size_align_up(size_t value, size_t align, size_t *out);
CUBERT_API cubert_status_t cubert_u64_mul(uint64_t a, uint64_t b, uint64_t *out);
CUBERT_API cubert_status_t cubert_u64_add(uint64_t a, uint64_t b, uint64_t *out);
/* Round up to a multiple of `multiple` (any non-zero value). */
CUBERT_API cubert_status_t cubert_u64_round_up(uint64_t value, uint64_t multiple, uint64_t *out);

CUBERT_EXTERN_C_END

#endif /* CUBERT_DRIVER_ARITH_H */

/* SPDX-License-Identifier: MIT */
/*
 * core/base/error_internal.h: what error.c and error_format.c share. Not
 * installed.
 */
#ifndef CUBERT_CORE_ERROR_INTERNAL_H
#define CUBERT_CORE_ERROR_INTERNAL_H

#include "base/fmt.h"
#include "cubert/error.h"

/* Append the Display text of e (cubert_error_format) to f. */
void cubert__error_format_record_(cubert_fmt_t *f, const cubert_error_t *e);

#endif /* CUBERT_CORE_ERROR_INTERNAL_H */

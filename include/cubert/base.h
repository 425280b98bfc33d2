/* SPDX-License-Identifier: MIT */
/*
 * cubert/base.h: version (macros and cubert_version()), export macro, C++
 * linkage helpers and the few fundamental includes every public header may
 * use (<stddef.h>, <stdint.h>, <stdbool.h> only: they are available to
 * freestanding compilers).
 */
#ifndef CUBERT_BASE_H
#define CUBERT_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define CUBERT_VERSION_MAJOR 0
#define CUBERT_VERSION_MINOR 1
#define CUBERT_VERSION_PATCH 0

/* The version of these headers as one number (MAJOR * 10000 + MINOR * 100 +
 * PATCH) and as text ("MAJOR.MINOR.PATCH"). cubert_version() and
 * cubert_version_number() give the library's own, so a program can check
 * that the headers it was compiled with match the library it runs with. */
#define CUBERT_VERSION_NUMBER \
  (CUBERT_VERSION_MAJOR * 10000 + CUBERT_VERSION_MINOR * 100 + CUBERT_VERSION_PATCH)
#define CUBERT_VERSION_STR2_(x) #x
#define CUBERT_VERSION_STR_(x) CUBERT_VERSION_STR2_(x)
#define CUBERT_VERSION_STRING                                                          \
  CUBERT_VERSION_STR_(CUBERT_VERSION_MAJOR) "." CUBERT_VERSION_STR_(CUBERT_VERSION_MINOR) \
  "." CUBERT_VERSION_STR_(CUBERT_VERSION_PATCH)

/* CUBERT_API marks an exported symbol. The library is built with
 * -fvisibility=hidden, so anything not marked stays private to the .so. */
#if defined(CUBERT_STATIC_ONLY)
#define CUBERT_API
#elif defined(__GNUC__) || defined(__clang__)
#define CUBERT_API __attribute__((visibility("default")))
#else
#define CUBERT_API
#endif

#ifdef __cplusplus
#define CUBERT_EXTERN_C_BEGIN extern "C" {
#define CUBERT_EXTERN_C_END }
#else
#define CUBERT_EXTERN_C_BEGIN
#define CUBERT_EXTERN_C_END
#endif

/* Upper bound on tensor rank, everywhere in the API. */
#define CUBERT_MAX_RANK 8

CUBERT_EXTERN_C_BEGIN

/* The library's version text, "MAJOR.MINOR.PATCH" (CUBERT_VERSION_STRING of
 * the build). Static storage, never NULL. Thread-safe, non-blocking. */
CUBERT_API const char *cubert_version(void);

/* The library's version number, MAJOR * 10000 + MINOR * 100 + PATCH
 * (CUBERT_VERSION_NUMBER of the build). Thread-safe, non-blocking. */
CUBERT_API uint32_t cubert_version_number(void);

CUBERT_EXTERN_C_END

#endif /* CUBERT_BASE_H */

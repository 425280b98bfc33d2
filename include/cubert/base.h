/*
 * cubert/base.h: version, export macro, C++ linkage helpers and the few
 * fundamental includes every public header may use (<stddef.h>, <stdint.h>,
 * <stdbool.h> only: they are available to freestanding compilers).
 */
#ifndef CUBERT_BASE_H
#define CUBERT_BASE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define CUBERT_VERSION_MAJOR 0
#define CUBERT_VERSION_MINOR 1
#define CUBERT_VERSION_PATCH 0

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

#endif /* CUBERT_BASE_H */

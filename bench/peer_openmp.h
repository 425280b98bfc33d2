/* SPDX-License-Identifier: MIT */
/*
 * bench/peer_openmp.h: the OpenMP peer of bench/bench_peers.c: the loops a
 * user would write with `#pragma omp parallel for` for the same float vector
 * add and matmul cubert's CPU server runs (static schedule, the runtime's
 * default thread count: one per online CPU). The matmul is the plain
 * row-parallel i-k-j loop (the inner loop runs along a row of b and c, so
 * it streams and the compiler may vectorize it), not a tuned BLAS.
 *
 * Built with BENCH_HAVE_OPENMP=1 (and -fopenmp) when the Makefile's probe
 * found a working `$(CC) -fopenmp`; otherwise peer_omp_available says why
 * and the rows print "skipped: <reason>".
 */
#ifndef CUBERT_BENCH_PEER_OPENMP_H
#define CUBERT_BENCH_PEER_OPENMP_H

#include <stddef.h>
#include <stdint.h>

#if BENCH_HAVE_OPENMP
#include <omp.h>
#define PEER_OMP_PRAGMA(x) _Pragma(x)
#else
#define PEER_OMP_PRAGMA(x)
#endif

/* NULL when the OpenMP peer can run; else why not. */
static const char *peer_omp_unavailable(void) {
#if BENCH_HAVE_OPENMP
  return NULL;
#else
  return "built without OpenMP (the compiler's -fopenmp probe failed; gcc: libgomp, clang: "
         "Debian libomp-dev)";
#endif
}

/* Threads a parallel region gets (1 without OpenMP). */
static int peer_omp_threads(void) {
#if BENCH_HAVE_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/* out[i] = a[i] + b[i], i < n. */
static void peer_omp_add(const float *restrict a, const float *restrict b, float *restrict out,
                         size_t n) {
  long i, count = (long)n;
  PEER_OMP_PRAGMA("omp parallel for schedule(static)")
  for (i = 0; i < count; i++) out[i] = a[i] + b[i];
}

/* c (m x n) = a (m x k) . b (k x n), row-major. */
static void peer_omp_matmul(const float *restrict a, const float *restrict b, float *restrict c,
                            uint32_t m, uint32_t k, uint32_t n) {
  long i, rows = (long)m;
  PEER_OMP_PRAGMA("omp parallel for schedule(static)")
  for (i = 0; i < rows; i++) {
    float *restrict crow = c + (size_t)i * n;
    uint32_t j, p;
    for (j = 0; j < n; j++) crow[j] = 0.0f;
    for (p = 0; p < k; p++) {
      const float av = a[(size_t)i * k + p];
      const float *restrict brow = b + (size_t)p * n;
      for (j = 0; j < n; j++) crow[j] += av * brow[j];
    }
  }
}

#endif /* CUBERT_BENCH_PEER_OPENMP_H */

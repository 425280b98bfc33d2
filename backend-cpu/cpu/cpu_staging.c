/* backend-cpu/cpu/cpu_staging.c: the CPU server's staging buffers (spec 12.4). */
#include "cpu/cpu_server.h"

#include <string.h>

static void release_staged(cubert_bytes_t *bytes, size_t count) {
  size_t i;
  for (i = 0; i < count; i++)
    if (bytes[i].release) bytes[i].release(bytes[i].owner, bytes[i].data, bytes[i].size);
}

/* Staging (spec 12.4): host buffers from the injected allocator, marked
 * PINNED ("simulated pinned": CPU memory needs no page locking). Each buffer
 * carries a header with the allocator, so a buffer may outlive the server;
 * its release function gives the block back. */
typedef struct staging_header_t {
  cubert_allocator_t allocator;
  uint64_t size;
} staging_header_t;

#define STAGING_HEADER 64 /* keeps the data 64-byte aligned */
typedef char staging_header_fits_[sizeof(staging_header_t) <= STAGING_HEADER ? 1 : -1];

static void staging_release(void *owner, void *data, uint64_t size) {
  staging_header_t *h = (staging_header_t *)owner;
  cubert_allocator_t allocator = h->allocator;
  (void)data;
  (void)size;
  cubert_allocator_free(allocator, h, (size_t)(STAGING_HEADER + h->size), 64);
}

cubert_status_t cpu_staging(cubert_server_t *server, const uint64_t *sizes, size_t count,
                                   cubert_bytes_t *out_bytes, uint64_t stream,
                                   cubert_error_t *out_error) {
  cpu_server_t *s = (cpu_server_t *)server;
  size_t i;
  (void)stream;
  if (count && (!sizes || !out_bytes))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "staging: NULL sizes or output");
  for (i = 0; i < count; i++) {
    void *block = NULL;
    staging_header_t *h;
    memset(&out_bytes[i], 0, sizeof(out_bytes[i]));
    out_bytes[i].property = CUBERT_ALLOCATION_PINNED;
    if (sizes[i] == 0) continue;
    if (sizes[i] > (uint64_t)SIZE_MAX - STAGING_HEADER ||
        cubert_allocator_malloc(s->allocator, (size_t)(STAGING_HEADER + sizes[i]), 64, &block) !=
            CUBERT_STATUS_OK) {
      uint64_t size = sizes[i];
      release_staged(out_bytes, i);
      return cubert_error_set(out_error, CUBERT_ERROR_IO_UNKNOWN, &size, 1,
                              "Unable to reserve pinned memory");
    }
    h = (staging_header_t *)block;
    h->allocator = s->allocator;
    h->size = sizes[i];
    out_bytes[i].data = (unsigned char *)block + STAGING_HEADER;
    out_bytes[i].size = sizes[i];
    out_bytes[i].owner = h;
    out_bytes[i].release = staging_release;
  }
  return CUBERT_STATUS_OK;
}

/* SPDX-License-Identifier: MIT */
#include "host_storage.h"
#include "memory/memory.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hs_alignment(void *self) { return ((host_storage_t *)self)->alignment; }

static cubert_status_t hs_alloc(void *self, uint64_t size, cubert_storage_handle_t *out,
                                cubert_error_t *err) {
  host_storage_t *s = (host_storage_t *)self;
  host_storage_record_t *r;
  unsigned char *ptr = NULL;
  s->alloc_calls++;
  s->fail_calls++;
  if (s->fail_at && (s->fail_calls == s->fail_at || (s->fail_persist && s->fail_calls > s->fail_at))) {
    s->failures++;
    return cubert_error_set(err, s->fail_status == CUBERT_STATUS_BUFFER_TOO_BIG
                                     ? CUBERT_ERROR_IO_BUFFER_TOO_BIG
                                     : CUBERT_ERROR_IO_OUT_OF_MEMORY,
                            &size, 1, "injected storage failure");
  }
  if (s->capacity && (size > s->capacity || s->live_bytes > s->capacity - size))
    return cubert_error_set(err, CUBERT_ERROR_IO_OUT_OF_MEMORY, &size, 1, "device full");
  if (s->record_count == s->record_cap) {
    uint64_t cap = s->record_cap ? s->record_cap * 2 : 64;
    void *grown = realloc(s->records, (size_t)cap * sizeof *s->records);
    if (!grown) return cubert_error_set(err, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
    s->records = (host_storage_record_t *)grown;
    s->record_cap = cap;
  }
  if (!s->virtual_memory && size > 0 && (s->backed_max == 0 || size <= s->backed_max)) {
    if (size > (uint64_t)SIZE_MAX) return cubert_error_set(err, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
    ptr = (unsigned char *)calloc(1, (size_t)size);
    /* BytesStorage: a failed host allocation is BufferTooBig */
    if (!ptr) return cubert_error_set(err, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  }
  r = &s->records[s->record_count++];
  r->ptr = ptr;
  r->size = size;
  r->state = 1;
  s->live_allocs++;
  s->live_bytes += size;
  if (s->live_bytes > s->peak_bytes) s->peak_bytes = s->live_bytes;
  out->id = s->record_count; /* id = index + 1 */
  out->offset = 0;
  out->size = size;
  return CUBERT_STATUS_OK;
}

static cubert_status_t hs_get(void *self, const cubert_storage_handle_t *h,
                              cubert_storage_resource_t *out, cubert_error_t *err) {
  host_storage_t *s = (host_storage_t *)self;
  host_storage_record_t *r;
  s->get_calls++;
  if (h->id == 0 || h->id > s->record_count || s->records[h->id - 1].state != 1)
    return cubert_error_set(err, CUBERT_ERROR_IO_STORAGE_HANDLE_NOT_FOUND, NULL, 0,
                            "StorageId in the host storage");
  r = &s->records[h->id - 1];
  if (h->offset > r->size || h->size > r->size - h->offset)
    return cubert_error_set(err, CUBERT_ERROR_OUT_OF_RANGE, NULL, 0, "outside the allocation");
  out->ptr = r->ptr ? r->ptr + h->offset : NULL;
  out->address = (uint64_t)(uintptr_t)out->ptr;
  out->size = h->size;
  return CUBERT_STATUS_OK;
}

static void release(host_storage_t *s, host_storage_record_t *r) {
  free(r->ptr);
  r->ptr = NULL;
  s->live_allocs--;
  s->live_bytes -= r->size;
  r->state = 0;
}

static void hs_dealloc(void *self, uint64_t id) {
  host_storage_t *s = (host_storage_t *)self;
  host_storage_record_t *r;
  s->dealloc_calls++;
  if (id == 0 || id > s->record_count || s->records[id - 1].state != 1) {
    s->bad_deallocs++;
    return;
  }
  r = &s->records[id - 1];
  if (s->deferred) r->state = 2;
  else release(s, r);
}

static void hs_flush(void *self) {
  host_storage_t *s = (host_storage_t *)self;
  uint64_t i;
  s->flush_calls++;
  if (!s->deferred) return;
  for (i = 0; i < s->record_count; i++)
    if (s->records[i].state == 2) release(s, &s->records[i]);
}

static const cubert_storage_vtable_t k_host_storage_vtable = {
    hs_alignment, hs_alloc, hs_get, hs_dealloc, hs_flush};

void host_storage_initialize(host_storage_t *s, uint64_t alignment) {
  memset(s, 0, sizeof *s);
  s->alignment = alignment;
  s->fail_status = CUBERT_STATUS_OUT_OF_MEMORY;
#if defined(CUBERT_TEST_EMBEDDED) && CUBERT_TEST_EMBEDDED
  s->backed_max = HOST_STORAGE_EMBEDDED_BACKED_MAX;
#endif
  s->storage.self = s;
  s->storage.vtable = &k_host_storage_vtable;
}

uint64_t host_storage_destroy(host_storage_t *s) {
  uint64_t i, leaked = 0;
  for (i = 0; i < s->record_count; i++)
    if (s->records[i].state != 0) {
      if (s->records[i].state == 1) leaked++;
      release(s, &s->records[i]);
    }
  free(s->records);
  s->records = NULL;
  s->record_count = s->record_cap = 0;
  return leaked;
}

void host_storage_fail_at(host_storage_t *s, uint64_t n, int persist) {
  s->fail_calls = 0;
  s->failures = 0;
  s->fail_at = n;
  s->fail_persist = persist;
}

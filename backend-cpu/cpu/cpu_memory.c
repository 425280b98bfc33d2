/* backend-cpu/cpu/cpu_memory.c: the memory of one CPU stream slot: a host storage
 * over the injected allocator, managed by the core memory manager. */
#include "cpu/cpu_server.h"

#include <string.h>

typedef struct host_block_t {
  uint64_t id;
  uint64_t size;
  unsigned char *ptr;
} host_block_t;

/* Host storage: allocations tracked in a growable array (ids never reused). */
typedef struct host_storage_t {
  cubert_allocator_t allocator;
  host_block_t *blocks;
  size_t count, capacity;
  uint64_t next_id;
} host_storage_t;

struct cpu_memory_t {
  cpu_server_t *server;
  host_storage_t storage;
  cubert_memory_manager_t *manager;
};

#define HOST_ALIGN 64

static uint64_t hs_alignment(void *self) {
  (void)self;
  return 8;
}

static cubert_status_t hs_alloc(void *self, uint64_t size, cubert_storage_handle_t *out,
                                cubert_error_t *out_error) {
  host_storage_t *hs = (host_storage_t *)self;
  void *p = NULL;
  if (size > (uint64_t)SIZE_MAX)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_BUFFER_TOO_BIG, &size, 1, NULL);
  if (hs->count == hs->capacity) {
    size_t cap = hs->capacity ? hs->capacity * 2 : 16;
    void *grown = NULL;
    if (cubert_allocator_realloc(hs->allocator, hs->blocks, hs->capacity * sizeof(host_block_t),
                                 cap * sizeof(host_block_t), 0, &grown) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_IO_OUT_OF_MEMORY, &size, 1,
                              "storage bookkeeping");
    hs->blocks = (host_block_t *)grown;
    hs->capacity = cap;
  }
  if (size && cubert_allocator_malloc(hs->allocator, (size_t)size, HOST_ALIGN, &p) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_OUT_OF_MEMORY, &size, 1,
                            "host memory allocation failed");
  hs->blocks[hs->count].id = hs->next_id++;
  hs->blocks[hs->count].size = size;
  hs->blocks[hs->count].ptr = (unsigned char *)p;
  out->id = hs->blocks[hs->count].id;
  out->offset = 0;
  out->size = size;
  hs->count++;
  return CUBERT_STATUS_OK;
}

static host_block_t *hs_find(host_storage_t *hs, uint64_t id) {
  size_t lo = 0, hi = hs->count;
  while (lo < hi) { /* ids are increasing in the array */
    size_t mid = lo + (hi - lo) / 2;
    if (hs->blocks[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < hs->count && hs->blocks[lo].id == id ? &hs->blocks[lo] : NULL;
}

static cubert_status_t hs_get(void *self, const cubert_storage_handle_t *h,
                              cubert_storage_resource_t *out, cubert_error_t *out_error) {
  host_block_t *b = hs_find((host_storage_t *)self, h->id);
  if (!b || h->offset > b->size || h->size > b->size - h->offset)
    return cubert_error_set(out_error, CUBERT_ERROR_IO_STORAGE_HANDLE_NOT_FOUND, &h->id, 1,
                            "StorageId not found in the CPU storage");
  out->ptr = b->ptr ? b->ptr + h->offset : NULL;
  out->address = (uint64_t)(uintptr_t)out->ptr;
  out->size = h->size;
  return CUBERT_STATUS_OK;
}

static void hs_dealloc(void *self, uint64_t id) {
  host_storage_t *hs = (host_storage_t *)self;
  host_block_t *b = hs_find(hs, id);
  size_t index;
  if (!b) return;
  if (b->ptr) cubert_allocator_free(hs->allocator, b->ptr, (size_t)b->size, HOST_ALIGN);
  index = (size_t)(b - hs->blocks);
  memmove(b, b + 1, (hs->count - index - 1) * sizeof(*b));
  hs->count--;
}

static void hs_flush(void *self) { (void)self; }

static const cubert_storage_vtable_t g_host_storage = {hs_alignment, hs_alloc, hs_get, hs_dealloc,
                                                       hs_flush};

cubert_status_t cpu_memory_create(cpu_server_t *s, uint32_t slot, cpu_memory_t **out,
                                  cubert_error_t *out_error) {
  cpu_memory_t *m = NULL;
  cubert_storage_t storage;
  cubert_memory_configuration_t config = cubert_memory_configuration_default(false);
  cubert_status_t status;
  (void)slot;
  if (cubert_allocator_malloc(s->allocator, sizeof(*m), 0, (void **)&m) != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0, "slot memory");
  m->server = s;
  m->storage.allocator = s->allocator;
  m->storage.next_id = 1;
  storage.self = &m->storage;
  storage.vtable = &g_host_storage;
  status = cubert_memory_manager_create(s->allocator, storage, s->table, s->properties.memory,
                                        &config, NULL, &m->manager, out_error);
  if (status != CUBERT_STATUS_OK) {
    cubert_allocator_free(s->allocator, m, sizeof(*m), 0);
    return status;
  }
  *out = m;
  return CUBERT_STATUS_OK;
}

void cpu_memory_destroy(cpu_memory_t *m) {
  size_t i;
  if (!m) return;
  cubert_memory_manager_destroy(m->manager);
  for (i = 0; i < m->storage.count; i++)
    if (m->storage.blocks[i].ptr)
      cubert_allocator_free(m->storage.allocator, m->storage.blocks[i].ptr,
                            (size_t)m->storage.blocks[i].size, HOST_ALIGN);
  cubert_allocator_free(m->storage.allocator, m->storage.blocks,
                        m->storage.capacity * sizeof(host_block_t), 0);
  cubert_allocator_free(m->server->allocator, m, sizeof(*m), 0);
}

cubert_status_t cpu_memory_reserve_bind(cpu_memory_t *m, const cubert_handle_t *handle,
                                        uint64_t size, uint64_t cursor, cubert_error_t *out_error) {
  cubert_memory_id_t reserved;
  cubert_status_t status;
  CUBERT_RETURN_IF_ERROR(cubert_memory_manager_reserve(m->manager, size, &reserved, out_error));
  status = cubert_memory_manager_bind(m->manager, reserved, handle->memory, cursor, out_error);
  (void)cubert_memory_id_release_handle(m->server->table, reserved);
  return status;
}

cubert_status_t cpu_memory_resolve(cpu_memory_t *m, const cubert_binding_t *b,
                                   unsigned char **out_ptr, uint64_t *out_size,
                                   cubert_error_t *out_error) {
  cubert_storage_resource_t r;
  CUBERT_RETURN_IF_ERROR(cubert_memory_manager_get_resource(m->manager, b->memory, b->offset_start,
                                                            b->offset_end, &r, out_error));
  *out_ptr = (unsigned char *)r.ptr;
  *out_size = r.size;
  return CUBERT_STATUS_OK;
}

void cpu_memory_usage(cpu_memory_t *m, cubert_memory_usage_t *out) {
  *out = cubert_memory_manager_memory_usage(m->manager);
}

void cpu_memory_cleanup(cpu_memory_t *m, bool explicit_cleanup) {
  cubert_memory_manager_cleanup(m->manager, explicit_cleanup);
}

cubert_status_t cpu_memory_mode(cpu_memory_t *m, cubert_memory_allocation_mode_t mode,
                                cubert_error_t *out_error) {
  (void)out_error;
  cubert_memory_manager_set_mode(m->manager, mode);
  return CUBERT_STATUS_OK;
}

/* SPDX-License-Identifier: MIT */
/* core/device/device_registry.c: the process-global device registry: a fixed table,
 * the only global mutable state of the core. Lookups are lock-free; inserts
 * and removals serialize on an atomic spin flag (they are rare). */
#include "base/internal.h"
#include "base/atomic.h"
#include "cubert/device.h"
#include "cubert/driver/device.h"
#include "device/device_registry.h"

typedef struct registry_entry_t {
  cubert_atomic_u32_t used; /* 1 once published */
  uint16_t type_id;
  uint32_t index_id;
  void *volatile client;
} registry_entry_t;

static registry_entry_t g_entries[CUBERT_DEVICE_REGISTRY_CAPACITY];
static cubert_atomic_u32_t g_writer;

static void writer_lock(void) {
  uint32_t expected = 0;
  /* unreachable: in single-threaded tests (another writer holds the flag) */
  while (!cubert__atomic_cas_u32(&g_writer, &expected, 1)) expected = 0;
}

static void writer_unlock(void) { cubert__atomic_store_u32(&g_writer, 0); }

static registry_entry_t *find(cubert_device_id_t device) {
  size_t i;
  for (i = 0; i < CUBERT_DEVICE_REGISTRY_CAPACITY; i++) {
    registry_entry_t *e = &g_entries[i];
    /* unreachable: in single-threaded tests (used with no client: a remove between the loads) */
    if (cubert__atomic_load_u32(&e->used) && e->type_id == device.type_id &&
        e->index_id == device.index_id && cubert__atomic_load_ptr((void *const volatile *)&e->client))
      return e;
  }
  return NULL;
}

cubert_status_t cubert__device_registry_insert(cubert_device_id_t device, void *client) {
  size_t i;
  if (!client) return CUBERT_STATUS_INVALID_ARGUMENT;
  writer_lock();
  if (find(device)) {
    writer_unlock();
    return CUBERT_STATUS_ALREADY_EXISTS;
  }
  for (i = 0; i < CUBERT_DEVICE_REGISTRY_CAPACITY; i++) {
    registry_entry_t *e = &g_entries[i];
    if (!cubert__atomic_load_ptr((void *const volatile *)&e->client)) {
      e->type_id = device.type_id;
      e->index_id = device.index_id;
      cubert__atomic_store_ptr((void *volatile *)&e->client, client);
      cubert__atomic_store_u32(&e->used, 1);
      writer_unlock();
      return CUBERT_STATUS_OK;
    }
  }
  writer_unlock();
  return CUBERT_STATUS_OUT_OF_RANGE;
}

cubert_status_t cubert__device_registry_lookup(cubert_device_id_t device, void **out_client) {
  registry_entry_t *e;
  if (!out_client) return CUBERT_STATUS_INVALID_ARGUMENT;
  e = find(device);
  if (!e) return CUBERT_STATUS_NOT_FOUND;
  *out_client = cubert__atomic_load_ptr((void *const volatile *)&e->client);
  /* unreachable: in single-threaded tests (find saw the client, then a remove cleared it) */
  return *out_client ? CUBERT_STATUS_OK : CUBERT_STATUS_NOT_FOUND;
}

cubert_status_t cubert__device_registry_remove(cubert_device_id_t device, void *client) {
  registry_entry_t *e;
  writer_lock();
  e = find(device);
  if (!e || cubert__atomic_load_ptr((void *const volatile *)&e->client) != client) {
    writer_unlock();
    return CUBERT_STATUS_NOT_FOUND;
  }
  cubert__atomic_store_u32(&e->used, 0);
  cubert__atomic_store_ptr((void *volatile *)&e->client, NULL);
  writer_unlock();
  return CUBERT_STATUS_OK;
}

size_t cubert__device_registry_enumerate(uint16_t type_id, cubert_device_id_t *out_ids,
                                         size_t capacity) {
  size_t i, n = 0;
  for (i = 0; i < CUBERT_DEVICE_REGISTRY_CAPACITY; i++) {
    registry_entry_t *e = &g_entries[i];
    if (!cubert__atomic_load_u32(&e->used)) continue;
    if (type_id != UINT16_MAX && e->type_id != type_id) continue;
    if (out_ids && n < capacity) {
      out_ids[n].type_id = e->type_id;
      out_ids[n].index_id = e->index_id;
    }
    n++;
  }
  return n;
}

/* SPDX-License-Identifier: MIT */
/* core/client/client_memory.c: allocation and upload (create,
 * create_tensor(s), empty, write) and memory management. The
 * layouts and handles are computed here, on the calling thread; the server
 * reserves, binds and copies in stream order (a create task, a write task). */
#include "client/client_internal.h"
#include "memory/handle_table.h"
#include "device/device_shards.h"

/* ---- device tasks ---- */

typedef struct create_task_t {
  client_task_t head;
  cubert_server_create_t op;
  int ran; /* the server took the bytes (it releases them, also on failure) */
} create_task_t;

static void create_run(void *context, void *payload) {
  create_task_t *t = (create_task_t *)payload;
  t->ran = 1;
  t->head.status = cubert__server_create_memory((cubert_server_t *)context, &t->op, t->head.error);
}

typedef struct write_task_t {
  client_task_t head;
  cubert_server_write_t op;
  int ran;
} write_task_t;

static void write_run(void *context, void *payload) {
  write_task_t *t = (write_task_t *)payload;
  t->ran = 1;
  t->head.status = cubert__server_write((cubert_server_t *)context, &t->op, t->head.error);
}

/* ---- the create path ---- */

static void release_owned_copy(void *owner, void *data, uint64_t size) {
  cubert_allocator_free(*(cubert_allocator_t *)owner, data, (size_t)size, 0);
}

static void release_bytes(cubert_bytes_t *bytes, size_t from, size_t count) {
  size_t i;
  if (!bytes) return;
  for (i = from; i < count; i++) {
    if (bytes[i].release) bytes[i].release(bytes[i].owner, bytes[i].data, bytes[i].size);
    bytes[i].release = NULL;
  }
}

/* A driver that has read an upload's bytes before the device task returns
 * (CUBERT_DRIVER_SYNCHRONOUS: the inline driver, every size; a driver with
 * CUBERT_DRIVER_BORROWS_UPLOADS: the CUDA driver, large uploads) reads the
 * caller's bytes in place: no copy, nothing allocated for it (small hosts,
 * and large uploads that would fault in fresh pages for the copy). */
static int upload_in_place(const device_state_t *st, uint64_t size) {
  return cubert__server_can_borrow(st->server, size);
}

/* Per-call scratch (heap: 64 tensors would need ~30 KB of stack). */
typedef struct create_scratch_t {
  cubert_layout_t *layouts;
  cubert_copy_descriptor_t *descs;
  cubert_bytes_t *bytes;
  cubert_memory_layout_t *results;
  size_t count, nbytes, made;
} create_scratch_t;

static size_t scratch_item_bytes(void) {
  return sizeof(cubert_layout_t) + sizeof(cubert_copy_descriptor_t) + sizeof(cubert_bytes_t) +
         sizeof(cubert_memory_layout_t);
}

static cubert_status_t scratch_create(cubert_allocator_t a, size_t count, create_scratch_t *s) {
  unsigned char *block = NULL;
  CUBERT_RETURN_IF_ERROR(cubert_allocator_malloc(a, count * scratch_item_bytes(), 0, (void **)&block, NULL));
  s->layouts = (cubert_layout_t *)(void *)block;
  s->descs = (cubert_copy_descriptor_t *)(void *)(block + count * sizeof(cubert_layout_t));
  s->bytes = (cubert_bytes_t *)(void *)((unsigned char *)s->descs +
                                        count * sizeof(cubert_copy_descriptor_t));
  s->results = (cubert_memory_layout_t *)(void *)((unsigned char *)s->bytes +
                                                  count * sizeof(cubert_bytes_t));
  s->count = count;
  s->nbytes = 0;
  s->made = 0;
  return CUBERT_STATUS_OK;
}

static void scratch_free(cubert_allocator_t a, create_scratch_t *s) {
  cubert_allocator_free(a, s->layouts, s->count * scratch_item_bytes(), 0);
}

/* Item i's sub-handle, and its upload (a copy of data[i] or owned[i]). */
static cubert_status_t create_item(device_state_t *st, create_scratch_t *s, const cubert_handle_t *base,
                                   const cubert_layout_descriptor_t *d, size_t i,
                                   const void *const *data, cubert_bytes_t *owned,
                                   cubert_error_t *out_error) {
  const cubert_layout_t *l = &s->layouts[i];
  cubert_memory_layout_t *r = &s->results[i];
  cubert_copy_descriptor_t *desc;
  uint64_t len = d->elem_size;
  uint32_t k;
  CUBERT_RETURN_IF_ERROR(
      cubert__handle_offset(st->table, base, l->offset_start, l->offset_end, &r->memory));
  s->made++;
  r->rank = l->rank;
  for (k = 0; k < CUBERT_MAX_RANK; k++) r->strides[k] = k < l->rank ? l->strides[k] : 0;
  if (!owned && !(data && data[i])) return CUBERT_STATUS_OK;
  desc = &s->descs[s->nbytes];
  cubert_memset(desc, 0, sizeof(*desc));
  desc->binding = r->memory;
  desc->rank = d->rank;
  for (k = 0; k < d->rank; k++) {
    desc->shape[k] = d->shape[k];
    desc->strides[k] = l->strides[k];
    len *= d->shape[k]; /* cannot overflow: the layout checked it */
  }
  desc->elem_size = d->elem_size;
  if (owned) {
    s->bytes[s->nbytes++] = owned[i];
    owned[i].release = NULL; /* moved */
    return CUBERT_STATUS_OK;
  }
  cubert_memset(&s->bytes[s->nbytes], 0, sizeof(cubert_bytes_t));
  s->bytes[s->nbytes].property = CUBERT_ALLOCATION_NATIVE;
  if (len && upload_in_place(st, len)) { /* borrowed: no release */
    s->bytes[s->nbytes].data = (void *)(uintptr_t)data[i];
    s->bytes[s->nbytes].size = len;
  } else if (len) {
    void *copy = NULL;
    if (cubert_allocator_malloc(st->allocator, (size_t)len, 0, &copy, NULL) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &len, 1,
                              "copy of the data to upload");
    cubert_memcpy(copy, data[i], (size_t)len);
    s->bytes[s->nbytes].data = copy;
    s->bytes[s->nbytes].size = len;
    s->bytes[s->nbytes].owner = &st->allocator;
    s->bytes[s->nbytes].release = release_owned_copy;
  }
  s->nbytes++;
  return CUBERT_STATUS_OK;
}

/* Layouts, base handle, sub-handles and uploads, then the create task. */
static cubert_status_t create_with(cubert_client_t *client, create_scratch_t *s,
                                   const cubert_layout_descriptor_t *descriptors,
                                   const void *const *data, cubert_bytes_t *owned,
                                   cubert_error_t *out_error) {
  device_state_t *st = client->state;
  uint64_t total = 0, stream = cubert_client_stream(client);
  cubert_handle_t base;
  create_task_t t;
  cubert_status_t status;
  size_t i;
  CUBERT_RETURN_IF_ERROR(cubert_layout_policy_apply(&st->layout_policy, descriptors, s->count,
                                                    s->layouts, &total, out_error));
  status = cubert__handle_create(st->table, st->device.index_id, stream, 0, total, &base);
  if (status != CUBERT_STATUS_OK)
    return cubert_error_set(out_error, status == CUBERT_STATUS_RESOURCE_EXHAUSTED
                                           ? CUBERT_ERROR_HOST_OUT_OF_MEMORY
                                           : CUBERT_ERROR_OUT_OF_RANGE,
                            NULL, 0, "no handle slot for the allocation");
  base.device_key = st->device_key;
  for (i = 0; i < s->count && status == CUBERT_STATUS_OK; i++)
    status = create_item(st, s, &base, &descriptors[i], i, data, owned, out_error);
  if (status == CUBERT_STATUS_OK) {
    t.ran = 0;
    t.op.stream = stream;
    t.op.memory = &base;
    t.op.size = total;
    t.op.descriptors = s->descs;
    t.op.bytes = s->bytes;
    t.op.count = s->nbytes;
    status = client_submit(client, create_run, &t.head, out_error);
    if (t.ran) s->nbytes = 0; /* the bytes now belong to the server (or were released) */
  }
  (void)cubert__handle_release(st->table, &base); /* sub-handles keep it alive */
  return status;
}

/* ---- one allocation ---- */

/* One allocation (empty, create of one buffer or tensor): the server reserves
 * the memory under a new id that becomes the caller's handle, and the
 * upload (if any) is enqueued in the same device task. No scratch, no
 * second id to bind: the path of a pooled allocation is the memory
 * manager's reserve plus the device lock. */
typedef struct create_one_task_t {
  client_task_t head;
  uint64_t stream;
  cubert_handle_t *handle;        /* device, stream, size, offsets in; memory out */
  cubert_copy_descriptor_t *desc; /* the upload's (binding set here), or NULL */
  cubert_bytes_t *bytes;
  bool borrowed;
  int ran;      /* the task ran: the bytes are the server's or released */
  int reserved; /* handle->memory holds a reserved id */
} create_one_task_t;

static void create_one_run(void *context, void *payload) {
  create_one_task_t *t = (create_one_task_t *)payload;
  cubert_server_t *server = (cubert_server_t *)context;
  cubert_server_write_t write;
  t->ran = 1;
  t->head.status = cubert__server_reserve_memory(server, t->stream, t->handle->size, &t->handle->memory,
                                                 t->head.error);
  if (t->head.status != CUBERT_STATUS_OK) {
    if (t->desc) release_bytes(t->bytes, 0, 1);
    return;
  }
  t->reserved = 1;
  if (!t->desc) return;
  t->desc->binding = *t->handle;
  write.stream = t->stream;
  write.descriptors = t->desc;
  write.bytes = t->bytes;
  write.count = 1;
  write.borrowed = t->borrowed;
  write.upload = true; /* a create runs at once, recording or not */
  t->head.status = cubert__server_write(server, &write, t->head.error); /* takes the bytes */
}

/* The upload of the one item: owned bytes moved, or the caller's data
 * borrowed in place, or copied. *out_has: there is one (empty: none). */
static cubert_status_t one_upload(device_state_t *st, const cubert_layout_descriptor_t *d,
                                  const cubert_layout_t *l, const void *data,
                                  cubert_bytes_t *owned, cubert_copy_descriptor_t *desc,
                                  cubert_bytes_t *bytes, bool *out_borrowed, bool *out_has,
                                  cubert_error_t *out_error) {
  uint64_t len = d->elem_size;
  uint32_t k;
  *out_has = owned != NULL || data != NULL;
  *out_borrowed = false;
  if (!*out_has) return CUBERT_STATUS_OK;
  cubert_memset(desc, 0, sizeof(*desc));
  desc->rank = d->rank;
  for (k = 0; k < d->rank; k++) {
    desc->shape[k] = d->shape[k];
    desc->strides[k] = l->strides[k];
    len *= d->shape[k]; /* cannot overflow: the layout checked it */
  }
  desc->elem_size = d->elem_size;
  if (owned) {
    *bytes = *owned;
    owned->release = NULL; /* moved */
    return CUBERT_STATUS_OK;
  }
  cubert_memset(bytes, 0, sizeof(*bytes));
  bytes->property = CUBERT_ALLOCATION_NATIVE;
  if (len && upload_in_place(st, len)) { /* borrowed for the task: no release */
    bytes->data = (void *)(uintptr_t)data;
    bytes->size = len;
    *out_borrowed = true;
  } else if (len) {
    void *copy = NULL;
    if (cubert_allocator_malloc(st->allocator, (size_t)len, 0, &copy, NULL) != CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &len, 1,
                              "copy of the data to upload");
    cubert_memcpy(copy, data, (size_t)len);
    bytes->data = copy;
    bytes->size = len;
    bytes->owner = &st->allocator;
    bytes->release = release_owned_copy;
  }
  return CUBERT_STATUS_OK;
}

/* An empty buffer's reserve through its stream's shard (core/device/device_shards.h);
 * false: run it with the device held. */
static bool reserve_sharded(device_state_t *st, cubert_handle_t *h, cubert_status_t *out_status,
                            cubert_error_t *out_error) {
  uint32_t shard = cubert__server_shard_of(st->server, h->stream);
  cubert_error_t e;
  bool taken;
  if (!cubert__device_shards_enter_wait(st->shards, shard, client_patient(st))) return false;
  cubert_error_clear(&e);
  taken = cubert__server_reserve_sharded(st->server, h->stream, h->size, &h->memory, out_status, &e);
  cubert__device_shards_leave(st->shards, shard);
  if (taken) client_sharded_done(st, *out_status, &e, out_error);
  return taken;
}

static cubert_status_t create_one(cubert_client_t *client, const cubert_layout_descriptor_t *d,
                                  const void *data, cubert_bytes_t *owned,
                                  cubert_memory_layout_t *out_layout, cubert_error_t *out_error) {
  device_state_t *st = client->state;
  cubert_layout_t l;
  cubert_handle_t h;
  cubert_copy_descriptor_t desc;
  cubert_bytes_t bytes;
  create_one_task_t t;
  bool has = false;
  uint64_t total = 0;
  uint32_t k;
  cubert_status_t status;
  status = cubert_layout_policy_apply(&st->layout_policy, d, 1, &l, &total, out_error);
  if (status == CUBERT_STATUS_OK)
    status = one_upload(st, d, &l, data, owned, &desc, &bytes, &t.borrowed, &has, out_error);
  if (status != CUBERT_STATUS_OK) {
    release_bytes(owned, 0, 1);
    return status;
  }
  cubert_memset(&h, 0, sizeof h);
  h.device = st->device.index_id;
  h.device_key = st->device_key;
  h.stream = cubert_client_stream(client);
  h.size = total;
  h.offset_start = l.offset_start;
  h.offset_end = l.offset_end;
  t.stream = h.stream;
  t.handle = &h;
  t.desc = has ? &desc : NULL;
  t.bytes = &bytes;
  t.ran = 0;
  t.reserved = 0;
  if (!has && st->shards && reserve_sharded(st, &h, &status, out_error)) {
    if (status != CUBERT_STATUS_OK) return status; /* nothing reserved */
  } else {
    status = client_submit(client, create_one_run, &t.head, out_error);
    if (!t.ran && has) release_bytes(&bytes, 0, 1);
    if (status != CUBERT_STATUS_OK) {
      if (t.reserved) (void)cubert__handle_release(st->table, &h); /* the write failed */
      return status;
    }
  }
  out_layout->memory = h;
  out_layout->rank = l.rank;
  for (k = 0; k < CUBERT_MAX_RANK; k++) out_layout->strides[k] = k < l.rank ? l.strides[k] : 0;
  return CUBERT_STATUS_OK;
}

cubert_status_t client_do_create(cubert_client_t *client,
                                 const cubert_layout_descriptor_t *descriptors, size_t count,
                                 const void *const *data, cubert_bytes_t *owned,
                                 cubert_memory_layout_t *out_layouts, cubert_error_t *out_error) {
  device_state_t *st = client->state;
  create_scratch_t s;
  cubert_status_t status;
  size_t i;
  if (count == 0 || count > CLIENT_MAX_BATCH || !descriptors || !out_layouts) {
    release_bytes(owned, 0, count);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "create needs 1..64 descriptors and an output array");
  }
  if (count == 1) return create_one(client, descriptors, data ? data[0] : NULL, owned, out_layouts, out_error);
  if (scratch_create(st->allocator, count, &s) != CUBERT_STATUS_OK) {
    release_bytes(owned, 0, count);
    return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, NULL, 0,
                            "create: scratch");
  }
  status = create_with(client, &s, descriptors, data, owned, out_error);
  if (status != CUBERT_STATUS_OK) {
    release_bytes(s.bytes, 0, s.nbytes);
    for (i = 0; i < s.made; i++) (void)cubert__handle_release(st->table, &s.results[i].memory);
    release_bytes(owned, 0, count); /* the ones not moved yet */
  } else {
    for (i = 0; i < count; i++) out_layouts[i] = s.results[i];
  }
  scratch_free(st->allocator, &s);
  return status;
}

/* ---- create / empty --------------------------------------------------------------------- */

static void flat_descriptor(cubert_layout_descriptor_t *d, uint64_t size) {
  cubert_memset(d, 0, sizeof(*d));
  d->strategy = CUBERT_LAYOUT_CONTIGUOUS;
  d->rank = 1;
  d->shape[0] = size;
  d->elem_size = 1;
}

static cubert_status_t tensor_descriptor(cubert_layout_descriptor_t *d, uint32_t rank,
                                         const uint64_t *shape, uint64_t elem_size,
                                         cubert_error_t *out_error) {
  uint32_t r;
  if (rank > CUBERT_MAX_RANK || (rank && !shape))
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "rank above CUBERT_MAX_RANK or NULL shape");
  cubert_memset(d, 0, sizeof(*d));
  d->strategy = CUBERT_LAYOUT_OPTIMIZED;
  d->rank = rank;
  for (r = 0; r < rank; r++) d->shape[r] = shape[r];
  d->elem_size = elem_size;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_create_from_slice(cubert_client_t *client, const void *data,
                                                uint64_t size, cubert_handle_t *out_handle,
                                                cubert_error_t *out_error) {
  cubert_layout_descriptor_t d;
  cubert_memory_layout_t layout;
  const void *datas[1];
  CLIENT_CHECK(client && out_handle && (data || size == 0), "create: NULL argument");
  flat_descriptor(&d, size);
  datas[0] = data ? data : (const void *)&layout; /* size 0: nothing is read */
  CUBERT_RETURN_IF_ERROR(client_do_create(client, &d, 1, datas, NULL, &layout, out_error));
  *out_handle = layout.memory;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_create_from_bytes(cubert_client_t *client, cubert_bytes_t bytes,
                                                cubert_handle_t *out_handle,
                                                cubert_error_t *out_error) {
  cubert_layout_descriptor_t d;
  cubert_memory_layout_t layout;
  if (!client || !out_handle || (!bytes.data && bytes.size)) {
    if (bytes.release) bytes.release(bytes.owner, bytes.data, bytes.size);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, NULL, 0,
                            "create_bytes: NULL argument");
  }
  if ((uint32_t)bytes.property > (uint32_t)CUBERT_ALLOCATION_OTHER) {
    uint64_t f = (uint32_t)bytes.property;
    if (bytes.release) bytes.release(bytes.owner, bytes.data, bytes.size);
    return cubert_error_set(out_error, CUBERT_ERROR_INVALID_ARGUMENT, &f, 1,
                            "create_bytes: unknown allocation property (NATIVE, PINNED, FILE, OTHER)");
  }
  flat_descriptor(&d, bytes.size);
  CUBERT_RETURN_IF_ERROR(client_do_create(client, &d, 1, NULL, &bytes, &layout, out_error));
  *out_handle = layout.memory;
  return CUBERT_STATUS_OK;
}

/* The one rule for NULL data (as create_from_slice(NULL, 0)): a tensor that
 * holds no bytes (a zero dimension or elem_size 0) may come with NULL data;
 * one with bytes to copy may not (INVALID_ARGUMENT). */
static bool descriptor_is_empty(const cubert_layout_descriptor_t *d) {
  uint32_t k;
  if (d->elem_size == 0) return true;
  if (d->rank > CUBERT_MAX_RANK) return false; /* refused by the layout, with its record */
  for (k = 0; k < d->rank; k++)
    if (d->shape[k] == 0) return true;
  return false;
}

cubert_status_t cubert_client_create_tensor_from_slice(cubert_client_t *client, const void *data,
                                                       uint32_t rank, const uint64_t *shape,
                                                       uint64_t elem_size,
                                                       cubert_memory_layout_t *out_layout,
                                                       cubert_error_t *out_error) {
  cubert_layout_descriptor_t d;
  CLIENT_CHECK(client && out_layout, "create_tensor: NULL argument");
  CUBERT_RETURN_IF_ERROR(tensor_descriptor(&d, rank, shape, elem_size, out_error));
  CLIENT_CHECK(data || descriptor_is_empty(&d),
               "create_tensor: NULL data for a tensor with bytes (NULL is only for an empty one)");
  return client_do_create(client, &d, 1, &data, NULL, out_layout, out_error);
}

cubert_status_t cubert_client_create_tensors_from_slices(
    cubert_client_t *client, const cubert_layout_descriptor_t *descriptors,
    const void *const *data, size_t count, cubert_memory_layout_t *out_layouts,
    cubert_error_t *out_error) {
  size_t i;
  CLIENT_CHECK(client && descriptors && data && out_layouts, "create_tensors: NULL argument");
  for (i = 0; i < count; i++)
    CLIENT_CHECK(data[i] || descriptor_is_empty(&descriptors[i]),
                 "create_tensors: NULL data entry for a tensor with bytes (NULL is only for an "
                 "empty one)");
  return client_do_create(client, descriptors, count, data, NULL, out_layouts, out_error);
}

cubert_status_t cubert_client_empty(cubert_client_t *client, uint64_t size,
                                    cubert_handle_t *out_handle, cubert_error_t *out_error) {
  cubert_layout_descriptor_t d;
  cubert_memory_layout_t layout;
  CLIENT_CHECK(client && out_handle, "empty: NULL argument");
  flat_descriptor(&d, size);
  CUBERT_RETURN_IF_ERROR(client_do_create(client, &d, 1, NULL, NULL, &layout, out_error));
  *out_handle = layout.memory;
  return CUBERT_STATUS_OK;
}

cubert_status_t cubert_client_empty_tensor(cubert_client_t *client, uint32_t rank,
                                           const uint64_t *shape, uint64_t elem_size,
                                           cubert_memory_layout_t *out_layout,
                                           cubert_error_t *out_error) {
  cubert_layout_descriptor_t d;
  CLIENT_CHECK(client && out_layout, "empty_tensor: NULL argument");
  CUBERT_RETURN_IF_ERROR(tensor_descriptor(&d, rank, shape, elem_size, out_error));
  return client_do_create(client, &d, 1, NULL, NULL, out_layout, out_error);
}

cubert_status_t cubert_client_empty_tensors(cubert_client_t *client,
                                            const cubert_layout_descriptor_t *descriptors,
                                            size_t count, cubert_memory_layout_t *out_layouts,
                                            cubert_error_t *out_error) {
  CLIENT_CHECK(client && descriptors && out_layouts, "empty_tensors: NULL argument");
  return client_do_create(client, descriptors, count, NULL, NULL, out_layouts, out_error);
}

/* ---- write ----------------------------------------------------------------------------- */

cubert_status_t cubert_client_write(cubert_client_t *client, const cubert_handle_t *handle,
                                    const void *data, uint64_t size, cubert_error_t *out_error) {
  cubert_copy_descriptor_t d;
  cubert_bytes_t bytes;
  void *copy = NULL;
  write_task_t t;
  bool borrowed;
  cubert_status_t status;
  CLIENT_CHECK(client && handle && (data || size == 0), "write: NULL argument");
  CUBERT_RETURN_IF_ERROR(client_check_device(client, handle, out_error));
  if (size > cubert_handle_size_in_used(handle)) {
    uint64_t f[2];
    f[0] = size;
    f[1] = cubert_handle_size_in_used(handle);
    return cubert__error_set_text(out_error, CUBERT_ERROR_OUT_OF_RANGE, f, 2, NULL,
                                  "write larger than the handle (data \001 bytes, handle \002 "
                                 "bytes)");
  }
  borrowed = size && upload_in_place(client->state, size);
  if (borrowed) {
    copy = (void *)(uintptr_t)data; /* borrowed: no release */
  } else if (size) {
    if (cubert_allocator_malloc(client->state->allocator, (size_t)size, 0, &copy, NULL) !=
        CUBERT_STATUS_OK)
      return cubert_error_set(out_error, CUBERT_ERROR_HOST_OUT_OF_MEMORY, &size, 1,
                              "write copy");
    cubert_memcpy(copy, data, (size_t)size);
  }
  cubert_memset(&d, 0, sizeof d);
  d.binding = *handle;
  d.rank = 1;
  d.shape[0] = size;
  d.strides[0] = 1;
  d.elem_size = 1;
  bytes.data = copy;
  bytes.size = size;
  bytes.property = CUBERT_ALLOCATION_NATIVE;
  bytes.owner = &client->state->allocator;
  bytes.release = size && !borrowed ? release_owned_copy : NULL;
  t.ran = 0;
  t.op.stream = cubert_client_stream(client);
  t.op.descriptors = &d;
  t.op.bytes = &bytes;
  t.op.count = 1;
  t.op.borrowed = borrowed;
  t.op.upload = false; /* cubert_client_write: recorded on a recording stream */
  status = client_submit(client, write_run, &t.head, out_error);
  if (!t.ran) release_bytes(&bytes, 0, 1);
  return status;
}

/* ---- memory management --------------------------------------------------------- */

typedef struct memory_task_t {
  client_task_t head;
  uint64_t stream;
  cubert_memory_allocation_mode_t mode;
  cubert_memory_usage_t *usage;
} memory_task_t;

static void usage_run(void *context, void *payload) {
  memory_task_t *t = (memory_task_t *)payload;
  t->head.status = cubert__server_memory_usage((cubert_server_t *)context, t->usage, t->head.error);
}

static void cleanup_run(void *context, void *payload) {
  memory_task_t *t = (memory_task_t *)payload;
  t->head.status = cubert__server_memory_cleanup((cubert_server_t *)context, t->head.error);
}

static void mode_run(void *context, void *payload) {
  memory_task_t *t = (memory_task_t *)payload;
  t->head.status =
      cubert__server_allocation_mode((cubert_server_t *)context, t->stream, t->mode, t->head.error);
}

cubert_status_t cubert_client_memory_usage(cubert_client_t *client,
                                           cubert_memory_usage_t *out_usage,
                                           cubert_error_t *out_error) {
  memory_task_t t;
  CLIENT_CHECK(client && out_usage, "memory_usage: NULL argument");
  cubert_memset(&t, 0, sizeof t);
  t.usage = out_usage;
  return client_submit(client, usage_run, &t.head, out_error);
}

cubert_status_t cubert_client_memory_cleanup(cubert_client_t *client, cubert_error_t *out_error) {
  memory_task_t t;
  CLIENT_CHECK(client, "memory_cleanup: NULL client");
  cubert_memset(&t, 0, sizeof t);
  return client_submit(client, cleanup_run, &t.head, out_error);
}

cubert_status_t cubert_client_allocation_mode(cubert_client_t *client,
                                              cubert_memory_allocation_mode_t mode,
                                              cubert_error_t *out_error) {
  memory_task_t t;
  CLIENT_CHECK(client, "allocation_mode: NULL client");
  CLIENT_CHECK(mode == CUBERT_MEMORY_ALLOCATION_MODE_AUTO ||
               mode == CUBERT_MEMORY_ALLOCATION_MODE_PERSISTENT,
               "allocation_mode: unknown mode");
  cubert_memset(&t, 0, sizeof t);
  t.stream = cubert_client_stream(client);
  t.mode = mode;
  return client_submit(client, mode_run, &t.head, out_error);
}

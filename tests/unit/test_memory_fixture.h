/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_memory_fixture.h: a memory manager over the host storage,
 * a handle table and a counting allocator, for the memory_* tests.
 * CubeCL's tests' "MM(props, config)" = mmf_init(&f, max_page, align, &config).
 */
#ifndef CUBERT_TEST_MEMORY_FIXTURE_H
#define CUBERT_TEST_MEMORY_FIXTURE_H

#include "test.h"
#include "counting_allocator.h"
#include "host_storage.h"
#include "memory/memory_internal.h"
#include "memory/handle_table.h"
#include "memory/memory.h"

#define KIB ((uint64_t)1024)
#define MIB ((uint64_t)1024 * 1024)
#define GIB ((uint64_t)1024 * 1024 * 1024)

typedef struct mm_fixture_t {
  counting_allocator_t counting;
  cubert_allocator_t allocator;
  host_storage_t storage;
  cubert_handle_table_t *table;
  cubert_memory_manager_t *mm;
  cubert_memory_device_properties_t props;
} mm_fixture_t;

static inline cubert_memory_device_properties_t mmf_props(uint64_t max_page, uint64_t align) {
  cubert_memory_device_properties_t p;
  p.max_page_size = max_page;
  p.alignment = align;
  return p;
}

/* Everything but the manager. */
static inline void mmf_base(mm_fixture_t *f, uint64_t max_page, uint64_t align) {
  memset(f, 0, sizeof *f);
  f->allocator = counting_allocator_initialize(&f->counting);
  host_storage_initialize(&f->storage, 4);
  f->props = mmf_props(max_page, align);
  CHECK_OK(cubert__handle_table_create(f->allocator, 1u << 20, 7, &f->table));
}

static inline void mmf_init_opts(mm_fixture_t *f, uint64_t max_page, uint64_t align,
                                 cubert_memory_configuration_t config,
                                 const cubert_memory_manager_options_t *opts) {
  cubert_error_t err;
  mmf_base(f, max_page, align);
  CHECK_OK(cubert__memory_manager_create(f->allocator, f->storage.storage, f->table, f->props,
                                         &config, opts, &f->mm, &err));
}

static inline void mmf_init(mm_fixture_t *f, uint64_t max_page, uint64_t align,
                            cubert_memory_configuration_t config) {
  mmf_init_opts(f, max_page, align, config, NULL);
}

static inline cubert_memory_configuration_t mmf_custom(const cubert_memory_pool_options_t *pools,
                                                       uint32_t count) {
  cubert_memory_configuration_t c;
  c.kind = CUBERT_MEMORY_CONFIGURATION_CUSTOM;
  c.pools = pools;
  c.pool_count = count;
  return c;
}

static inline cubert_memory_configuration_t mmf_kind(cubert_memory_configuration_kind_t kind) {
  cubert_memory_configuration_t c;
  c.kind = kind;
  c.pools = NULL;
  c.pool_count = 0;
  return c;
}

/* Destroy and check: no leaked host block, no bad free, no storage leak. */
static inline void mmf_done(mm_fixture_t *f) {
  cubert__memory_manager_destroy(f->mm);
  f->mm = NULL;
  CHECK_EQ_U64(f->storage.live_allocs, 0);
  CHECK_EQ_U64(f->storage.bad_deallocs, 0);
  CHECK_EQ_U64(host_storage_destroy(&f->storage), 0);
  cubert__handle_table_destroy(f->table);
  CHECK_EQ_I64(f->counting.live_blocks, 0);
  CHECK_EQ_U64(f->counting.bad_frees, 0);
  counting_allocator_destroy(&f->counting);
}

static inline cubert_memory_id_t mmf_reserve(mm_fixture_t *f, uint64_t size) {
  cubert_memory_id_t id;
  cubert_error_t err;
  cubert_status_t st = cubert__memory_manager_reserve(f->mm, size, &id, &err);
  CHECK_MSG(st == CUBERT_STATUS_OK, "reserve(%llu) failed: %s", (unsigned long long)size,
            test_status_name((int)st));
  return id;
}

/* Drop the user's handle (CubeCL: drop(handle)). */
static inline void mmf_drop(mm_fixture_t *f, cubert_memory_id_t id) {
  CHECK_OK(cubert__memory_id_release_handle(f->table, id));
}

static inline cubert_memory_usage_t mmf_usage(mm_fixture_t *f) {
  return cubert__memory_manager_memory_usage(f->mm);
}

static inline cubert_memory_pool_report_t mmf_pool_report(mm_fixture_t *f, uint32_t position) {
  cubert_memory_pool_report_t reports[CUBERT_MEMORY_MAX_DYNAMIC_POOLS];
  uint32_t n = 0;
  CHECK_OK(cubert__memory_manager_report(f->mm, reports, CUBERT_MEMORY_MAX_DYNAMIC_POOLS, &n, NULL));
  CHECK(position < n);
  return reports[position];
}

static inline cubert_memory_pool_report_t mmf_persistent_report(mm_fixture_t *f) {
  cubert_memory_pool_report_t r;
  cubert_status_t st = cubert__memory_manager_report(f->mm, NULL, 0, NULL, &r);
  CHECK(st == CUBERT_STATUS_OK || st == CUBERT_STATUS_OUT_OF_RANGE);
  return r;
}

static inline cubert_storage_handle_t mmf_storage(mm_fixture_t *f, cubert_memory_id_t id) {
  cubert_storage_handle_t h;
  CHECK_OK(cubert__memory_manager_get_storage(f->mm, id, &h, NULL));
  return h;
}

/* A fresh id the manager has never seen (CubeCL: a new managed handle). */
static inline cubert_memory_id_t mmf_new_id(mm_fixture_t *f) {
  cubert_memory_id_t id;
  CHECK_OK(cubert__memory_id_acquire(f->table, &id));
  return id;
}

#endif

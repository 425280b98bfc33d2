/* SPDX-License-Identifier: MIT */
/* CommunicationId and ReduceOperation. */
#include "test.h"
#include "cubert/comm.h"

static cubert_device_id_t dev(uint16_t type_id, uint32_t index_id) {
  cubert_device_id_t d;
  memset(&d, 0, sizeof d);
  d.type_id = type_id;
  d.index_id = index_id;
  return d;
}

static uint64_t comm_id_of(const cubert_device_id_t *devices, size_t count) {
  uint64_t id = 0;
  CHECK_OK(cubert_communication_id(devices, count, &id, NULL));
  return id;
}

/* Pinned values, computed outside C (a Python re-implementation of the
 * documented hash: FNV-1a 64 over count (8 LE bytes), then type_id (2 LE)
 * and index_id (4 LE) of each sorted device, then the splitmix64 mixer).
 * They guard the "stable across builds and machines" promise. */
TEST(comm_id_pinned_values) {
  cubert_device_id_t d[3];
  d[0] = dev(2, 7);
  d[1] = dev(1, 1);
  d[2] = dev(1, 0);
  CHECK_EQ_U64(comm_id_of(d, 3), 0x1d806d0d91feee8full);
  CHECK_EQ_U64(comm_id_of(NULL, 0), 0x813f0174a2367c13ull);
}

/* As in CubeCL, any permutation of the same device set yields the same id. */
TEST(comm_id_permutation_invariant) {
  const cubert_device_id_t base[4] = {{1, 0}, {1, 3}, {2, 1}, {0, 9}};
  int perm[4] = {0, 1, 2, 3};
  uint64_t expected = comm_id_of(base, 4);
  int n_perms = 0;
  /* All 24 permutations (Heap's algorithm, iterative). */
  int c[4] = {0, 0, 0, 0};
  int i = 0;
  for (;;) {
    cubert_device_id_t p[4];
    int k;
    for (k = 0; k < 4; k++) p[k] = base[perm[k]];
    CHECK_EQ_U64(comm_id_of(p, 4), expected);
    n_perms++;
    while (i < 4 && c[i] >= i) {
      c[i] = 0;
      i++;
    }
    if (i == 4) break;
    {
      int j = (i % 2 == 0) ? 0 : c[i];
      int t = perm[j];
      perm[j] = perm[i];
      perm[i] = t;
    }
    c[i]++;
    i = 0;
  }
  CHECK_EQ_I64(n_perms, 24);
}

TEST(comm_id_different_sets_differ) {
  cubert_device_id_t a[2], b[2], c[3], one[1];
  a[0] = dev(1, 0);
  a[1] = dev(1, 1);
  b[0] = dev(1, 0);
  b[1] = dev(1, 2);
  c[0] = dev(1, 0);
  c[1] = dev(1, 1);
  c[2] = dev(1, 2);
  one[0] = dev(1, 0);
  CHECK(comm_id_of(a, 2) != comm_id_of(b, 2));
  CHECK(comm_id_of(a, 2) != comm_id_of(c, 3));
  CHECK(comm_id_of(a, 1) == comm_id_of(one, 1));
  CHECK(comm_id_of(a, 2) != comm_id_of(one, 1));
  CHECK(comm_id_of(one, 1) != comm_id_of(NULL, 0));
  /* type id and index id are not interchangeable */
  a[0] = dev(1, 0);
  b[0] = dev(0, 1);
  CHECK(comm_id_of(a, 1) != comm_id_of(b, 1));
  /* same index on another driver type */
  a[0] = dev(1, 5);
  b[0] = dev(2, 5);
  CHECK(comm_id_of(a, 1) != comm_id_of(b, 1));
}

/* Duplicates are kept: [a, a, b] is its own multiset, deterministically. */
TEST(comm_id_duplicates_deterministic) {
  cubert_device_id_t x[3], y[3], ab[2];
  x[0] = dev(1, 0);
  x[1] = dev(1, 0);
  x[2] = dev(1, 1);
  y[0] = dev(1, 1);
  y[1] = dev(1, 0);
  y[2] = dev(1, 0);
  ab[0] = dev(1, 0);
  ab[1] = dev(1, 1);
  CHECK_EQ_U64(comm_id_of(x, 3), comm_id_of(y, 3));
  CHECK_EQ_U64(comm_id_of(x, 3), comm_id_of(x, 3));
  CHECK(comm_id_of(x, 3) != comm_id_of(ab, 2));
}

/* Sorting works on a copy: the caller's array is unchanged. */
TEST(comm_id_does_not_modify_input) {
  cubert_device_id_t d[3];
  d[0] = dev(3, 0);
  d[1] = dev(1, 9);
  d[2] = dev(2, 4);
  (void)comm_id_of(d, 3);
  CHECK_EQ_U64(d[0].type_id, 3);
  CHECK_EQ_U64(d[1].index_id, 9);
  CHECK_EQ_U64(d[2].type_id, 2);
}

TEST(comm_id_max_devices_and_errors) {
  cubert_device_id_t d[CUBERT_COMMUNICATION_MAX_DEVICES + 1];
  cubert_device_id_t r[CUBERT_COMMUNICATION_MAX_DEVICES];
  uint64_t id = 1234, fwd, rev;
  size_t i;
  for (i = 0; i < CUBERT_COMMUNICATION_MAX_DEVICES + 1; i++) d[i] = dev((uint16_t)(i % 3), (uint32_t)i);
  for (i = 0; i < CUBERT_COMMUNICATION_MAX_DEVICES; i++)
    r[i] = d[CUBERT_COMMUNICATION_MAX_DEVICES - 1 - i];
  fwd = comm_id_of(d, CUBERT_COMMUNICATION_MAX_DEVICES);
  rev = comm_id_of(r, CUBERT_COMMUNICATION_MAX_DEVICES);
  CHECK_EQ_U64(fwd, rev);
  CHECK_STATUS(cubert_communication_id(d, CUBERT_COMMUNICATION_MAX_DEVICES + 1, &id, NULL),
               CUBERT_STATUS_OUT_OF_RANGE);
  CHECK_EQ_U64(id, 1234);
  CHECK_STATUS(cubert_communication_id(NULL, 1, &id, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
  CHECK_EQ_U64(id, 1234);
  CHECK_STATUS(cubert_communication_id(d, 1, NULL, NULL), CUBERT_STATUS_INVALID_ARGUMENT);
}

TEST(comm_reduce_operation) {
  CHECK_EQ_U64(CUBERT_REDUCE_OPERATION_SUM, 0);
  CHECK_EQ_U64(CUBERT_REDUCE_OPERATION_MEAN, 1);
  CHECK(cubert_reduce_operation_is_valid(CUBERT_REDUCE_OPERATION_SUM));
  CHECK(cubert_reduce_operation_is_valid(CUBERT_REDUCE_OPERATION_MEAN));
  CHECK(!cubert_reduce_operation_is_valid((cubert_reduce_operation_t)2));
  CHECK(!cubert_reduce_operation_is_valid((cubert_reduce_operation_t)-1));
}

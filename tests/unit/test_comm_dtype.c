/* SPDX-License-Identifier: MIT */
/* Unit: collective dtypes (cubert/comm.h). */
#include "test.h"

#include "cubert/comm.h"

TEST(comm_dtype_sizes_and_reducibility) {
  static const struct {
    uint32_t dtype;
    uint32_t size;
    bool reducible;
  } table[] = {
      {CUBERT_COMM_DTYPE_F32, 4, true},   {CUBERT_COMM_DTYPE_F64, 8, true},
      {CUBERT_COMM_DTYPE_I32, 4, true},   {CUBERT_COMM_DTYPE_I64, 8, true},
      {CUBERT_COMM_DTYPE_U32, 4, true},   {CUBERT_COMM_DTYPE_U64, 8, true},
      {CUBERT_COMM_DTYPE_I8, 1, true},    {CUBERT_COMM_DTYPE_U8, 1, true},
      {CUBERT_COMM_DTYPE_F16, 2, false},  {CUBERT_COMM_DTYPE_BF16, 2, false},
      {CUBERT_COMM_DTYPE_E4M3, 1, false}, {CUBERT_COMM_DTYPE_E5M2, 1, false},
  };
  size_t i;
  for (i = 0; i < sizeof table / sizeof table[0]; i++) {
    CHECK_EQ_U64(cubert_comm_dtype_size(table[i].dtype), table[i].size);
    CHECK(cubert_comm_dtype_reducible(table[i].dtype) == table[i].reducible);
  }
  /* unknown values */
  CHECK_EQ_U64(cubert_comm_dtype_size(12), 0);
  CHECK_EQ_U64(cubert_comm_dtype_size(UINT32_MAX), 0);
  CHECK(!cubert_comm_dtype_reducible(12));
  CHECK(!cubert_comm_dtype_reducible(UINT32_MAX));
}

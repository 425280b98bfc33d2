/* SPDX-License-Identifier: MIT */
/* The ABI of the public structs: every public enum is 4 bytes wide on this target, so a
 * struct that stores one has the same layout whatever the compiler's enum-size rule
 * (arm-none-eabi uses short enums; make test-cortex-m runs this there). */
#include "test.h"
#include "enum_list.h"

TEST(abi_public_enums_are_four_bytes) {
#define CHECK_ENUM_SIZE(T) CHECK_MSG(sizeof(T) == 4, "sizeof(%s) is %u", #T, (unsigned)sizeof(T));
  CUBERT_TEST_PUBLIC_ENUMS(CHECK_ENUM_SIZE)
#undef CHECK_ENUM_SIZE
  /* and the sentinel keeps the value range: the largest enumerator fits */
  CHECK_EQ_U64((uint64_t)CUBERT_STATUS_FORCE_32BIT_, 0x7FFFFFFFu);
  CHECK_EQ_U64(sizeof(cubert_completion_t) % 4, 0);
}

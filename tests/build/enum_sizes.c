/* SPDX-License-Identifier: MIT */
/*
 * tests/build/enum_sizes.c: compile-time proof that every public enum is 4 bytes wide
 * (make check-headers compiles it as is and with -fshort-enums, the default of
 * arm-none-eabi-gcc). A failing check is a negative array size.
 */
#include "enum_list.h"

#define CUBERT_ENUM_IS_4_BYTES(T) typedef char enum_size_of_##T[sizeof(T) == 4 ? 1 : -1];
CUBERT_TEST_PUBLIC_ENUMS(CUBERT_ENUM_IS_4_BYTES)

int cubert_enum_sizes_checked(void);
int cubert_enum_sizes_checked(void) { return 1; }

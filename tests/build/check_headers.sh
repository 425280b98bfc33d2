#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_headers.sh: every installed header compiles alone as C99 (the project's
# warnings, -Werror) and as C++11, and every public enum is 4 bytes, also with -fshort-enums
# (make check-headers; a warning in a public header lands in every program that includes it).
#
#   check_headers.sh CC CXX 'WARNFLAGS' OUTDIR HEADER...
set -eu
CC=$1 CXX=$2 WARN=$3 OUT=$4
shift 4
mkdir -p "$OUT"
n=0
for h in "$@"; do
  p=${h#include/}
  name=$(printf '%s' "${p%.h}" | tr / _)
  printf '#include "%s"\n' "$p" > "$OUT/$name.c"
  # shellcheck disable=SC2086
  $CC $WARN -Werror -Iinclude -c "$OUT/$name.c" -o "$OUT/$name.o"
  cp "$OUT/$name.c" "$OUT/$name.cpp"
  $CXX -std=c++11 -pedantic -Wall -Wextra -Werror -Iinclude -c "$OUT/$name.cpp" -o "$OUT/$name.cpp.o"
  n=$((n + 1))
done
# shellcheck disable=SC2086
$CC $WARN -Werror -Iinclude -Icore -Itests/support -c tests/build/enum_sizes.c -o "$OUT/enum_sizes.o"
# shellcheck disable=SC2086
$CC $WARN -Werror -fshort-enums -Iinclude -Icore -Itests/support -c tests/build/enum_sizes.c \
  -o "$OUT/enum_sizes_short.o"
echo "check-headers: ok ($n headers, C99 and C++11; every public enum 4 bytes, also with -fshort-enums)"

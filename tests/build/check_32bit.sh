#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_32bit.sh: runs the 32-bit unit-test program (make check-32bit built it
# with -m32): natively when this kernel runs 32-bit programs, else under qemu-i386.
#
#   check_32bit.sh CC READELF QEMU_I386 PROGRAM [TESTS...]
set -u
CC=$1 READELF=$2 QEMU_I386=$3 PROG=$4
shift 4
"$READELF" -h "$PROG" | grep -q 'Class: *ELF32' || { echo "check-32bit: $PROG is not a 32-bit program"; exit 1; }
probe=$(dirname "$PROG")/probe
if printf 'int main(void) { return 0; }\n' | $CC -m32 -x c - -o "$probe" 2>/dev/null && "$probe" 2>/dev/null; then
  echo "$PROG $*"
  exec "$PROG" "$@"
elif command -v "$QEMU_I386" >/dev/null 2>&1; then
  echo "check-32bit: this kernel cannot run 32-bit programs; running under $QEMU_I386"
  exec "$QEMU_I386" "$PROG" "$@"
else
  echo "check-32bit: this kernel cannot run 32-bit programs and $QEMU_I386 is not installed (Debian: apt-get install qemu-user)"
  exit 1
fi

#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_unit_done.sh: CUBERT_UNIT_DONE inside CUBERT_UNIT_FOR
# (where its `continue` would continue that loop instead of ending the unit)
# is a compile ERROR with each compiler given (and nvcc, when NVCC names
# one), while the right uses (at the phase's level, after a CUBERT_UNIT_FOR,
# in an if/else) compile with -Wall -Wextra -Wshadow -Werror.
# In a plain loop nested in the phase it cannot be caught at compile time;
# VALIDATE and RACECHECK fail the launch (cts_unit_done_in_a_nested_loop_*).
#
#   check_unit_done.sh OUTDIR CC... [-- NVCC]
set -u
out=$1
shift
mkdir -p "$out"
fail=0
ccs=
nvcc=
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then nvcc=${2:-}; break; fi
  ccs="$ccs $1"
  shift
done
cat >"$out/right.c" <<'SRC'
#include "cubert/kernel.h"
CUBERT_KERNEL(k_right) {
  CUBERT_BUFFER(float, out, 0);
  CUBERT_PHASE {
    CUBERT_UNIT_FOR(i, 0, CUBERT_LEN(out)) { CUBERT_STORE(out, i, 2.0f); }
    if (ABSOLUTE_POS >= CUBERT_LEN(out)) CUBERT_UNIT_DONE;
    else CUBERT_STORE(out, ABSOLUTE_POS, 1.0f);
    CUBERT_UNIT_FOR(j, 0, 4) {
      if (j == 2) break;
    }
    if (UNIT_POS == 0) CUBERT_UNIT_DONE;
  }
}
SRC
cat >"$out/wrong.c" <<'SRC'
#include "cubert/kernel.h"
CUBERT_KERNEL(k_wrong) {
  CUBERT_BUFFER(float, out, 0);
  CUBERT_PHASE {
    CUBERT_UNIT_FOR(i, 0, CUBERT_LEN(out)) {
      if (i > 3) CUBERT_UNIT_DONE; /* line 6: must not compile */
      CUBERT_STORE(out, i, 2.0f);
    }
  }
}
SRC
for cc in $ccs; do
  if ! command -v "$cc" >/dev/null 2>&1; then echo "check_unit_done: $cc not installed, skipped"; continue; fi
  if ! $cc -std=c99 -pedantic -Wall -Wextra -Wshadow -Werror -O3 -Iinclude -c "$out/right.c" \
       -o "$out/right.o" 2>"$out/right_$cc.log"; then
    echo "check_unit_done: the right kernel does not compile with $cc:"; cat "$out/right_$cc.log"; fail=1
  fi
  if $cc -std=c99 -w -Iinclude -c "$out/wrong.c" -o "$out/wrong.o" 2>"$out/wrong_$cc.log"; then
    echo "check_unit_done: CUBERT_UNIT_DONE inside CUBERT_UNIT_FOR compiled with $cc"; fail=1
  elif ! grep -q "wrong.c:6" "$out/wrong_$cc.log"; then
    echo "check_unit_done: wrong.c failed with $cc, but not at the CUBERT_UNIT_DONE:"; cat "$out/wrong_$cc.log"; fail=1
  else
    echo "check_unit_done: $cc: CUBERT_UNIT_DONE inside CUBERT_UNIT_FOR does not compile; the right uses do"
  fi
done
if [ -n "$nvcc" ]; then
  if ! command -v "$nvcc" >/dev/null 2>&1; then
    echo "check_unit_done: nvcc ($nvcc) not installed, skipped"
  else
    cp "$out/right.c" "$out/right.cu"
    cp "$out/wrong.c" "$out/wrong.cu"
    if ! "$nvcc" -Werror all-warnings -Iinclude -c "$out/right.cu" -o "$out/right_cu.o" 2>"$out/right_nvcc.log"; then
      echo "check_unit_done: the right kernel does not compile with nvcc:"; cat "$out/right_nvcc.log"; fail=1
    fi
    if "$nvcc" -Iinclude -c "$out/wrong.cu" -o "$out/wrong_cu.o" 2>"$out/wrong_nvcc.log"; then
      echo "check_unit_done: CUBERT_UNIT_DONE inside CUBERT_UNIT_FOR compiled with nvcc"; fail=1
    elif ! grep -q "wrong.cu(6)" "$out/wrong_nvcc.log"; then
      echo "check_unit_done: wrong.cu failed with nvcc, but not at the CUBERT_UNIT_DONE:"; cat "$out/wrong_nvcc.log"; fail=1
    else
      echo "check_unit_done: nvcc: CUBERT_UNIT_DONE inside CUBERT_UNIT_FOR does not compile; the right uses do"
    fi
  fi
fi
exit $fail

#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_symbols.sh: the installed libraries export only the
# public API. Run by `make check-symbols`:
#
#   check_symbols.sh NM STATIC_LIB SHARED_LIB
#
# Every global symbol defined in the static library (nm -g --defined-only)
# and every dynamic symbol defined in the shared library (nm -D
# --defined-only) must start with `cubert_`; the check names each one that
# does not. It relies on the build making every symbol that is not marked
# CUBERT_API (cubert/base.h) hidden (-fvisibility=hidden), and on the static
# library being one relocatable object whose hidden symbols were made local
# (ld -r, then objcopy --localize-hidden: see the Makefile).
set -eu

NM=$1
STATIC_LIB=$2
SHARED_LIB=$3

fail=0
check() { # label, then the nm output on stdin (value type name)
  label=$1
  bad=$(awk 'NF >= 3 && $3 !~ /^cubert_/ {print $3}' | sort -u)
  if [ -n "$bad" ]; then
    n=$(printf '%s\n' "$bad" | wc -l)
    echo "check-symbols: $label exports $n symbol(s) without the cubert_ prefix:"
    printf '%s\n' "$bad" | sed 's/^/  /'
    fail=1
  fi
}

[ -f "$STATIC_LIB" ] || { echo "check-symbols: $STATIC_LIB not built"; exit 1; }
[ -f "$SHARED_LIB" ] || { echo "check-symbols: $SHARED_LIB not built"; exit 1; }
$NM -g --defined-only "$STATIC_LIB" >/dev/null || { echo "check-symbols: $NM failed on $STATIC_LIB"; exit 1; }
$NM -g --defined-only "$STATIC_LIB" | check "$STATIC_LIB"
$NM -D --defined-only "$SHARED_LIB" | check "$SHARED_LIB"
n_static=$($NM -g --defined-only "$STATIC_LIB" | awk 'NF >= 3' | wc -l)
n_shared=$($NM -D --defined-only "$SHARED_LIB" | awk 'NF >= 3' | wc -l)
[ "$n_static" -gt 0 ] || { echo "check-symbols: $STATIC_LIB exports nothing"; fail=1; }
[ "$n_shared" -gt 0 ] || { echo "check-symbols: $SHARED_LIB exports nothing"; fail=1; }
# Both libraries are built from the same objects: the same API on both.
$NM -g --defined-only "$STATIC_LIB" | awk 'NF >= 3 {print $3}' | sort -u >"${TMPDIR:-/tmp}/cubert-syms-a.$$"
$NM -D --defined-only "$SHARED_LIB" | awk 'NF >= 3 {print $3}' | sort -u >"${TMPDIR:-/tmp}/cubert-syms-so.$$"
diff=$(comm -3 "${TMPDIR:-/tmp}/cubert-syms-a.$$" "${TMPDIR:-/tmp}/cubert-syms-so.$$" | tr -d '\t')
rm -f "${TMPDIR:-/tmp}/cubert-syms-a.$$" "${TMPDIR:-/tmp}/cubert-syms-so.$$"
if [ -n "$diff" ]; then
  echo "check-symbols: exported by only one of $STATIC_LIB and $SHARED_LIB:"
  printf '%s\n' "$diff" | sed 's/^/  /'
  fail=1
fi
[ "$fail" = 0 ] || exit 1
echo "check-symbols: ok ($STATIC_LIB: $n_static cubert_ symbols, $SHARED_LIB: $n_shared)"

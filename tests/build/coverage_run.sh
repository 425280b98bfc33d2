#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/coverage_run.sh: runs the --coverage build of the suite once from zero counts,
# then the conformance suite on the deterministic and inline drivers, then prints the line and
# branch figures of core/ (tests/build/coverage.sh). make coverage.
#
#   coverage_run.sh COVDIR GCOV 'TESTS' CORE_SRC...
set -u
C=$1 GCOV=$2 TESTS=$3
shift 3
find "$C" -name '*.gcda' -exec rm -f {} +
# shellcheck disable=SC2086
"$C/cubert-test" $TESTS >"$C/test.log" 2>&1 ||
  { tail -n 40 "$C/test.log"; echo "coverage: the suite failed (log $C/test.log)"; exit 1; }
echo "coverage: suite run: $(tail -n 1 "$C/test.log")"
for s in deterministic inline; do
  CUBERT_CTS_DRIVER=$s "$C/cubert-test" cts_ >"$C/cts-$s.log" 2>&1 ||
    { tail -n 40 "$C/cts-$s.log"; echo "coverage: the conformance suite failed on $s"; exit 1; }
  echo "coverage: conformance suite on $s: $(tail -n 1 "$C/cts-$s.log")"
done
exec sh tests/build/coverage.sh --gcov "$GCOV" --obj "$C/obj" --out "$C/report" "$@"

#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_tools.sh: BUILD/tools/cubert-info lists every device it creates with its
# pool layout (and the CUDA line in a CUDA=1 build) and refuses a bad option with exit 2
# (make check-tools).
#
#   check_tools.sh BUILD CUDA(0|1)
set -u
BUILD=$1 CUDA=$2
out=$("$BUILD/tools/cubert-info" -n 2) || { echo "check-tools: cubert-info -n 2 failed"; exit 1; }
n=$(printf '%s\n' "$out" | grep -c '^Device ')
[ "$n" = 2 ] || { echo "check-tools: cubert-info -n 2 listed $n devices, expected 2"; exit 1; }
printf '%s\n' "$out" | grep -q 'Memory pools' || { echo "check-tools: no memory pool layout printed"; exit 1; }
printf '%s\n' "$out" | grep -q '^  Max buffers per kernel: *16 ' || { echo "check-tools: no 'Max buffers per kernel: 16'"; exit 1; }
printf '%s\n' "$out" | grep -q '^  Max page size: *[0-9.]* [KMGT]iB$' || { echo "check-tools: sizes not in binary units"; exit 1; }
if [ "$CUDA" = 1 ]; then
  printf '%s\n' "$out" | grep -q '^CUDA: ' || { echo "check-tools: no CUDA line in a CUDA=1 build"; exit 1; }
fi
rc=0
"$BUILD/tools/cubert-info" --no-such-option >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || { echo "check-tools: a bad option exited $rc, expected 2"; exit 1; }
echo "check-tools: ok (cubert-info: 2 devices listed with their pool layout; a bad option exits 2)"

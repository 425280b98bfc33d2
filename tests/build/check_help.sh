#!/bin/sh
# SPDX-License-Identifier: MIT
# Every program (examples, tools, benches) answers -h / --help with its usage
# on stdout and exit 0, and an unknown option with exit 2 (nothing on stdout).
#   sh tests/build/check_help.sh PROGRAM...
status=0
n=0
for p in "$@"; do
  out=$("$p" --help 2>/dev/null) ; rc=$?
  if [ "$rc" != 0 ] || ! printf '%s\n' "$out" | grep -q '^usage: '; then
    echo "check-help: $p --help exited $rc, stdout: $(printf '%s' "$out" | head -n 1)"; status=1
  fi
  out=$("$p" -h 2>/dev/null) ; rc=$?
  [ "$rc" = 0 ] || { echo "check-help: $p -h exited $rc"; status=1; }
  out=$("$p" --no-such-option 2>/dev/null) ; rc=$?
  if [ "$rc" != 2 ] || [ -n "$out" ]; then
    echo "check-help: $p --no-such-option exited $rc (want 2, nothing on stdout)"; status=1
  fi
  n=$((n + 1))
done
[ "$status" = 0 ] && echo "check-help: ok ($n programs: --help and -h print the usage and exit 0, an unknown option exits 2)"
exit $status

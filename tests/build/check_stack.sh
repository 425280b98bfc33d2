#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_stack.sh: no function of the freestanding code needs a
# large stack frame (embedded hosts have small stacks: docs/architecture.md).
#
# usage: check_stack.sh [options] FILE.c ...   (core/**/*.c and other freestanding code)
#   --cc CC           gcc (or a compiler that supports -fstack-usage)
#   --cflags "FLAGS"  flags for compiling each file (word-split)
#   --out DIR         where the objects and their .su files go
#   --limit BYTES     the largest frame allowed (default 2048)
#
# Compiles each file with -fstack-usage and reads the .su lines
# ("file:line:col:function<TAB>bytes<TAB>static|dynamic|dynamic,bounded").
# Fails naming every function whose frame exceeds the limit, or whose usage
# is dynamic and unbounded (alloca, VLAs). Prints the largest frames seen.
set -eu

cc=gcc
cflags=
out=
limit=2048
while [ $# -gt 0 ]; do
  case "$1" in
    --cc) cc=$2; shift 2 ;;
    --cflags) cflags=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --) shift; break ;;
    -*) echo "$0: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -n "$out" ] || { echo "$0: --out is required" >&2; exit 2; }
[ $# -gt 0 ] || { echo "check-stack: no source files" >&2; exit 2; }
mkdir -p "$out"

all=$out/all.su
: >"$all"
for f in "$@"; do
  o=$out/$(echo "$f" | sed 's/\.c$//')
  mkdir -p "$(dirname "$o")"
  rm -f "$o.su"
  # shellcheck disable=SC2086
  $cc $cflags -fstack-usage -c "$f" -o "$o.o" || { echo "check-stack: $f does not compile"; exit 1; }
  [ -f "$o.su" ] || { echo "check-stack: $cc wrote no $o.su (-fstack-usage needs gcc)"; exit 1; }
  cat "$o.su" >>"$all"
done

# file:line:col:function<TAB>bytes<TAB>qualifier
bad=$(awk -F '\t' -v limit="$limit" '
  { q = $3; if ($2 + 0 > limit || q == "dynamic") printf "  %s: %s bytes (%s)\n", $1, $2, q }
' "$all")
n=$(wc -l <"$all")
echo "check-stack: largest frames of $# files ($n functions):"
sort -t "$(printf '\t')" -k2,2nr "$all" | head -n 5 | awk -F '\t' '{ printf "  %s: %s bytes (%s)\n", $1, $2, $3 }'
if [ -n "$bad" ]; then
  echo "check-stack: FAIL: frames over $limit bytes or unbounded:"
  printf '%s\n' "$bad"
  exit 1
fi
echo "check-stack: ok (every frame <= $limit bytes, none unbounded)"

#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_hygiene.sh: repository hygiene (make check-hygiene, part of make check).
#
#   sh tests/build/check_hygiene.sh check   fails (exit 1) naming each problem:
#     - a source file (*.c *.h *.cpp *.cu *.sh *.py *.mk, Makefile, .ci/run) without an
#       `SPDX-License-Identifier: MIT` line in its first three lines;
#     - a comment or doc pointing at documents outside the repository (the design and
#       spec pages the project was written from): what a reader needs is in docs/;
#     - the include graph (tests/build/check_includes.sh): a cycle, or an include that
#       points up the layer order of docs/architecture.md.
#   sh tests/build/check_hygiene.sh add-spdx adds the SPDX line where it is missing
#     (C-like files: `/* SPDX-License-Identifier: MIT */` first; scripts: `# ...` after
#     the #! line; Makefiles: first line). Idempotent.
# POSIX sh, grep, sed; run from the repository root.
set -eu
mode=${1:-check}

# Source files: tracked ones when this is a git checkout, else every file outside build/.
list_sources() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files '*.c' '*.h' '*.cpp' '*.cu' '*.sh' '*.py' '*.mk' 'Makefile' '*/Makefile' .ci/run
  else
    find . -path ./build -prune -o -type f \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \
      -o -name '*.cu' -o -name '*.sh' -o -name '*.py' -o -name '*.mk' -o -name Makefile \
      -o -path ./.ci/run \) -print | sed 's|^\./||'
  fi
}

has_spdx() { head -n 3 "$1" | grep -q 'SPDX-License-Identifier: MIT'; }

add_spdx() {
  f=$1
  case "$f" in
    *.c | *.h | *.cpp | *.cu)
      { printf '/* SPDX-License-Identifier: MIT */\n'; cat "$f"; } >"$f.spdx" ;;
    *)
      if head -n 1 "$f" | grep -q '^#!'; then
        { head -n 1 "$f"; printf '# SPDX-License-Identifier: MIT\n'; tail -n +2 "$f"; } >"$f.spdx"
      else
        { printf '# SPDX-License-Identifier: MIT\n'; cat "$f"; } >"$f.spdx"
      fi ;;
  esac
  # keep the mode (scripts stay executable)
  cat "$f.spdx" >"$f"
  rm -f "$f.spdx"
}

if [ "$mode" = add-spdx ]; then
  n=0
  for f in $(list_sources); do
    has_spdx "$f" && continue
    add_spdx "$f"
    n=$((n + 1))
  done
  echo "add-spdx: $n files given an SPDX line"
  exit 0
fi

[ "$mode" = check ] || { echo "usage: $0 check | add-spdx" >&2; exit 2; }
fail=0
missing=0
for f in $(list_sources); do
  if ! has_spdx "$f"; then
    echo "check-hygiene: $f: no 'SPDX-License-Identifier: MIT' line in its first 3 lines"
    missing=$((missing + 1))
  fi
done
[ "$missing" = 0 ] || fail=1

# References to documents outside the repository. The pattern is assembled so that this
# file does not match itself.
s=spec
refs=$( (git ls-files 2>/dev/null || find . -type f | sed 's|^\./||') |
  grep -E '\.(c|h|cpp|cu|sh|py|mk|md)$|Makefile$' | grep -v '^tests/build/check_hygiene\.sh$' |
  xargs grep -niE "$s [0-9]|$s/|shared/seeds|seeds/[0-9]{3}|seed 00[0-9]|cubecl-runtime\.md|reliability\.md|perf-anchors|c-style\.md|\.\./shared|DESIGN\.md" \
  2>/dev/null || true)
if [ -n "$refs" ]; then
  printf '%s\n' "$refs" | sed 's/^/check-hygiene: points outside the repository: /'
  fail=1
fi

if ! sh tests/build/check_includes.sh; then fail=1; fi

if [ "$fail" = 0 ]; then
  echo "check-hygiene: ok ($(list_sources | wc -l | tr -d ' ') source files with SPDX lines, no references outside the repository, include graph clean)"
fi
exit "$fail"

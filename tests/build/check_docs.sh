#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_docs.sh: the docs that describe the code still describe it (make check-docs,
# part of make check). For each document given (default: docs/architecture.md,
# docs/writing-a-driver.md and docs/interop.md):
#   - every repository path it names (core/..., os/..., backend-cpu/..., include/..., tests/...,
#     docs/..., mk/..., tools/..., examples/..., bench/..., fuzz/...) exists; a name with a `*`
#     must match at least one file;
#   - every C identifier it writes in code (between backticks, or in a ``` block) that names a
#     function, type or macro of the project (it has an `_` and is not a placeholder) exists:
#       * on a line that also names .c/.h files, in one of those files (a trace that says
#         "function   file" is checked against that file);
#       * otherwise somewhere in the sources (include/ core/ os/ driver-*/ tests/ examples/
#         tools/ bench/ fuzz/ mk/ Makefile).
# A test family may be named by its prefix (cts_create: the tests cts_create_...).
# Words a document uses as placeholders (cubert_thing_t, out_...) are skipped: a line
#   <!-- check-docs: ignore WORD ... -->
# in the document adds its own. POSIX sh + awk + grep; run from the repository root.
set -u
docs=${*:-docs/architecture.md docs/writing-a-driver.md docs/interop.md}
SOURCES="include core os backend-cpu backend-cuda tests examples tools bench fuzz mk Makefile"
tmp=${TMPDIR:-/tmp}/cubert-check-docs.$$
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
# every identifier-like word of the sources, once
grep -rhoE '[A-Za-z_][A-Za-z0-9_]*' $SOURCES 2>/dev/null | sort -u > "$tmp/words"
bad=0
paths=0
idents=0
for doc in $docs; do
  [ -f "$doc" ] || { echo "check-docs: $doc not found"; bad=$((bad + 1)); continue; }
  ignore=$(sed -n 's/.*<!-- check-docs: ignore \(.*\) -->.*/\1/p' "$doc" | tr '\n' ' ')
  # 1. paths
  grep -noE '(core|os|backend-cpu|backend-cuda|include|tests|tools|examples|bench|fuzz|docs|mk)/[A-Za-z0-9_./*-]*[A-Za-z0-9_*/]' "$doc" |
    sort -u > "$tmp/paths"
  while IFS=: read -r line p; do
    paths=$((paths + 1))
    case "$p" in
      *'*'*) set -- $p; [ -e "$1" ] || { echo "check-docs: $doc:$line: no file matches $p"; bad=$((bad + 1)); } ;;
      *) [ -e "$p" ] || { echo "check-docs: $doc:$line: $p does not exist"; bad=$((bad + 1)); } ;;
    esac
  done < "$tmp/paths"
  # 2. identifiers in code: "LINE<TAB>WORD<TAB>FILES-ON-THE-LINE"
  awk -v ignore="$ignore" '
    BEGIN { n = split(ignore, ig, " "); for (i = 1; i <= n; i++) skip[ig[i]] = 1
            skip["out_error"] = 1; skip["out_"] = 1 }
    /^```/ { block = !block; next }
    {
      files = ""; s = $0
      while (match(s, /(core|os|backend-cpu|backend-cuda|include|tests|tools|examples|bench|fuzz)\/[A-Za-z0-9_.\/-]*\.[ch]/)) {
        files = files " " substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
      }
      code = ""
      if (block) code = $0
      else { s = $0; while (match(s, /`[^`]+`/)) { code = code " " substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) } }
      gsub(/[A-Za-z0-9_.*-]*\/[A-Za-z0-9_.\/*-]*/, " ", code)   # paths are checked above
      while (match(code, /[A-Za-z_][A-Za-z0-9_]*/)) {
        w = substr(code, RSTART, RLENGTH); code = substr(code, RSTART + RLENGTH)
        if (w !~ /_/ || w ~ /^_/ || w ~ /_$/ || (w in skip)) continue
        if (w ~ /^(cubert_thing|CUBERT_THING)/) continue
        if (w ~ /^[A-Z]+_[A-Z]+$/ && block == 0 && substr(code, 1, 1) == "=") continue
        printf "%d\t%s\t%s\n", NR, w, files
      }
    }' "$doc" > "$tmp/idents"
  while IFS='	' read -r line w files; do
    idents=$((idents + 1))
    if [ -n "$files" ]; then
      found=0
      for f in $files; do [ -f "$f" ] && grep -qw -- "$w" "$f" && { found=1; break; }; done
      [ "$found" = 1 ] || grep -qxF -- "$w" "$tmp/words" && [ "$found" = 1 ] ||
        { echo "check-docs: $doc:$line: $w is not in$files"; bad=$((bad + 1)); }
    else
      # test names: a family of tests may be named by a prefix (cts_create: cts_create_...)
      case "$w" in
        cts_* | test_* | simdet_* | cuda_*) pattern="^$w" ;;
        *) pattern="^$w\$" ;;
      esac
      grep -q -- "$pattern" "$tmp/words" || { echo "check-docs: $doc:$line: $w names nothing in the sources"; bad=$((bad + 1)); }
    fi
  done < "$tmp/idents"
done
if [ "$bad" != 0 ]; then
  echo "check-docs: FAILED ($bad stale names in $docs)"
  exit 1
fi
echo "check-docs: ok ($paths paths and $idents names in code checked in $docs)"

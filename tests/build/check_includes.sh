#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_includes.sh: the file-level include graph of include/cubert/, core/,
# backend-cpu/ and backend-cuda/ has no cycle and no include that points up the layers of
# docs/architecture.md (part of make check-hygiene). POSIX sh + awk; run from the root.
#
# Layers, lowest first (a file may include its own layer's directory and lower layers):
#   include/cubert/*.h           the user headers: include only user headers
#   include/cubert/backend/*.h   the backend headers: user and backend headers
#   core/base                    0
#   core/memory core/stream core/check core/device   1 (each its own directory: no sideways
#                                includes between them)
#   core/kit                     2
#   core/client                  3
#   backend-cpu/ backend-cuda/   the drivers and the host layer: anything above; core/ never
#                                includes them
# Quoted includes resolve against the including file's directory, then include/, core/,
# backend-cpu/ and backend-cuda/ (the build's -I order); system includes (<...>) are ignored.
set -eu

files=$(find include/cubert core backend-cpu backend-cuda -type f \( -name '*.c' -o -name '*.h' \) \
  2>/dev/null | sort)
[ -n "$files" ] || { echo "check-includes: no files (run from the repository root)"; exit 1; }

# One "FILE<TAB>INCLUDED" line per quoted include.
edges=$(for f in $files; do
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
    while IFS= read -r inc; do printf '%s\t%s\n' "$f" "$inc"; done
done)

printf '%s\n' "$edges" | awk -F '\t' -v files="$files" '
function exists(p) { return (p in known) }
function resolve(from, inc,   dir, c) {
  dir = from; sub(/\/[^\/]*$/, "", dir)
  c = dir "/" inc;           if (exists(c)) return c
  c = "include/" inc;        if (exists(c)) return c
  c = "core/" inc;           if (exists(c)) return c
  c = "backend-cpu/" inc;    if (exists(c)) return c
  c = "backend-cuda/" inc;   if (exists(c)) return c
  return ""
}
function group(f) {
  if (f ~ /^include\/cubert\/backend\//) return "pub-backend"
  if (f ~ /^include\/cubert\//) return "pub-user"
  if (f ~ /^core\/base\//) return "core/base"
  if (f ~ /^core\/(memory|stream|check|device)\//) { split(f, p, "/"); return "core/" p[2] }
  if (f ~ /^core\/kit\//) return "core/kit"
  if (f ~ /^core\/client\//) return "core/client"
  if (f ~ /^core\//) return "core/other"
  return "backend"
}
function rank(g) {
  if (g == "core/base") return 0
  if (g ~ /^core\/(memory|stream|check|device)$/) return 1
  if (g == "core/kit") return 2
  if (g == "core/client") return 3
  return -1
}
# "" when `from` may include `to`, else why not.
function violation(from, to,   gf, gt) {
  gf = group(from); gt = group(to)
  if (gf == "pub-user") return (gt == "pub-user") ? "" : "a user header includes " gt
  if (gf == "pub-backend")
    return (gt == "pub-user" || gt == "pub-backend") ? "" : "a public header includes " gt
  if (gf ~ /^core\//) {
    if (gt == "pub-user" || gt == "pub-backend") return ""
    if (gt == "backend") return "core/ includes a backend directory"
    if (gt == gf) return ""
    if (rank(gt) < 0 || rank(gf) < 0) return "unknown core layer"
    if (rank(gt) < rank(gf)) return ""
    if (rank(gt) == rank(gf)) return "a sideways include between " gf " and " gt
    return "an include up the layers (" gf " -> " gt ")"
  }
  return ""
}
function visit(n,   i, m, k) {
  color[n] = 1; stack[++depth] = n
  for (i = 1; i <= deg[n]; i++) {
    m = adj[n, i]
    if (color[m] == 1) {
      path = m
      for (k = depth; k >= 1 && stack[k] != m; k--) path = stack[k] " -> " path
      print "check-includes: cycle: " m " -> " path
      cycles++
    } else if (color[m] == 0) visit(m)
  }
  depth--; color[n] = 2
}
BEGIN { n = split(files, list, "\n"); for (i = 1; i <= n; i++) known[list[i]] = 1 }
NF == 2 {
  to = resolve($1, $2)
  if (to == "") next            # a header of another tree (tests/, the CUDA SDK) or generated
  edgecount++
  why = violation($1, to)
  if (why != "") { print "check-includes: " $1 " includes " to ": " why; bad++ }
  if (!(($1, to) in seen)) { seen[$1, to] = 1; adj[$1, ++deg[$1]] = to }
}
END {
  for (i = 1; i <= n; i++) color[list[i]] = 0
  for (i = 1; i <= n; i++) if (color[list[i]] == 0) visit(list[i])
  if (bad || cycles) {
    printf "check-includes: FAILED (%d layer violations, %d cycles)\n", bad, cycles
    exit 1
  }
  printf "check-includes: ok (%d files, %d includes, no cycle, none up the layers)\n", n, edgecount
}'

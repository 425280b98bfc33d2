#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/build/check_includes.sh: the file-level include graph of include/cubert/, core/,
# backend-cpu/ and backend-cuda/ has no cycle and no include that points up the layers of
# docs/architecture.md (part of make check-hygiene). POSIX sh + awk; run from the root.
#
# Public headers are ranked (a public header includes only public headers of a lower rank):
#   0 base.h
#   1 status.h config.h properties.h device.h handle.h stream_id.h race.h critical_section.h
#   2 error.h, driver/arith.h, the dialect's parts kernel_*.h (kernel.h includes them at
#     its end)
#   3 driver/error.h
#   3 allocator.h layout.h memory.h comm.h sim.h kernel.h
#   4 profile.h cube.h trace.h, driver/sim.h driver/device.h driver/driver.h
#   5 client.h
#   6 cubert.h (the umbrella), record.h, the device constructors cpu.h inline.h cuda.h, dlpack.h, os.h (the OS
#     layer), and the driver interface's server.h (creating a device over a driver)
# Core layers, lowest first (a file may include its own layer's directory, lower layers, and
# public headers up to the rank its layer may see):
#   core/base                                         0   public headers of rank <= 3
#   core/memory core/check core/device core/profile
#   core/launch core/comm                             1   rank <= 4 (no sideways includes)
#   core/stream                                       2   rank <= 5 (the handle table below)
#   core/server                                       3   any public header
#   core/client                                       4   any public header
#   os/ backend-cpu/ backend-cuda/   the OS layer and the drivers: anything above; core/
#                                    never includes them
# Quoted includes resolve against the including file's directory, then include/, core/,
# the repository root, backend-cpu/ and backend-cuda/ (the build's -I order); system
# includes (<...>) are ignored.
set -eu

files=$(find include/cubert core os backend-cpu backend-cuda -type f \( -name '*.c' -o -name '*.h' \) \
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
  c = inc;                   if (exists(c)) return c
  c = "backend-cpu/" inc;    if (exists(c)) return c
  c = "backend-cuda/" inc;   if (exists(c)) return c
  return ""
}
function group(f) {
  if (f ~ /^include\/cubert\//) return "pub"
  if (f ~ /^core\/(base|memory|check|device|profile|launch|comm|stream|server|client)\//) {
    split(f, p, "/"); return "core/" p[2]
  }
  if (f ~ /^core\//) return "core/other"
  return "driver"
}
function rank(g) {
  if (g == "core/base") return 0
  if (g ~ /^core\/(memory|check|device|profile|launch|comm)$/) return 1
  if (g == "core/stream") return 2
  if (g == "core/server") return 3
  if (g == "core/client") return 4
  return -1
}
function pubrank(f,   n) {
  n = f; sub(/^include\/cubert\//, "", n)
  if (n == "driver/arith.h") return 2
  if (n == "driver/error.h") return 3
  if (n ~ /^driver\/(sim|device|driver)\.h$/) return 4
  if (n ~ /^driver\//) return 6
  if (n == "base.h") return 0
  if (n ~ /^(status|config|properties|device|handle|stream_id|race|critical_section)\.h$/) return 1
  if (n == "error.h") return 2
  if (n ~ /^kernel_[a-z]+\.h$/) return 2
  if (n ~ /^(allocator|layout|memory|comm|sim|kernel)\.h$/) return 3
  if (n ~ /^(profile|cube|trace)\.h$/) return 4
  if (n == "client.h") return 5
  if (n ~ /^(cubert|cpu|inline|cuda|os|record|dlpack)\.h$/) return 6
  return -1
}
# the highest public rank a core layer may include
function pubcap(g) {
  if (g == "core/base") return 3
  if (rank(g) == 1) return 4
  if (g == "core/stream") return 5
  return 6
}
# "" when `from` may include `to`, else why not.
function violation(from, to,   gf, gt) {
  gf = group(from); gt = group(to)
  if (gf == "pub") {
    if (gt != "pub") return "a public header includes " gt
    if (pubrank(from) < 0) return "a public header without a rank (tests/build/check_includes.sh)"
    if (pubrank(to) < 0) return "a public header without a rank (tests/build/check_includes.sh)"
    return (pubrank(to) < pubrank(from)) ? "" : "a public header includes one of its rank or above (" pubrank(from) " -> " pubrank(to) ")"
  }
  if (gf ~ /^core\//) {
    if (gt == "pub")
      return (pubrank(to) >= 0 && pubrank(to) <= pubcap(gf)) ? "" : gf " includes a public header above its rank (" to ", rank " pubrank(to) " > " pubcap(gf) ")"
    if (gt == "driver") return "core/ includes a driver or OS-layer directory"
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

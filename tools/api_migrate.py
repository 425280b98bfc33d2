#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/api_migrate.py: the parts of the API migration a sed script cannot do
(tools/api-rename.sh runs the renames, then this). Idempotent; python3 stdlib only.

  python3 tools/api_migrate.py out-error [FILES...]   calls of the functions that gained a
        trailing `cubert_error_t *out_error` get `, NULL` appended, when (and only when) the
        call still has the old number of arguments. Declarations and definitions (the name
        preceded by a type) are left alone.
  python3 tools/api_migrate.py includes [FILES...]    a file that uses a name the public headers
        no longer give (moved under include/cubert/driver/) gets the driver header added
        after its last #include "cubert/..." line.

Without FILES: every tracked *.c *.h *.cpp *.cu *.md file outside include/cubert/.
"""
import os
import re
import subprocess
import sys

# name -> number of arguments before out_error was added.
OUT_ERROR_ARITY = {
    "cubert_allocator_malloc": 4,
    "cubert_allocator_malloc_array": 5,
    "cubert_allocator_realloc": 6,
    "cubert_arena_initialize": 4,
    "cubert_client_load": 2,
    "cubert_client_clone": 2,
    "cubert_client_handle_release": 2,
    "cubert_client_handle_clone": 3,
    "cubert_client_handle_offset": 5,
    "cubert_client_io_optimized_vector_sizes": 5,
    "cubert_communication_id": 3,
    "cubert_cpu_sim_info": 2,
    "cubert_cpu_sim_attach": 2,
    "cubert_cpu_sim_drain": 1,
    "cubert_cpu_race_counters": 2,
    "cubert_cpu_race_last_report": 2,
    "cubert_client_race_counters": 2,
    "cubert_client_race_last_report": 2,
    "cubert_client_race_seed": 2,
    "cubert_cube_count_format": 4,
    "cubert_cube_count_spread": 3,
    "cubert_cube_count_selection_new": 3,
    "cubert_calculate_cube_count_elemwise": 4,
    "cubert_cube_dim_num_elems": 2,
    "cubert_cube_dim_new": 3,
    "cubert_io_optimized_vector_sizes_from_limits": 6,
    "cubert_io_optimized_vector_sizes": 5,
    "cubert_stream_id_executes_begin": 2,
    "cubert_stream_id_executes_end": 1,
    "cubert_stream_id_executes": 3,
    "cubert_stream_id_set_policy": 1,
    "cubert_os_lock_create": 2,
    "cubert_device_handle_runner_create": 4,
    "cubert_sim_chooser_initialize_seed": 4,
    "cubert_sim_chooser_initialize_replay": 5,
    "cubert_sim_chooser_initialize_bytes": 5,
    "cubert_sim_chooser_initialize_pct": 6,
    "cubert_sim_chooser_initialize_explore": 4,
    "cubert_sim_explorer_initialize": 4,
    "cubert_profile_summary_record": 3,
    "cubert_profile_summary_lookup": 4,
}

# Names that moved out of the user headers: header under include/cubert/driver/ -> names.
# Computed from the driver headers themselves (every CUBERT_API function, static inline
# function, typedef name, macro and enumerator they define).
# The driver interface (include/cubert/driver/): what a program outside the library may use of
# what the user headers no longer give (the record builders of error.h moved to driver/error.h).
DRIVER_HEADERS = ["driver", "server", "device", "arith", "sim", "error"]

NOT_CALL_PREV = re.compile(r"[A-Za-z0-9_*]$")


def tracked_files():
    out = subprocess.check_output(["git", "ls-files", "*.c", "*.h", "*.cpp", "*.cu", "*.md"])
    return [f for f in out.decode().split() if not f.startswith("include/cubert/")]


def split_args(text, start):
    """text[start] is '('. Returns (end index of the matching ')', list of argument texts)."""
    depth = 0
    i = start
    args = []
    cur = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            q = c
            i += 1
            while i < n and text[i] != q:
                i += 2 if text[i] == "\\" else 1
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 1
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[cur:i])
                return i, args
        elif c == "," and depth == 1:
            args.append(text[cur:i])
            cur = i + 1
        i += 1
    return -1, []


def null_argument(text, paren, end):
    """`, NULL`, or on a line of its own aligned with the arguments when the call's last
    line would pass 100 columns."""
    line_start = text.rfind("\n", 0, end) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    if line_end - line_start + 6 <= 100:
        return ", NULL"
    if text.rfind("\n", 0, paren) + 1 == line_start:
        col = paren + 1 - line_start          # the call opens on this line
    else:
        line = text[line_start:end]
        col = len(line) - len(line.lstrip())  # continuation lines are aligned already
    return ",\n" + " " * col + "NULL"


def add_out_error(text):
    names = sorted(OUT_ERROR_ARITY, key=len, reverse=True)
    pat = re.compile(r"\b(" + "|".join(names) + r")\s*\(")
    out = []
    pos = 0
    changed = False
    for m in pat.finditer(text):
        if m.start() < pos:
            continue
        name = m.group(1)
        before = text[: m.start()].rstrip()
        word = re.search(r"([A-Za-z_][A-Za-z0-9_]*)$", before)
        if NOT_CALL_PREV.search(before) and not (word and word.group(1) in ("return", "else")):
            continue  # a declaration or definition: `type name(`
        paren = m.end() - 1
        end, args = split_args(text, paren)
        if end < 0:
            continue
        count = 0 if (len(args) == 1 and not args[0].strip()) else len(args)
        if count != OUT_ERROR_ARITY[name]:
            continue
        out.append(text[pos:end])
        out.append(null_argument(text, paren, end))
        pos = end
        changed = True
    out.append(text[pos:])
    return "".join(out), changed


def driver_names(root):
    names = {}
    for h in DRIVER_HEADERS:
        path = os.path.join(root, "include/cubert/driver", h + ".h")
        if not os.path.exists(path):
            continue
        s = open(path).read()
        d = set(re.findall(r"CUBERT_API[^;(]*?\b(cubert_[a-z0-9_]+)\s*\(", s))
        d |= set(re.findall(r"static inline[^;(]*?\b(cubert_[a-z0-9_]+)\s*\(", s))
        d |= set(re.findall(r"\}\s*(cubert_[a-z0-9_]+_t)\s*;", s))
        d |= set(re.findall(r"typedef [^;]*?\b(cubert_[a-z0-9_]+_t)\s*;", s))
        d |= set(re.findall(r"typedef [^;(]*\(\*\s*(cubert_[a-z0-9_]+_t)\)", s))
        d |= set(re.findall(r"#define (CUBERT_[A-Z0-9_]+)", s))
        d |= set(re.findall(r"^\s+(CUBERT_[A-Z0-9_]+)\s*=", s, re.M))
        names[h] = {x for x in d if not x.startswith("CUBERT_DRIVER_")}
    return names


def add_includes(path, text, names):
    if not path.endswith((".c", ".h", ".cpp", ".cu")):
        return text, False
    toks = set(re.findall(r"\b(cubert_[a-z0-9_]+|CUBERT_[A-Z0-9_]+)\b", text))
    need = [h for h in DRIVER_HEADERS
            if h in names and toks & names[h] and ('"cubert/driver/%s.h"' % h) not in text]
    if not need:
        return text, False
    lines = text.split("\n")
    idx = [i for i, l in enumerate(lines) if l.startswith('#include "cubert/')]
    if not idx:
        return text, False
    last = idx[-1]
    lines[last + 1:last + 1] = ['#include "cubert/driver/%s.h"' % h for h in need]
    return "\n".join(lines), True


def main(argv):
    if len(argv) < 2 or argv[1] not in ("out-error", "includes"):
        sys.stderr.write(__doc__)
        return 2
    files = argv[2:] or tracked_files()
    names = driver_names(".") if argv[1] == "includes" else None
    n = 0
    for f in files:
        if f.startswith("tools/api_migrate.py") or f.startswith("tools/api-rename.sh"):
            continue
        try:
            text = open(f, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            continue
        if argv[1] == "out-error":
            new, changed = add_out_error(text)
        else:
            new, changed = add_includes(f, text, names)
        if changed:
            open(f, "w", encoding="utf-8").write(new)
            n += 1
    print("api_migrate %s: %d files changed" % (argv[1], n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

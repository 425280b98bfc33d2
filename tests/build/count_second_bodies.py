#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/build/count_second_bodies.py: functions of core/ that have a second body
when a feature of cubert/config.h is compiled out (issue 28).

A function has a second body when its name is defined more than once in core/
(a non-static name anywhere in core/, a static name within one file) and at
least one of the definitions lies under a feature switch (#if/#else on a
CUBERT_CONFIG_* switch other than the registry capacity). It is counted as
public (a cubert_ name of an installed header: the entry points a compiled-out
feature stubs) or internal (everything else: what the design forbids).
Also listed: function bodies that hold a feature #if with an #else (a second
body inside one function), and the internal calls that a compiled-out feature
turns off where they stand (a function-like macro of a function's name under a
feature switch, in the feature's internal header).

usage: python3 tests/build/count_second_bodies.py [-v] [--max-internal N]
  prints the counts; -v lists the names; exit 1 when more internal functions
  than N have a second body. Uses ctags (universal-ctags) for the definitions.
"""
import os
import re
import subprocess
import sys

FEATURE = re.compile(r'CUBERT_CONFIG_(?!DEVICE_REGISTRY_CAPACITY)[A-Z_]+')


def sources():
    out = []
    for root, _, files in os.walk('core'):
        out += [os.path.join(root, f) for f in files if f.endswith(('.c', '.h'))]
    return sorted(out)


def feature_lines(path):
    """Per line: True when the line lies under a feature conditional."""
    stack = []  # per #if: is it a feature conditional
    flags = []
    with open(path, encoding='utf-8') as f:
        lines = f.readlines()
    for line in lines:
        s = line.strip()
        if re.match(r'#\s*if', s):
            stack.append(bool(FEATURE.search(s)))
        elif re.match(r'#\s*elif', s) and stack:
            stack[-1] = stack[-1] or bool(FEATURE.search(s))
        elif re.match(r'#\s*endif', s) and stack:
            stack.pop()
        flags.append(any(stack))
    return lines, flags


def definitions(path):
    out = subprocess.run(['ctags', '-x', '--c-kinds=f', '--language-force=C',
                          '--fields=+e', '-o', '-', path],
                         capture_output=True, text=True, check=True).stdout
    defs = []
    for row in out.splitlines():
        parts = row.split(None, 3)
        if len(parts) >= 3:
            defs.append((parts[0], int(parts[2])))
    return defs


def body_end(lines, start):
    depth = 0
    seen = False
    for i in range(start - 1, len(lines)):
        for ch in lines[i]:
            if ch == '{':
                depth += 1
                seen = True
            elif ch == '}':
                depth -= 1
                if seen and depth == 0:
                    return i + 1
    return len(lines)


def main():
    verbose = '-v' in sys.argv
    max_internal = None
    if '--max-internal' in sys.argv:
        max_internal = int(sys.argv[sys.argv.index('--max-internal') + 1])
    installed = set()
    for root, _, files in os.walk('include/cubert'):
        for f in files:
            with open(os.path.join(root, f), encoding='utf-8') as h:
                installed.update(re.findall(r'\b(cubert_[a-z0-9_]+)\s*\(', h.read()))
    by_name = {}
    split_bodies = []
    for path in sources():
        lines, flags = feature_lines(path)
        for name, line in definitions(path):
            static = re.match(r'\s*(static\b|.*\bstatic\b)', lines[line - 1]) is not None
            key = (path if static else '', name)
            by_name.setdefault(key, []).append((path, line, flags[line - 1]))
            end = body_end(lines, line)
            body = lines[line:end]
            if any(FEATURE.search(l) and re.match(r'\s*#\s*if', l) for l in body) and \
               any(re.match(r'\s*#\s*(else|elif)', l) for l in body):
                split_bodies.append('%s (%s:%d)' % (name, path, line))
    # Calls compiled out where they stand: a function-like macro under a
    # feature switch that takes the name of a function of core/.
    defined = set(n for (_, n) in by_name)
    standins = []
    for path in sources():
        lines, flags = feature_lines(path)
        for i, l in enumerate(lines):
            m = re.match(r'\s*#\s*define\s+([A-Za-z_][A-Za-z0-9_]*)\(', l)
            if m and flags[i] and m.group(1) in defined:
                standins.append('%s (%s:%d)' % (m.group(1), path, i + 1))
    public, internal = [], []
    for (_, name), defs in sorted(by_name.items(), key=lambda kv: kv[0][1]):
        if len(defs) < 2 or not any(d[2] for d in defs):
            continue
        where = ', '.join('%s:%d' % (p, l) for p, l, _ in defs)
        (public if name in installed and not name.startswith('cubert__') else internal).append('%s (%s)' % (name, where))
    print('second bodies: %d functions (%d public entry points, %d internal); '
          '%d function bodies split by a feature #if/#else; '
          '%d internal calls compiled out where they stand (a macro of the feature\'s header)'
          % (len(public) + len(internal), len(public), len(internal), len(split_bodies),
             len(standins)))
    if verbose:
        for title, names in (('public', public), ('internal', internal), ('split', split_bodies),
                             ('call-site macro', standins)):
            for n in names:
                print('  %s: %s' % (title, n))
    if max_internal is not None and len(internal) > max_internal:
        print('count_second_bodies: %d internal functions have a second body (at most %d allowed)'
              % (len(internal), max_internal))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/env python3
"""Lists the imports between kwb's top-level modules (`src/<module>/` or `src/<module>.rs`) and
fails when they form a cycle: imports must only point down. Reads every `crate::<module>` path
in the source, tests included (`#[cfg(test)]` code counts too: a test may not import upward
either). Prints the edges, then each cycle found.

    python3 scripts/import_cycles.py [--allow FILE]
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def module_of(path):
    rel = os.path.relpath(path, ROOT)
    head = rel.split(os.sep)[0]
    return head[:-3] if head.endswith(".rs") else head


def edges():
    found = {}
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            src = module_of(path)
            if src in ("lib", "main"):
                continue
            text = open(path, encoding="utf-8").read()
            for m in re.finditer(r"crate::([a-z_]+)", text):
                dst = m.group(1)
                if dst != src and os.path.exists(os.path.join(ROOT, dst)) or \
                        os.path.exists(os.path.join(ROOT, dst + ".rs")):
                    if dst != src:
                        line = text.count("\n", 0, m.start()) + 1
                        found.setdefault((src, dst), f"{os.path.relpath(path, ROOT)}:{line}")
    return found


def cycles(found):
    graph = {}
    for a, b in found:
        graph.setdefault(a, set()).add(b)
    out, seen = [], set()

    def walk(node, stack):
        for nxt in sorted(graph.get(node, ())):
            if nxt in stack:
                cyc = stack[stack.index(nxt):] + [nxt]
                key = frozenset(cyc)
                if key not in seen:
                    seen.add(key)
                    out.append(cyc)
            elif len(stack) < 12:
                walk(nxt, stack + [nxt])

    for n in sorted(graph):
        walk(n, [n])
    return out


def main():
    found = edges()
    for (a, b), where in sorted(found.items()):
        print(f"{a} -> {b}  ({where})")
    cyc = cycles(found)
    for c in cyc:
        print("cycle: " + " -> ".join(c) + "   e.g. " + ", ".join(
            found[(c[i], c[i + 1])] for i in range(len(c) - 1)))
    print(f"{len(found)} imports between top-level modules, {len(cyc)} cycles")
    return 1 if cyc else 0


if __name__ == "__main__":
    sys.exit(main())

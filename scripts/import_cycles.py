#!/usr/bin/env python3
"""Lists the imports between kwb's top-level modules (`src/<module>/` or `src/<module>.rs`) and
fails when they form a cycle: imports must only point down. The sides of `src/run/` (`gpu/`,
`cpu/`, `host/`, `plan/`, `supervisor/`, `protocol.rs`) are checked the same way. Reads every `crate::<module>` path
in the source, tests included (`#[cfg(test)]` code counts too: a test may not import upward
either). Prints the edges, then each cycle found.

    python3 scripts/import_cycles.py [--allow FILE]
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def module_of(path, root=ROOT):
    rel = os.path.relpath(path, root)
    head = rel.split(os.sep)[0]
    return head[:-3] if head.endswith(".rs") else head


def edges(root=ROOT, prefix="crate::"):
    """Imports between the modules directly under `root`, read from `prefix<module>` paths."""
    found = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            src = module_of(path, root)
            if src in ("lib", "main", "mod"):
                continue
            text = open(path, encoding="utf-8").read()
            for m in re.finditer(re.escape(prefix) + r"([a-z_]+)", text):
                dst = m.group(1)
                if dst != src and (os.path.exists(os.path.join(root, dst)) or
                                   os.path.exists(os.path.join(root, dst + ".rs"))):
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


def report(found, what):
    for (a, b), where in sorted(found.items()):
        print(f"{a} -> {b}  ({where})")
    cyc = cycles(found)
    for c in cyc:
        print("cycle: " + " -> ".join(c) + "   e.g. " + ", ".join(
            found[(c[i], c[i + 1])] for i in range(len(c) - 1)))
    print(f"{len(found)} imports between {what}, {len(cyc)} cycles")
    return len(cyc)


def main():
    bad = report(edges(), "top-level modules")
    bad += report(edges(os.path.join(ROOT, "run"), "crate::run::"), "the sides of src/run/")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

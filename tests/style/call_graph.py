#!/usr/bin/env python3
"""call_graph.py - no file of a part calls a file that calls it back.

A part of the program (the analyzer, the recorder) is easiest to read
when its files form layers: a file uses the ones below it and is used by
the ones above, so each can be read knowing only what is under it.  A
circle (a.c calls b.c, b.c calls a.c, maybe through c.c) means that
neither can be understood first.  This check finds them.

The graph comes from the build, not from reading C: for every object
file of a part (listed in the build's compile_commands.json), `nm` names
the symbols it defines and the ones it needs from elsewhere.  File A
points at file B when A needs a symbol that B defines: a call, or a
variable read or written (a function pointer stored in a variable - a
hook - points at the variable's file, not at whoever sets it, which is
how a lower file may call back up).  Calls inlined from headers count
for the file they were inlined into, as the object says.  A symbol the
C library also defines is an interposer (the recorder's read, mmap64,
pthread_create): a file that calls it calls libc, which the recorder
stands in front of, not the file that interposes it.  A circle is a
strongly connected component of more than one file; each is printed
with the symbols that close it.

Usage:
  call_graph.py BUILD_DIR [PART ...]
      PART is a folder of the source tree, or several joined by '+'
      (preload+cupti: one part of two folders); the default is the
      project's parts, format, analyzer and preload+cupti.  A part none of whose
      files were built (no CUDA headers: no recorder) is named as not
      checked.  Exit 0 when no part has a circle, 1 when one has.
  call_graph.py BUILD_DIR --known FILE [PART ...]
      the same, but the circles listed in FILE (one per line, its files
      separated by spaces; '#' starts a comment) are printed and allowed.
      A listed circle that is no longer found, or found with other files,
      fails too: the list names what is left to undo, never more.
  call_graph.py BUILD_DIR --expect-circle FILE,FILE,... PART
      the self-test: exit 0 only when PART holds exactly one circle, made
      of exactly those files (paths relative to the source root).
"""
import ctypes
import ctypes.util
import json
import os
import subprocess
import sys

DEFAULT_PARTS = ["format", "analyzer", "preload+cupti"]
# nm's letters for a symbol this object defines (code, data, bss,
# read-only, weak, common).
DEFINED = set("TtDdBbRrWwVvCGgSs")


def sources_of(build):
    """{source path relative to the source root: absolute object path}."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    root = source_root(build)
    objects = {}
    for e in entries:
        src = os.path.normpath(os.path.join(e["directory"], e["file"]))
        obj = os.path.normpath(os.path.join(e["directory"], e["output"]))
        rel = os.path.relpath(src, root)
        # One source may be built into several targets (a test's copy with
        # other flags): the part's own target is the one under the part's
        # build folder; keep the first seen otherwise.
        if rel not in objects or os.path.relpath(obj, build).startswith(rel.split("/")[0] + "/"):
            objects[rel] = obj
    return objects


def source_root(build):
    with open(os.path.join(build, "meson-info", "meson-info.json")) as f:
        return json.load(f)["directories"]["source"]


def libc_defines(name, libc=[]):
    if not libc:
        libc.append(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"))
    return hasattr(libc[0], name)


def symbols(obj):
    """(defined, needed): the global symbols an object defines and needs."""
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, needed = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            if not libc_defines(name):
                needed.add(name)
        elif kind in DEFINED and kind.isupper():
            defined.add(name)
    return defined, needed


def graph(files):
    """{file: {file it needs: [symbols]}} over the files of one part."""
    syms = {f: symbols(obj) for f, obj in files.items()}
    owner = {}
    for f, (defined, _) in syms.items():
        for s in defined:
            owner.setdefault(s, f)
    edges = {f: {} for f in files}
    for f, (_, needed) in syms.items():
        for s in sorted(needed):
            g = owner.get(s)
            if g is not None and g != f:
                edges[f].setdefault(g, []).append(s)
    return edges


def circles(edges):
    """The strongly connected components of more than one file (Tarjan's
    algorithm, iterative so that a deep part cannot overflow the stack)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.append(x)
                    if x == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return sorted(found)


def part_files(objects, part):
    folders = [p.strip("/") + "/" for p in part.split("+")]
    return {f: o for f, o in objects.items() if any(f.startswith(d) for d in folders)}


def describe(comp, edges):
    lines = ["circle: " + " ".join(comp)]
    for f in comp:
        for g in sorted(edges[f]):
            if g in comp:
                names = edges[f][g]
                more = f" (+{len(names) - 4})" if len(names) > 4 else ""
                lines.append(f"  {f} -> {g}: {', '.join(names[:4])}{more}")
    return "\n".join(lines)


def main(argv):
    if len(argv) < 2:
        print(__doc__.split("Usage:")[1], file=sys.stderr)
        return 2
    build = argv[1]
    objects = sources_of(build)
    if len(argv) == 5 and argv[2] == "--expect-circle":
        want = sorted(argv[3].split(","))
        edges = graph(part_files(objects, argv[4]))
        found = circles(edges)
        for comp in found:
            print(describe(comp, edges))
        if found == [want]:
            print(f"call_graph: the circle {' '.join(want)} is found, and nothing else")
            return 0
        print(f"call_graph: expected exactly the circle {' '.join(want)}", file=sys.stderr)
        return 1
    known, parts = set(), argv[2:]
    if len(parts) >= 2 and parts[0] == "--known":
        known = read_known(parts[1])
        parts = parts[2:]
    bad = 0
    for part in parts or DEFAULT_PARTS:
        files = part_files(objects, part)
        if not files:
            print(f"call_graph: {part}: not built here, not checked")
            continue
        edges = graph(files)
        found = circles(edges)
        nedges = sum(len(e) for e in edges.values())
        print(f"call_graph: {part}: {len(files)} files, {nedges} file-to-file uses, {len(found)} circles")
        for comp in found:
            allowed = tuple(comp) in known
            print(("known " if allowed else "") + describe(comp, edges))
            bad += not allowed
        folders = tuple(d.strip("/") + "/" for d in part.split("+"))
        for comp in sorted(known):
            if comp[0].startswith(folders) and list(comp) not in found:
                print("call_graph: the known circle " + " ".join(comp) + " is not found as it is listed: "
                      "take it off the list (or list what it is now)")
                bad += 1
    return 1 if bad else 0


def read_known(path):
    known = set()
    with open(path) as f:
        for line in f:
            files = line.split("#")[0].split()
            if files:
                known.add(tuple(sorted(files)))
    return known


if __name__ == "__main__":
    sys.exit(main(sys.argv))

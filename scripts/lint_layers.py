#!/usr/bin/env python3
"""The layering lint: core -> strategies -> harness, with no include pointing back up.

The layers, lowest first (README "Layout"):
  core/        the model: platform, locks, WAL, CLOG and the cell model (core/cell/: the cell
               contract, the cell spec, the WAL cell driver)
  strategies/  the insertion and CLOG strategies, built on core/ only
  harness/     config, runner, results, reports and the CLI, built on both
A file in a layer may include files of its own layer and of the layers below it, never of a layer
above. tests/ (the cross-strategy suites) is no layer: it may include anything, but a layered
file that includes a tests/ header gets that header's includes checked as its own, so a detour
through tests/ hides nothing. Every C++ source under the three folders is checked, tests beside
the code included (a strategy's whole world is core/, its own folder and the shared
pieces of other strategies it composes).

What counts: `#include "path"` lines (outside comments) whose path names a repository file,
relative to ROOT (how the build's include path resolves them) or to the including file's folder.
Includes of other files (system, Abseil, Boost, nlohmann) are not followed. An include of a
file of an allowed layer is not followed either: that file is checked on its own, so each
violation is reported once, at the line that makes it (through tests/, with the chain).

Output: one `file:line: includes PATH (LAYER): LAYER may include only ...` per finding (file
relative to ROOT), sorted; exit status 1 if there is any, 0 if none, 2 for a bad ROOT.
Python 3 standard library only.

Usage: scripts/lint_layers.py [ROOT]        (ROOT defaults to the repository root)
"""

import os
import re
import sys

LAYERS = ["core", "strategies", "harness"]  # lowest first
UNLAYERED = ["tests"]  # followed, never a violation in itself
SOURCE_EXTENSIONS = (".h", ".hh", ".hpp", ".hxx", ".cc", ".cpp", ".cxx", ".ipp", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(rel):
    top = rel.split("/", 1)[0]
    return top if top in LAYERS or top in UNLAYERED else None


def quoted_includes(root, rel):
    """[(line, included repository path)] of rel's quoted includes of repository files."""
    out = []
    in_block_comment = False
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            if in_block_comment:
                end = line.find("*/")
                if end < 0:
                    continue
                line = line[end + 2:]
                in_block_comment = False
            start = line.find("/*")
            if start >= 0 and line.find("*/", start + 2) < 0:
                in_block_comment = True
                line = line[:start]
            m = INCLUDE.match(line)
            if not m:
                continue
            target = resolve(root, rel, m.group(1))
            if target is not None:
                out.append((lineno, target))
    return out


def resolve(root, rel, name):
    """The repository path `#include "name"` in rel refers to, or None (not a repository file)."""
    candidates = [name, os.path.normpath(os.path.join(os.path.dirname(rel), name))]
    for c in candidates:
        c = c.replace(os.sep, "/")
        if not c.startswith("../") and layer_of(c) and os.path.isfile(os.path.join(root, c)):
            return c
    # A path into a layer that does not exist (yet) still names the layer it points into.
    if layer_of(name) in LAYERS:
        return name
    return None


def allowed(from_layer):
    return LAYERS[: LAYERS.index(from_layer) + 1]


def sources(root):
    for layer in LAYERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, layer)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCE_EXTENSIONS):
                    path = os.path.join(dirpath, name)
                    yield os.path.relpath(path, root).replace(os.sep, "/")


def findings(root):
    cache = {}

    def includes(rel):
        if rel not in cache:
            cache[rel] = quoted_includes(root, rel) if os.path.isfile(os.path.join(root, rel)) else []
        return cache[rel]

    out = set()
    for rel in sources(root):
        layer = layer_of(rel)
        ok = allowed(layer)
        # Direct includes, then what is reached through tests/ (depth-first, each file once).
        for lineno, target in includes(rel):
            t_layer = layer_of(target)
            if t_layer in LAYERS and t_layer not in ok:
                out.add(f"{rel}:{lineno}: includes {target} ({t_layer}): "
                        f"{layer} may include only {', '.join(ok)}")
            elif t_layer in UNLAYERED:
                seen = {rel, target}
                stack = [(target, [target])]
                while stack:
                    cur, chain = stack.pop()
                    for _, nxt in includes(cur):
                        n_layer = layer_of(nxt)
                        if n_layer in LAYERS and n_layer not in ok:
                            out.add(f"{rel}:{lineno}: includes {nxt} ({n_layer}) through "
                                    f"{' -> '.join(chain)}: {layer} may include only {', '.join(ok)}")
                        elif n_layer in UNLAYERED and nxt not in seen:
                            seen.add(nxt)
                            stack.append((nxt, chain + [nxt]))
    return sorted(out)


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    root = os.path.abspath(root)
    if not all(os.path.isdir(os.path.join(root, layer)) for layer in LAYERS):
        print(f"lint_layers: {root} is not a walbench tree (expected {', '.join(d + '/' for d in LAYERS)})",
              file=sys.stderr)
        return 2
    found = findings(root)
    for f in found:
        print(f)
    if found:
        print(f"lint_layers: {len(found)} include(s) against the layering core -> strategies -> harness",
              file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

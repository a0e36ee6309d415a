#!/usr/bin/env python3
"""Tests of scripts/lint_layers.py on small trees it writes to a temporary directory: a clean
tree (every allowed include, commented-out and external includes) gives no finding and exit 0;
a tree with one planted violation of each kind (core -> strategies, core -> harness, strategies
-> harness, a relative include that climbs a layer, a detour through tests/) gives exactly those
findings, in the documented format, and exit 1; a directory that is not a walbench tree gives
exit 2.

Usage: scripts/lint_layers_test.py          (ctest: lint_layers_fixtures)
Python 3 standard library only."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LINT = os.path.join(HERE, "lint_layers.py")

# Files every tree has; each maps a path to its lines.
CLEAN = {
    "core/wal/wal.h": ['#include <atomic>', '#include "absl/strings/str_format.h"'],
    "core/cell/cell.h": ['#include "core/wal/wal.h"', '#include "spec.h"  // relative, same folder'],
    "core/cell/spec.h": ['#include <string>'],
    "core/cell/spec_test.cc": ['#include "core/cell/spec.h"'],
    "strategies/strategy.h": ['#include "core/cell/cell.h"'],
    "strategies/one/one.h": ['#include "strategies/strategy.h"', '#include "../strategy.h"'],
    "strategies/one/one_test.cc": ['#include "tests/conformance.h"',
                                   '// #include "harness/runner.h" (commented out)',
                                   '/* #include "harness/runner.h"', '   #include "harness/x.h" */'],
    "tests/conformance.h": ['#include "core/cell/spec.h"', '#include "strategies/strategy.h"'],
    "tests/sim_matrix.h": ['#include "harness/runner.h"'],
    "tests/sim_test.cc": ['#include "tests/sim_matrix.h"'],
    "harness/runner.h": ['#include "core/cell/cell.h"', '#include "strategies/strategy.h"',
                         '#include "tests/conformance.h"'],
    "harness/runner.cc": ['#include "harness/runner.h"', '#include "strategies/one/one.h"'],
}

# Planted violations: path -> lines, and the findings they must give (nothing else).
PLANTED = {
    "core/cell/bad_up.h": ['#include "core/cell/spec.h"', '#include "strategies/strategy.h"'],
    "core/wal/bad_top.cc": ['#include <vector>', '', '#include "harness/runner.h"'],
    "core/cell/bad_relative.h": ['#include "../../strategies/one/one.h"'],
    "strategies/one/bad.h": ['#include "harness/runner.h"'],
    "strategies/one/detour_test.cc": ['#include "core/wal/wal.h"', '#include "tests/sim_test_support.h"'],
    "tests/sim_test_support.h": ['#include "tests/sim_matrix.h"'],
}
EXPECTED = {
    "core/cell/bad_relative.h:1: includes strategies/one/one.h (strategies): core may include only core",
    "core/cell/bad_up.h:2: includes strategies/strategy.h (strategies): core may include only core",
    "core/wal/bad_top.cc:3: includes harness/runner.h (harness): core may include only core",
    "strategies/one/bad.h:1: includes harness/runner.h (harness): "
    "strategies may include only core, strategies",
    "strategies/one/detour_test.cc:2: includes harness/runner.h (harness) through "
    "tests/sim_test_support.h -> tests/sim_matrix.h: strategies may include only core, strategies",
}


def write_tree(root, files):
    for rel, lines in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


def run_lint(root):
    p = subprocess.run([sys.executable, LINT, root], capture_output=True, text=True)
    return p.returncode, [l for l in p.stdout.splitlines() if l], p.stderr


def main():
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean")
        write_tree(clean, CLEAN)
        rc, out, err = run_lint(clean)
        check(rc == 0 and not out, f"clean tree: exit {rc}, findings {out}, stderr {err!r}")

        planted = os.path.join(tmp, "planted")
        write_tree(planted, CLEAN)
        write_tree(planted, PLANTED)
        rc, out, err = run_lint(planted)
        check(rc == 1, f"planted tree: exit {rc}, want 1 (stderr {err!r})")
        check(out == sorted(out), "planted tree: findings are not sorted")
        for missing in sorted(EXPECTED - set(out)):
            failures.append(f"planted tree: missing finding: {missing}")
        for extra in sorted(set(out) - EXPECTED):
            failures.append(f"planted tree: unexpected finding: {extra}")
        check(len(out) == len(set(out)), "planted tree: a finding is reported twice")
        check("5 include(s)" in err, f"planted tree: stderr {err!r} does not count 5 includes")

        not_a_tree = os.path.join(tmp, "empty")
        os.makedirs(os.path.join(not_a_tree, "core"))
        rc, out, err = run_lint(not_a_tree)
        check(rc == 2 and "not a walbench tree" in err, f"bad root: exit {rc}, stderr {err!r}")

    for f in failures:
        print("FAIL: " + f)
    if failures:
        return 1
    print(f"lint_layers_test: ok ({len(EXPECTED)} planted findings, clean tree clean, bad root refused)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

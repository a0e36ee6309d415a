#!/usr/bin/env python3
"""Runs scripts/lint_shared_state.py on tests/lint_fixtures/ and checks that it reports exactly
the planted violations: every `// expect-lint: A[, B...]` marker in a scanned fixture file names
the constructs expected on that line, and nothing else may be reported. Also checks the output
format (`file:line: construct: why`, a non-empty why) and the exit status (1).

Usage: scripts/lint_shared_state_test.py [FIXTURE_DIR]   (ctest: lint_shared_state_fixtures)
Python 3 standard library only."""

import collections
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LINT = os.path.join(HERE, "lint_shared_state.py")
SOURCES = (".h", ".hh", ".hpp", ".hxx", ".cc", ".cpp", ".cxx", ".ipp", ".inc")
MARKER = re.compile(r"//\s*expect-lint:\s*(.+?)\s*$")
LINE = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+): (?P<construct>.+?): (?P<why>\S.*)$")


def expected_findings(root):
    """Counter of (file, line, construct) from the markers in every file under root."""
    want = collections.Counter()
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            if not name.endswith(SOURCES):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, encoding="utf-8", errors="replace") as fh:
                for lineno, line in enumerate(fh, 1):
                    m = MARKER.search(line)
                    if m:
                        for construct in m.group(1).split(", "):
                            want[(rel, lineno, construct.strip())] += 1
    return want


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(HERE), "tests", "lint_fixtures")
    proc = subprocess.run([sys.executable, LINT, root], capture_output=True, text=True)
    errors = []
    if proc.returncode != 1:
        errors.append("exit status %d, expected 1 (findings); stderr: %s" % (proc.returncode, proc.stderr.strip()))
    got = collections.Counter()
    for line in proc.stdout.splitlines():
        m = LINE.match(line)
        if not m:
            errors.append("malformed output line: %r" % line)
            continue
        key = (m.group("file"), int(m.group("line")), m.group("construct"))
        got[key] += 1
    want = expected_findings(root)
    for key in sorted(want - got):
        errors.append("missed: %s:%d: %s" % key)
    for key in sorted(got - want):
        errors.append("unexpected: %s:%d: %s" % key)
    if not want:
        errors.append("no expect-lint markers under %s" % root)
    if errors:
        print("lint_shared_state fixtures: FAILED", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        return 1
    print("lint_shared_state fixtures: ok, %d planted findings reported exactly, %d kinds of construct"
          % (sum(want.values()), len({k[2] for k in want})))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

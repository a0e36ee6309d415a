#!/usr/bin/env python3
"""Tests of scripts/winners.py (ctest winners): the winner and its margin per point, ties by
margin (one repetition) and by overlapping repetitions, excluded labels, failed cells counted,
and a one-line error on bad input."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import winners  # noqa: E402


def cell(label, clients, tps, variant=None, size=16, reps=1, lo=None, hi=None, ok=True):
    m = {"clients": clients, "strategy": label, "workload.record_size": size}
    if clients is None:  # one client count swept: the runner writes it beside the matrix only
        m = {"strategy": label, "workload.record_size": size}
    if variant:
        m["variants"] = variant
    return {"ok": ok, "matrix": m, "label": label, "clients": clients or 4, "summary": {
        "repetitions": reps, "tps_median": tps,
        "tps_min": tps if lo is None else lo, "tps_max": tps if hi is None else hi}}


def run(cells, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"context": {}, "cells": cells}, f)
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            rc = winners.main([f.name, *args])
    finally:
        os.unlink(f.name)
    return rc, out.getvalue(), err.getvalue()


class Winners(unittest.TestCase):
    def test_winner_and_margin_per_point(self):
        rc, out, _ = run([cell("a", 1, 100), cell("b", 1, 150), cell("a", 8, 300), cell("b", 8, 200)])
        self.assertEqual(rc, 0)
        row = [l for l in out.splitlines() if l.startswith("| record 16 B")][0]
        self.assertEqual(row, "| record 16 B | b +50% | a +50% |")

    def test_one_repetition_within_tie_pct_is_a_tie(self):
        _, out, _ = run([cell("a", 1, 100), cell("b", 1, 97)])
        self.assertIn("tie: a, b", out)
        _, out, _ = run([cell("a", 1, 100), cell("b", 1, 97)], "--tie-pct", "2")
        self.assertIn("a +3%", out)

    def test_overlapping_repetitions_are_a_tie_even_far_apart(self):
        _, out, _ = run([cell("a", 1, 200, reps=3, lo=100, hi=210),
                         cell("b", 1, 120, reps=3, lo=90, hi=130)])
        self.assertIn("tie: a, b", out)
        _, out, _ = run([cell("a", 1, 200, reps=3, lo=190, hi=210),
                         cell("b", 1, 195, reps=3, lo=150, hi=189)])
        self.assertIn("a +3%", out)  # apart although within 5%: the repetitions say so

    def test_excluded_label_and_failed_cells(self):
        _, out, _ = run([cell("bound", 1, 999), cell("a", 1, 100), cell("b", 1, 50),
                         cell("c", 1, 0, ok=False)], "--exclude", "bound")
        self.assertIn("a +100% (failed: c)", out)  # c did not lose: it failed, said at its point
        self.assertIn("Not competing: bound.", out)
        self.assertIn("1 failed cells left out.", out)

    def test_ties_are_a_prefix_of_the_ranking(self):
        # c's wide range reaches a's worst, b's does not: b is apart, so c cannot tie either
        _, out, _ = run([cell("a", 1, 200, reps=3, lo=190, hi=210),
                         cell("b", 1, 150, reps=3, lo=140, hi=160),
                         cell("c", 1, 100, reps=3, lo=50, hi=195)])
        self.assertIn("a +33%", out)
        _, out, _ = run([cell("a", 1, 100), cell("b", 1, 100)], "--tie-pct", "0")
        self.assertIn("tie: a, b", out)  # equal medians are a tie even at 0%

    def test_one_client_count_is_beside_the_matrix(self):
        rc, out, _ = run([cell("a", None, 100), cell("b", None, 50)])
        self.assertEqual(rc, 0)
        self.assertIn("| 4 clients |", out)
        self.assertIn("a +100%", out)

    def test_one_table_per_override_variant(self):
        _, out, _ = run([cell("a", 1, 100, "m64"), cell("b", 1, 50, "m64"),
                         cell("a", 1, 50, "m480"), cell("b", 1, 100, "m480")])
        self.assertLess(out.index("**m64**"), out.index("**m480**"))
        self.assertEqual(out.count("a +100%"), 1)
        self.assertEqual(out.count("b +100%"), 1)

    def test_bad_input_is_one_line_naming_the_file(self):
        rc, _, err = run([{"ok": True}])
        self.assertEqual(rc, 2)
        self.assertRegex(err, r"^winners.py: error: .*\.json: /cells/0: expected")
        self.assertEqual(err.count("\n"), 1)


if __name__ == "__main__":
    unittest.main()

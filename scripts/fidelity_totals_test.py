#!/usr/bin/env python3
"""Tests of scripts/fidelity_totals.py (ctest fidelity_totals): the targets added over tables on
the medians and per repetition, met and missed by the shares, a table with fewer repetitions
named, wait-event comparisons left out, and a one-line error for an old comparison."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import fidelity_totals  # noqa: E402


def targets(peaks, winners, ratios):
    """Each argument (count, of), with the bar's target shares."""
    out = {}
    for key, (c, n), share in (("peaks_within_2x", peaks, 0.8), ("winners_agree", winners, 0.8),
                               ("ratios_within_35_pct", ratios, 0.7)):
        out[key] = {"count": c, "of": n, "share": c / n if n else None, "target": share,
                    "met": c >= share * n if n else None}
    return out


def comparison(median, per=()):
    return {"fidelity_version": 3, "summary": {"targets": targets(*median)},
            "per_repetition": [{"repetition": i + 1, "seeds": [i + 1], "targets": targets(*t)}
                               for i, t in enumerate(per)]}


class Totals(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, name, doc):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def run_totals(self, *paths):
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(fidelity_totals.main(list(paths)), 0)
        return out.getvalue()

    def test_medians_and_repetitions_add_up_over_tables(self):
        a = self.write("a.json", comparison(((8, 10), (9, 10), (7, 10)),
                                            [((8, 10), (9, 10), (7, 10)), ((7, 10), (9, 10), (6, 10))]))
        b = self.write("b.json", comparison(((3, 4), (2, 2), (3, 4)),
                                            [((3, 4), (2, 2), (3, 4)), ((4, 4), (1, 2), (4, 4))]))
        w = self.write("w.json", {"version": 2, "mode": "wait_events"})
        text = self.run_totals(a, b, w)
        # medians: peaks 11/14 = 79% (missed), winners 11/12 (met), ratios 10/14 = 71% (met)
        self.assertIn("all tables (cell medians)", text)
        self.assertIn("11/14 = 78.6% (missed)", text)
        self.assertIn("11/12 = 91.7% (met)", text)
        self.assertIn("10/14 = 71.4% (met)", text)
        # repetition 2: peaks 11/14 (missed), winners 10/12 = 83% (met), ratios 10/14 (met)
        lines = text.splitlines()
        rep2 = next(line for line in lines if line.startswith("2 "))
        self.assertIn("10/12 = 83.3% (met)", rep2)
        self.assertIn("targets met by single repetitions: peaks within 2x 0 of 2, winners agree 2 of 2, "
                      "ratio errors <= 35% 2 of 2, all three 0 of 2", text)
        self.assertIn("left out: w.json", text)
        self.assertIn("Each repetition alone, added over the 2 tables with 2 repetitions", text)

    def test_a_table_with_fewer_repetitions_is_left_out_of_the_rows_and_named(self):
        a = self.write("a.json", comparison(((4, 5), (4, 5), (4, 5)),
                                            [((4, 5), (4, 5), (4, 5)), ((3, 5), (4, 5), (4, 5))]))
        b = self.write("one.json", comparison(((1, 1), (1, 1), (1, 1))))
        text = self.run_totals(a, b)
        self.assertIn("not pooled per repetition (fewer than 2 repetitions): one.json", text)
        lines = text.splitlines()
        medians = next(line for line in lines if line.startswith("medians"))
        self.assertIn("4/5 = 80.0% (met)", medians)  # a.json alone, not 5/6
        self.assertEqual(fidelity_totals.cell((35, 44), 0.8), "35/44 = 79.5% (missed)")  # not "80%"
        rep2 = next(line for line in lines if line.startswith("2 "))
        self.assertIn("3/5 = 60.0% (missed)", rep2)
        self.assertIn("all three 1 of 2", text)

    def test_one_repetition_has_no_per_repetition_rows(self):
        a = self.write("a.json", comparison(((4, 5), (0, 0), (4, 5))))
        text = self.run_totals(a)
        self.assertNotIn("Each repetition alone", text)
        self.assertIn("n/a", text)  # no scored winner

    def test_an_old_comparison_is_one_line_error(self):
        old = self.write("old.json", {"fidelity_version": 2, "summary": {}})
        with self.assertRaises(SystemExit) as e:
            fidelity_totals.main([old])
        self.assertIn("old.json: expected fidelity_version 3", str(e.exception.code))

    def test_output_file_written(self):
        a = self.write("a.json", comparison(((4, 5), (4, 5), (4, 5))))
        out = os.path.join(self.dir.name, "totals.txt")
        self.assertEqual(fidelity_totals.main([a, "-o", out]), 0)
        with open(out) as f:
            self.assertIn("Fidelity bar over 1 published table", f.read())
        self.assertFalse(os.path.exists(out + ".tmp"))


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Tests of scripts/check_results_provenance.py (ctest results_provenance_fixtures): a small git
repository with one result file, whose README is right and then wrong in each way the check
knows (a later commit missing, one listed that does not touch the model, the order, a ledger
entry missing, the build commit, a dirty build, rows for missing files and files without rows,
a stale index table), and the skips (no git tree, a shallow clone) and bad input (no ledger)."""
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import check_results_provenance as check  # noqa: E402
import results_index  # noqa: E402


def git(repo, *args):
    subprocess.run(["git", "-c", "commit.gpgsign=false", "-C", repo, *args], check=True,
                   capture_output=True)


def sha(repo, rev="HEAD"):
    return subprocess.run(["git", "-C", repo, "rev-parse", rev], check=True,
                          capture_output=True, text=True).stdout.strip()


def commit_file(repo, path, text, message):
    full = os.path.join(repo, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)
    git(repo, "add", path)
    git(repo, "commit", "-q", "-m", message)
    return sha(repo)


class Provenance(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.repo = os.path.join(self.dir, "repo")
        os.makedirs(self.repo)
        git(self.repo, "init", "-q")
        git(self.repo, "config", "user.email", "t@example.org")
        git(self.repo, "config", "user.name", "t")
        self.build = commit_file(self.repo, "core/model.cc", "v1\n", "model v1")
        self.result = os.path.join(self.repo, "results", "2026-01-01-vm-quick.json")
        self.write_result(self.build, dirty=False)
        git(self.repo, "add", "results")
        git(self.repo, "commit", "-q", "-m", "result")
        self.later1 = commit_file(self.repo, "harness/cli.cc", "x\n", "harness change")
        commit_file(self.repo, "docs/notes.md", "y\n", "docs only")
        self.later2 = commit_file(self.repo, "strategies/s.cc", "z\n", "strategy change")
        self.docs_only = sha(self.repo, "HEAD~1")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write_result(self, build_sha, dirty):
        os.makedirs(os.path.dirname(self.result), exist_ok=True)
        with open(self.result, "w") as f:
            json.dump({"context": {"schema_version": 2, "date": "2026-01-01T00:00:00Z",
                                   "git_sha": build_sha, "git_dirty": dirty,
                                   "config_files": ["configs/quick.json"]},
                       "cells": [{"ok": True, "platform": {"kind": "sim"}}]}, f)

    def write_readme(self, built=None, later=None, ledger=None, rows=None, index=None,
                     markers=True):
        built = built or self.build[:7]
        later = later if later is not None else f"{self.later2[:7]}, {self.later1[:7]}"
        ledger = ledger if ledger is not None else [self.later2[:7], self.later1[:7]]
        rows = rows if rows is not None else [
            f"| `2026-01-01-vm-quick.json` | {built} | {later} | stands |"]
        index = index if index is not None else [results_index.row(self.result)]
        text = ["# Results", "",
                "| file | built at | later commits touching core/strategies/harness | why |",
                "|---|---|---|---|", *rows, ""]
        if markers:
            text.append(check.LEDGER_BEGIN)
        text += [f"- **{h}** why it stands" for h in ledger]
        if markers:
            text.append(check.LEDGER_END)
        text += ["", "| file | schema | config | date (UTC) | host | CPU | cores | build | git sha "
                 "| cells ok | cells warned | platform |", "|---|---|---|---|---|---|---|---|---|---|---|---|",
                 *index, ""]
        with open(os.path.join(self.repo, "results", "README.md"), "w") as f:
            f.write("\n".join(text))

    def run_check(self, repo=None):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = check.main(["check", repo or self.repo])
        return rc, out.getvalue() + err.getvalue()

    def test_a_true_readme_passes(self):
        self.write_readme()
        rc, text = self.run_check()
        self.assertEqual(rc, 0, text)

    def test_a_later_commit_missing(self):
        self.write_readme(later=self.later2[:7])
        rc, text = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("missing " + self.later1[:7], text)

    def test_a_commit_that_does_not_touch_the_model(self):
        self.write_readme(later=f"{self.later2[:7]}, {self.docs_only[:7]}, {self.later1[:7]}",
                          ledger=[self.later2[:7], self.docs_only[:7], self.later1[:7]])
        rc, text = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("not touching core/strategies/harness: " + self.docs_only[:7], text)

    def test_the_order_is_git_logs(self):
        self.write_readme(later=f"{self.later1[:7]}, {self.later2[:7]}")
        rc, text = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("out of order", text)

    def test_every_listed_commit_needs_a_ledger_entry(self):
        self.write_readme(ledger=[self.later2[:7]])
        rc, text = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn(f"{self.later1[:7]} has no entry in the commit ledger", text)
        self.write_readme(ledger=[f"{self.later2[:7]}, {self.later1[:7]}"])  # one entry, two hashes
        self.assertEqual(self.run_check()[0], 0)
        self.write_readme(ledger=[self.later2[:7], self.later1[:7], "abcdef0"])
        rc, text = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("ledger entry abcdef0 is not a commit", text)

    def test_built_at_is_the_files_build(self):
        self.write_readme(built=self.later1[:7], later=self.later2[:7])
        rc, text = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("context.git_sha is '" + self.build[:12], text)

    def test_a_build_commit_missing_from_the_history_is_a_finding(self):
        gone = "0123456789abcdef0123456789abcdef01234567"
        self.write_result(gone, dirty=False)
        self.write_readme(built=gone[:7], later="")
        rc, text = self.run_check()
        self.assertEqual(rc, 1, text)
        self.assertIn("build commit 0123456789ab is not in this history", text)

    def test_a_dirty_build_is_a_finding(self):
        self.write_result(self.build, dirty=True)
        self.write_readme()
        rc, text = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("dirty", text)

    def test_rows_and_files_match_one_to_one(self):
        self.write_readme(rows=[])
        rc, text = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("no standing row for results/2026-01-01-vm-quick.json", text)
        good = f"| `2026-01-01-vm-quick.json` | {self.build[:7]} | {self.later2[:7]}, {self.later1[:7]} | s |"
        self.write_readme(rows=[good, good.replace("2026-01-01-vm-quick", "2026-01-02-vm-gone")])
        rc, text = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("(2026-01-02-vm-gone.json): no such file in results/", text)

    def test_a_stale_index_table(self):
        self.write_readme(index=[results_index.row(self.result).replace("| 1/1 |", "| 2/2 |")])
        rc, text = self.run_check()
        self.assertEqual(rc, 1)
        self.assertIn("the index table is not what scripts/results_index.py prints", text)

    def test_no_ledger_is_bad_input(self):
        self.write_readme(markers=False)
        rc, text = self.run_check()
        self.assertEqual(rc, 2)
        self.assertIn("no commit ledger", text)

    def test_skipped_without_the_history(self):
        self.write_readme()
        git(self.repo, "add", "results")
        git(self.repo, "commit", "-q", "-m", "readme")
        shallow = os.path.join(self.dir, "shallow")
        subprocess.run(["git", "clone", "-q", "--depth", "1", "file://" + self.repo, shallow],
                       check=True, capture_output=True)
        rc, text = self.run_check(shallow)
        self.assertEqual(rc, check.SKIP, text)
        self.assertIn("shallow", text)
        plain = os.path.join(self.dir, "plain")
        shutil.copytree(os.path.join(self.repo, "results"), os.path.join(plain, "results"))
        saved = os.environ.get("GIT_CEILING_DIRECTORIES")
        os.environ["GIT_CEILING_DIRECTORIES"] = self.dir  # even if TMPDIR is inside a work tree
        try:
            rc, text = self.run_check(plain)
        finally:
            if saved is None:
                del os.environ["GIT_CEILING_DIRECTORIES"]
            else:
                os.environ["GIT_CEILING_DIRECTORIES"] = saved
        self.assertEqual(rc, check.SKIP, text)
        self.assertIn("not a git work tree", text)


if __name__ == "__main__":
    unittest.main()

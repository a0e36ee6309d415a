#!/usr/bin/env python3
"""Holds results/README.md to the result files and to the git history (ctest results_provenance).

Usage: /usr/bin/python3 scripts/check_results_provenance.py [REPO]
  REPO: the repository root (default: the one this script is in).

Checks, each finding one line naming the file or commit:
  1. The index table (the one headed `| file | schema | config |`) is exactly what
     scripts/results_index.py prints for results/*.json (regenerate it after a rerun).
  2. The per-file standing table (headed `| file | built at |`) has one row per results/*.json
     and none for a file that is not there.
  3. A row's "built at" is the commit the file's binary was built from (context.git_sha), and
     that build was clean (context.git_dirty false): a result from uncommitted code has no
     commit to stand on.
  4. A row's "later commits" are exactly `git log BUILT..HEAD -- core strategies harness`,
     newest first: every commit after the build that could change what a cell runs is named.
  5. Every commit a row names has an entry in the commit ledger (the list between the lines
     `<!-- ledger: begin -->` and `<!-- ledger: end -->`; an entry is a list item that starts with
     its hashes in bold, `- **a1b2c3d**` or `- **a1b2c3d, e4f5a6b**`), which says why the files
     that list it keep their numbers; and every ledger hash is a commit of this history.
Exit status: 0 all hold; 1 findings (a build commit absent from a full clone's history is one:
the file was built from a commit main does not have); 2 an unreadable README or result file, a
table missing, or no git program; 77 skipped: not a git work tree, or a shallow clone (the
history check needs every commit since the oldest build). git runs with safe.directory set to
REPO, so a checkout owned by another user is read rather than taken for no repository.
"""
import glob
import json
import os
import re
import subprocess
import sys

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, SCRIPT_DIR)

import results_index  # noqa: E402

SKIP = 77
MODEL_PATHS = ["core", "strategies", "harness"]
INDEX_HEADER = "| file | schema | config |"
STANDING_HEADER = "| file | built at |"
LEDGER_BEGIN = "<!-- ledger: begin -->"
LEDGER_END = "<!-- ledger: end -->"
LEDGER_ENTRY = re.compile(r"^- \*\*([0-9a-f]{7,40}(?:, [0-9a-f]{7,40})*)\*\*")


class Unusable(Exception):
    """The README or a result file cannot be read as this check expects (exit 2)."""


def git(repo, *args):
    return subprocess.run(["git", "-c", f"safe.directory={repo}", "-C", repo, *args],
                          capture_output=True, text=True)


def table_after(lines, header, readme):
    """The rows (lists of stripped cells) of the first table whose header starts with `header`,
    each with its 1-based line number."""
    for i, line in enumerate(lines):
        if line.startswith(header):
            rows = []
            for j in range(i + 2, len(lines)):
                if not lines[j].startswith("|"):
                    break
                rows.append((j + 1, [c.strip() for c in lines[j].strip().strip("|").split("|")]))
            return i, rows
    raise Unusable(f"{readme}: no table headed '{header} ...'")


def ledger_hashes(lines, readme):
    try:
        begin = lines.index(LEDGER_BEGIN)
        end = lines.index(LEDGER_END, begin)
    except ValueError:
        raise Unusable(f"{readme}: no commit ledger (lines '{LEDGER_BEGIN}' ... '{LEDGER_END}')")
    hashes = []
    for line in lines[begin + 1:end]:
        m = LEDGER_ENTRY.match(line)
        if m:
            hashes.extend(m.group(1).split(", "))
    return hashes


def full_sha(repo, short):
    r = git(repo, "rev-parse", "--verify", "--quiet", short + "^{commit}")
    return r.stdout.strip() if r.returncode == 0 else None


def check(repo):
    findings = []
    readme_path = os.path.join(repo, "results", "README.md")
    readme = "results/README.md"
    try:
        with open(readme_path) as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise Unusable(f"{readme}: {e.strerror}")
    paths = sorted(glob.glob(os.path.join(repo, "results", "*.json")))
    contexts = {}
    for p in paths:
        try:
            with open(p) as f:
                contexts[os.path.basename(p)] = json.load(f).get("context", {})
        except (OSError, ValueError) as e:
            raise Unusable(f"results/{os.path.basename(p)}: not readable as a result file ({e})")

    # 1. The index table.
    at, rows = table_after(lines, INDEX_HEADER, readme)
    shown = [lines[n - 1] for n, _ in rows]
    expected = [results_index.row(p) for p in paths]
    if shown != expected:
        findings.append(f"{readme}:{at + 1}: the index table is not what scripts/results_index.py "
                        "prints for results/*.json; regenerate it")

    # 2-4. The standing table against the files and the history.
    _, rows = table_after(lines, STANDING_HEADER, readme)
    ledger = ledger_hashes(lines, readme)
    ledger_full = {}
    for h in ledger:
        sha = full_sha(repo, h)
        if sha is None:
            findings.append(f"{readme}: ledger entry {h} is not a commit of this history")
        else:
            ledger_full[sha] = h
    seen = set()
    for lineno, cells in rows:
        if len(cells) < 4:
            findings.append(f"{readme}:{lineno}: a standing row needs 4 cells (file, built at, "
                            "later commits, why)")
            continue
        name = cells[0].strip("`")
        where = f"{readme}:{lineno} ({name})"
        if name in seen:
            findings.append(f"{where}: a second row for the same file")
        seen.add(name)
        if name not in contexts:
            findings.append(f"{where}: no such file in results/")
            continue
        ctx = contexts[name]
        sha = str(ctx.get("git_sha", ""))
        built = cells[1].strip("`")
        if not sha or not re.fullmatch(r"[0-9a-f]{7,40}", built) or not sha.startswith(built):
            findings.append(f"{where}: built at '{built}', but the file's context.git_sha is "
                            f"'{sha[:12]}'")
            continue
        if ctx.get("git_dirty"):
            findings.append(f"{where}: built from a dirty tree (context.git_dirty); rerun it from "
                            "a clean build of a commit")
        if git(repo, "cat-file", "-e", sha + "^{commit}").returncode != 0:
            findings.append(f"{where}: its build commit {sha[:12]} is not in this history (built "
                            "from a commit main does not have: rerun it from a commit of main)")
            continue
        log = git(repo, "log", "--format=%H", f"{sha}..HEAD", "--", *MODEL_PATHS)
        if log.returncode != 0:
            raise Unusable(f"git log {sha[:12]}..HEAD failed: {log.stderr.strip()}")
        want = log.stdout.split()
        listed = [c.strip().strip("`") for c in cells[2].split(",") if c.strip() not in ("", "-", "none")]
        listed_full = [full_sha(repo, c) or c for c in listed]
        if listed_full != want:
            missing = [w[:7] for w in want if w not in listed_full]
            extra = [c for c, f in zip(listed, listed_full) if f not in want]
            detail = []
            if missing:
                detail.append("missing " + ", ".join(missing))
            if extra:
                detail.append("not after its build or not touching core/strategies/harness: "
                              + ", ".join(extra))
            if not detail:
                detail.append("out of order (newest first, as git log prints them)")
            findings.append(f"{where}: later commits differ from git log {built}..HEAD -- "
                            f"{' '.join(MODEL_PATHS)}: " + "; ".join(detail))
        for c, f in zip(listed, listed_full):
            if f in want and f not in ledger_full:
                findings.append(f"{where}: {c} has no entry in the commit ledger")
    for name in contexts:
        if name not in seen:
            findings.append(f"{readme}: no standing row for results/{name}")
    return findings


def main(argv):
    repo = os.path.abspath(argv[1]) if len(argv) > 1 else os.path.dirname(SCRIPT_DIR)
    try:
        inside = git(repo, "rev-parse", "--is-inside-work-tree")
    except FileNotFoundError:
        print("check_results_provenance: no git program (apt-get install git)", file=sys.stderr)
        return 2
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        print(f"check_results_provenance: {repo} is not a git work tree; skipped")
        return SKIP
    if git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        print(f"check_results_provenance: {repo} is a shallow clone; skipped")
        return SKIP
    try:
        findings = check(repo)
    except Unusable as e:
        print(f"check_results_provenance: {e}", file=sys.stderr)
        return 2
    for f in findings:
        print(f, file=sys.stderr)
    if findings:
        print(f"check_results_provenance: {len(findings)} finding(s)", file=sys.stderr)
        return 1
    print("check_results_provenance: every result file's row matches its build and the history")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

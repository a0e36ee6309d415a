#!/usr/bin/python3
"""Prints the index table of results/README.md from the result files themselves.

Usage: /usr/bin/python3 scripts/results_index.py [results/*.json]
Each row: file, config, date, host, CPU, cores, build, git sha, cells (ok/total), platform.
"""
import glob
import json
import os
import sys


def row(path):
    with open(path) as f:
        doc = json.load(f)
    ctx = doc.get("context", {})
    cells = doc.get("cells", [])
    ok = sum(1 for c in cells if c.get("ok"))
    platforms = sorted({c.get("platform", {}).get("kind", "?") for c in cells})
    configs = ", ".join(os.path.basename(p) for p in ctx.get("config_files", []))
    return "| [{}]({}) | {} | {} | {} | {} | {} | {} | {} | {}/{} | {} |".format(
        os.path.basename(path), os.path.basename(path), configs, ctx.get("date", "?"),
        ctx.get("host", "?"), ctx.get("cpu_model", "?"), ctx.get("logical_cores", "?"),
        ctx.get("build_type", "?"), ctx.get("git_sha", "?"), ok, len(cells),
        ", ".join(platforms))


def main():
    paths = sys.argv[1:] or sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "results", "*.json")))
    print("| file | config | date (UTC) | host | CPU | cores | build | git sha | cells ok | platform |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for p in paths:
        print(row(p))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Prints the index table of results/README.md from the result files themselves.

Usage: /usr/bin/python3 scripts/results_index.py [results/*.json]
Each row: file, schema, config, date, host, CPU, cores, build, git sha (+dirty), cells
(ok/total), cells with warnings, platform.
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
    warned = sum(1 for c in cells if c.get("warnings"))
    configs = ", ".join(os.path.basename(p) for p in ctx.get("config_files", []))
    build = ctx.get("build", {}).get("type") or ctx.get("build_type", "?")
    sha = str(ctx.get("git_sha", "?"))[:12] + ("+dirty" if ctx.get("git_dirty") else "")
    schema = ctx.get("schema_version", "?")
    return "| [{}]({}) | {} | {} | {} | {} | {} | {} | {} | {} | {}/{} | {} | {} |".format(
        os.path.basename(path), os.path.basename(path), schema, configs, ctx.get("date", "?"),
        ctx.get("host", "?"), ctx.get("cpu_model", "?"), ctx.get("logical_cores", "?"),
        build, sha, ok, len(cells), warned if schema != 1 else "-", ", ".join(platforms))


def main():
    paths = sys.argv[1:] or sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "results", "*.json")))
    print("| file | schema | config | date (UTC) | host | CPU | cores | build | git sha | cells ok | cells warned | platform |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in paths:
        print(row(p))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The fidelity bar over several published tables at once: adds up the targets of
`walbench compare --reference --json` files (harness/fidelity.h "Targets": peaks within 2x for
80% of curves, winners agreeing at 80% of scored points, ratio errors <= 35% at 70% of points),
once on each cell's median over its repetitions and once per repetition (on the simulator a
repetition is a seed), so that a verdict that one seed would flip shows as such.

    scripts/fidelity_totals.py [COMPARISON.json ...] [-o OUT.txt]

Default inputs: results/fidelity/*.json. Wait-event comparisons (no tps curves) are skipped and
named. Repetition r of the totals adds repetition r of every table that has one; a table with
fewer repetitions is named under that row. Exit 2 with one line on stderr for a file that is not
a comparison of fidelity_version 3.
"""
import argparse
import glob
import json
import os
import sys

TARGETS = (("peaks_within_2x", "peaks within 2x"), ("winners_agree", "winners agree"),
           ("ratios_within_35_pct", "ratio errors <= 35%"))


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit(f"fidelity_totals: {path}: cannot read a comparison: {e}")
    if not isinstance(doc, dict):
        raise SystemExit(f"fidelity_totals: {path}: expected a JSON object (walbench compare --json)")
    if doc.get("mode") == "wait_events":
        return None
    if doc.get("fidelity_version") != 3:
        raise SystemExit(f"fidelity_totals: {path}: expected fidelity_version 3 (walbench compare --json), "
                         f"found {doc.get('fidelity_version')!r}; compare the result again")
    return doc


def add(total, targets):
    for key, _ in TARGETS:
        c, n = total.get(key, (0, 0))
        total[key] = (c + targets[key]["count"], n + targets[key]["of"])


def cell(target, share_needed=None):
    c, n = target
    if n == 0:
        return "n/a"
    text = f"{c}/{n} = {100 * c / n:.0f}%"
    if share_needed is not None:
        text += f" ({'met' if c >= share_needed * n else 'missed'})"
    return text


def table(header, rows):
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths)))
    return "\n".join(line(r).rstrip() for r in [header] + rows) + "\n"


def totals_text(paths):
    docs, skipped = [], []
    for p in paths:
        d = load(p)
        (skipped if d is None else docs).append(p if d is None else (p, d))
    if not docs:
        raise SystemExit("fidelity_totals: no tps comparison among the inputs")
    share = {key: None for key, _ in TARGETS}
    first = docs[0][1]["summary"]["targets"]
    for key, _ in TARGETS:
        share[key] = first[key]["target"]
    out = ["Fidelity bar over %d published table%s (scripts/fidelity_totals.py; harness/fidelity.h \"Targets\": "
           "peaks within 2x for %.0f%% of curves, winners agreeing at %.0f%% of scored points, ratio errors "
           "<= 35%% at %.0f%% of ratio points)\n" % (len(docs), "" if len(docs) == 1 else "s",
                                                     100 * share["peaks_within_2x"], 100 * share["winners_agree"],
                                                     100 * share["ratios_within_35_pct"])]
    rows, median_total, reps = [], {}, 0
    for path, d in docs:
        t = d["summary"]["targets"]
        add(median_total, t)
        n = len(d.get("per_repetition", []))
        reps = max(reps, n)
        rows.append([os.path.basename(path)[:-5] if path.endswith(".json") else path, str(max(n, 1))] +
                    [cell((t[k]["count"], t[k]["of"])) for k, _ in TARGETS])
    rows.append(["all tables (cell medians)", ""] + [cell(median_total[k], share[k]) for k, _ in TARGETS])
    out.append(table(["table", "repetitions"] + [label for _, label in TARGETS], rows))
    if reps >= 2:
        out.append("\nEach repetition alone, added over the tables (a cell's tps from that repetition only):\n")
        rows, met = [], {k: 0 for k, _ in TARGETS}
        lacking_notes = []
        for r in range(reps):
            total, seeds, lacking = {}, set(), []
            for path, d in docs:
                per = d.get("per_repetition", [])
                if r < len(per):
                    add(total, per[r]["targets"])
                    seeds.update(per[r]["seeds"])
                else:
                    lacking.append(os.path.basename(path))
            for k, _ in TARGETS:
                c, n = total[k]
                if n and c >= share[k] * n:
                    met[k] += 1
            rows.append([str(r + 1), " ".join(map(str, sorted(seeds))) or "-"] +
                        [cell(total[k], share[k]) for k, _ in TARGETS])
            if lacking:
                lacking_notes.append(f"repetition {r + 1} lacks: {', '.join(lacking)}")
        out.append(table(["repetition", "seeds"] + [label for _, label in TARGETS], rows))
        out.append("targets met by single repetitions: " +
                   ", ".join(f"{label} {met[k]} of {reps}" for k, label in TARGETS) + "\n")
        out.extend(note + "\n" for note in lacking_notes)
    if skipped:
        out.append("not tps tables (wait-event comparisons), left out: " +
                   ", ".join(os.path.basename(p) for p in skipped) + "\n")
    return "".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="*", metavar="COMPARISON.json")
    ap.add_argument("-o", "--output", help="write the text here (atomically) instead of stdout")
    args = ap.parse_args(argv)
    paths = args.inputs or sorted(glob.glob("results/fidelity/*.json"))
    if not paths:
        raise SystemExit("fidelity_totals: no comparison files (give some, or run from the repository root)")
    text = totals_text(paths)
    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The fidelity bar over several published tables at once: adds up the targets of
`walbench compare --reference --json` files (harness/fidelity.h "Targets": peaks within 2x for
80% of scored curves, winners agreeing at 80% of scored points, ratio errors <= 35% at 70% of points),
once on each cell's median over its repetitions and once per repetition (on the simulator a
repetition is a seed), so that a verdict that one seed would flip shows as such.

    scripts/fidelity_totals.py [COMPARISON.json ...] [-o OUT.txt]

Default inputs: results/fidelity/*.json. Wait-event comparisons (no tps curves) are skipped and
named. The per-repetition rows add repetition r of the tables that have the most repetitions
(each row the same tables, with their medians beside); a table with fewer is named and left out
of those rows. Exit 2 with one line on stderr for a file that is not
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
    text = f"{c}/{n} = {100 * c / n:.1f}%"  # one decimal: 35/44 is 79.5%, not 80%
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
           "peaks within 2x for %.0f%% of scored curves, winners agreeing at %.0f%% of scored points, ratio errors "
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
        # Only tables with all `reps` repetitions are pooled per repetition, and their medians are
        # given again beside, so that every row of this block adds up the same tables.
        full = [(p, d) for p, d in docs if len(d.get("per_repetition", [])) == reps]
        left = [os.path.basename(p) for p, d in docs if len(d.get("per_repetition", [])) != reps]
        seeds_note = all(d.get("repetitions_are_seeds", False) for _, d in full)
        out.append("\nEach %s alone, added over the %d table%s with %d repetitions (repetition r of every "
                   "table pooled%s; a single %s is noisier than the median, so its scores scatter around the "
                   "medians', either way: the rows show how far the scores move, the medians are the verdict):\n"
                   % ("seed" if seeds_note else "repetition", len(full), "" if len(full) == 1 else "s", reps,
                      ", seed run.seed + r - 1 of each" if seeds_note else "", "seed" if seeds_note else "repetition"))
        rows, met, met_all = [], {k: 0 for k, _ in TARGETS}, 0
        subset_median = {}
        for _, d in full:
            add(subset_median, d["summary"]["targets"])
        rows.append(["medians", ""] + [cell(subset_median[k], share[k]) for k, _ in TARGETS])
        for r in range(reps):
            total, seeds = {}, set()
            for _, d in full:
                add(total, d["per_repetition"][r]["targets"])
                seeds.update(d["per_repetition"][r]["seeds"])
            all_met = True
            for k, _ in TARGETS:
                c, n = total[k]
                if n and c >= share[k] * n:
                    met[k] += 1
                elif n:
                    all_met = False
            met_all += all_met
            rows.append([str(r + 1), " ".join(map(str, sorted(seeds))) or "-"] +
                        [cell(total[k], share[k]) for k, _ in TARGETS])
        out.append(table(["repetition", "seeds"] + [label for _, label in TARGETS], rows))
        out.append("targets met by single %ss: " % ("seed" if seeds_note else "repetition") +
                   ", ".join(f"{label} {met[k]} of {reps}" for k, label in TARGETS) +
                   f", all three {met_all} of {reps}\n")
        if left:
            out.append(f"not pooled per repetition (fewer than {reps} repetitions): {', '.join(left)}\n")
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

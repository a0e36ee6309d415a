#!/usr/bin/env python3
"""Plot a simulated result against a published table: one panel per series (record size), tps of
each variant against clients (log2 x axis), the published curve solid, the simulated one dashed,
each normalised to its own tps at the smallest common client count, so the shapes can be
compared while the absolute numbers of a real PostgreSQL and of the model differ.

    scripts/plot_fidelity.py COMPARISON.json OUT.png [--sizes 16,1024,16384] [--raw] [--title TEXT]
    scripts/plot_fidelity.py RESULT.json REFERENCE.csv OUT.png [--sizes ...] [--raw] [--title TEXT]

COMPARISON.json is what `walbench compare RESULT --reference CSV --json COMPARISON.json` writes
(fidelity_version 2 or 3, harness/RESULTS.md): it plots the client counts both sides have, with
the --fix slice and --variant renames of that comparison, draws fitted points (reference rows the
config was set up from, not scored) as open markers and, where the cells had several repetitions
(seeds on the simulator), the repetitions' min-max as a band around the simulated median: each
repetition normalised to its own tps at the smallest common client count (or raw with --raw). RESULT.json REFERENCE.csv plots the raw
files instead, every client count of each side (tables with a record_size column and no other).
--raw plots tps as measured instead of normalised. Needs python3-matplotlib (Debian).
"""
import argparse
import csv
import json
import sys
from collections import defaultdict

FIDELITY_VERSIONS = (2, 3)


def load_reference(path):
    series = defaultdict(dict)  # (variant, size) -> {clients: tps}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            size = row.get("record_size", "")
            series[(row["variant"], size)][int(row["clients"])] = float(row["tps"])
    return series


def load_result(path):
    series = defaultdict(dict)
    with open(path) as f:
        doc = json.load(f)
    for cell in doc["cells"]:
        if not cell.get("summary"):
            continue
        size = cell.get("workload", {}).get("record_size_label", "")
        series[(cell["label"], str(size))][int(cell["clients"])] = cell["summary"]["tps_median"]
    return series


def panels_from_files(result, reference):
    """[(title, [(variant, published {clients: tps}, simulated {clients: tps}, fitted set,
    simulated {clients: [tps of each repetition]})])]"""
    ref = load_reference(reference)
    sim = load_result(result)
    sizes = sorted({s for (_, s) in ref}, key=lambda s: int(s) if s.isdigit() else 0)
    variants = sorted({v for (v, _) in ref})
    panels = []
    for size in sizes:
        curves = []
        for v in variants:
            pub, res = ref.get((v, size), {}), sim.get((v, size), {})
            if set(pub) & set(res):
                curves.append((v, pub, res, set(), {}))
        panels.append((size, f"{size} B" if size else "", curves))
    return panels


def panels_from_comparison(doc, path):
    if not isinstance(doc, dict) or doc.get("fidelity_version") not in FIDELITY_VERSIONS:
        sys.exit(f"{path}: expected a comparison of fidelity_version {' or '.join(map(str, FIDELITY_VERSIONS))} "
                 f"(walbench compare --reference --json), found "
                 f"{doc.get('fidelity_version') if isinstance(doc, dict) else 'no object'}")
    panels = []
    for s in doc["series"]:
        size = s["values"].get("record_size", "")
        title = f"{size} B" if size and len(s["values"]) == 1 else s["name"]
        curves = []
        for c in s["curves"]:
            pub = {p["clients"]: p["reference_tps"] for p in c["points"]}
            res = {p["clients"]: p["result_tps"] for p in c["points"]}
            fitted = {p["clients"] for p in c["points"] if p["fitted"]}
            reps = {p["clients"]: p["result_tps_repetitions"] for p in c["points"]
                    if p.get("result_tps_repetitions")}
            curves.append((c["variant"], pub, res, fitted, reps))
        panels.append((size, title, curves))
    return panels


def seed_band(reps, xs, base_clients, raw):
    """The repetitions' min-max of what is plotted, each repetition's tps (raw) or its own shape
    (tps / its tps at base_clients), at the client counts where every repetition is known; None
    unless every plotted point has them (a band with gaps would claim a range it does not have)."""
    if not reps or any(x not in reps for x in xs) or len({len(reps[x]) for x in xs}) != 1:
        return None
    lo, hi = [], []
    for x in xs:
        vals = reps[x] if raw else [t / b if b else float("nan") for t, b in zip(reps[x], reps[base_clients])]
        lo.append(min(vals))
        hi.append(max(vals))
    return xs, lo, hi


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", metavar="FILE",
                    help="COMPARISON.json OUT.png, or RESULT.json REFERENCE.csv OUT.png")
    ap.add_argument("--sizes", help="comma-separated record sizes to plot (default: all)")
    ap.add_argument("--raw", action="store_true", help="absolute tps, not normalised")
    ap.add_argument("--title", default="")
    args = ap.parse_args()

    if len(args.inputs) == 2:
        with open(args.inputs[0]) as f:
            panels = panels_from_comparison(json.load(f), args.inputs[0])
        source = args.inputs[0]
    elif len(args.inputs) == 3:
        panels = panels_from_files(args.inputs[0], args.inputs[1])
        source = f"{args.inputs[0]} and {args.inputs[1]}"
    else:
        ap.error("expected COMPARISON.json OUT.png, or RESULT.json REFERENCE.csv OUT.png")
    out = args.inputs[-1]
    if args.sizes:
        wanted = args.sizes.split(",")
        panels = [p for p in panels if p[0] in wanted]
    panels = [p for p in panels if p[2]]
    if not panels:
        sys.exit(f"{source}: no series with a point on both sides" + (" among --sizes" if args.sizes else ""))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    any_fitted = any_range = False
    for ax, (_, title, curves) in zip(axes[0], panels):
        for i, (v, pub, res, fitted, reps) in enumerate(curves):
            base_clients = min(set(pub) & set(res))
            color = colors[i % len(colors)]
            for src, pts, style in (("published", pub, "-"), ("simulated", res, "--")):
                base = 1.0 if args.raw else pts[base_clients]
                xs = sorted(pts)
                ax.plot(xs, [pts[x] / base for x in xs], style, marker="o", ms=3, color=color,
                        label=f"{v} ({src})")
                fx = [x for x in xs if x in fitted]
                if fx:
                    any_fitted = True
                    ax.plot(fx, [pts[x] / base for x in fx], "o", ms=7, mfc="none", color=color)
                band = seed_band(reps, xs, base_clients, args.raw) if src == "simulated" else None
                if band:
                    any_range = True
                    ax.fill_between(band[0], band[1], band[2], color=color, alpha=0.15, linewidth=0)
        ax.set_xscale("log", base=2)
        ax.set_title(title)
        ax.set_xlabel("clients")
        ax.set_ylabel("tps" if args.raw else "tps / tps at fewest common clients")
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    title = args.title
    if any_fitted:
        title = (title + "\n" if title else "") + "open circles: fitted points (the config was set up from them; not scored)"
    if any_range:
        title = (title + "\n" if title else "") + ("bands: min-max over the simulated repetitions (seeds)" +
                                                    ("" if args.raw else ", each normalised to itself"))
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

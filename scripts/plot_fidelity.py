#!/usr/bin/env python3
"""Plot a simulated result against a published table: one panel per record size, tps of each
variant against clients (log2 x axis), the published curve solid, the simulated one dashed,
each normalised to its own 1-client (or smallest common client count) tps, so the shapes can be
compared while the absolute numbers of a real PostgreSQL and of the model differ.

    scripts/plot_fidelity.py RESULT.json REFERENCE.csv OUT.png [--sizes 16,1024,16384]
                             [--raw] [--title TEXT]

--raw plots tps as measured instead of normalised. Needs python3-matplotlib (Debian).
"""
import argparse
import csv
import json
import sys
from collections import defaultdict


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("result")
    ap.add_argument("reference")
    ap.add_argument("out")
    ap.add_argument("--sizes", help="comma-separated record sizes to plot (default: all)")
    ap.add_argument("--raw", action="store_true", help="absolute tps, not normalised")
    ap.add_argument("--title", default="")
    args = ap.parse_args()

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ref = load_reference(args.reference)
    sim = load_result(args.result)
    sizes = sorted({s for (_, s) in ref}, key=lambda s: int(s) if s.isdigit() else 0)
    if args.sizes:
        sizes = [s for s in args.sizes.split(",") if s in sizes]
    variants = sorted({v for (v, _) in ref})
    if not sizes or not any((v, s) in sim for v in variants for s in sizes):
        sys.exit(f"{args.result}: no cell matches a variant and size of {args.reference}")

    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 3.6), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, size in zip(axes[0], sizes):
        for i, v in enumerate(variants):
            for src, data, style in (("published", ref, "-"), ("simulated", sim, "--")):
                pts = data.get((v, size), {})
                common = sorted(set(pts) & set(ref.get((v, size), {})) & set(sim.get((v, size), {})))
                if not common:
                    continue
                base = 1.0 if args.raw else pts[common[0]]
                xs = sorted(pts)
                ax.plot(xs, [pts[x] / base for x in xs], style, marker="o", ms=3,
                        color=colors[i % len(colors)], label=f"{v} ({src})")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{size} B" if size else "")
        ax.set_xlabel("clients")
        ax.set_ylabel("tps" if args.raw else "tps / tps at fewest clients")
        ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=7)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

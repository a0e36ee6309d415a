#!/usr/bin/env python3
"""Plots a walbench result file (`walbench plot` runs this): tps against clients on a log2 axis,
one line per variant (cell label), one panel per value of the other swept keys (record size,
workload, ...). Points are the median tps over a cell's repetitions; error bars are the
distribution-free confidence interval of the median the summary records (3 or more
repetitions), else the min-max of 2 repetitions; the caption says which and at what level.

    scripts/plot_result.py RESULT.json -o OUT.png|OUT.svg [--ratio BASELINE] [--reference CSV] [--usl]

--ratio BASELINE: each variant's tps in % of the baseline variant's at the same clients and
  panel (the relative curves of the pgsql-hackers threads); no error bars.
--reference CSV: overlays a published table (variant, clients, tps and series columns such as
  record_size, ../shared/reference/README.md) dashed, on its own right-hand axis (its absolute
  numbers come from another machine), or in % of its own baseline with --ratio. A CSV column
  that names a panel key (record_size) puts its rows in that panel.
--usl: draws the Universal Scalability Law fit of each curve (scripts/usl_fit.py, the fit that
  `walbench report --usl` prints) as a thin line, with N* in the legend.

The image is written to a temporary file beside OUT and renamed over it. Needs python3-matplotlib (and python3-scipy for
--usl); scripts/setup.sh installs them.
"""
import argparse
import os
import sys
import textwrap

from result_curves import InputError, load_reference, load_result, panel_title, reference_in_panel


def fail(message):
    print(f"walbench: error: plot: {message}", file=sys.stderr)
    sys.exit(2)


def ratio_points(curve, baseline):
    """{clients: % of baseline} at the client counts both have."""
    return {n: 100.0 * p.tps / baseline.points[n].tps
            for n, p in curve.points.items() if n in baseline.points and baseline.points[n].tps > 0}


def error_bar_caption(result):
    kinds = {}
    for c in result.curves:
        for p in c.points.values():
            if p.bar == "ci":
                kinds.setdefault(("ci", p.level), set()).add(p.repetitions)
            elif p.bar == "minmax":
                kinds.setdefault(("minmax", None), set()).add(p.repetitions)
    parts = []
    for (kind, level), reps in sorted(kinds.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        r = "/".join(str(x) for x in sorted(reps))
        if kind == "ci":
            lvl = f"{100 * level:.0f}% " if isinstance(level, (int, float)) else ""
            parts.append(f"{lvl}confidence interval of the median ({r} repetitions)")
        else:
            parts.append(f"min-max of {r} repetitions")
    return "error bars: " + "; ".join(parts) if parts else "one repetition per cell: no error bars"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("result", metavar="RESULT.json")
    ap.add_argument("-o", "--output", required=True, metavar="OUT.png|OUT.svg")
    ap.add_argument("--ratio", metavar="BASELINE")
    ap.add_argument("--reference", metavar="CSV")
    ap.add_argument("--usl", action="store_true")
    ap.add_argument("--title", default="")
    args = ap.parse_args()

    ext = os.path.splitext(args.output)[1].lower()
    if ext not in (".png", ".svg"):
        fail(f"-o {args.output}: expected a file name ending in .png or .svg")
    if args.usl and args.ratio:
        fail("--usl fits tps curves; it does not combine with --ratio")
    try:
        result = load_result(args.result)
        reference = load_reference(args.reference) if args.reference else []
    except InputError as e:
        fail(str(e))
    labels = result.labels()
    if args.ratio and args.ratio not in labels:
        fail(f"--ratio {args.ratio}: no variant of that label in {args.result} (its variants: {', '.join(labels)})")
    if args.ratio and reference and not any(r.variant == args.ratio for r in reference):
        fail(f"--ratio {args.ratio}: {args.reference} has no variant {args.ratio} to take the published ratios from")
    try:
        import matplotlib
    except ImportError:
        fail(f"{sys.executable} has no matplotlib; install python3-matplotlib (scripts/setup.sh)")
    if args.usl:
        try:
            import scipy.optimize  # noqa: F401
        except ImportError:
            fail(f"--usl: {sys.executable} has no SciPy; install python3-scipy (scripts/setup.sh)")
        from usl_fit import fit_curve

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.lines import Line2D
    from matplotlib.ticker import EngFormatter, FuncFormatter

    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    color_of = {label: colors[i % len(colors)] for i, label in enumerate(labels)}
    extra_colors = iter(["0.35", "0.6", "tab:olive", "tab:cyan"] * 8)
    legend = {}  # label -> handle, one legend for the figure (a variant has one colour throughout)
    no_fit = []  # "label (panel): why"

    panels = result.panels
    ncols = min(len(panels), 4)
    nrows = (len(panels) + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(4.4 * ncols, 6.0), 3.4 * nrows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    used_reference = False
    for ax, panel in zip(axes.flat, panels):
        curves = result.curves_of(panel)
        baseline = next((c for c in curves if c.label == args.ratio), None) if args.ratio else None
        for c in curves:
            color = color_of[c.label]
            if args.ratio:
                if baseline is None:
                    continue
                pts = ratio_points(c, baseline)
                xs = sorted(pts)
                legend[c.label] = ax.plot(xs, [pts[x] for x in xs], "-o", ms=3, color=color)[0]
                continue
            pts = c.sorted_points()
            xs = [p.clients for p in pts]
            ys = [p.tps for p in pts]
            lo = [p.tps - p.lo if p.bar else 0.0 for p in pts]
            hi = [p.hi - p.tps if p.bar else 0.0 for p in pts]
            legend[c.label] = ax.errorbar(xs, ys, yerr=[lo, hi] if any(lo) or any(hi) else None,
                                          fmt="-o", ms=3, capsize=2, color=color)
            if args.usl:
                fit = fit_curve(c)
                if not fit.ok:
                    no_fit.append(f"{c.label}{' (' + panel_title(panel) + ')' if panel else ''}: {fit.why}")
                    continue
                grid = np.geomspace(min(xs), max(xs), 200)
                ax.plot(grid, fit.predict(grid), "-", lw=0.9, alpha=0.6, color=color)
                legend["USL fit"] = Line2D([], [], lw=0.9, alpha=0.6, color="0.3")
                peak = fit.peak()
                if peak is not None and min(xs) < peak < max(xs):  # a peak inside the measured range
                    ax.plot([peak], [fit.predict(peak)], "v", ms=6, color=color, mec="black", mew=0.5)
                    legend["N*, the fit's peak"] = Line2D([], [], ls="", marker="v", color="0.5", mec="black", mew=0.5)
        if args.ratio and baseline is None:
            ax.text(0.5, 0.5, f"no {args.ratio} cells here", transform=ax.transAxes, ha="center")
        if reference:
            ref_ax = ax if args.ratio else None
            ref_base = {}
            for r in reference:
                if r.variant == args.ratio:
                    belongs, extra = reference_in_panel(r, panel)
                    if belongs:
                        ref_base[extra] = r
            for r in reference:
                belongs, extra = reference_in_panel(r, panel)
                if not belongs:
                    continue
                if args.ratio:
                    base = ref_base.get(extra)
                    if base is None:
                        continue
                    pts = {n: 100.0 * t / base.points[n] for n, t in r.points.items()
                           if n in base.points and base.points[n] > 0}
                else:
                    if ref_ax is None:
                        ref_ax = ax.twinx()
                        ref_ax.set_ylabel("published tps (dashed)", fontsize=8)
                        ref_ax.yaxis.set_major_formatter(EngFormatter(sep=""))
                    pts = r.points
                xs = sorted(pts)
                if not xs:
                    continue
                name = " ".join([r.variant] + [f"{k}={v}" for k, v in extra]) + " (published)"
                if name not in legend:
                    legend[name] = None
                color = color_of.get(r.variant) or next(extra_colors)
                line = ref_ax.plot(xs, [pts[x] for x in xs], "--", marker="x", ms=4, lw=1, color=color)[0]
                legend[name] = legend[name] or line
                used_reference = True
            if ref_ax is not None and ref_ax is not ax:
                ref_ax.set_ylim(bottom=0)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_title(panel_title(panel) if panel else os.path.basename(args.result), fontsize=9)
        ax.set_xlabel("clients")
        if args.ratio:
            ax.set_ylabel(f"tps, % of {args.ratio}", fontsize=8)
        else:
            ax.set_ylabel("tps (median)", fontsize=8)
            ax.set_ylim(bottom=0)
            ax.yaxis.set_major_formatter(EngFormatter(sep=""))
        ax.grid(True, alpha=0.3)

    caption = [args.title or os.path.basename(args.result)]
    caption.append("no error bars on ratios" if args.ratio else error_bar_caption(result))
    if args.reference:
        caption.append(f"dashed: published, {os.path.basename(args.reference)}"
                       + (", right-hand axis" if used_reference and not args.ratio else "")
                       + ("" if used_reference else " (no row matches a panel)"))
    if args.usl:
        caption.append("thin: USL fit (walbench report --usl)")
    if no_fit:
        caption.append("no USL fit for " + "; ".join(no_fit))
    if result.left_out:
        caption.append(f"{result.left_out} failed cell(s) left out")
    # The figure grows by the caption above the panels and the legend below them (in inches).
    width = fig.get_figwidth()
    caption_lines = textwrap.wrap("; ".join(caption), int(width * 15))
    order = {label: i for i, label in enumerate(labels)}  # variants, then published, then the fit
    handles = sorted(((h, l) for l, h in legend.items() if h is not None),
                     key=lambda hl: (0, order[hl[1]]) if hl[1] in order else (1 if "published" in hl[1] else 2, 0))
    legend_cols = max(1, min(len(handles), int(width // 2.6)))
    legend_rows = -(-len(handles) // legend_cols)
    panels_h = 3.2 * nrows
    caption_h = 0.16 * len(caption_lines) + 0.1
    legend_h = 0.2 * legend_rows + 0.15
    height = panels_h + caption_h + legend_h
    fig.set_size_inches(width, height)
    fig.suptitle("\n".join(caption_lines), fontsize=8, y=1 - 0.05 / height)
    fig.legend([h for h, _ in handles], [l for _, l in handles], loc="lower center", ncol=legend_cols,
               fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, legend_h / height, 1, 1 - caption_h / height))
    directory = os.path.dirname(os.path.abspath(args.output))
    tmp = os.path.join(directory, f".{os.path.basename(args.output)}.{os.getpid()}.tmp{ext}")
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, args.output)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        fail(f"-o {args.output}: cannot write ({e.strerror})")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a bug, not bad input: still one line, as walbench promises
        fail(f"internal error: {type(e).__name__}: {e}")

#!/usr/bin/python3
"""Which design wins where: for every point of a walbench result (one override variant, one value
of each swept key, one client count), the variant with the highest median tps and its margin over
the runner-up, as a Markdown table per override variant (e.g. per simulated machine) and,
optionally, a winner map (matplotlib).

A point is a tie, and says so with every tied label, when it cannot be told apart:
- repetitions >= 2 on both: the runner-up's best repetition reaches the winner's worst;
- otherwise (one repetition): the margin is at most --tie-pct (default 5; on the simulator
  another seed moves a cell, measured in results/README.md "Which design wins where").
Ties are a prefix of the ranking. Labels given to --exclude (e.g. the `ideal` bound) take no
part. A failed cell is named at its point ("(failed: X)"): a design that failed did not lose.

Usage: scripts/winners.py RESULT [--exclude LABEL ...] [--tie-pct 5] [--plot FILE.png]
Exit status: 0, or 2 with a one-line error naming the file on bad input.
"""
import argparse
import json
import sys
from collections import OrderedDict

KEY_NAMES = {"workload.record_size": "record", "commit.synchronous_commit": "sync commit"}


class InputError(Exception):
    pass


def size_text(v):
    if isinstance(v, int) and v >= 1024 and v % 1024 == 0:
        return f"{v // 1024} KiB"
    return f"{v} B" if isinstance(v, int) else str(v)


def value_text(key, v):
    if key == "workload.record_size":
        return size_text(v)
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: cannot read a result file: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        raise InputError(f"{path}: expected a walbench result file (an object with \"cells\")")
    return doc


def points(doc, path, exclude):
    """{variant: {row tuple: {clients: [(label, summary)]}}} in matrix order, and failed count."""
    table = OrderedDict()
    failed = 0
    for i, cell in enumerate(doc["cells"]):
        m = cell.get("matrix")
        clients = m.get("clients", cell.get("clients")) if isinstance(m, dict) else None
        if not isinstance(clients, int):
            raise InputError(f"{path}: /cells/{i}: expected a \"matrix\" object and a client count")
        # the matrix names the strategy variant only when several are swept; else the cell's label
        label = m.get("strategy", cell.get("label", cell.get("strategy")))
        if label in exclude:
            continue
        variant = m.get("variants", "")
        row = tuple((k, m[k]) for k in m if k not in ("clients", "strategy", "variants"))
        entries = table.setdefault(variant, OrderedDict()).setdefault(row, OrderedDict()).setdefault(
            clients, [])
        s = cell.get("summary")
        if not cell.get("ok") or not isinstance(s, dict) or s.get("tps_median") is None:
            failed += 1
            entries.append((label, None))  # named at its point: a design that failed did not lose
            continue
        entries.append((label, s))
    return table, failed


def indistinct(best, s, tie_pct):
    """Whether s cannot be told apart from the best: overlapping repetitions when both have 2+,
    else a margin of at most tie_pct."""
    if best.get("repetitions", 1) >= 2 and s.get("repetitions", 1) >= 2:
        return s["tps_max"] >= best["tps_min"]
    return best["tps_median"] <= 0 or \
        (best["tps_median"] - s["tps_median"]) / best["tps_median"] * 100 <= tie_pct


def judge(entries, tie_pct):
    """(winner label or None, margin % over the runner-up or None, tied labels, failed labels).
    Ties are a prefix of the ranking: a variant ties only if every one ranked above it does."""
    failed = [label for label, s in entries if s is None]
    ranked = sorted([e for e in entries if e[1] is not None],
                    key=lambda e: e[1]["tps_median"], reverse=True)
    if not ranked:
        return None, None, [], failed
    best_label, best = ranked[0]
    tied = [best_label]
    for label, s in ranked[1:]:
        if not indistinct(best, s, tie_pct):
            break
        tied.append(label)
    margin = None
    if len(ranked) > 1 and ranked[1][1]["tps_median"] > 0:
        margin = (best["tps_median"] / ranked[1][1]["tps_median"] - 1) * 100
    return best_label, margin, tied, failed


def cell_text(winner, margin, tied, failed):
    if winner is None:
        text = "all failed"
    elif len(tied) > 3:
        text = "tie: " + ", ".join(tied[:3]) + f" +{len(tied) - 3} more"
    elif len(tied) > 1:
        text = "tie: " + ", ".join(tied)
    elif margin is None:
        text = winner
    else:
        text = f"{winner} +{margin:.0f}%"
    if failed and winner is not None:
        text += " (failed: " + ", ".join(failed) + ")"
    return text


def markdown(table, failed, tie_pct, exclude):
    out = []
    for variant, rows in table.items():
        clients = sorted({c for r in rows.values() for c in r})
        if variant:
            out.append(f"**{variant}**\n")
        out.append("| " + " | ".join(["point"] + [f"{c} clients" for c in clients]) + " |")
        out.append("|" + "---|" * (len(clients) + 1))
        for row, by_clients in rows.items():
            name = ", ".join(f"{KEY_NAMES.get(k, k)} {value_text(k, v)}" for k, v in row) or "all"
            cells = []
            for c in clients:
                cells.append(cell_text(*judge(by_clients[c], tie_pct)) if c in by_clients else "")
            out.append("| " + " | ".join([name] + cells) + " |")
        out.append("")
    note = f"Winner by median tps, margin over the runner-up; tie = within {tie_pct:g}% (one " \
           "repetition) or overlapping repetitions, a prefix of the ranking; (failed: X) names " \
           "variants whose cell failed at that point."
    if exclude:
        note += " Not competing: " + ", ".join(sorted(exclude)) + "."
    if failed:
        note += f" {failed} failed cells left out."
    out.append(note)
    return "\n".join(out) + "\n"


def plot(table, tie_pct, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    labels = []
    for rows in table.values():
        for by_clients in rows.values():
            for entries in by_clients.values():
                for label, s in entries:
                    if s is not None and label not in labels:
                        labels.append(label)
    colours = {l: plt.get_cmap("tab20")(i % 20) for i, l in enumerate(labels)}
    n = len(table)
    fig, axes = plt.subplots(1, n, figsize=(6.5 * n, 0.5 * max(len(r) for r in table.values()) + 2.2),
                             squeeze=False)
    for ax, (variant, rows) in zip(axes[0], table.items()):
        clients = sorted({c for r in rows.values() for c in r})
        names = []
        for y, (row, by_clients) in enumerate(rows.items()):
            names.append(", ".join(value_text(k, v) for k, v in row))
            for x, c in enumerate(clients):
                if c not in by_clients:
                    continue
                winner, margin, tied, failed = judge(by_clients[c], tie_pct)
                tie = len(tied) > 1
                colour = "lightgrey" if winner is None or tie else colours[winner]
                ax.add_patch(plt.Rectangle((x, y), 1, 1, facecolor=colour,
                                           hatch="//" if tie else None, edgecolor="white"))
                text = "failed" if winner is None else "tie" if tie else \
                    (f"+{margin:.0f}%" if margin is not None else "")
                if failed and winner is not None:
                    text += "*"
                ax.text(x + 0.5, y + 0.5, text, ha="center", va="center", fontsize=7)
        ax.set_xlim(0, len(clients))
        ax.set_ylim(0, len(names))
        ax.set_xticks([x + 0.5 for x in range(len(clients))], [str(c) for c in clients])
        ax.set_yticks([y + 0.5 for y in range(len(names))], names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("clients")
        ax.set_title(variant or "winner")
    fig.legend(handles=[Patch(facecolor=colours[l], label=l) for l in labels],
               loc="lower center", ncol=min(len(labels), 6), fontsize=8)
    fig.suptitle("highest median tps per point (margin over the runner-up; grey hatched: tie; "
                 "*: a variant failed there)")
    fig.tight_layout(rect=(0, 0.08 + 0.03 * (len(labels) // 6), 1, 0.95))
    fig.savefig(path, dpi=110)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("result")
    ap.add_argument("--exclude", action="append", default=[], metavar="LABEL",
                    help="a variant label that takes no part (repeatable), e.g. ideal")
    ap.add_argument("--tie-pct", type=float, default=5.0,
                    help="one-repetition points closer than this are ties (default 5)")
    ap.add_argument("--plot", metavar="FILE", help="also draw the winner map (.png or .svg)")
    args = ap.parse_args(argv)
    if args.tie_pct < 0:
        print("winners.py: error: --tie-pct must be >= 0", file=sys.stderr)
        return 2
    try:
        doc = load(args.result)
        table, failed = points(doc, args.result, set(args.exclude))
        if not table:
            raise InputError(f"{args.result}: no successful cells to compare")
    except InputError as e:
        print(f"winners.py: error: {e}", file=sys.stderr)
        return 2
    sys.stdout.write(markdown(table, failed, args.tie_pct, set(args.exclude)))
    if args.plot:
        plot(table, args.tie_pct, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

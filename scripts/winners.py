#!/usr/bin/python3
"""Which design wins where: for every point of a walbench result (one override variant, one value
of each swept key, one client count), the variant with the highest median tps and its margin over
the runner-up, as a Markdown table per override variant (e.g. per simulated machine) and,
optionally, a winner map (matplotlib).

A point is a tie, and says so with every tied label, when it cannot be told apart:
- repetitions >= 2 on both: the runner-up's best repetition reaches the winner's worst;
- otherwise (one repetition; the simulator is deterministic for one seed, but another seed moves a
  cell by a few percent): the margin is under --tie-pct (default 5).
Labels given to --exclude (e.g. the `ideal` bound) take no part. Failed cells are left out and
counted under the table.

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
        if not isinstance(m, dict) or "clients" not in m:
            raise InputError(f"{path}: /cells/{i}/matrix: expected an object with \"clients\"")
        label = m.get("strategy", cell.get("strategy"))
        if label in exclude:
            continue
        s = cell.get("summary")
        if not cell.get("ok") or not isinstance(s, dict) or s.get("tps_median") is None:
            failed += 1
            continue
        variant = m.get("variants", "")
        row = tuple((k, m[k]) for k in m if k not in ("clients", "strategy", "variants"))
        table.setdefault(variant, OrderedDict()).setdefault(row, OrderedDict()).setdefault(
            m["clients"], []).append((label, s))
    return table, failed


def judge(entries, tie_pct):
    """(winner label, margin % over the runner-up or None, tied labels)."""
    ranked = sorted(entries, key=lambda e: e[1]["tps_median"], reverse=True)
    best_label, best = ranked[0]
    if len(ranked) == 1:
        return best_label, None, [best_label]
    tied = [best_label]
    for label, s in ranked[1:]:
        both_repeated = best.get("repetitions", 1) >= 2 and s.get("repetitions", 1) >= 2
        if both_repeated:
            same = s["tps_max"] >= best["tps_min"]
        else:
            same = best["tps_median"] <= 0 or \
                (best["tps_median"] - s["tps_median"]) / best["tps_median"] * 100 < tie_pct
        if same:
            tied.append(label)
    runner_up = ranked[1][1]["tps_median"]
    margin = (best["tps_median"] / runner_up - 1) * 100 if runner_up > 0 else None
    return best_label, margin, tied


def cell_text(winner, margin, tied):
    if len(tied) > 3:
        return "tie: " + ", ".join(tied[:3]) + f" +{len(tied) - 3} more"
    if len(tied) > 1:
        return "tie: " + ", ".join(tied)
    if margin is None:
        return winner
    return f"{winner} +{margin:.0f}%"


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
           "repetition) or overlapping repetitions."
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
                for label, _ in entries:
                    if label not in labels:
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
                winner, margin, tied = judge(by_clients[c], tie_pct)
                tie = len(tied) > 1
                ax.add_patch(plt.Rectangle((x, y), 1, 1, facecolor=colours[winner],
                                           hatch="//" if tie else None, edgecolor="white"))
                text = "tie" if tie else (f"+{margin:.0f}%" if margin is not None else "")
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
    fig.suptitle("highest median tps per point (margin over the runner-up; hatched: tie)")
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

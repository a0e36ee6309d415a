#!/usr/bin/env python3
"""Where the clients' time went in a lock-wait trace (`walbench run --trace FILE.json`).

Reads the Chrome trace event file walbench writes (README "Lock-wait traces") and prints, for
every slice name on the client tracks, its total time as a share of the clients' time in the
window, how many slices there were and how long they lasted (mean, median, max). Client time is
the number of client tracks (`client N`; the WAL writer is left out unless --writer) times the
window, from its first instant to its last event. Shares are inclusive: a slice's time counts
the slices nested in it (a `wait <lock>` holds the wait events its client published meanwhile;
a hold can hold waits for other locks), so they may add up to more than 100%; "outside every
slice" is the time no slice covered (the client running its own code between locks). Slices
the window cut (open at its start, or closed by its end: `cut_by_window_end`) count in the
shares and in "count" but not in mean, median and max ("cut" says how many). A slice closed and
reopened around an out-of-order release (`continued`) counts once. A slice that begins at the
window's first instant counts as cut: the file does not say whether it began there or earlier
(at most one per track).

What a `wait <lock>` slice was made of is the question this answers that Perfetto does not add
up: its "asleep" column is the time inside it under a nested wait event (the client asleep on
its semaphore or in a spin-delay sleep, or doing I/O), and "not asleep" the rest: attempts,
spinning on the wait-list lock, the cache-line waits of those accesses, and the time between a
wake-up and the retry. A lock whose waits are mostly "not asleep" is contended on its state word
(or its wait list), not on holders who sleep.

Usage: scripts/trace_summary.py TRACE.json [--top N] [--writer] [--json]
  --top N    the N slice names with the most time (default 25; 0: all)
  --writer   count the WAL writer's track as a client track too
  --json     print the table as JSON (one object per slice name) instead of text
"""
import argparse
import json
import os
import statistics
import sys


class TraceError(Exception):
    pass


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise TraceError(f"{path}: not JSON ({e.msg} at line {e.lineno}): expected a trace "
                         "written by `walbench run --trace`")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceError(f"{path}: $.traceEvents: expected a list of trace events "
                         "(a file written by `walbench run --trace`)")
    meta = doc.get("otherData", {}).get("walbench")
    if not isinstance(meta, dict):
        raise TraceError(f"{path}: $.otherData.walbench: expected walbench's trace metadata "
                         "(cell, clients, window_start_ns, ...)")
    return doc, meta


def summarise(doc, meta, writer=False):
    events = doc["traceEvents"]
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("pid") == 1 and e.get("name") == "thread_name":
            names[e["tid"]] = e.get("args", {}).get("name", "")
    tracks = {tid for tid, n in names.items()
              if n.startswith("client ") or (writer and n == "WAL writer")}
    if not tracks:
        raise TraceError("$.traceEvents: no client tracks (thread_name metadata of pid 1)")
    window_start = meta.get("window_start_ns")
    if not isinstance(window_start, (int, float)):
        raise TraceError("$.otherData.walbench.window_start_ns: expected the window's start in ns "
                         "(null: the run's timed window never opened, so nothing was traced)")
    # Timestamps are microseconds from ts_origin_ns (0 on the simulator, the window's start on
    # real threads).
    start = (float(window_start) - float(meta.get("ts_origin_ns", 0) or 0)) / 1000.0
    timed = [e for e in events if e.get("ph") in ("B", "E") and e.get("pid") == 1
             and e.get("tid") in tracks]
    end = max((float(e["ts"]) for e in events if "ts" in e), default=start)
    span = end - start
    if span <= 0:
        raise TraceError("$.traceEvents: no events after the window's start")
    # Each track's events are in time order in the file (and nested); a stable sort by time
    # keeps that order for equal timestamps (a zero-length slice, a reopened one).
    timed.sort(key=lambda e: float(e["ts"]))

    stats = {}  # display name -> {"cat", "durations", "cut", "total", "asleep"}

    def stat(name, cat):
        return stats.setdefault(name, {"cat": cat, "durations": [], "cut": [], "total": 0.0,
                                       "asleep": 0.0})

    covered = 0.0
    stacks = {tid: [] for tid in tracks}
    # Per track, the last closed piece of each raw slice name: (display name, index into its
    # durations); a `continued` begin (the slice reopened after a lock released out of order)
    # extends that piece instead of starting a new slice.
    last_piece = {tid: {} for tid in tracks}
    for e in timed:
        tid = e["tid"]
        stack = stacks[tid]
        ts = float(e["ts"])
        args = e.get("args", {}) or {}
        if e["ph"] == "B":
            raw = e["name"]
            piece = last_piece[tid].get(raw) if args.get("continued") else None
            if piece is not None:
                name = piece[0]
            else:
                name = raw
                if e.get("cat") == "lock_wait" and args.get("mode"):
                    name = f"{raw} ({args['mode']})"  # shared and exclusive waiters apart
            stack.append({"raw": raw, "name": name, "cat": e.get("cat", ""), "ts": ts,
                          "asleep": 0.0, "piece": piece,
                          "cut": ts <= start})  # open when the window began: cut there
            continue
        if not stack:
            continue  # an end whose begin preceded the window
        s = stack.pop()
        d = ts - s["ts"]
        cut = s["cut"] or bool(args.get("cut_by_window_end"))
        st = stat(s["name"], s["cat"])
        st["total"] += d
        st["asleep"] += s["asleep"]
        if s["piece"] is not None:
            i = s["piece"][1]
            st["durations"][i] += d
            st["cut"][i] = st["cut"][i] or cut
        else:
            st["durations"].append(d)
            st["cut"].append(cut)
            i = len(st["durations"]) - 1
        last_piece[tid][s["raw"]] = (s["name"], i)
        if stack:
            if s["cat"] == "wait_event" and stack[-1]["cat"] == "lock_wait":
                stack[-1]["asleep"] += d
        else:
            covered += d
    for tid, stack in stacks.items():  # open at the last event: cut there
        while stack:
            s = stack.pop()
            d = end - s["ts"]
            st = stat(s["name"], s["cat"])
            st["total"] += d
            st["asleep"] += s["asleep"]
            if s["piece"] is not None:  # a reopened slice: still the earlier piece's slice
                i = s["piece"][1]
                st["durations"][i] += d
                st["cut"][i] = True
            else:
                st["durations"].append(d)
                st["cut"].append(True)
            if not stack:
                covered += d
    client_time = span * len(tracks)
    rows = []
    for name, st in stats.items():
        whole = [d for d, c in zip(st["durations"], st["cut"]) if not c]
        row = {"name": name, "kind": st["cat"] or "slice", "total_us": st["total"],
               "share": st["total"] / client_time, "count": len(st["durations"]),
               "cut": len(st["durations"]) - len(whole),
               "mean_us": sum(whole) / len(whole) if whole else None,
               "median_us": statistics.median(whole) if whole else None,
               "max_us": max(whole) if whole else None}
        if st["cat"] == "lock_wait":
            row["asleep_share"] = st["asleep"] / st["total"] if st["total"] > 0 else 0.0
        rows.append(row)
    rows.sort(key=lambda r: -r["total_us"])
    return {"cell": meta.get("cell"), "label": meta.get("label"), "clients": meta.get("clients"),
            "platform": meta.get("platform"), "seed": meta.get("seed"),
            "tracks": len(tracks), "window_us": span, "client_time_us": client_time,
            "outside_share": max(0.0, client_time - covered) / client_time, "slices": rows}


def print_text(s, top):
    print(f"cell {s['cell']} ({s['label']}, {s['clients']} clients, {s['platform']}, seed "
          f"{s['seed']}): {s['tracks']} client tracks x {s['window_us']:.1f} us = "
          f"{s['client_time_us'] / 1000:.1f} ms of client time")
    rows = s["slices"] if top == 0 else s["slices"][:top]
    w = max([len("slice")] + [len(r["name"]) for r in rows])

    def us(v):
        return f"{v:>9.2f}" if v is not None else f"{'-':>9}"

    print(f"{'slice':<{w}}  {'kind':<10} {'share':>7} {'count':>7} {'cut':>5} {'mean us':>9} "
          f"{'median us':>9} {'max us':>9}  {'asleep':>7}")
    for r in rows:
        asleep = f"{r['asleep_share'] * 100:6.1f}%" if "asleep_share" in r else ""
        line = (f"{r['name']:<{w}}  {r['kind']:<10} {r['share'] * 100:6.1f}% {r['count']:>7} "
                f"{r['cut']:>5} {us(r['mean_us'])} {us(r['median_us'])} {us(r['max_us'])}  "
                f"{asleep:>7}")
        print(line.rstrip())
    print(f"{'outside every slice':<{w}}  {'':<10} {s['outside_share'] * 100:6.1f}%")
    if top and len(s["slices"]) > top:
        print(f"({len(s['slices']) - top} more slice names; --top 0 lists all)")
    print("share: of the clients' time, inclusive (nested slices count in their parent too); "
          "cut: slices the window's start or end cut, counted in share and count but not in "
          "mean, median and max; asleep: the part of a lock wait under a nested wait event "
          "(semaphore or spin-delay sleep, I/O); the rest is attempts, wait-list-lock spinning "
          "and their line waits")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--writer", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.top < 0:
        print("trace_summary: --top: expected 0 (all) or a positive count", file=sys.stderr)
        return 2
    try:
        doc, meta = load(a.trace)
        s = summarise(doc, meta, a.writer)
    except TraceError as e:
        print(f"trace_summary: {e}", file=sys.stderr)
        return 2
    try:
        if a.json:
            json.dump(s, sys.stdout, indent=1)
            print()
        else:
            print_text(s, a.top)
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())

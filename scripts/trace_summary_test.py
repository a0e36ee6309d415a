#!/usr/bin/env python3
"""Tests of scripts/trace_summary.py (ctest trace_summary): shares of client time, the asleep
part of lock waits, nested and reopened slices, slices cut at the last event, the WAL writer
left out unless asked for, and one-line errors naming the JSON path on bad input."""
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import trace_summary  # noqa: E402


def meta_events(clients, writer=True):
    ev = [{"ph": "M", "pid": 1, "tid": 0, "name": "process_name", "args": {"name": "clients"}}]
    for c in range(clients):
        ev.append({"ph": "M", "pid": 1, "tid": c + 1, "name": "thread_name",
                   "args": {"name": f"client {c}"}})
    if writer:
        ev.append({"ph": "M", "pid": 1, "tid": clients + 1, "name": "thread_name",
                   "args": {"name": "WAL writer"}})
    return ev


def sl(tid, name, cat, b, e, args_b=None, args_e=None):
    begin = {"ph": "B", "pid": 1, "tid": tid, "ts": b, "name": name, "cat": cat}
    if args_b:
        begin["args"] = args_b
    end = {"ph": "E", "pid": 1, "tid": tid, "ts": e, "name": name}
    if args_e:
        end["args"] = args_e
    return [begin, end]


def doc(events, clients=2, start_us=1000.0, origin_us=0.0):
    return {"otherData": {"walbench": {"cell": 3, "clients": clients, "label": "x",
                                       "platform": "sim", "seed": 1, "window_s": 0.0001,
                                       "window_start_ns": start_us * 1000,
                                       "ts_origin_ns": origin_us * 1000}},
            "traceEvents": meta_events(clients) + events}


def run(d, *args):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        if isinstance(d, str):
            f.write(d)
        else:
            json.dump(d, f)
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            rc = trace_summary.main([f.name, *args])
    finally:
        os.unlink(f.name)
    return rc, out.getvalue(), err.getvalue()


def rows(d, *args):
    rc, out, err = run(d, "--json", *args)
    assert rc == 0, err
    s = json.loads(out)
    return s, {r["name"]: r for r in s["slices"]}


class TraceSummaryTest(unittest.TestCase):
    def test_shares_and_asleep_part(self):
        # Two clients over 100 us (1000..1100): client 0 waits 40 us for a lock, asleep 30 of
        # them, then holds it 10 us; client 1 runs a 50 us statement. Last event at 1100.
        ev = (sl(1, "wait LWLock:X", "lock_wait", 1000, 1040, args_b={"mode": "shared"})
              + sl(1, "LWLock:X", "wait_event", 1005, 1035)
              + sl(1, "LWLock:X exclusive", "hold", 1040, 1050)
              + sl(2, "Client:ClientRead", "wait_event", 1050, 1100))
        s, r = rows(doc(ev))
        self.assertEqual(s["tracks"], 2)
        self.assertAlmostEqual(s["window_us"], 100.0)
        self.assertAlmostEqual(r["wait LWLock:X (shared)"]["share"], 40 / 200)
        self.assertAlmostEqual(r["wait LWLock:X (shared)"]["asleep_share"], 30 / 40)
        self.assertAlmostEqual(r["LWLock:X"]["share"], 30 / 200)
        self.assertAlmostEqual(r["LWLock:X exclusive"]["mean_us"], 10.0)
        self.assertNotIn("asleep_share", r["Client:ClientRead"])
        # Covered at top level: 40 + 10 + 50 of 200 us.
        self.assertAlmostEqual(s["outside_share"], 100 / 200)

    def test_nested_wait_inside_a_hold_counts_in_both(self):
        ev = (sl(1, "LWLock:W exclusive", "hold", 1000, 1060)
              + sl(1, "wait LWLock:I", "lock_wait", 1010, 1030)
              + sl(2, "Client:ClientRead", "wait_event", 1000, 1060))
        s, r = rows(doc(ev))
        self.assertAlmostEqual(r["LWLock:W exclusive"]["total_us"], 60.0)
        self.assertAlmostEqual(r["wait LWLock:I"]["total_us"], 20.0)
        self.assertAlmostEqual(r["wait LWLock:I"]["asleep_share"], 0.0)
        self.assertAlmostEqual(s["outside_share"], 0.0)

    def test_reopened_slice_is_one_slice_of_its_own_track(self):
        # A lock wait closed and reopened (args continued, no mode) around an out-of-order
        # release, while another client's wait of the same name ends in between.
        ev = sorted(sl(1, "wait LWLock:A", "lock_wait", 1001, 1010, args_b={"mode": "shared"})
                    + sl(1, "wait LWLock:A", "lock_wait", 1010, 1040, args_b={"continued": True})
                    + sl(2, "wait LWLock:A", "lock_wait", 1002, 1005, args_b={"mode": "shared"})
                    + sl(2, "Client:ClientRead", "wait_event", 1005, 1050),
                    key=lambda e: e["ts"])
        _, r = rows(doc(ev))
        self.assertNotIn("wait LWLock:A", r)
        w = r["wait LWLock:A (shared)"]
        self.assertEqual(w["count"], 2)
        self.assertAlmostEqual(w["max_us"], 39.0)
        self.assertAlmostEqual(w["median_us"], 21.0)  # 3 and 39

    def test_cut_slices_count_in_shares_not_in_durations(self):
        # Client 0's wait is open when the window begins (it starts at the first instant) and
        # client 1's is closed by the window's end.
        ev = (sl(1, "wait LWLock:X", "lock_wait", 1000, 1020, args_b={"mode": "exclusive"})
              + sl(1, "wait LWLock:X", "lock_wait", 1030, 1040, args_b={"mode": "exclusive"})
              + sl(2, "wait LWLock:X", "lock_wait", 1060, 1100, args_b={"mode": "exclusive"},
                   args_e={"cut_by_window_end": True}))
        _, r = rows(doc(ev))
        w = r["wait LWLock:X (exclusive)"]
        self.assertEqual(w["count"], 3)
        self.assertEqual(w["cut"], 2)
        self.assertAlmostEqual(w["share"], 70 / 200)
        self.assertAlmostEqual(w["max_us"], 10.0)
        self.assertAlmostEqual(w["mean_us"], 10.0)
        ev = sl(1, "IPC:G", "wait_event", 1000, 1100) + sl(2, "IPC:G", "wait_event", 1000, 1100)
        _, r = rows(doc(ev))
        self.assertIsNone(r["IPC:G"]["median_us"])
        rc, out, _ = run(doc(ev))
        self.assertEqual(rc, 0)
        self.assertIn("IPC:G", out)

    def test_reopened_slice_open_at_the_end_counts_once(self):
        ev = (sl(1, "LWLock:A exclusive", "hold", 1010, 1020)
              + [{"ph": "B", "pid": 1, "tid": 1, "ts": 1020, "name": "LWLock:A exclusive",
                  "cat": "hold", "args": {"continued": True}}]
              + sl(2, "Client:ClientRead", "wait_event", 1000, 1100))
        _, r = rows(doc(ev))
        self.assertEqual(r["LWLock:A exclusive"]["count"], 1)
        self.assertEqual(r["LWLock:A exclusive"]["cut"], 1)
        self.assertAlmostEqual(r["LWLock:A exclusive"]["total_us"], 90.0)

    def test_real_thread_timestamps_start_at_the_window(self):
        # On real threads ts_origin_ns is the window's start: timestamps begin near 0.
        ev = (sl(1, "wait LWLock:X", "lock_wait", 0, 40, args_b={"mode": "shared"})
              + sl(2, "Client:ClientRead", "wait_event", 50, 100))
        s, r = rows(doc(ev, start_us=5e6, origin_us=5e6))
        self.assertAlmostEqual(s["window_us"], 100.0)
        self.assertAlmostEqual(r["wait LWLock:X (shared)"]["share"], 40 / 200)

    def test_open_slice_cut_at_last_event_and_writer_left_out(self):
        ev = ([{"ph": "B", "pid": 1, "tid": 1, "ts": 1020, "name": "IPC:G", "cat": "wait_event"}]
              + sl(2, "Client:ClientRead", "wait_event", 1000, 1100)
              + sl(3, "IO:WALWrite", "wait_event", 1000, 1100))  # tid 3: the WAL writer
        s, r = rows(doc(ev))
        self.assertEqual(s["tracks"], 2)
        self.assertAlmostEqual(r["IPC:G"]["total_us"], 80.0)
        self.assertNotIn("IO:WALWrite", r)
        s, r = rows(doc(ev), "--writer")
        self.assertEqual(s["tracks"], 3)
        self.assertAlmostEqual(r["IO:WALWrite"]["share"], 100 / 300)

    def test_text_output(self):
        ev = (sl(1, "wait LWLock:X", "lock_wait", 1000, 1040)
              + sl(2, "Client:ClientRead", "wait_event", 1000, 1100))
        rc, out, _ = run(doc(ev), "--top", "1")
        self.assertEqual(rc, 0)
        self.assertIn("cell 3 (x, 2 clients, sim, seed 1)", out)
        self.assertIn("Client:ClientRead", out)
        self.assertNotIn("wait LWLock:X", out)
        self.assertIn("1 more slice names", out)

    def test_errors_name_the_path(self):
        rc, _, err = run("{not json")
        self.assertEqual(rc, 2)
        self.assertIn("not JSON", err)
        rc, _, err = run({"traceEvents": {}})
        self.assertEqual(rc, 2)
        self.assertIn("$.traceEvents: expected a list", err)
        rc, _, err = run({"traceEvents": []})
        self.assertIn("$.otherData.walbench", err)
        d = doc([])
        d["traceEvents"] = [e for e in d["traceEvents"] if e.get("name") != "thread_name"]
        rc, _, err = run(d)
        self.assertIn("no client tracks", err)
        rc, _, err = run(doc(sl(1, "a", "hold", 1000, 1010)), "--top", "-1")
        self.assertEqual(rc, 2)
        self.assertIn("--top", err)
        rc, _, err = run(doc([]))
        self.assertIn("no events after the window's start", err)
        d = doc(sl(1, "a", "hold", 1000, 1010))
        d["otherData"]["walbench"]["window_start_ns"] = None
        rc, _, err = run(d)
        self.assertEqual(rc, 2)
        self.assertIn("$.otherData.walbench.window_start_ns", err)
        self.assertEqual(len(err.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()

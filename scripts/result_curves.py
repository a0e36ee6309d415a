"""Reads a walbench result file (harness/RESULTS.md) as tps-against-clients curves, for
scripts/plot_result.py (`walbench plot`) and scripts/usl_fit.py (`walbench report --usl`).

A curve is one variant (the cell's label) in one panel; a panel is one combination of the matrix
keys other than clients, strategy and variants (and the paths an override variant sets, which
its label already names), e.g. one record size. Cells that failed or have no summary are left
out and counted. Bad input raises InputError with a one-line message naming the file and what
was expected.
"""
import csv
import json
import math
from dataclasses import dataclass, field

LABEL_KEYS = {"clients", "strategy", "variants"}


class InputError(Exception):
    pass


@dataclass
class Point:
    clients: int
    tps: float
    lo: float = None  # error bar, None without one
    hi: float = None
    bar: str = ""     # what the bar is: "ci" or "minmax"
    level: float = None  # the CI's level
    repetitions: int = 1


@dataclass
class Curve:
    label: str
    panel: tuple  # ((matrix key, value text), ...)
    points: dict = field(default_factory=dict)  # clients -> Point

    def sorted_points(self):
        return [self.points[n] for n in sorted(self.points)]


@dataclass
class ResultCurves:
    path: str
    panels: list  # panel tuples in matrix order
    curves: list  # Curve, in matrix order
    left_out: int  # cells failed or without a summary

    def labels(self):
        seen = []
        for c in self.curves:
            if c.label not in seen:
                seen.append(c.label)
        return seen

    def curves_of(self, panel):
        return [c for c in self.curves if c.panel == panel]


def panel_title(panel):
    """record_size=16 for workload.record_size (what the threads call it), else KEY=VALUE."""
    return " ".join(f"{'record_size' if k == 'workload.record_size' else k}={v}" for k, v in panel) \
        if panel else "all cells"


def _value_text(cell, key, value):
    if key == "workload.record_size":
        label = cell.get("workload", {}).get("record_size_label")
        if isinstance(label, str):
            return label
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def load_result(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not JSON ({e}); expected a result file written by walbench run")
    if not isinstance(doc, dict) or not isinstance(doc.get("context"), dict) or not isinstance(doc.get("cells"), list):
        raise InputError(f"{path}: not a walbench result file (expected an object with \"context\" and \"cells\")")

    panels, curves, by_key, left_out = [], [], {}, 0
    for i, cell in enumerate(doc["cells"]):
        where = f"{path}: cells[{i}]"
        if not isinstance(cell, dict):
            raise InputError(f"{where}: expected an object")
        label, clients, matrix = cell.get("label"), cell.get("clients"), cell.get("matrix", {})
        if not isinstance(label, str) or not label:
            raise InputError(f"{where}/label: expected a non-empty string")
        if not isinstance(clients, int) or isinstance(clients, bool) or clients < 1:
            raise InputError(f"{where}/clients: expected a positive integer")
        if not isinstance(matrix, dict):
            raise InputError(f"{where}/matrix: expected an object")
        summary = cell.get("summary")
        if cell.get("ok") is not True or not isinstance(summary, dict) or not _number(summary.get("tps_median")):
            left_out += 1
            continue
        set_paths = set(cell.get("set") or {})
        panel = tuple((k, _value_text(cell, k, v)) for k, v in matrix.items()
                      if k not in LABEL_KEYS and k not in set_paths)
        key = (label, panel)
        if key not in by_key:
            by_key[key] = Curve(label, panel)
            curves.append(by_key[key])
            if panel not in panels:
                panels.append(panel)
        curve = by_key[key]
        if clients in curve.points:
            raise InputError(f"{where}: a second cell of variant {label} at {clients} clients"
                             f"{' in ' + panel_title(panel) if panel else ''}; the matrix keys do not tell them apart")
        curve.points[clients] = _point(clients, summary)
    if not curves:
        raise InputError(f"{path}: no cell with a tps to plot ({left_out} failed or without a summary)")
    return ResultCurves(path, panels, curves, left_out)


def _point(clients, summary):
    p = Point(clients, float(summary["tps_median"]), repetitions=int(summary.get("repetitions") or 1))
    ci = summary.get("tps_ci")
    if isinstance(ci, dict) and _number(ci.get("lo")) and _number(ci.get("hi")):
        p.lo, p.hi, p.bar, p.level = float(ci["lo"]), float(ci["hi"]), "ci", ci.get("level")
    elif p.repetitions >= 2 and _number(summary.get("tps_min")) and _number(summary.get("tps_max")):
        p.lo, p.hi, p.bar = float(summary["tps_min"]), float(summary["tps_max"]), "minmax"
    return p


@dataclass
class ReferenceCurve:
    variant: str
    columns: tuple  # ((column, value), ...) of the columns other than variant, clients, tps
    points: dict    # clients -> tps


def load_reference(path):
    """A published table (../shared/reference/*.csv): variant, clients, tps and series columns."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text CSV file")
    if not rows:
        raise InputError(f"{path}: empty; expected a header with variant, clients and tps")
    header = [h.strip() for h in rows[0]]
    if "wait_event" in header and "tps" not in header:
        raise InputError(f"{path}: a wait-event table (column wait_event, no tps); plot draws tps curves")
    missing = [c for c in ("variant", "clients", "tps") if c not in header]
    if missing:
        raise InputError(f"{path}: header lacks column(s) {', '.join(missing)} (the header has {', '.join(header)})")
    series_cols = [h for h in header if h not in ("variant", "clients", "tps")]
    curves = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(f"{path}:{line}: {len(row)} fields; the header has {len(header)}")
        values = dict(zip(header, (c.strip() for c in row)))
        try:
            clients = int(values["clients"])
            tps = float(values["tps"])
        except ValueError:
            raise InputError(f"{path}:{line}: clients must be an integer and tps a number")
        if clients < 1 or not math.isfinite(tps) or tps < 0:
            raise InputError(f"{path}:{line}: expected clients >= 1 and a non-negative tps")
        key = (values["variant"], tuple((c, values[c]) for c in series_cols))
        curves.setdefault(key, ReferenceCurve(key[0], key[1], {})).points[clients] = tps
    if not curves:
        raise InputError(f"{path}: no rows")
    return list(curves.values())


def same_value(a, b):
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def reference_in_panel(ref, panel):
    """Whether a reference curve belongs to a panel: each of its columns that names a panel key
    (the key or its last part: record_size for workload.record_size) has that key's value.
    Returns (belongs, the columns that name no panel key, to tell the curve apart)."""
    panel_values = {}
    for key, value in panel:
        panel_values[key] = value
        panel_values.setdefault(key.rsplit(".", 1)[-1], value)
    extra = []
    for col, value in ref.columns:
        if col in panel_values:
            if not same_value(value, panel_values[col]):
                return False, ()
        else:
            extra.append((col, value))
    return True, tuple(extra)

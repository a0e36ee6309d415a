#!/usr/bin/env python3
"""Fits Gunther's Universal Scalability Law to each tps-against-clients curve of a walbench
result file and prints one table per panel (`walbench report --usl` runs this):

    X(N) = lambda N / (1 + sigma (N - 1) + kappa N (N - 1))

lambda is the throughput of one client, sigma the contention (serialised fraction), kappa the
coherency cost (crosstalk); with kappa > 0 the curve peaks at N* = sqrt((1 - sigma) / kappa).
The fit is scipy.optimize.least_squares (trust-region reflective, which keeps 0 <= sigma <= 1
and kappa >= 0) on relative residuals X_fit / X - 1, so each client count weighs the same
whether it runs at a thousand tps or a million. R^2 is over tps (1 - SS_res / SS_tot), max
resid the largest |X_fit / X - 1|. A sigma or kappa whose term adds less than 1e-6 to the
denominator at the largest client count is reported as 0 (the solver stops near a bound, not on
it), so a straight or flattening curve has N* "none". A curve with fewer than 3 client counts,
or a client count whose tps is 0, is not fitted and says why. scripts/plot_result.py draws the
same fit (--usl).

    scripts/usl_fit.py RESULT.json

Needs python3-scipy (Debian; scripts/setup.sh installs it).
"""
import math
import os
import sys
from dataclasses import dataclass

MIN_POINTS = 3
NEGLIGIBLE = 1e-6


@dataclass
class UslFit:
    ok: bool
    why: str = ""             # why there is no fit (ok False)
    lam: float = 0.0
    sigma: float = 0.0
    kappa: float = 0.0
    r2: float = None          # None when every tps is the same (SS_tot 0)
    max_rel_resid: float = 0.0
    points: int = 0

    def peak(self):
        """N* = sqrt((1 - sigma) / kappa), at least 1 (a curve falling from one client on peaks
        there), or None when kappa is 0 (no peak: the curve only flattens)."""
        if not self.ok or self.kappa <= 0:
            return None
        return max(1.0, math.sqrt(max(0.0, 1.0 - self.sigma) / self.kappa))

    def predict(self, n):
        return usl(n, self.lam, self.sigma, self.kappa)


def usl(n, lam, sigma, kappa):
    return lam * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))


def fit_usl(clients, tps):
    """Least-squares USL fit of tps (a sequence) against clients (positive integers, distinct)."""
    import numpy as np
    from scipy.optimize import least_squares

    n = np.asarray(clients, dtype=float)
    x = np.asarray(tps, dtype=float)
    if len(n) < MIN_POINTS:
        return UslFit(False, f"{len(n)} client count{'s' if len(n) != 1 else ''}; the fit needs {MIN_POINTS} or more",
                      points=len(n))
    if np.any(x <= 0):
        zero = int(n[np.argmax(x <= 0)])
        return UslFit(False, f"tps 0 at {zero} clients; the fit needs a positive tps at every client count",
                      points=len(n))
    order = np.argsort(n)
    n, x = n[order], x[order]

    def residuals(p):
        return usl(n, *p) / x - 1.0

    # Starting points: no loss (sigma = kappa = 0) from the first point, and a few shapes around
    # it; least_squares is local, so the best of several starts is kept.
    lam0 = x[0] / n[0]
    best = None
    for sigma0, kappa0 in ((0.0, 0.0), (0.05, 1e-4), (0.5, 1e-6), (0.9, 1e-3)):
        r = least_squares(residuals, x0=[lam0, sigma0, kappa0],
                          bounds=([0.0, 0.0, 0.0], [np.inf, 1.0, np.inf]),
                          x_scale=[lam0, 0.1, 1e-4], method="trf", max_nfev=5000)
        if best is None or r.cost < best.cost:
            best = r
    lam, sigma, kappa = (float(v) for v in best.x)
    # The bounded solver stops near a bound, not on it: a term that adds less than 1e-6 to the
    # denominator at the largest client count is 0 (so a straight line has no peak).
    top = float(n[-1])
    if sigma * (top - 1.0) < NEGLIGIBLE:
        sigma = 0.0
    if kappa * top * (top - 1.0) < NEGLIGIBLE:
        kappa = 0.0
    fitted = usl(n, lam, sigma, kappa)
    ss_res = float(np.sum((x - fitted) ** 2))
    ss_tot = float(np.sum((x - x.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else None
    return UslFit(True, lam=lam, sigma=sigma, kappa=kappa, r2=r2,
                  max_rel_resid=float(np.max(np.abs(fitted / x - 1.0))), points=len(n))


def fit_curve(curve):
    pts = curve.sorted_points()
    return fit_usl([p.clients for p in pts], [p.tps for p in pts])


def format_table(result):
    from result_curves import panel_title

    lines = ["USL fits, X(N) = lambda N / (1 + sigma (N-1) + kappa N (N-1)); lambda: the fitted tps of 1 client, "
             "N*: the predicted peak (none: kappa 0)"]
    header = ("variant", "points", "lambda", "sigma", "kappa", "N*", "R^2", "max resid")
    for panel in result.panels:
        rows = []
        for curve in result.curves_of(panel):
            f = fit_curve(curve)
            if not f.ok:
                rows.append((curve.label, str(f.points), f"no fit: {f.why}"))
                continue
            peak = f.peak()
            rows.append((curve.label, str(f.points), f"{f.lam:.6g}", f"{f.sigma:.4g}", f"{f.kappa:.4g}",
                         "none" if peak is None else f"{peak:.0f}",
                         "n/a (flat)" if f.r2 is None else f"{f.r2:.4f}", f"{100 * f.max_rel_resid:.1f}%"))
        widths = [max(len(r[i]) for r in rows + [header] if i < len(r) and len(r) == len(header))
                  for i in range(len(header))]
        lines.append("")
        if panel:
            lines.append(panel_title(panel))
        lines.append("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
        for r in rows:
            if len(r) == len(header):
                lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
            else:
                lines.append(f"{r[0].ljust(widths[0])}  {r[1].rjust(widths[1])}  {r[2]}")
    if result.left_out:
        lines.append("")
        lines.append(f"{result.left_out} cell(s) failed or without a summary: left out of the fits")
    return "\n".join(lines)


def main(argv):
    from result_curves import InputError, load_result

    if len(argv) != 2:
        print("walbench: error: usage: usl_fit.py RESULT.json", file=sys.stderr)
        return 2
    try:
        import scipy.optimize  # noqa: F401
    except ImportError:
        print(f"walbench: error: report --usl: {sys.executable} has no SciPy; install python3-scipy "
              "(scripts/setup.sh)", file=sys.stderr)
        return 2
    try:
        result = load_result(argv[1])
    except InputError as e:
        print(f"walbench: error: report --usl: {e}", file=sys.stderr)
        return 2
    print(format_table(result))
    return 0


if __name__ == "__main__":
    try:
        status = main(sys.argv)
        sys.stdout.flush()
    except BrokenPipeError:  # the reader (| head) stopped: nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 0
    except Exception as e:  # a bug, not bad input: still one line, as walbench promises
        print(f"walbench: error: report --usl: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        status = 2
    sys.exit(status)

#!/usr/bin/env python3
"""Tests of scripts/usl_fit.py (ctest usl_fit): the fit recovers known (lambda, sigma, kappa)
from curves made with them, with and without noise, and degenerate curves give a stated
result (no fit and why, or a flat or straight line with no peak), never NaN or an exception.
Exits 77 (ctest: skipped) with a message when SciPy is missing; scripts/setup.sh installs it.
"""
import math
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import scipy.optimize  # noqa: F401
except ImportError:
    print(f"usl_fit_test: SKIPPED: {sys.executable} has no SciPy; install python3-scipy (scripts/setup.sh)")
    sys.exit(77)

from usl_fit import fit_usl, format_table, usl  # noqa: E402

CLIENTS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def finite(fit):
    values = [fit.lam, fit.sigma, fit.kappa, fit.max_rel_resid] + ([fit.r2] if fit.r2 is not None else [])
    return all(math.isfinite(v) for v in values)


class Recovery(unittest.TestCase):
    def check(self, lam, sigma, kappa, clients=CLIENTS, noise=0.0, rel_tol=1e-3, seed=1):
        rng = random.Random(seed)
        tps = [usl(n, lam, sigma, kappa) * (1 + rng.uniform(-noise, noise)) for n in clients]
        fit = fit_usl(clients, tps)
        self.assertTrue(fit.ok, fit.why)
        self.assertTrue(finite(fit))
        self.assertAlmostEqual(fit.lam / lam, 1.0, delta=rel_tol)
        self.assertAlmostEqual(fit.sigma, sigma, delta=rel_tol * max(sigma, 0.01))
        self.assertAlmostEqual(fit.kappa, kappa, delta=rel_tol * max(kappa, 1e-5))
        if kappa > 0:
            expected = math.sqrt((1 - sigma) / kappa)
            self.assertAlmostEqual(fit.peak() / expected, 1.0, delta=rel_tol * 10)
        return fit

    def test_exact_curves(self):
        for lam, sigma, kappa in ((35000, 0.03, 8e-4), (1000, 0.05, 1e-3), (12000, 0.2, 2e-6),
                                  (800, 0.0, 5e-5), (5e5, 0.4, 0.0)):
            with self.subTest(lam=lam, sigma=sigma, kappa=kappa):
                fit = self.check(lam, sigma, kappa)
                self.assertGreater(fit.r2, 0.9999)
                self.assertLess(fit.max_rel_resid, 1e-4)

    def test_noisy_curve(self):
        # 2% noise: the parameters within 10% (sigma, kappa) and 3% (lambda), N* within 10%.
        fit = fit_usl(CLIENTS, [usl(n, 20000, 0.05, 2e-4) * (1 + random.Random(7).uniform(-0.02, 0.02))
                                for n in CLIENTS])
        self.assertTrue(fit.ok)
        self.assertAlmostEqual(fit.lam / 20000, 1, delta=0.03)
        self.assertAlmostEqual(fit.sigma / 0.05, 1, delta=0.1)
        self.assertAlmostEqual(fit.kappa / 2e-4, 1, delta=0.1)
        self.assertAlmostEqual(fit.peak() / math.sqrt(0.95 / 2e-4), 1, delta=0.1)
        self.assertLess(fit.max_rel_resid, 0.05)

    def test_unsorted_clients(self):
        clients = [64, 1, 16, 4, 256]
        fit = fit_usl(clients, [usl(n, 500, 0.1, 1e-3) for n in clients])
        self.assertAlmostEqual(fit.sigma, 0.1, delta=1e-4)


class Degenerate(unittest.TestCase):
    def test_too_few_points(self):
        for clients in ([8], [1, 2], []):
            fit = fit_usl(clients, [100.0] * len(clients))
            self.assertFalse(fit.ok)
            self.assertIn("needs 3 or more", fit.why)
            self.assertIsNone(fit.peak())

    def test_zero_tps(self):
        fit = fit_usl([1, 2, 4], [100.0, 0.0, 50.0])
        self.assertFalse(fit.ok)
        self.assertIn("tps 0 at 2 clients", fit.why)

    def test_flat_curve(self):
        # Every client count the same tps: all contention (sigma 1), no peak beyond one client.
        fit = fit_usl(CLIENTS, [5000.0] * len(CLIENTS))
        self.assertTrue(fit.ok)
        self.assertTrue(finite(fit))
        self.assertIsNone(fit.r2)
        self.assertAlmostEqual(fit.lam, 5000.0, delta=1.0)
        self.assertAlmostEqual(fit.sigma, 1.0, delta=1e-4)
        self.assertLess(fit.max_rel_resid, 1e-4)

    def test_linear_curve(self):
        # Perfect scaling: sigma and kappa 0, no peak ("none").
        fit = fit_usl(CLIENTS, [300.0 * n for n in CLIENTS])
        self.assertTrue(fit.ok)
        self.assertEqual(fit.sigma, 0.0)
        self.assertEqual(fit.kappa, 0.0)
        self.assertIsNone(fit.peak())
        self.assertAlmostEqual(fit.lam, 300.0, delta=1e-3)

    def test_superlinear_curve_stays_in_bounds(self):
        # tps growing faster than N (a cache warming up): the unbounded optimum has sigma < 0;
        # the bounds hold sigma and kappa at 0, a straight line with no peak.
        fit = fit_usl(CLIENTS, [100.0 * n ** 1.05 for n in CLIENTS])
        self.assertTrue(fit.ok)
        self.assertEqual(fit.sigma, 0.0)
        self.assertEqual(fit.kappa, 0.0)
        self.assertIsNone(fit.peak())

    def test_table_says_why_and_none(self):
        from result_curves import Curve, Point, ResultCurves
        linear = Curve("linear", (), {n: Point(n, 10.0 * n) for n in (1, 2, 4, 8)})
        single = Curve("single", (), {8: Point(8, 77.0)})
        text = format_table(ResultCurves("x.json", [()], [linear, single], left_out=1))
        self.assertIn("none", text)
        self.assertRegex(text, r"\nsingle +1  no fit: 1 client count; the fit needs 3 or more\n")
        self.assertIn("1 cell(s) failed", text)
        self.assertNotIn("nan", text.lower())


if __name__ == "__main__":
    unittest.main()

"""Is a baseline -> target difference of a step-level metric bigger than the step-to-step noise?

Welch's unequal-variance t-test on the per-step values of both sides, two-sided, alpha 0.05
(docs/steps.md says why).  The Student t CDF comes from the regularised incomplete beta
function, evaluated here with numpy and a continued fraction (Numerical Recipes' ``betacf``
scheme, modified Lentz), so scipy is not needed at run time.  Pure.

``within_noise``: True when the test cannot tell the two means apart (p >= alpha), False when it
can, None when either side has fewer than two steps (noise unknown).
"""
from __future__ import annotations

import math

import numpy as np

ALPHA = 0.05
DESCRIPTION = ("Welch's t-test (two-sided, unequal variances, alpha 0.05) on the per-step values; "
               "noise unknown (null) with fewer than 2 steps on a side")


def _betacf(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = tiny if abs(d) < tiny else d
    d = 1.0 / d
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b), 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    bt = math.exp(lbt)
    if x < (a + 1.0) / (a + b + 2.0):
        return bt * _betacf(a, b, x) / a
    return 1.0 - bt * _betacf(b, a, 1.0 - x) / b


def t_sf_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom (df may be fractional)."""
    if not math.isfinite(t):
        return 0.0
    if df <= 0 or not math.isfinite(df):
        return float("nan")
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def welch(a, b) -> tuple[float | None, float | None, float | None]:
    """(t, df, two-sided p) of Welch's test; all None with fewer than 2 values on a side."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return None, None, None
    va, vb = float(a.var(ddof=1)), float(b.var(ddof=1))
    diff = float(b.mean() - a.mean())
    se2 = va / na + vb / nb
    scale = max(abs(float(a.mean())), abs(float(b.mean())), 1.0)
    if se2 <= (1e-12 * scale) ** 2:          # both sides constant (to rounding)
        if abs(diff) <= 1e-9 * scale:
            return 0.0, math.inf, 1.0
        return math.copysign(math.inf, diff), math.inf, 0.0
    t = diff / math.sqrt(se2)
    df = se2 ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    return t, df, t_sf_two_sided(t, df)


def within_noise(a, b, alpha: float = ALPHA) -> tuple[bool | None, float | None]:
    """(verdict, p-value): True = the difference cannot be told from step-to-step noise."""
    _, _, p = welch(a, b)
    if p is None:
        return None, None
    return bool(p >= alpha), float(p)

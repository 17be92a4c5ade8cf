"""Student's t distribution without scipy: the quantile behind every confidence interval."""

from __future__ import annotations

import math
import statistics
from functools import lru_cache

# ---- Student's t ----------------------------------------------------------------------------------
# No scipy. For an integer number of degrees of freedom nu, the two-sided mass P(|T| <= t) of
# Student's t has a closed form as a finite trigonometric series (Abramowitz & Stegun 26.7.3/26.7.4,
# theta = atan(t / sqrt(nu))); for a non-integer nu (Welch-Satterthwaite) it is 1 - I_x(nu/2, 1/2)
# with x = cos^2 theta, the regularized incomplete beta function evaluated by its continued fraction
# (DLMF 8.17.22, modified Lentz). Either is monotone in theta, so the quantile is found by bisection
# on theta to ~1e-12. Above _T_SERIES_MAX_DF the Cornish-Fisher expansion of t around the normal
# quantile (A&S 26.7.5, four terms) is used: its error there is below 1e-7.
_T_SERIES_MAX_DF = 200


def _t_two_sided_mass(theta: float, nu: int) -> float:
    """P(|T| <= sqrt(nu) * tan(theta)) for Student's t with ``nu`` (integer >= 1) degrees of freedom."""
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    total, term = 1.0, 1.0
    if nu % 2 == 0:
        for k in range(1, nu // 2):
            term *= c2 * (2 * k - 1) / (2 * k)
            total += term
        return s * total
    if nu == 1:
        return 2 * theta / math.pi
    for k in range(1, (nu - 1) // 2):
        term *= c2 * (2 * k) / (2 * k + 1)
        total += term
    return 2 / math.pi * (theta + s * c * total)


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (DLMF 8.17.22), by the modified Lentz method."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def regularized_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1 and a, b > 0."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (a * math.log(x) + b * math.log1p(-x)
                 - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)))
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1 - math.exp(log_front) * _betacf(b, a, 1 - x) / b


@lru_cache(maxsize=4096)
def _t_quantile_cached(p: float, nu: float) -> float:
    if p == 0.5:
        return 0.0
    mass = abs(2 * p - 1)
    if nu == int(nu):
        def mass_at(theta: float) -> float:
            return _t_two_sided_mass(theta, int(nu))
    else:
        def mass_at(theta: float) -> float:
            return 1 - regularized_beta(math.cos(theta) ** 2, nu / 2, 0.5)
    if nu > _T_SERIES_MAX_DF:
        z = statistics.NormalDist().inv_cdf(0.5 + mass / 2)
        g1 = (z ** 3 + z) / 4
        g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
        g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
        t = z + g1 / nu + g2 / nu ** 2 + g3 / nu ** 3
    else:
        lo, hi = 0.0, math.pi / 2
        for _ in range(64):
            mid = (lo + hi) / 2
            if mass_at(mid) < mass:
                lo = mid
            else:
                hi = mid
        t = math.sqrt(nu) * math.tan((lo + hi) / 2)
    return t if p > 0.5 else -t


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom (df >= 1, may be
    non-integer). E.g. ``t_quantile(0.975, 4)`` = 2.7764 (two-sided 95 %). See the comment above for
    the method and its accuracy."""
    if not 0 < p < 1:
        raise ValueError(f"p must be in (0, 1), not {p}")
    if not df >= 1 or math.isnan(df):
        raise ValueError(f"df must be >= 1, not {df}")
    return _t_quantile_cached(p, float(df))

"""Script routing cost as a script grows: per-request cost early and late in a long script.

One session consumes a script of N plain reply steps one request at a time, through
`Router.route` (the code every model call runs to pick its step; parsing and writing are not
part of it). The router skips the steps already used; `Router(skip_used=False)` is the plain scan
it replaced (it walked every step from the first on every request), measured in the same run.

For N = 10,000 it prints the mean per-request cost over the first and the last 10% of the
requests, and their ratio (goal ≤ 2: the cost does not depend on the step index). The growth
exponent is the slope of log(total routing time) over log(N) between N = 1,000 and N = 10,000:
1.0 is linear, 2.0 quadratic (goal ≤ 1.1). Each figure is the best of a few runs. The last line
is one JSON object with every figure, for the skipping router and the plain scan. Run:
`python bench/routing.py` (a few seconds).
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dshkit.mock_server import Script
from dshkit.mock_server.routing import RequestView, Router

SIZES = (1_000, 10_000)
RUNS = 3


def _run(n: int, *, skip_used: bool) -> list[float]:
    """Seconds each of the n requests spent in `route`, in order."""
    script = Script.replies(*(f"answer {i}" for i in range(n)), name="long")
    router = Router([script], skip_used=skip_used)
    view = RequestView(last_user="next")
    clock = time.perf_counter
    out: list[float] = []
    for _ in range(n):
        t0 = clock()
        router.route("s", view)
        out.append(clock() - t0)
    return out


def _measure(skip_used: bool) -> dict[str, float]:
    totals: dict[int, float] = {}
    first = last = math.inf
    for n in SIZES:
        best = math.inf
        for _ in range(RUNS):
            costs = _run(n, skip_used=skip_used)
            best = min(best, sum(costs))
            if n == SIZES[-1]:
                tenth = n // 10
                first = min(first, sum(costs[:tenth]) / tenth)
                last = min(last, sum(costs[-tenth:]) / tenth)
        totals[n] = best
    exponent = math.log(totals[SIZES[-1]] / totals[SIZES[0]]) / math.log(SIZES[-1] / SIZES[0])
    return {
        "first_10pct_us": round(first * 1e6, 2),
        "last_10pct_us": round(last * 1e6, 2),
        "last_vs_first": round(last / first, 3),
        "growth_exponent": round(exponent, 3),
        "total_s_at_10000": round(totals[SIZES[-1]], 4),
    }


def main() -> None:
    plain = _measure(skip_used=False)
    fast = _measure(skip_used=True)
    for name, r in (("plain scan", plain), ("skipping", fast)):
        print(f"{name:>10}: first 10% {r['first_10pct_us']:8.2f} µs/request, last 10% "
              f"{r['last_10pct_us']:8.2f} µs/request (×{r['last_vs_first']}), growth exponent "
              f"{r['growth_exponent']}, {r['total_s_at_10000']} s in all at 10,000 steps")
    print(json.dumps({
        "bench": "routing",
        "steps": SIZES[-1],
        "last_vs_first": fast["last_vs_first"],
        "growth_exponent": fast["growth_exponent"],
        "goal_last_vs_first": 2.0,
        "goal_growth_exponent": 1.1,
        "met": fast["last_vs_first"] <= 2.0 and fast["growth_exponent"] <= 1.1,
        "total_vs_plain": round(fast["total_s_at_10000"] / plain["total_s_at_10000"], 4),
        "skipping": fast,
        "plain": plain,
    }))


if __name__ == "__main__":
    main()

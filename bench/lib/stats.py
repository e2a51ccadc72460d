"""Summary statistics of measurements: percentiles and latency summaries (pure)."""

from __future__ import annotations

from collections.abc import Sequence


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of an already sorted, non-empty sequence."""
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo))


def latency_summary_ms(durations_ns: Sequence[int]) -> dict[str, float]:
    """n, p50 / p90 / p99 / max / mean in ms (4 decimals) of a non-empty sequence of durations in ns."""
    values = sorted(d / 1e6 for d in durations_ns)
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 50), 4),
        "p90_ms": round(percentile(values, 90), 4),
        "p99_ms": round(percentile(values, 99), 4),
        "max_ms": round(values[-1], 4),
        "mean_ms": round(sum(values) / len(values), 4),
    }


def summary_ms(durations_ns: Sequence[float]) -> dict[str, float]:
    """n, p50 / p90 / p95 / p99 / max / mean in ms (3 decimals) of durations in ns; `{"n": 0}` when empty."""
    values = sorted(d / 1e6 for d in durations_ns)
    if not values:
        return {"n": 0}
    out: dict[str, float] = {"n": len(values)}
    out.update({f"p{q}_ms": round(percentile(values, q), 3) for q in (50, 90, 95, 99)})
    out.update(max_ms=round(values[-1], 3), mean_ms=round(sum(values) / len(values), 3))
    return out

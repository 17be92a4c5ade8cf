"""Synthetic sysbench 1.0.x run logs for tests: the layout of tests/fixtures/sysbench-1.0.20/run_ri.log
with chosen interval timestamps and rates, and a final summary consistent with them."""

from __future__ import annotations

from collections.abc import Sequence

# sysbench under load, as seen in a 12 s step on one pinned CPU: reports arrive late, two in one second.
LOADED_SECONDS = (1, 2, 5, 7, 8, 9, 11, 11, 12)


def run_log(seconds: Sequence[int], tps: Sequence[float], *, threads: int | None = 4, total_time_s: float = 12.0,
            transactions: int | None = None) -> str:
    """A run log with one interval line per ``seconds[i]`` at ``tps[i]``; ``transactions`` defaults to
    the events the intervals account for (tps x interval length), as sysbench's own summary would."""
    lines = ["sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)", "", "Running the test with following options:"]
    if threads is not None:
        lines.append(f"Number of threads: {threads}")
    lines += ["Report intermediate results every 1 second(s)", "", "Threads started!", ""]
    previous, events = 0, 0.0
    for second, rate in zip(seconds, tps, strict=True):
        events += rate * (second - previous)
        previous = second
        lines.append(f"[ {second}s ] thds: {threads or 1} tps: {rate:.2f} qps: {rate * 20:.2f} "
                     f"(r/w/o: {rate * 14:.2f}/{rate * 4:.2f}/{rate * 2:.2f}) lat (ms,95%): 2.91 "
                     "err/s: 0.00 reconn/s: 0.00")
    n = round(events) if transactions is None else transactions
    lines += [
        "SQL statistics:", "    queries performed:", f"        read:                            {n * 14}",
        f"        write:                           {n * 4}", f"        other:                           {n * 2}",
        f"        total:                           {n * 20}",
        f"    transactions:                        {n}   ({n / total_time_s:.2f} per sec.)",
        f"    queries:                             {n * 20}  ({n * 20 / total_time_s:.2f} per sec.)",
        "    ignored errors:                      0      (0.00 per sec.)",
        "    reconnects:                          0      (0.00 per sec.)", "",
        "General statistics:", f"    total time:                          {total_time_s:.4f}s",
        f"    total number of events:              {n}", "",
        "Latency (ms):", "         min:                                    1.47",
        "         avg:                                    2.06",
        "         max:                                    7.65",
        "         95th percentile:                        2.76",
        "         sum:                                 6001.83",
        "", "Threads fairness:", f"    events (avg/stddev):           {n / (threads or 1):.4f}/5.00",
        "    execution time (avg/stddev):   12.0009/0.00", ""]
    return "\n".join(lines)

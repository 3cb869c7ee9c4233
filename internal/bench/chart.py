#!/usr/bin/env python3
"""Draws the side-by-side benchmark chart from the CSV of
internal/bench/cmd/sidebyside (one row per run).

    python3 internal/bench/chart.py internal/bench/results/latest.csv internal/bench/results/latest.png

Six panels (2 x 3), one group of bars per workload, one bar per system: median
records/s (whiskers: min and max over the runs), median p99 latency, median
peak RSS, median CPU seconds of the bulk copy, median CPU seconds of the copy
per GB of payload (key + value + headers) and the median target bytes stored
per source byte (DescribeLogDirs sizes; a line marks 1.0). A CSV written
before the last two columns existed draws them empty. Needs matplotlib.
"""
import csv
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402,F401

NAMES = {"mm2": "Apache MM2", "kmirror": "kmirror", "bare": "bare franz-go pipe"}
COLORS = {"mm2": "#d62728", "kmirror": "#1f77b4", "bare": "#7f7f7f"}
PANELS = [
    ("records_per_s", "records/s (bulk copy)"),
    ("lat_p99_ms", "p99 replication latency, ms"),
    ("peak_rss_mib", "peak RSS, MiB"),
    ("copy_cpu_s", "CPU seconds of the bulk copy"),
    ("copy_cpu_s_per_gb", "CPU seconds of the copy per GB of payload"),
    ("stored_ratio", "target bytes stored per source byte"),
]


def main(src, dst):
    with open(src, newline="") as f:
        rows = [r for r in csv.DictReader(f) if not r["error"]]
    if not rows:
        sys.exit("chart.py: no successful run in " + src)
    workloads, systems = [], []
    for r in rows:
        if r["workload"] not in workloads:
            workloads.append(r["workload"])
        if r["system"] not in systems:
            systems.append(r["system"])
    systems.sort(key=lambda s: list(NAMES).index(s) if s in NAMES else 99)

    fig, grid = plt.subplots(2, 3, figsize=(16, 8))
    axes = grid.flatten()
    width = 0.8 / len(systems)
    for ax, (col, title) in zip(axes, PANELS):
        if not any(r.get(col) and float(r[col]) > 0 for r in rows):
            ax.text(0.5, 0.5, "not in this CSV", ha="center", va="center", transform=ax.transAxes, color="gray")
        for i, sysname in enumerate(systems):
            meds, lo, hi = [], [], []
            for w in workloads:
                # A missing column (an older CSV) or a zero ratio (not measured) is no value.
                vals = [float(r[col]) for r in rows if r["workload"] == w and r["system"] == sysname and r.get(col)]
                if col == "stored_ratio":
                    vals = [v for v in vals if v > 0]
                m = statistics.median(vals) if vals else 0.0
                meds.append(m)
                lo.append(m - min(vals) if vals else 0.0)
                hi.append(max(vals) - m if vals else 0.0)
            xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(workloads))]
            ax.bar(xs, meds, width, yerr=[lo, hi], capsize=3, label=NAMES.get(sysname, sysname),
                   color=COLORS.get(sysname))
            for x, m in zip(xs, meds):
                if not m:
                    continue
                if col == "records_per_s" and m >= 1000:
                    label = f"{m / 1000:.0f}k"
                elif col == "stored_ratio":
                    label = f"{m:.2f}"
                else:
                    label = f"{m:.0f}" if m >= 10 else f"{m:.1f}"
                ax.annotate(label, (x, m), ha="center", va="bottom", fontsize=7, xytext=(0, 2), textcoords="offset points")
        if col == "records_per_s":
            ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1000:.0f}k"))
        if col == "stored_ratio":
            ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(len(workloads)))
        ax.set_xticklabels(workloads, fontsize=8, rotation=15)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    run_id = rows[0]["run_id"]
    date = rows[0]["start_utc"][:10]
    fig.suptitle(f"Side-by-side replication, Kafka source -> target, medians over runs ({date}, run {run_id})", fontsize=11)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print("chart.py: wrote " + dst)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: chart.py RESULTS.csv OUT.png|OUT.svg")
    main(sys.argv[1], sys.argv[2])

#!/usr/bin/env python3
"""Prints scripts/write-mix.sh's summary (write_mix.json) as a table: keys/s per
store and write fraction (median of the rounds), the cores of each side, and
gphkv's mean put-run stages in microseconds."""
import json
import statistics
import sys

d = json.load(open(sys.argv[1]))
by = {}
for r in d["runs"]:
    by.setdefault((r["store"], r["write_fraction"]), []).append(r)
for (store, f), rows in sorted(by.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    kps = statistics.median(r["keys_per_s"] for r in rows)
    cps = statistics.median(r["calls_per_s"] for r in rows)
    cpu = rows[-1].get("cpu") or {}
    line = f"w={f:<6} {store:<16} {kps / 1e6:7.3f} M keys/s {cps / 1e3:8.1f} k calls/s errors {sum(r['errors'] for r in rows)}"
    line += f" cores server {cpu.get('server_cores', 0) or 0:.1f} client {cpu.get('loadgen_cores', 0) or 0:.1f}"
    if rows[-1].get("put_runs"):
        runs = statistics.median(r["put_runs"] for r in rows)
        stages = rows[-1]["put_stage_mean_us"]
        line += f" | put runs {runs:.0f} get runs {rows[-1].get('get_runs', 0):.0f} | " + " ".join(
            f"{s} {v:.0f}" for s, v in stages.items() if v is not None)
    print(line)

#!/usr/bin/env python3
"""Turns the raw runs of scripts/latency-ladder.sh into the ladder's one JSON.

    python3 scripts/latency-ladder-results.py LADDER_DIR [--out DIR] [--commit C] [--command CMD]
                                              [--elapsed-s S] [--gphkv-flags "NAME:FLAGS;..."]

LADDER_DIR is the ladder's OUT (ladder.tgz unpacked): runs.jsonl indexes the
loadgen reports in runs/; device.txt, machine.txt, COMMIT, command.txt,
elapsed_s.txt and variants.txt say where, from what and how they ran (the
flags override them).
Writes DIR/latency_ladder_<device>_<commit>.json (DIR defaults to
bench/results/; the ladder script itself writes it beside its runs):

    {"benchmark": "latency-ladder", "device", "machine", "date", "commit", "command", "elapsed_s",
     "workload", "variants": {NAME: gphkv-server flags},
     "client": {"threads", "connections", "clients", "connections_total", "depth"},
     "rungs": [{"offered", "store", "rep", "served", "p50_us", "p90_us", "p99_us", "p999_us",
                "server_cores", "client_cores", "errors", "dropped", "read_violations", "keys_per_s",
                "server_stages_us": {STAGE: mean us} (gphkv, from its metrics: intake, queue, execute,
                answer_wait, respond; absent for the other stores and for runs before it existed)}],
     "light_load": [same shape], "peak": [same shape, closed loop: offered 0] (with PEAK_DEPTH)}

--benchmark and --prefix name another ladder (the memcached protocol's:
latency-ladder-memcached, memcached_port_ladder), so that it is not taken
for the headline's.

served: calls answered without error per second of the measured window (its
drain included, so a saturated rung's figure is conservative); latencies
count from each call's intended send time; cores: CPU seconds over the
window's wall seconds (the store's process from /proc, the load generator's
own). scripts/perf-tables.py reads it; bench/results/README.md indexes it.
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def short_device(name):
    """'h100' from 'NVIDIA H100 80GB HBM3', 'cpu' without a GPU."""
    m = re.search(r"\b([A-Z]\d{2,4})\b", name)
    return m.group(1).lower() if m and name != "cpu" else "cpu"


def row_of(entry, report):
    res = report["results"]
    o, cpu = res["overall"], res["cpu"]
    lat = o["latency"]
    secs = res["seconds"]
    answered = o["calls"] - o["errors"]
    return {"offered": entry["offered"], "store": entry["store"], "rep": entry["rep"],
            "served": answered / secs if secs else 0.0,
            "p50_us": lat["p50_us"], "p90_us": lat["p90_us"], "p99_us": lat["p99_us"], "p999_us": lat["p999_us"],
            "server_cores": cpu["server_cores"], "client_cores": cpu["loadgen_cores"],
            "errors": o["errors"], "dropped": res["dropped_calls"],
            "read_violations": res["read_check"]["violations"],
            "keys_per_s": o["keys_per_s"],
            **stages_of(res)}


def stages_of(res):
    """The server's mean time per call by stage, when the run scraped it."""
    stages = (res.get("server_stages") or {}).get("stages") or {}
    if not stages:
        return {}
    return {"server_stages_us": {name: round(s["mean_us"], 1) for name, s in stages.items()}}


def read_text(folder, name, default):
    path = os.path.join(folder, name)
    if not os.path.exists(path):
        return default
    with open(path) as f:
        return f.read().strip() or default


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--commit", default=None)
    ap.add_argument("--command", default=None)
    ap.add_argument("--elapsed-s", type=float, default=None)
    ap.add_argument("--gphkv-flags", default=None)
    ap.add_argument("--benchmark", default="latency-ladder")
    ap.add_argument("--prefix", default="latency_ladder")
    a = ap.parse_args()
    index = os.path.join(a.folder, "runs.jsonl")
    if not os.path.exists(index):
        sys.exit(f"latency-ladder-results: no {index}")
    rungs, light, peak, first = [], [], [], None
    with open(index) as f:
        entries = [json.loads(line) for line in f if line.strip()]
    for e in entries:
        with open(os.path.join(a.folder, "runs", e["name"] + ".json")) as f:
            report = json.load(f)
        first = first or report
        {"rung": rungs, "peak": peak}.get(e["phase"], light).append(row_of(e, report))
    if first is None:
        sys.exit("latency-ladder-results: no runs")
    device = read_text(a.folder, "device.txt", "cpu")
    drive = first["config"]["drive"]
    w = first["config"]["workload"]
    variants = {}
    for spec in (a.gphkv_flags or read_text(a.folder, "variants.txt", "default:")).split(";"):
        if spec:
            name, _, flags = spec.partition(":")
            variants[name] = flags
    commit = a.commit or read_text(a.folder, "COMMIT", "unknown")
    elapsed = a.elapsed_s if a.elapsed_s is not None else float(read_text(a.folder, "elapsed_s.txt", "nan"))
    result = {"benchmark": a.benchmark, "device": device, "machine": read_text(a.folder, "machine.txt", ""),
              "date": first["started_at"], "commit": commit,
              "command": a.command or read_text(a.folder, "command.txt", ""),
              "elapsed_s": None if elapsed != elapsed else elapsed,
              "workload": {"preset": w["preset"], "keys": w["keys"], "mode": "open"}, "variants": variants,
              # connections: per thread, or the shared client's streams (clients "shared"); in all: connections_total.
              "client": {"threads": drive["threads"], "connections": drive["connections_per_thread"],
                         "clients": drive.get("clients", "per_thread"),
                         "connections_total": drive.get("connections_total"), "depth": drive["depth"]},
              "rungs": rungs, "light_load": light}
    if peak:
        result["peak"] = peak
    os.makedirs(a.out, exist_ok=True)
    out = os.path.join(a.out, f"{a.prefix}_{short_device(device)}_{commit}.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

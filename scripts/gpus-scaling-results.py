#!/usr/bin/env python3
"""Summarises a run of scripts/gpus-scaling.sh into one result JSON (issue 30).

    python3 scripts/gpus-scaling-results.py OUT [--json PATH]

keys_per_s[shape][size] is the median over the rounds of the load generator's
keys/s; cores[shape][size] the servers' (all of a shape's processes together)
and the load generator's, medians too. PATH defaults to
bench/results/gpus_scaling_<device>_<commit>.json.
"""
import argparse
import json
import os
import re
import statistics


def metric_values(path):
    """NAME{LABELS} VALUE lines of a Prometheus text page, as {(name, labels): value}."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        m = re.match(r"([a-z_]+)(\{[^}]*\})? (\S+)$", line.strip())
        if m:
            out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def run_stages(out, tag, report, walls):
    """A run's server stages (from its report) and executor waits (from the pages)."""
    row = {"keys_per_s": round(report["overall"]["keys_per_s"]),
           "p50_us": round(report["overall"].get("latency", {}).get("p50_us", 0))}
    st = report.get("server_stages", {}).get("stages", {})
    row["stage_mean_us"] = {k: round(v["mean_us"], 1) for k, v in sorted(st.items()) if v.get("calls")}
    wall = walls.get(tag, 0)
    waits = {}
    for before in sorted(os.listdir(out)):
        m = re.match(re.escape(tag) + r"-before-metrics-(\d+)\.txt$", before)
        if not m:
            continue
        b = metric_values(os.path.join(out, before))
        e = metric_values(os.path.join(out, f"{tag}-after-metrics-{m.group(1)}.txt"))
        for (name, labels), v in e.items():
            if name != "gphkv_gpu_executor_wait_seconds_total":
                continue
            g = re.search(r'gpu="([^"]*)"', labels).group(1)
            state = re.search(r'state="([^"]*)"', labels).group(1)
            d = v - b.get((name, labels), 0.0)
            waits.setdefault(f"{m.group(1)}/gpu{g}", {})[state] = round(d, 3)
    if waits:
        row["executor_wait_s"] = waits
        row["wall_s"] = wall
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--json")
    a = ap.parse_args()
    config = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(a.out, "config.txt")) if "=" in line)
    server_cores, walls = {}, {}
    for line in open(os.path.join(a.out, "cores.txt")):
        m = re.match(r"(\S+) rc=(\d+) wall_s=(\S+) server_cores=(\S+)", line)
        if m and m.group(2) == "0":
            server_cores[m.group(1)] = float(m.group(4))
            walls[m.group(1)] = float(m.group(3))
    runs = {}
    stages = {}
    for name in sorted(os.listdir(a.out)):
        m = re.match(r"(one_gpu|two_gpus|two_servers)-(\d+)-r(\d+)\.json$", name)
        if not m or f"{m.group(1)}-{m.group(2)}-r{m.group(3)}" not in server_cores:
            continue
        r = json.load(open(os.path.join(a.out, name)))["results"]
        tag = name[: -len(".json")]
        stages[tag] = run_stages(a.out, tag, r, walls)
        runs.setdefault(m.group(1), {}).setdefault(m.group(2), []).append(
            (r["overall"]["keys_per_s"], server_cores[tag], r["cpu"]["loadgen_cores"]))
    keys_per_s, cores = {}, {}
    for shape, sizes in runs.items():
        for size, rows in sizes.items():
            keys_per_s.setdefault(shape, {})[size] = round(statistics.median(x[0] for x in rows))
            cores.setdefault(shape, {})[size] = {
                "server": round(statistics.median(x[1] for x in rows), 2),
                "loadgen": round(statistics.median(x[2] for x in rows), 2),
                "rounds": len(rows),
            }
    ratios = {}
    for size in keys_per_s.get("one_gpu", {}):
        one = keys_per_s["one_gpu"][size]
        two = keys_per_s.get("two_gpus", {}).get(size)
        servers = keys_per_s.get("two_servers", {}).get(size)
        ratios[size] = {
            "two_gpus_over_one_gpu": round(two / one, 3) if two else None,
            "two_gpus_over_two_servers": round(two / servers, 3) if two and servers else None,
            "two_servers_over_one_gpu": round(servers / one, 3) if servers else None,
        }
    device = re.sub(r"[^a-z0-9]+", "", config.get("gpu", "gpu").lower().replace("nvidia", ""))[:8] or "gpu"
    result = {
        "schema": "gphkv-gpus-scaling",
        "device": f"{config.get('gpus')} x {config.get('gpu')}",
        "cpus": int(config.get("cpus", 0)),
        "commit": config.get("commit"),
        "date": config.get("date"),
        "client": config.get("client"),
        "command": "bash scripts/gpus-scaling.sh (closed loop, --api=coalesced, default workload, gets only)",
        "keys_per_s": keys_per_s,
        "cores": cores,
        "ratios": ratios,
        # Per run: the server's mean time per call by stage (us; batch_*: per
        # pipelined get batch), and each GPU's executor waits as a share of
        # the run's wall time (from the /metrics pages before and after).
        "stages": stages,
    }
    path = a.json or f"bench/results/gpus_scaling_{device}x{config.get('gpus')}_{config.get('commit')}.json"
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(json.dumps({"keys_per_s": keys_per_s, "ratios": ratios}, indent=1))
    print("wrote", path)


if __name__ == "__main__":
    main()

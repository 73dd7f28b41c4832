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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--json")
    a = ap.parse_args()
    config = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(a.out, "config.txt")) if "=" in line)
    server_cores = {}
    for line in open(os.path.join(a.out, "cores.txt")):
        m = re.match(r"(\S+) rc=(\d+) wall_s=\S+ server_cores=(\S+)", line)
        if m and m.group(2) == "0":
            server_cores[m.group(1)] = float(m.group(3))
    runs = {}
    for name in sorted(os.listdir(a.out)):
        m = re.match(r"(one_gpu|two_gpus|two_servers)-(\d+)-r(\d+)\.json$", name)
        if not m or f"{m.group(1)}-{m.group(2)}-r{m.group(3)}" not in server_cores:
            continue
        r = json.load(open(os.path.join(a.out, name)))["results"]
        tag = name[: -len(".json")]
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
    }
    path = a.json or f"bench/results/gpus_scaling_{device}x{config.get('gpus')}_{config.get('commit')}.json"
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(json.dumps({"keys_per_s": keys_per_s, "ratios": ratios}, indent=1))
    print("wrote", path)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Summarizes a scripts/byte-keys-compare.sh folder into one JSON: every run's
keys/s, p50/p99, cores of both sides, and the headline ratios (byte keys over
uint64 keys: the median closed-loop peak, and the median light-load p99).

    python3 scripts/byte-keys-results.py FOLDER DEVICE COMMIT COMMAND > out.json
"""
import glob
import json
import os
import statistics
import sys


def main():
    folder, device, commit, command = sys.argv[1:5]
    runs = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        name = os.path.basename(path)[:-5]
        store, kind, rep = name.rsplit("-", 2)
        with open(path) as f:
            r = json.load(f)
        o, cpu = r["results"]["overall"], r["results"]["cpu"]
        runs.append({"store": store, "kind": kind, "rep": int(rep), "keys_per_s": o["keys_per_s"],
                     "calls_per_s": o["calls_per_s"], "errors": o["errors"], "hit_ratio": o["hit_ratio"],
                     "p50_us": o["latency"]["p50_us"], "p99_us": o["latency"]["p99_us"],
                     "server_cores": cpu.get("server_cores"), "client_cores": cpu.get("loadgen_cores"),
                     "read_violations": r["results"]["read_check"].get("violations")})

    def med(store, kind, field):
        vals = [x[field] for x in runs if x["store"] == store and x["kind"] == kind]
        return statistics.median(vals) if vals else None

    peak_u64, peak_bytes = med("u64", "peak", "keys_per_s"), med("bytes", "peak", "keys_per_s")
    p99_u64, p99_bytes = med("u64", "light", "p99_us"), med("bytes", "light", "p99_us")
    out = {"benchmark": "byte_keys_service", "device": device, "commit": commit, "command": command,
           "runs": runs,
           "median": {"peak_keys_per_s": {"u64": peak_u64, "bytes": peak_bytes,
                                          "memcached": med("memcached", "peak", "keys_per_s")},
                      "light_p99_us": {"u64": p99_u64, "bytes": p99_bytes}},
           "bytes_over_u64": {"peak_keys_per_s": peak_bytes / peak_u64, "light_p99": p99_bytes / p99_u64}}
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()

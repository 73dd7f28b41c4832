#!/usr/bin/env python3
"""Turns one run of scripts/device-service-suite.sh into the committed result.

    python3 scripts/service-suite-results.py SUITE_DIR [--device "NVIDIA H100 80GB HBM3"]

SUITE_DIR is the suite's output folder (suite.tgz unpacked). Writes
bench/results/service_suite_h100_<commit>.json: the four loadgen-compare
reports of the run as they are (coalesced gphkv vs memcached, unary gphkv vs
the null server, the null server with values, the null server on the callback
API) and the light-load runs' overall figures with the cores each side used.
With LADDER=1 the suite also ran the latency ladder: its JSON (SUITE_DIR/ladder/
latency_ladder_*.json) is copied to bench/results/ beside the suite's.
Also redraws docs/keys-per-request.svg (keys/s against keys per request,
gphkv, memcached and the null server answering values; every committed run)
with gnuplot.
scripts/perf-tables.py reads the JSON; bench/results/README.md indexes it.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PARTS = {"coalesced": "coalesced", "unary": "unary", "null_values": "null-values", "null_callback": "null-callback"}
LIGHT = ["gphkv-coalesced", "gphkv-unary", "memcached", "null-coalesced", "null-unary"]
SUITE_COMMAND = "COPY_TO=$OUT OUT=build/service-suite bash scripts/device-service-suite.sh"


def report_of(folder):
    paths = sorted(glob.glob(os.path.join(folder, "loadgen_compare_*.json")))
    if not paths:
        sys.exit(f"service-suite-results: no loadgen_compare_*.json in {folder}")
    with open(paths[-1]) as f:
        return json.load(f)


def light_of(path):
    with open(path) as f:
        d = json.load(f)
    o, cpu = d["results"]["overall"], d["results"]["cpu"]
    lat = o["latency"]
    return {"target": d["config"]["target"], "api": d["config"]["api"], "calls_per_s": o["calls_per_s"],
            "keys_per_s": o["keys_per_s"], "errors": o["errors"], "p50_us": lat["p50_us"], "p90_us": lat["p90_us"],
            "p99_us": lat["p99_us"], "p999_us": lat["p999_us"], "max_us": lat["max_us"],
            "loadgen_cores": cpu["loadgen_cores"], "server_cores": cpu["server_cores"]}


def plot(results, svg):
    """Every suite run's sizes in one log-log plot: a colour per store, the newest run solid, older dashed."""
    stores = [("gphkv (coalesced)", "coalesced", "gphkv", "#7b1fa2"),
              ("memcached (pipelined)", "coalesced", "memcached", "#00897b"),
              ("null server, 190-byte values", "null_values", "null", "#1e88e5")]
    with tempfile.TemporaryDirectory() as tmp:
        lines = []
        for age, result in enumerate(reversed(results)):  # newest first
            for i, (title, part, store, colour) in enumerate(stores):
                dat = os.path.join(tmp, f"{age}-{i}.dat")
                with open(dat, "w") as f:
                    f.writelines(f"{r['keys_per_get']} {r['keys_per_s']}\n"
                                 for r in result["parts"][part]["results"][store]["sizes"])
                style = f"lc rgb '{colour}' " + ("lw 2 pt 7" if age == 0 else "dashtype 2 lw 1 pt 6")
                lines.append(f"'{dat}' using 1:2 with linespoints {style} "
                             f"title '{title}, {result['date'][11:16]} UTC run, {result['commit']}'")
        first = results[-1]
        gp = "\n".join([
            "set terminal svg size 800,480 dynamic font 'sans,11'",
            f"set output '{svg}'",
            f"set title 'Gets: keys/s against keys per request ({first['device']}, 16-core host, {first['date'][:10]})'",
            "set xlabel 'keys per get request'", "set ylabel 'keys/s (closed loop)'",
            "set logscale xy", "set grid", "set format y '%.0s%c'", "set key bottom right font 'sans,9'",
            "plot " + ", ".join(lines)])
        subprocess.run(["gnuplot"], input=gp, text=True, check=True)


def committed_runs():
    found = []
    for path in glob.glob(os.path.join(ROOT, "bench", "results", "service_suite_*.json")):
        with open(path) as f:
            d = json.load(f)
        if d.get("benchmark") == "service-suite":
            found.append(d)
    return sorted(found, key=lambda d: d["date"])


def main():
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    folder = args[0]
    device = args[args.index("--device") + 1] if "--device" in args else "NVIDIA H100 80GB HBM3"
    parts = {name: report_of(os.path.join(folder, sub)) for name, sub in PARTS.items()}
    first = parts["coalesced"]
    light = {name: light_of(os.path.join(folder, "light", name + ".json")) for name in LIGHT
             if os.path.exists(os.path.join(folder, "light", name + ".json"))}
    result = {"benchmark": "service-suite", "device": device, "machine": first["machine"], "date": first["date"],
              "commit": first["commit"], "command": SUITE_COMMAND,
              "light_load": {"rate_calls_per_s": 1000, "runs": light}, "parts": parts}
    out = os.path.join(ROOT, "bench", "results", f"service_suite_h100_{first['commit']}.json")
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    for ladder in glob.glob(os.path.join(folder, "ladder", "latency_ladder_*.json")):
        shutil.copy(ladder, os.path.join(ROOT, "bench", "results", os.path.basename(ladder)))
        print(f"copied {os.path.basename(ladder)} to bench/results/")
    svg = os.path.join(ROOT, "docs", "keys-per-request.svg")
    os.makedirs(os.path.dirname(svg), exist_ok=True)
    plot(committed_runs(), svg)
    print(f"wrote {os.path.relpath(out, ROOT)} and {os.path.relpath(svg, ROOT)}")


if __name__ == "__main__":
    main()

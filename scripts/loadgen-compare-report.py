#!/usr/bin/env python3
"""The tables, JSON and plots of one scripts/loadgen-compare.sh run.

Reads OUT/runs.jsonl (the runs in the order they ran: store, preset, phase,
name) and every run's report OUT/runs/NAME.json (gphkv-loadgen schema 2);
writes OUT/loadgen_compare_TAG_STAMP.{md,json}, copies them to
OUT/results.{md,json}, and draws DOCS/loadgen-compare-PRESET.svg and
DOCS/loadgen-sizes.svg with gnuplot when it is installed (the .gp and .dat
files stay in OUT either way). Every figure carries the cores the load
generator and the store used during that run.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def gpu_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def summary(r):
    """One run, as the numbers the tables need."""
    o, cpu = r["results"]["overall"], r["results"]["cpu"]
    d = r["config"]["drive"]
    return {"mode": d["mode"], "depth": d["depth"], "offered_calls_per_s": d["rate"] if d["mode"] == "open" else None,
            "read_batch": r["config"]["workload"]["read_batch"], "calls_per_s": o["calls_per_s"],
            "keys_per_s": o["keys_per_s"], "bytes_per_s": o["bytes_per_s"], "hit_ratio": o["hit_ratio"],
            "p50_us": o["latency"]["p50_us"], "p99_us": o["latency"]["p99_us"], "p999_us": o["latency"]["p999_us"],
            "errors": o["errors"], "dropped": r["results"]["dropped_calls"],
            "send_lag_p99_us": r["results"]["send_lag"]["p99_us"], "loadgen_cores": cpu["loadgen_cores"],
            "server_cores": cpu["server_cores"], "seconds": r["results"]["seconds"]}


def passes(s, limit):
    return s["p99_us"] < limit and s["errors"] == 0 and s["dropped"] == 0


def cores(s):
    server = "-" if s["server_cores"] is None else f"{s['server_cores']:.1f}"
    return f"{s['loadgen_cores']:.1f} / {server}"


def k(v):
    return f"{v:,.0f}"


def collect(out, limit):
    """Per store: the threads tried and kept, per preset its peak sweep, search steps and confirmations,
    and the sizes sweep."""
    results = {}
    with open(os.path.join(out, "runs.jsonl")) as f:
        index = [json.loads(line) for line in f if line.strip()]
    for e in index:
        st = results.setdefault(e["store"], {"threads": {"chosen": None, "tried": []}, "workloads": {}, "sizes": []})
        if e["phase"] == "threads":
            st["threads"]["chosen"] = e["threads"]
            continue
        with open(os.path.join(out, "runs", e["name"] + ".json")) as rf:
            r = json.load(rf)
        s = summary(r)
        s["run"] = e["name"]
        if e["phase"] == "tune":
            s["threads"] = int(e["name"].rsplit("-t", 1)[1])
            st["threads"]["tried"].append(s)
            continue
        if e["phase"] == "size":
            s["keys_per_get"] = int(s["read_batch"])
            st["sizes"].append(s)
            continue
        w = st["workloads"].setdefault(e["preset"], {"peak_sweep": [], "steps": [], "confirmations": [],
                                                     "peak": None, "best": None,
                                                     "workload": r["workload"], "config": r["config"]})
        if e["phase"] == "peak":
            w["peak_sweep"].append(s)
        elif e["phase"] == "step":
            if not w["steps"] or w["steps"][-1]["offered_calls_per_s"] != s["offered_calls_per_s"]:
                w["steps"].append({"offered_calls_per_s": s["offered_calls_per_s"], "runs": []})
            w["steps"][-1]["runs"].append(s)
        elif e["phase"] == "confirm":
            w["confirmations"].append(s)
    for st in results.values():
        for w in st["workloads"].values():
            if w["peak_sweep"]:
                w["peak"] = max(w["peak_sweep"], key=lambda s: s["calls_per_s"])
            confirmed = [c for c in w["confirmations"] if passes(c, limit)]
            w["best"] = confirmed[0] if confirmed else None
    return results


def step_pass(step, limit, rule):
    runs = step["runs"]
    if rule == "median":
        return all(r["errors"] == 0 and r["dropped"] == 0 for r in runs) and \
            statistics.median(r["p99_us"] for r in runs) < limit
    return all(passes(r, limit) for r in runs)


def step_text(step, limit, rule):
    p99s = ", ".join(f"{r['p99_us']:.0f}" for r in step["runs"])
    return f"{step['offered_calls_per_s']:,.0f} -> {p99s} {'pass' if step_pass(step, limit, rule) else 'fail'}"


def markdown(a, results, header):
    limit = a.limit_us
    lines = [header, "", f"Command: `{a.command}`", "",
             f"Planned: {a.plan}; took {a.elapsed_s} s. Cores: client (gphkv-loadgen, getrusage) / server "
             "(/proc/PID/stat), CPU seconds over each run's measured window.", ""]
    tuned = []
    for store, st in results.items():
        tried = ", ".join(f"{s['threads']}: {k(s['calls_per_s'])} calls/s ({cores(s)} cores)" for s in
                          st["threads"]["tried"])
        tuned.append(f"{store} {tried + ' -> ' if tried else ''}{st['threads']['chosen']} threads")
    lines += ["Server threads (closed loop, the first workload): " + "; ".join(tuned) + ".", ""]
    presets = []
    for st in results.values():
        presets += [p for p in st["workloads"] if p not in presets]
    for preset in presets:
        any_w = next(st["workloads"][preset] for st in results.values() if preset in st["workloads"])
        c, w = any_w["config"], any_w["workload"]
        pop = (f"{w['shards']} weighted shards" if w["popularity"] == "shards" else f"zipf s={w['zipf_exponent']:.3f}")
        lines += [f"**Workload `{preset}`**: {c['workload']['keys']:,} keys, {pop} (top 20% -> "
                  f"{100 * w['expected_hot_share']:.1f}% of draws), {100 * c['workload']['write_fraction']:.2f}% writes, "
                  f"mean {w['mean_read_batch']:.1f} keys per get; client {c['drive']['threads']} threads x "
                  f"{c['drive']['connections_per_thread']} connections, {c['drive']['duration_s']:g} s per run.", "",
                  f"| store | closed-loop peak: calls/s (depth) | keys/s | cores | highest rate with p99 < {limit:g} us: "
                  "calls/s | keys/s | p50 / p99 us | cores | search p99 at that rate, us |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        best_keys = {}
        for store, st in results.items():
            wr = st["workloads"].get(preset)
            if not wr or not wr["peak"]:
                continue
            p = wr["peak"]
            peak = f"{k(p['calls_per_s'])} ({p['depth']}) | {k(p['keys_per_s'])} | {cores(p)}"
            b = wr["best"]
            if b:
                step = next((s for s in wr["steps"] if s["offered_calls_per_s"] == b["offered_calls_per_s"]), None)
                search = ", ".join(f"{r['p99_us']:.0f}" for r in step["runs"]) if step else "-"
                best = (f"{k(b['calls_per_s'])} | {k(b['keys_per_s'])} | {b['p50_us']:.0f} / {b['p99_us']:.0f} | "
                        f"{cores(b)} | {search}")
                best_keys[store] = b["keys_per_s"]
            elif wr["steps"] or wr["confirmations"]:
                tried = ", ".join(f"{c['offered_calls_per_s']:,.0f} (p99 {c['p99_us']:.0f})" for c in wr["confirmations"])
                best = f"none confirmed{': ' + tried if tried else ''} | | | | "
            else:
                best = "not searched | | | | "
            lines.append(f"| {store} | {peak} | {best} |")
        if "gphkv" in best_keys and "memcached" in best_keys:
            lines += ["", f"gphkv / memcached keys/s at p99 < {limit:g} us: {best_keys['gphkv'] / best_keys['memcached']:.2f}x"]
        peaks = {s: st["workloads"][preset]["peak"]["keys_per_s"] for s, st in results.items()
                 if preset in st["workloads"] and st["workloads"][preset]["peak"]}
        if "gphkv" in peaks and "memcached" in peaks:
            lines += ["", f"gphkv / memcached keys/s at the closed-loop peak: {peaks['gphkv'] / peaks['memcached']:.2f}x"]
        steps = []
        for store, st in results.items():
            wr = st["workloads"].get(preset)
            if wr and wr["steps"]:
                steps.append(f"{store}: " + "; ".join(step_text(s, limit, a.pass_rule) for s in wr["steps"]))
        if steps:
            lines += ["", f"Search (calls/s offered -> p99 us of each of {a.repeats} runs; PASS_RULE={a.pass_rule}): "
                      + " | ".join(steps)]
        lines.append("")
    sized = {s: st["sizes"] for s, st in results.items() if st["sizes"]}
    if sized:
        stores = list(sized)
        head = " | ".join(f"{s}: keys/s | calls/s | p99 us | cores" for s in stores)
        lines += ["**Keys per request** (closed loop, default workload with `--read_batch=N`, writes as the default "
                  "workload's; keys/s of all calls):", "", f"| keys per get | {head} |" +
                  (" gphkv / memcached |" if {"gphkv", "memcached"} <= set(stores) else ""),
                  "|---:|" + "---:|" * (4 * len(stores) + ({"gphkv", "memcached"} <= set(stores)))]
        sizes = sorted({s["keys_per_get"] for runs in sized.values() for s in runs})
        for n in sizes:
            row = [str(n)]
            by = {}
            for s in stores:
                r = next((x for x in sized[s] if x["keys_per_get"] == n), None)
                by[s] = r
                row += [k(r["keys_per_s"]), k(r["calls_per_s"]), f"{r['p99_us']:.0f}", cores(r)] if r else ["-"] * 4
            if {"gphkv", "memcached"} <= set(stores):
                g, m = by.get("gphkv"), by.get("memcached")
                row.append(f"{g['keys_per_s'] / m['keys_per_s']:.2f}x" if g and m and m["keys_per_s"] else "-")
            lines.append("| " + " | ".join(row) + " |")
        lines += ["", "![keys/s against keys per request](loadgen-sizes.svg)", ""]
    return "\n".join(lines)


def gnuplot(out, name, script):
    """Writes OUT/NAME.gp (paths relative to OUT, so it can be drawn again elsewhere: cd OUT && gnuplot
    NAME.gp) and draws it when gnuplot is installed."""
    with open(os.path.join(out, name + ".gp"), "w") as f:
        f.write(script)
    if shutil.which("gnuplot"):
        subprocess.run(["gnuplot", name + ".gp"], cwd=out, check=False)


def plots(a, results):
    docs = os.path.relpath(a.docs, a.out)
    presets = {p for st in results.values() for p in st["workloads"]}
    for preset in sorted(presets):
        series = []
        for store, st in results.items():
            wr = st["workloads"].get(preset)
            runs = [r for s in (wr["steps"] if wr else []) for r in s["runs"]]
            if not runs:
                continue
            dat = f"curve-{store}-{preset}.dat"
            with open(os.path.join(a.out, dat), "w") as f:
                for r in sorted(runs, key=lambda r: r["keys_per_s"]):
                    f.write(f"{r['keys_per_s']:.1f} {r['p99_us']:.2f} {r['p50_us']:.2f}\n")
            series.append(f"'{dat}' using 1:2 with linespoints lw 2 title '{store} p99'")
        if series:
            gnuplot(a.out, f"compare-{preset}", f"""set terminal svg size 900,550 dynamic font 'sans,11'
set output '{docs}/loadgen-compare-{preset}.svg'
set title "p99 latency vs achieved keys/s, workload {preset} (open loop)"
set xlabel 'keys/s (achieved)'
set ylabel 'p99 latency (us)'
set logscale y
set grid
set format x '%.1s%c'
set key top left
plot {', '.join(series)}, {a.limit_us} with lines dt 2 lc rgb 'gray' title 'p99 limit'
""")
    series = []
    for store, st in results.items():
        if not st["sizes"]:
            continue
        dat = f"sizes-{store}.dat"
        with open(os.path.join(a.out, dat), "w") as f:
            for r in sorted(st["sizes"], key=lambda r: r["keys_per_get"]):
                f.write(f"{r['keys_per_get']} {r['keys_per_s']:.1f}\n")
        series.append(f"'{dat}' using 1:2 with linespoints lw 2 pt 7 title '{store}'")
    if series:
        gnuplot(a.out, "sizes", f"""set terminal svg size 800,500 dynamic font 'sans,11'
set output '{docs}/loadgen-sizes.svg'
set title "keys/s against keys per request (closed loop)"
set xlabel 'keys per get'
set ylabel 'keys/s'
set logscale xy
set grid
set format y '%.1s%c'
set key top left
plot {', '.join(series)}
""")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    for flag in ("--out", "--docs", "--backend", "--commit", "--command", "--plan", "--tag", "--api", "--pass-rule"):
        p.add_argument(flag, default="")
    p.add_argument("--limit-us", type=float, required=True)
    p.add_argument("--elapsed-s", type=int, default=0)
    p.add_argument("--repeats", type=int, default=1)
    a = p.parse_args()
    results = collect(a.out, a.limit_us)
    now = datetime.datetime.now(datetime.timezone.utc)
    date = now.strftime("%Y-%m-%d %H:%M UTC")
    gpu = gpu_name()
    machine = f"{cpu_model()}, {os.cpu_count()} CPUs"
    tag = a.tag or ("".join(ch for ch in gpu.split()[1].lower() if ch.isalnum()) if len(gpu.split()) > 1 else "cpu")
    header = (f"{' vs '.join(results)} under gphkv-loadgen ({date}; {machine}" + (f"; GPU {gpu}" if gpu else "") +
              f"; commit {a.commit}; gphkv backend {a.backend}, api {a.api})")
    md = markdown(a, results, header)
    doc = {"schema": "gphkv-loadgen-compare", "schema_version": 2, "date": date, "machine": machine, "gpu": gpu,
           "host": {"hostname": socket.gethostname(), "cpu": cpu_model(), "cpus": os.cpu_count()},
           "commit": a.commit, "command": a.command, "plan": a.plan, "elapsed_s": a.elapsed_s,
           "p99_limit_us": a.limit_us, "pass_rule": a.pass_rule, "repeats": a.repeats, "gphkv_backend": a.backend,
           "api": a.api, "results": results}
    base = os.path.join(a.out, f"loadgen_compare_{tag}_{now.strftime('%Y%m%dT%H%M')}")
    with open(base + ".md", "w") as f:
        f.write(md + "\n")
    with open(base + ".json", "w") as f:
        json.dump(doc, f, indent=2)
    shutil.copy(base + ".md", os.path.join(a.out, "results.md"))
    shutil.copy(base + ".json", os.path.join(a.out, "results.json"))
    plots(a, results)
    print(md)
    print(f"loadgen-compare: {base}.md, {base}.json, plots in {a.docs}")


if __name__ == "__main__":
    main()

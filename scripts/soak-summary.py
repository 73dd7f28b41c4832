#!/usr/bin/env python3
"""Summarises a soak (scripts/soak.sh's OUT folder) into one result JSON and a plot.

  python3 scripts/soak-summary.py OUT --json bench/results/soak_cpu_COMMIT.json --plot docs/soak-cpu.svg
  python3 scripts/soak-summary.py --from_json bench/results/soak_cpu_COMMIT.json --plot docs/soak-cpu.svg

The JSON: duration_s, errors (calls answered with an error, never answered, or
lost to a failed load generator), rss_mb {after_warmup, end} and the GPU's
memory the same way (CUDA), the per-interval series (calls, errors, RSS, GPU
memory, p50, p99, served rate), every memory sample (memory_samples), and the
goals checked: 0 errors, RSS at the end within 5% of RSS after the warm-up, p99
of every interval within 2x of the first interval's. The plot (gnuplot, SVG or
PNG by the name) shows RSS and p99 over time, drawn from the JSON alone, so
--from_json draws a committed result again.
"""
import argparse
import csv
import datetime
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile


def read_config(out):
    config = {}
    with open(os.path.join(out, "config.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            # Lines with several key=value words (the knobs) and lines whose value has spaces (commands).
            key, _, value = line.partition("=")
            if key in ("server", "loadgen", "host", "gpu", "commit", "started", "ended"):
                config[key] = value
            else:
                for word in line.split():
                    k, _, v = word.partition("=")
                    config[k] = v
    return config


def read_samples(out):
    with open(os.path.join(out, "samples.csv")) as f:
        rows = list(csv.DictReader(f))

    def num(v):
        return float(v) if v not in (None, "") else None

    return [{k: num(v) for k, v in r.items()} for r in rows]


def read_runs(out):
    runs = []
    with open(os.path.join(out, "runs.csv")) as f:
        for r in csv.DictReader(f):
            path = os.path.join(out, "loadgen-%02d.json" % int(r["run"]))
            report = None
            if os.path.exists(path):
                with open(path) as j:
                    report = json.load(j)
            runs.append({"run": int(r["run"]), "start": float(r["start_epoch"]), "end": float(r["end_epoch"]),
                         "exit": int(r["exit"]), "report": report})
    return runs


def nearest_row(samples, epoch, key):
    return min((s for s in samples if s.get(key) is not None), key=lambda s: abs(s["epoch"] - epoch), default=None)


def nearest(samples, epoch, key):
    best = nearest_row(samples, epoch, key)
    return best[key] if best else None


def host_load(out, samples):
    """(epoch, 1-minute load) pairs: the samples' load1, or host_load.csv where a side sampler wrote it."""
    pairs = [(s["epoch"], s["load1"]) for s in samples if s.get("load1") is not None]
    path = os.path.join(out, "host_load.csv")
    if not pairs and os.path.exists(path):
        with open(path) as f:
            pairs = [(float(r["epoch"]), float(r["load1"])) for r in csv.DictReader(f)]
    return pairs


def window_median(samples, key, t_from, t_to):
    vals = [s[key] for s in samples if s.get(key) is not None and t_from <= s["t_s"] < t_to]
    return statistics.median(vals) if vals else None


LOG_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+)\]")


def server_events(out):
    """From the server's log: each snapshot written (end epoch, seconds) and the bytes each shrink's trim gave back."""
    snapshots, trimmed = [], []
    path = os.path.join(out, "server.log")
    if not os.path.exists(path):
        return snapshots, trimmed
    with open(path, errors="replace") as f:
        for line in f:
            m = LOG_TIME.match(line)
            if not m:
                continue
            epoch = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            w = re.search(r"data dir: snapshot \S+ written in ([0-9.]+) s", line)
            if w:
                snapshots.append((epoch, float(w.group(1))))
            t = re.search(r"the value heap gave back (\d+) bytes", line)
            if t:
                trimmed.append(int(t.group(1)))
    return snapshots, trimmed


def summarise(out, warmup_s):
    config = read_config(out)
    samples = read_samples(out)
    runs = read_runs(out)
    t_end = samples[-1]["t_s"] if samples else 0

    errors_by_status = {}
    calls = answered_errors = dropped = load_errors = 0
    failed_runs = []
    series = []
    for run in runs:
        rep = run["report"]
        if run["exit"] != 0 or rep is None:
            failed_runs.append({"run": run["run"], "exit": run["exit"], "report": rep is not None})
        if rep is None:
            continue
        res = rep["results"]
        calls += res["overall"]["calls"]
        answered_errors += res["overall"]["errors"]
        dropped += res["dropped_calls"]
        load_errors += rep["load"]["errors"] or 0
        for status, n in (res["overall"].get("errors_by_status") or {}).items():
            errors_by_status[status] = errors_by_status.get(status, 0) + n
        # A point's t_s is the end of its interval from the measured start; the run's
        # measured window ended just before the process did (drain and report take well under a second).
        prev_t = 0.0
        for p in rep["series"]:
            epoch = run["end"] - (res["seconds"] - p["t_s"])
            series.append({
                "run": run["run"],
                "epoch": round(epoch, 1),
                # The calls answered in the interval (the run's last one may be shorter).
                "calls": round(p["calls_per_s"] * (p["t_s"] - prev_t)),
                "calls_per_s": round(p["calls_per_s"], 1),
                "keys_per_s": round(p["keys_per_s"], 1),
                "p50_us": round(p["p50_us"], 1),
                "p99_us": round(p["p99_us"], 1),
                "max_us": round(p["max_us"], 1),
                "errors": p["errors"],
            })
            prev_t = p["t_s"]
    t0_epoch = samples[0]["epoch"] - samples[0]["t_s"] if samples else 0
    interval = float(config.get("interval_s") or 60)
    load = host_load(out, samples)
    snapshots, trimmed = server_events(out)
    for p in series:
        epoch = p.pop("epoch")
        p["t_s"] = round(epoch - t0_epoch, 1)
        rss = nearest(samples, epoch, "rss_kib")
        p["rss_mb"] = round(rss / 1024, 1) if rss else None
        gpu = nearest(samples, epoch, "gpu_mib")
        if gpu is None:
            gpu = nearest(samples, epoch, "gpu_used_mib")
        if gpu is not None:
            p["gpu_mib"] = gpu
        # The machine's state over the interval: a p99 that rose with the host's load is the host's.
        during = [v for t, v in load if epoch - interval <= t <= epoch]
        if during:
            p["host_load1"] = round(statistics.mean(during), 2)
        p["snapshots"] = sum(1 for t, _ in snapshots if epoch - interval < t <= epoch)
        cpu_end, cpu_start = nearest_row(samples, epoch, "server_cpu_s"), nearest_row(samples, epoch - interval,
                                                                                      "server_cpu_s")
        if cpu_end and cpu_start and cpu_end["epoch"] > cpu_start["epoch"]:
            p["server_cores"] = round((cpu_end["server_cpu_s"] - cpu_start["server_cpu_s"]) /
                                      (cpu_end["epoch"] - cpu_start["epoch"]), 2)

    shrinks = started = 0
    shrink_failures = []
    if os.path.exists(os.path.join(out, "shrinks.txt")):
        with open(os.path.join(out, "shrinks.txt")) as f:
            for line in f:
                shrinks += 1
                if '"started":true' in line:
                    started += 1
                elif '"started":false' not in line:
                    shrink_failures.append(line.strip())

    stats = []
    if os.path.exists(os.path.join(out, "stats.jsonl")):
        with open(os.path.join(out, "stats.jsonl")) as f:
            stats = [json.loads(line) for line in f if line.strip()]
    last = stats[-1]["stats"] if stats else {}
    data_dir = last.get("data_dir", {})

    server_exit = None
    if os.path.exists(os.path.join(out, "server_exit")):
        with open(os.path.join(out, "server_exit")) as f:
            parts = f.read().split()
            server_exit = {"status": int(parts[0]), "seconds": int(parts[1])}

    def mem(key, scale):
        after = window_median(samples, key, warmup_s, warmup_s + 60)
        end = window_median(samples, key, t_end - 60, t_end + 1)
        peak = max((s[key] for s in samples if s.get(key) is not None and s["t_s"] >= warmup_s), default=None)
        if after is None or end is None:
            return None
        return {"after_warmup": round(after / scale, 1), "end": round(end / scale, 1),
                "max_after_warmup": round(peak / scale, 1), "change_pct": round(100 * (end - after) / after, 2),
                "first_sample": round(next(s[key] for s in samples if s.get(key) is not None) / scale, 1)}

    rss = mem("rss_kib", 1024)
    # nvidia-smi may not list the server's process (e.g. in a container's PID namespace): the whole GPU then.
    gpu_key = "gpu_mib" if any(s.get("gpu_mib") is not None for s in samples) else "gpu_used_mib"
    gpu = mem(gpu_key, 1)
    if gpu is not None:
        gpu["source"] = "the server's process" if gpu_key == "gpu_mib" else "the whole GPU (memory.used)"
    p99s = [p["p99_us"] for p in series]
    errors = answered_errors + dropped + load_errors
    result = {
        "schema": "gphkv-soak",
        "backend": config.get("backend"),
        "commit": config.get("commit"),
        "date": config.get("started"),
        "ended": config.get("ended"),
        "host": config.get("host"),
        "gpu": config.get("gpu") or None,
        "command": "BACKEND=%s SOAK_S=%s RATE=%s KEYS=%s scripts/soak.sh" % (
            config.get("backend"), config.get("soak_s"), config.get("rate"), config.get("keys")),
        "server_command": config.get("server"),
        "loadgen_command": config.get("loadgen"),
        "knobs": {k: config.get(k) for k in ("soak_s", "sample_s", "interval_s", "shrink_every_s", "restart_every_s",
                                              "rate", "keys", "memory", "snapshot_interval")},
        "duration_s": round(t_end, 1),
        "measured_s": round(sum(r["report"]["results"]["seconds"] for r in runs if r["report"]), 1),
        "loadgen_runs": len(runs),
        "calls": calls,
        "errors": errors,
        "errors_detail": {"answered_with_error": answered_errors, "by_status": errors_by_status,
                          "never_answered": dropped, "load_phase": load_errors, "failed_runs": failed_runs},
        "shrinks": {"asked": shrinks, "started": started, "failed": shrink_failures},
        "snapshots": {"taken": data_dir.get("snapshots"), "written_in_log": len(snapshots),
                      "mean_s": round(statistics.mean(d for _, d in snapshots), 2) if snapshots else None,
                      "max_s": max((d for _, d in snapshots), default=None)},
        "value_heap_given_back_mb": round(sum(trimmed) / 2**20, 1),
        "data_dir_last": {k: data_dir.get(k) for k in ("log_bytes", "log_segments", "snapshot_bytes",
                                                       "last_snapshot_seconds", "last_snapshot_error")},
        "keys_end": last.get("keys"),
        "rebuilds": last.get("rebuilds"),
        "server_exit": server_exit,
        "warmup_s": warmup_s,
        "rss_mb": rss,
        "gpu_mib": gpu,
        "p99_us": {"first_interval": p99s[0] if p99s else None, "max": max(p99s) if p99s else None,
                   "max_over_first": round(max(p99s) / p99s[0], 2) if p99s and p99s[0] else None,
                   "median": statistics.median(p99s) if p99s else None},
        "goals": {
            "zero_errors": errors == 0 and not failed_runs,
            "rss_end_within_5pct_of_after_warmup": rss is not None and abs(rss["change_pct"]) <= 5,
            "p99_every_interval_within_2x_first": bool(p99s) and max(p99s) <= 2 * p99s[0],
        },
        "series": series,
        # Every sample of the server's memory, [t_s, RSS MB, GPU MiB or null]: the plot is drawn from this JSON alone.
        "memory_samples": [[s["t_s"], round(s["rss_kib"] / 1024, 1),
                            s[gpu_key] if s.get(gpu_key) is not None else None] for s in samples if s.get("rss_kib")],
    }
    if gpu is not None:
        result["goals"]["gpu_memory_flat_within_5pct"] = abs(gpu["change_pct"]) <= 5
    return result


def plot(result, path):
    """Two panels over minutes: the server's RSS (and GPU memory) above, p99 per interval with the host's load below."""
    term = "pngcairo size 960,640" if path.endswith(".png") else "svg size 960,640 dynamic font 'sans,12'"
    with tempfile.TemporaryDirectory() as tmp:
        mem_file = os.path.join(tmp, "mem.dat")
        with open(mem_file, "w") as f:
            for t_s, rss_mb, gpu_mib in result["memory_samples"]:
                f.write("%.3f %.1f %s\n" % (t_s / 60, rss_mb, "%.0f" % gpu_mib if gpu_mib is not None else "NaN"))
        lat_file = os.path.join(tmp, "lat.dat")
        with open(lat_file, "w") as f:
            for p in result["series"]:
                f.write("%.3f %.3f %.3f %s\n" % (p["t_s"] / 60, p["p99_us"] / 1000, p["p50_us"] / 1000,
                                                 p.get("host_load1", "NaN")))
        knobs = result["knobs"]
        title = "gphkv soak, %s backend, %s\\n%s calls/s open loop, the load generator restarted every %s s, " \
                "a shrink every %s s, snapshots every %s" % (result["backend"], result["commit"], knobs["rate"],
                                                            knobs["restart_every_s"], knobs["shrink_every_s"],
                                                            knobs["snapshot_interval"])
        gpu = "" if result.get("gpu_mib") is None else \
            f", '{mem_file}' using 1:3 with lines lw 2 title 'GPU memory (MiB)'"
        load = "" if not any("host_load1" in p for p in result["series"]) else \
            f", '{lat_file}' using 1:4 axes x1y2 with lines dt 2 lc rgb 'gray40' title 'host load (right)'"
        script = f"""
set terminal {term}
set output '{path}'
set multiplot layout 2,1 title "{title}" font ',11'
set grid
set lmargin 10
set rmargin 10
set xrange [0:{math.ceil(result['duration_s'] / 60)}]
set key bottom right
set ylabel 'MB'
set yrange [0:*]
plot '{mem_file}' using 1:2 with lines lw 2 title 'server RSS, every {knobs["sample_s"]} s'{gpu}
set xlabel 'minutes'
set ylabel 'latency per {knobs["interval_s"]} s (ms)'
set logscale y
set yrange [*:*]
set ytics nomirror
set y2label "host's 1-minute load"
set y2tics
set y2range [0:*]
set key top right horizontal
plot '{lat_file}' using 1:2 with linespoints pt 7 ps 0.5 lw 2 title 'p99', \\
     '{lat_file}' using 1:3 with linespoints pt 6 ps 0.4 title 'p50'{load}
unset multiplot
"""
        subprocess.run(["gnuplot"], input=script, text=True, check=True)


def to_json(result):
    """Indented JSON with the memory samples last, one [t_s, RSS, GPU] a line."""
    samples = result["memory_samples"]
    head = json.dumps({k: v for k, v in result.items() if k != "memory_samples"}, indent=1)
    lines = ",\n".join("  " + json.dumps(s) for s in samples)
    return head[:-2] + ',\n "memory_samples": [\n' + lines + "\n ]\n}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?", help="the soak's folder (scripts/soak.sh's OUT)")
    ap.add_argument("--from_json", help="instead of a soak's folder, a result this script wrote: draw its --plot again")
    ap.add_argument("--json", help="write the result here (default: print it)")
    ap.add_argument("--plot", help="draw RSS and p99 over time here (.svg or .png; needs gnuplot)")
    ap.add_argument("--warmup_s", type=float, default=600,
                    help="seconds from the first sample before RSS is compared (default 600: two load generator "
                    "runs, past the fill and the first rebuilds)")
    ap.add_argument("--note", help="free text carried into the result (e.g. what the binaries were built from)")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            result = json.load(f)
        if args.plot:
            plot(result, args.plot)
        return
    if not args.out:
        ap.error("give the soak's folder, or --from_json RESULT")
    result = summarise(args.out, args.warmup_s)
    if args.note:
        result = {**{k: v for k, v in result.items() if k != "series"}, "note": args.note, "series": result["series"]}
    text = to_json(result)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    if args.plot:
        plot(result, args.plot)
    g = result["goals"]
    print("soak-summary: %.0f s, %d calls, %d errors; RSS %s; p99 max/first %s; goals %s" % (
        result["duration_s"], result["calls"], result["errors"], result["rss_mb"],
        result["p99_us"]["max_over_first"], ", ".join("%s=%s" % kv for kv in g.items())), file=sys.stderr)


if __name__ == "__main__":
    main()

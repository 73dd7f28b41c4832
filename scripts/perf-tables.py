#!/usr/bin/env python3
"""Writes the performance tables from the result files in bench/results/.

Two generated regions, each between its markers (everything between them is
rewritten, so every figure there comes from a committed result file, named
beside it):

  README.md              <!-- perf-headline:begin --> .. <!-- perf-headline:end -->
                         the headline table: a handful of rows, each with its device and date
  docs/performance.md    <!-- perf:begin --> .. <!-- perf:end -->
                         every table, one or more per source

    python3 scripts/perf-tables.py          # rewrite both files in place
    python3 scripts/perf-tables.py --check  # exit 1, naming the stale file, if either is out of date

A new kind of result: write one function that reads its files (runs() or
newest()) and returns the markdown lines of its tables, and add it to
DOC_TABLES; if it earns a place on the front page, write one that returns its
HeadlineRow(s) and add it to HEADLINE_ROWS. bench/results/README.md says which
file feeds which table.
"""
import glob
import json
import os
import sys
from typing import NamedTuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")

# Two runs of one comparison agree when the larger is within this factor of the smaller.
AGREE_WITHIN = 1.25


def runs(benchmark, pred=lambda d: True):
    """(date, path, result) of every result file of `benchmark` that `pred` accepts, oldest first."""
    found = []
    for path in glob.glob(os.path.join(RESULTS, "*.json")):
        with open(path) as f:
            try:
                d = json.load(f)
            except json.JSONDecodeError:
                continue
        if isinstance(d, dict) and d.get("benchmark", d.get("schema")) == benchmark and pred(d):
            found.append((d.get("date", ""), os.path.relpath(path, ROOT), d))
    return sorted(found, key=lambda r: r[:2])


def engine_defaults_run(d):
    """A whole engine_bench run of the tables' default shape: its table and build sections (all of them
    when --sections is not given), neither a sweep nor a --shape comparison."""
    words = d["command"].split()
    sections = next((w.split("=", 1)[1].split(",") for w in words if w.startswith("--sections=")), ["table", "build"])
    return (d.get("sizes") and "table" in sections and "build" in sections and "--sweep" not in words
            and not any(w.startswith("--shape") for w in words))


def newest(benchmark, pred=lambda d: True):
    found = runs(benchmark, pred)
    return found[-1] if found else None


def command_of(d):
    """The benchmark's command line without its folder and its --json= output path."""
    words = d["command"].split()
    return " ".join([os.path.basename(words[0])] + [w for w in words[1:] if not w.startswith("--json")])


def day_of(date):
    """'2026-11-22' from '2026-11-22T22:04:02Z' or '2026-11-22 22:12 UTC'."""
    return date[:10]


def powers_of_ten(n):
    exp = len(str(n)) - 1
    return f"10^{exp}" if n == 10 ** exp else f"{n:,}"


def agreement(*figures):
    """How runs' figures of the same thing compare, in words (the largest against the smallest)."""
    lo, hi = min(figures), max(figures)
    runs = "the two runs" if len(figures) == 2 else f"the {len(figures)} runs"
    if lo > 0 and hi / lo <= AGREE_WITHIN:
        return f"{runs} agree"
    return f"**{runs} disagree**" + (f" ({hi / lo:.1f}x apart)" if lo > 0 else "")


# ---------------------------------------------------------------- docs/performance.md


def size_m(d):
    """M of a run's tables: recorded since the pairs layout; the runs before it had M = 16."""
    return d["sizes"][0].get("slots_per_bucket", 16)


def engine_gpu():
    hit = newest("engine_bench", engine_defaults_run)
    if not hit:
        return []
    _, path, d = hit
    out = [f"**GPU engine** ({d['device']}, commit `{d['git_commit']}`, `{command_of(d)}`; "
           f"`{path}`). 8-byte keys and values, M={size_m(d)} slots per bucket, R=8. Ceiling: random 128-byte gather "
           "measured in the same run; baseline: bucketed linear probing at the same load, 16 keys to a "
           "128-byte bucket and the values in an array of their own (docs/gph.md).", ""]
    for size in d["sizes"]:
        out += [f"| {powers_of_ten(size['keys'])} keys, load {size['load']} | G ops/s | / gather ceiling | / baseline |",
                "|---|---:|---:|---:|"]
        for f in size["find"]:
            out.append(f"| find, {f['hit_pct']}% hits, {f['distribution']} | {f['gph']:.2f} | "
                       f"{f['gph_over_ceiling']:.2f} | {f['gph_over_baseline']:.2f} |")
        out.append(f"| insert, build from empty | {size['insert_build']:.2f} | | "
                   f"{size['insert_build'] / size['baseline_build']:.2f} |")
        out.append(f"| insert, 1% burst into the full table | {size['insert_burst_1pct']:.2f} | | |")
        out.append(f"| erase, 1% burst | {size['erase_burst_1pct']:.2f} | | |")
        out.append("")
    return out


def newest_bulk_build():
    """The newest run with the bulk-build sections: a run of them alone, or a whole engine_bench run."""
    has_build = lambda d: d.get("bulk_build")  # a layout-only run is an "engine_bench_build" file too
    hits = [h for h in (newest("engine_bench_build", has_build), newest("engine_bench", has_build)) if h]
    return max(hits) if hits else None


def engine_gpu_build():
    """The device bulk build, burst paths and lookups during a rebuild (engine_bench --sections=build,...)."""
    hit = newest_bulk_build()
    if not hit:
        return []
    _, path, d = hit
    out = [f"**GPU bulk build and write bursts** ({d['device']}, commit `{d['git_commit']}`, `{command_of(d)}`; "
           f"`{path}`). HashGraph-style build on the device (docs/gph.md, \"Bulk build\"), median of the runs.", "",
           "| bulk build | pairs in | keys | ms | G pairs/s |", "|---|---:|---:|---:|---:|"]
    for r in d["bulk_build"]:
        out.append(f"| {r['variant']} | {r['inputs']:,} | {r['keys']:,} | {r['ms']:.1f} | {r['g_inputs_per_s']:.2f} |")
    out += ["", "| burst into a 10^8-key table (to load 0.8) | keys | insert kernel ms | rebuild ms | rebuild / insert |",
            "|---|---:|---:|---:|---:|"]
    for r in d["burst_absorb"]:
        out.append(f"| {r['fraction'] * 100:g}% | {r['burst_keys']:,} | {r['insert_ms']:.2f} | {r['rebuild_ms']:.1f} | "
                   f"{r['rebuild_ms'] / r['insert_ms']:.1f}x |")
    out += ["", "| lookups (50% hits) while a rebuild runs | idle G/s | during G/s | during / idle | rebuild ms alone / during |",
            "|---|---:|---:|---:|---:|"]
    for r in d["lookup_during_rebuild"]:
        out.append(f"| {r['setup']} | {r['idle_gops']:.2f} | {r['during_gops']:.2f} | {r['during_over_idle']:.2f} | "
                   f"{r['rebuild_ms_alone']:.0f} / {r['rebuild_ms_during']:.0f} |")
    return out + [""]


def lookup_bounds():
    """What the memory system allows each lookup layout (engine/bench/lookup_bounds.cu)."""
    hit = newest("lookup_bounds", lambda d: d.get("keys") == 10 ** 8)
    if not hit:
        return []
    _, path, d = hit
    rows = [r for r in d["results"] if not r["cells_pinned_in_l2"] and r["pattern"] != "ceiling (bucket only)"]
    out = [f"**Bounds of the lookup layouts** ({d['device']}, commit `{d['commit']}`, `{d['command']}`; `{path}`): "
           "the memory accesses of a one-probe lookup with no table, as a share of the 128-byte gather ceiling "
           "measured in the same run (docs/gph.md, \"The bound of each layout\").", "",
           "| 10^8 keys, load 0.8 | G/s | / gather ceiling |", "|---|---:|---:|"]
    for r in rows:
        out.append(f"| {r['pattern'].replace('|', '/')} | {r['g_per_s']:.2f} | {r['vs_ceiling']:.2f} |")
    return out + [""]


def pairs_layout():
    """The engine's find against the same M = 8 tables read as key-value pairs (engine_bench --sections=layout)."""
    hit = max([h for h in (newest(b, lambda d: d.get("layout_pairs_m8") and "1e8" in d["command"])
                           for b in ("engine_bench", "engine_bench_build")) if h], default=None)
    if not hit:
        return []
    _, path, d = hit
    out = [f"**Key-value pairs in the bucket, on real tables** ({d['device']}, commit `{d['git_commit']}`, "
           f"`{command_of(d)}`; `{path}`): G finds/s, median of the runs; 10^8 keys (docs/gph.md, "
           "\"Pairs in the bucket\"; the section left engine_bench with the switch, its source is at 5e5ab89).", "",
           "| table | hits | keys / values arrays | the same slots as pairs |", "|---|---|---:|---:|"]
    for r in d["layout_pairs_m8"]:
        out.append(f"| {r['shape']} | {r['hit_pct']}% {r['distribution']} | {r['keys_values']:.2f} | {r['pairs']:.2f} |")
    return out + [""]


def engine_cpu():
    hit = newest("cpu_table_bench")
    if not hit:
        return []
    _, path, d = hit
    out = [f"**CPU engine** ({d['device']}, {d['threads']} threads, commit `{d['commit'][:12]}`, `{d['command']}`; "
           f"`{path}`): {d['keys']:,} keys, load factor {d['load_factor']:.2f}.", "",
           "| operation | M ops/s (median) |", "|---|---:|"]
    out += [f"| {r['op']} | {r['mops_median']:.1f} |" for r in d["results"]]
    if d.get("bursts"):
        out += ["", "| burst (share of the resident keys) | insert path M keys/s | rebuild path M keys/s |",
                "|---|---:|---:|"]
        out += [f"| {b['fraction'] * 100:g}% ({b['keys']:,} keys) | {b['insert_path_mkeys_per_s']:.2f} | "
                f"{b['rebuild_path_mkeys_per_s']:.2f} |" for b in d["bursts"]]
    return out + [""]


def newest_service_runs():
    """The newest service_bench run of each kind (backend; light load or not), by path.

    Older files are bare lists without the "benchmark" field; runs() skips them.
    """
    newest_of = {}
    for date, path, d in runs("service_bench"):
        kind = (d["backend"], any("streams=1 " in r["config"] for r in d["results"]))
        newest_of[kind] = (date, path, d)  # runs() is oldest first
    return sorted(newest_of.values(), key=lambda r: r[1])


def service():
    out = []
    for _, path, d in newest_service_runs():
        where = d.get("device", d.get("host", ""))
        out += [f"**Service, {d['backend']} backend** ({where}, commit `{d['commit'][:12]}`, `{d['command']}`; "
                f"`{path}`). Server and client in one process over loopback gRPC.", "",
                "| workload | calls/s | keys/s | p50 µs | p99 µs | keys per launch |", "|---|---:|---:|---:|---:|---:|"]
        for r in d["results"]:
            launch = r["server_batched_keys"] / r["server_batches"] if r.get("server_batches") else 0
            out.append(f"| {r['workload']} ({r['config']}) | {r['calls_per_s']:,.0f} | {r['keys_per_s']:,.0f} | "
                       f"{r['p50_us']:,.0f} | {r['p99_us']:,.0f} | {launch:.1f} |")
        out.append("")
    return out


def comparison_of(d):
    """What must match for two loadgen-compare runs to be the same comparison."""
    best = d["results"]["gphkv"]["best"]
    drive = best["config"]["drive"]
    return (d["machine"], d["gpu"], d["p99_limit_us"], d["gphkv_backend"], json.dumps(best["workload"], sort_keys=True),
            drive["threads"], drive["connections_per_thread"], drive["duration_s"])


def compare_runs():
    """The two newest runs of the newest gphkv-vs-memcached comparison that measured both stores.

    Two, because one bisection search is fragile: a single tail event at one
    step sends it low. A run may measure one store (TARGETS=gphkv).
    """
    both = runs("gphkv-loadgen-compare",
                lambda d: all((d.get("results", {}).get(t) or {}).get("best") for t in ("gphkv", "memcached")))
    if not both:
        return []
    same = [r for r in both if comparison_of(r[2]) == comparison_of(both[-1][2])]
    return same[-2:]


def run_time(d):
    """'22:10' from the run's date '2026-11-22 22:10 UTC'."""
    return d["date"][11:16]


def md_row(cells):
    return "| " + " | ".join(cells) + " |"


def compare():
    pair = compare_runs()
    if not pair:
        return []
    ds = [d for _, _, d in pair]
    first = ds[0]
    best = lambda d, t: d["results"][t]["best"]
    times = " and ".join(run_time(d) for d in ds)
    reports = ", ".join(f"[{os.path.basename(p)[:-5]}.md](../{p[:-5]}.md)" for _, p, _ in pair)
    out = [f"**gphkv vs memcached** (`scripts/loadgen-compare.sh`: the default TaoBench-style workload, open loop, "
           f"the highest offered rate with p99 < {first['p99_limit_us']:g} µs; {first['gpu']}, {first['machine']}, "
           f"gphkv backend {first['gphkv_backend']}; runs of {day_of(first['date'])} {times} UTC; reports: {reports}).",
           "",
           md_row(["store"] + [f"keys/s, {run_time(d)}" for d in ds] + ["runs"] +
                  [f"calls/s / p50 / p99 µs, {run_time(d)}" for d in ds]),
           md_row(["---"] + ["---:"] * len(ds) + ["---"] + ["---:"] * len(ds))]
    for t in ("gphkv", "memcached"):
        keys = [best(d, t)["keys_per_s"] for d in ds]
        out.append(md_row([t] + [f"{k:,.0f}" for k in keys] + [agreement(*keys) if len(ds) == 2 else "one run"] +
                          [f"{best(d, t)['calls_per_s']:,.0f} / {best(d, t)['p50_us']:,.0f} / {best(d, t)['p99_us']:,.0f}"
                           for d in ds]))
    out.append(md_row(["gphkv / memcached"] +
                      [f"{best(d, 'gphkv')['keys_per_s'] / best(d, 'memcached')['keys_per_s']:.2f}x" for d in ds] +
                      [""] * (1 + len(ds))))
    return out + [""]



# The service front end: scripts/device-service-suite.sh, one device call per run
# (bench/results/service_suite_*.json, written by scripts/service-suite-results.py).


def suite_runs():
    return runs("service-suite")


def suite_part(d, part):
    return d["parts"][part]["results"]


def cores(r):
    server = "-" if r.get("server_cores") is None else f"{r['server_cores']:.1f}"
    return f"{r['loadgen_cores']:.1f} / {server}"


def suite_header(d, path):
    return (f"{d['device']}, {d['machine']}, commit `{d['commit']}`, {d['date']}; `{d['command']}`; "
            f"`{path}`. Cores: the load generator's / the server's, CPU seconds over each run's measured window.")


def front_end():
    found = suite_runs()
    if not found:
        return []
    _, path, d = found[-1]
    co = suite_part(d, "coalesced")
    out = ["**The service front end against memcached** (" + suite_header(d, path) + ") gphkv's requests are "
           "`gphkv::Client` calls with coalescing on (the default), memcached's are pipelined on each connection; "
           "each store's threads tuned from the same list; closed-loop peak = the best depth; the open-loop "
           f"search keeps the highest offered rate whose runs all kept p99 < {d['parts']['coalesced']['p99_limit_us']:g} µs.",
           ""]
    for preset in ("default", "taobench-o"):
        if preset not in co["gphkv"]["workloads"]:
            continue
        out += [f"*Workload `{preset}`*", "",
                md_row(["store", "peak calls/s (depth)", "peak keys/s", "cores", "p99 < 1 ms: calls/s", "keys/s",
                        "p50 / p99 µs", "cores"]), md_row(["---"] + ["---:"] * 7)]
        for store in ("gphkv", "memcached"):
            w = co[store]["workloads"][preset]
            pk, b = w["peak"], w.get("best")
            row = [store, f"{pk['calls_per_s']:,.0f} ({pk['depth']})", f"{pk['keys_per_s']:,.0f}", cores(pk)]
            row += ([f"{b['calls_per_s']:,.0f}", f"{b['keys_per_s']:,.0f}", f"{b['p50_us']:,.0f} / {b['p99_us']:,.0f}",
                     cores(b)] if b else ["none passed" if w.get("steps") else "not searched (the ladder)", "", "", ""])
            out.append(md_row(row))
        g, m = co["gphkv"]["workloads"][preset], co["memcached"]["workloads"][preset]
        ratio = f"{g['peak']['keys_per_s'] / m['peak']['keys_per_s']:.2f}x"
        ratio_open = (f"{g['best']['keys_per_s'] / m['best']['keys_per_s']:.2f}x" if g.get("best") and m.get("best")
                      else "no gphkv rate passed")
        out += ["", f"gphkv / memcached keys/s: {ratio} at the closed-loop peak, {ratio_open} at p99 < 1 ms.", ""]
    nv = {r["keys_per_get"]: r for r in suite_part(d, "null_values")["null"]["sizes"]}
    out += ["*Keys per request* (closed loop, default workload with every get of N keys; the null server answers "
            "every key found with 190-byte values, 4 threads; plot: [keys-per-request.svg](keys-per-request.svg))", "",
            md_row(["keys per get", "gphkv keys/s", "cores", "memcached keys/s", "cores", "gphkv / memcached",
                    "null server keys/s", "cores"]), md_row(["---:"] * 8)]
    for g, m in zip(co["gphkv"]["sizes"], co["memcached"]["sizes"]):
        n = nv.get(g["keys_per_get"])
        out.append(md_row([str(g["keys_per_get"]), f"{g['keys_per_s']:,.0f}", cores(g), f"{m['keys_per_s']:,.0f}",
                           cores(m), f"{g['keys_per_s'] / m['keys_per_s']:.2f}x",
                           f"{n['keys_per_s']:,.0f}" if n else "", cores(n) if n else ""]))
    un = suite_part(d, "unary")
    cb = suite_part(d, "null_callback")["null"]["workloads"]["default"]["peak"]
    nul, gph = un["null"]["workloads"]["default"]["peak"], un["gphkv"]["workloads"]["default"]["peak"]
    out += ["", "*One unary RPC per request* (default workload, closed loop, threads tuned: null "
            f"{un['null']['threads']['chosen']}, gphkv {un['gphkv']['threads']['chosen']} gRPC threads)", "",
            md_row(["server", "peak calls/s (depth)", "keys/s", "cores"]), md_row(["---", "---:", "---:", "---:"]),
            md_row(["null server, completion-queue API (as gphkv's front end)", f"{nul['calls_per_s']:,.0f} ({nul['depth']})",
                    f"{nul['keys_per_s']:,.0f}", cores(nul)]),
            md_row(["null server, callback API (the front end before)", f"{cb['calls_per_s']:,.0f} ({cb['depth']})",
                    f"{cb['keys_per_s']:,.0f}", cores(cb)]),
            md_row(["gphkv", f"{gph['calls_per_s']:,.0f} ({gph['depth']})", f"{gph['keys_per_s']:,.0f}", cores(gph)]),
            "", f"gphkv / the completion-queue null server: {gph['calls_per_s'] / nul['calls_per_s']:.2f}x; "
            f"completion-queue / callback null server: {nul['calls_per_s'] / cb['calls_per_s']:.2f}x.", ""]
    light = d["light_load"]["runs"]
    out += [f"*Light load* ({d['light_load']['rate_calls_per_s']:,} requests/s open loop, default workload, "
            "2 threads × 2 connections)", "",
            md_row(["store, API", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "cores"]), md_row(["---"] + ["---:"] * 5)]
    for name, r in light.items():
        out.append(md_row([name, f"{r['p50_us']:,.0f}", f"{r['p90_us']:,.0f}", f"{r['p99_us']:,.0f}",
                           f"{r['p999_us']:,.0f}", cores(r)]))
    if len(found) > 1:
        out += ["", "*Every suite run* (the same figures from each run, newest last; runs on a shared host differ):", "",
                md_row(["run", "commit", "default peak keys/s: gphkv / memcached", "p99 < 1 ms keys/s: gphkv / memcached",
                        "1000 keys: gphkv / memcached", "light p50 / p99 µs: gphkv coalesced / memcached"]),
                md_row(["---"] * 6)]
        for _, p, r in found:
            c = suite_part(r, "coalesced")
            gw, mw = c["gphkv"]["workloads"]["default"], c["memcached"]["workloads"]["default"]
            best = lambda w: f"{w['best']['keys_per_s']:,.0f}" if w.get("best") else "none"
            lg, lm = r["light_load"]["runs"].get("gphkv-coalesced"), r["light_load"]["runs"].get("memcached")
            out.append(md_row([f"`{os.path.basename(p)}`", f"`{r['commit']}`",
                               f"{gw['peak']['keys_per_s']:,.0f} / {mw['peak']['keys_per_s']:,.0f}",
                               f"{best(gw)} / {best(mw)}",
                               f"{c['gphkv']['sizes'][-1]['keys_per_s']:,.0f} / {c['memcached']['sizes'][-1]['keys_per_s']:,.0f}",
                               f"{lg['p50_us']:,.0f} / {lg['p99_us']:,.0f} and {lm['p50_us']:,.0f} / {lm['p99_us']:,.0f}"
                               if lg and lm else ""]))
    return out + [""]

# The fixed, interleaved latency ladder: scripts/latency-ladder.sh, one device call per run
# (bench/results/latency_ladder_*.json, written by scripts/latency-ladder-results.py).

LADDER_STORES = ("gphkv-coalesced", "gphkv-unary", "gphkv-memcached", "null-coalesced", "null-unary", "null-memcached",
                 "memcached")
SLO_US = 1000


def ladder_runs():
    return runs("latency-ladder")


def ladder_stores(d):
    """The stores of a run in the ladder's order, a variant's beside its base."""
    seen = []
    for r in d["rungs"] + d["light_load"]:
        if r["store"] not in seen:
            seen.append(r["store"])
    order = {s: i for i, s in enumerate(LADDER_STORES)}
    return sorted(seen, key=lambda s: (order.get(s.split("@")[0], len(order)), s))


def reps_of(rows, offered, store):
    return sorted((r for r in rows if r["offered"] == offered and r["store"] == store), key=lambda r: r["rep"])


def held(r):
    """The rung held the SLO: p99 under it, no error, and (nearly) the offered rate served."""
    return r["p99_us"] < SLO_US and r["errors"] == 0 and r["served"] >= 0.9 * r["offered"]


def highest_held(d, store):
    """The highest rung at which every rep of `store` held the SLO (None: none did)."""
    best = None
    for offered in sorted({r["offered"] for r in d["rungs"]}):
        reps = reps_of(d["rungs"], offered, store)
        if reps and all(held(r) for r in reps):
            best = offered
    return best


def rate(x):
    """An offered rung (10k, 3M) or a served rate (163k, 1.25M)."""
    if x >= 1e6:
        return f"{x / 1e6:.3g}M"
    return f"{x / 1e3:.3g}k" if x >= 1e3 else f"{x:.0f}"


def lat(us):
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    return f"{us / 1e3:.2f} ms" if us >= 1000 else f"{us:.0f} µs"


def ladder_cell(reps):
    """Each rep's p99, and what was served where the rate was not."""
    if not reps:
        return ""
    cell = " / ".join(lat(r["p99_us"]) for r in reps)
    if not all(r["served"] >= 0.9 * r["offered"] for r in reps):
        cell += " (served " + " / ".join(rate(r["served"]) for r in reps) + ")"
    if any(r.get("read_violations") for r in reps):
        cell += " ⚠ read violations"
    return cell


def ladder_p99_table(d, stores):
    out = [md_row(["offered calls/s"] + [f"{s} p99" for s in stores]), md_row(["---:"] + ["---"] * len(stores))]
    for offered in sorted({r["offered"] for r in d["rungs"]}):
        out.append(md_row([rate(offered)] + [ladder_cell(reps_of(d["rungs"], offered, s)) for s in stores]))
    out.append(md_row(["highest rung held (p99 < 1 ms, every rep)"] +
                      [rate(h) if (h := highest_held(d, s)) else "none" for s in stores]))
    return out


def ladder_header(d, path):
    c = d["client"]
    shape = (f"{c['threads']} threads × {c['connections']} connections each for every store"
             if c["clients"] != "shared" else
             f"{c['threads']} threads for every store, the coalescing stores' over one shared gphkv::Client of "
             f"{c['connections']} streams, the others' {c['connections']} connections each")
    return f"{d['device']}, {d['machine']}, commit `{d['commit']}`, {d['date']}; client {shape}; `{d['command']}`; `{path}`"


def ladder():
    found = ladder_runs()
    if not found:
        return []
    _, path, d = found[-1]
    stores = ladder_stores(d)
    out = [f"**Paced load: the latency ladder** ({ladder_header(d, path)}). Open loop, the default workload, latency "
           "from each call's intended send time; the stores interleaved at each rung, each rung run once per rep; "
           "each cell gives every rep's p99, and the rate served where it fell short of the offered one.", ""]
    out += ladder_p99_table(d, stores) + [""]
    out += ["*p50 / p99.9, and the cores of the server / the client* (each rep)", "",
            md_row(["offered calls/s", "store", "served calls/s", "p50", "p99.9", "cores server / client"]),
            md_row(["---:", "---", "---:", "---:", "---:", "---:"])]
    for offered in sorted({r["offered"] for r in d["rungs"]}):
        for s in stores:
            for r in reps_of(d["rungs"], offered, s):
                server = "-" if r["server_cores"] is None else f"{r['server_cores']:.2f}"
                out.append(md_row([rate(offered), f"{s} (rep {r['rep']})", f"{r['served']:,.0f}", lat(r["p50_us"]),
                                   lat(r["p999_us"]), f"{server} / {r['client_cores']:.2f}"]))
    light = d["light_load"]
    if light:
        out += ["", f"*Light load* ({rate(light[0]['offered'])} calls/s, the same client; each rep)", "",
                md_row(["store", "p50", "p90", "p99", "p99.9", "cores server / client"]),
                md_row(["---"] + ["---:"] * 5)]
        for s in stores:
            reps = reps_of(light, light[0]["offered"], s)
            if reps:
                join = lambda f, sep=" / ": sep.join(f(r) for r in reps)
                out.append(md_row([s, join(lambda r: lat(r["p50_us"])), join(lambda r: lat(r["p90_us"])),
                                   join(lambda r: lat(r["p99_us"])), join(lambda r: lat(r["p999_us"])),
                                   join(lambda r: ("-" if r["server_cores"] is None else f"{r['server_cores']:.2f}") +
                                        f" / {r['client_cores']:.2f}", "; ")]))
    return out + [""]


DOC_TABLES = [ladder, front_end, engine_gpu, engine_gpu_build, lookup_bounds, pairs_layout, engine_cpu, service,
              compare]


# ---------------------------------------------------------------- README.md headline


class HeadlineRow(NamedTuple):
    what: str
    result: str
    compared: str
    device: str
    date: str
    sources: tuple  # paths of the result files, from the repository root


def links(paths):
    return ", ".join(f"[{os.path.basename(p)}]({p})" for p in paths)


def engine_headline():
    """Lookups at 0/50/100% hits on 10^8 keys against the gather ceiling of the same run."""
    hit = newest("engine_bench", engine_defaults_run)
    if not hit:
        return []
    _, path, d = hit
    size = next(s for s in d["sizes"] if s["keys"] == 10 ** 8)
    rows = []
    for f in size["find"]:
        if f["distribution"] != "uniform":
            continue
        rows.append(HeadlineRow(f"GPU lookups, {f['hit_pct']}% hits (10^8 keys, load {size['load']}, uniform keys)",
                                f"{f['gph']:.1f} G lookups/s",
                                f"{f['gph_over_ceiling']:.2f} of the gather ceiling ({size['gather_ceiling_128B']:.1f} G/s)",
                                d["device"], day_of(d["date"]), (path,)))
    return rows


def bulk_build_headline():
    """The default bulk build (V2, radix sort by cell) of 10^8 unique pairs."""
    hit = newest_bulk_build()
    if not hit:
        return []
    _, path, d = hit
    r = next(r for r in d["bulk_build"]
             if r["variant"] == "unique, radix sort by cell (V2, binned)" and r["inputs"] == 10 ** 8)
    return [HeadlineRow("GPU bulk build, 10^8 unique pairs", f"{r['g_inputs_per_s']:.2f} G pairs/s ({r['ms']:.1f} ms)",
                        "", d["device"], day_of(d["date"]), (path,))]


def front_end_headline():
    """Every service suite run: gphkv against memcached, same host, same call; the runs' figures side by side."""
    found = suite_runs()
    if not found:
        return []
    ds = [d for _, _, d in found]
    paths = tuple(p for _, p, _ in found)
    device = f"{ds[-1]['device']} ({ds[-1]['machine']})"
    date = f"{day_of(ds[-1]['date'])} ({', '.join(run_time(d) for d in ds)} UTC)"
    default = lambda d, t: suite_part(d, "coalesced")[t]["workloads"]["default"]
    size = lambda d, t: suite_part(d, "coalesced")[t]["sizes"][-1]
    and_ = " and ".join

    def row(what, pick):
        """pick(d, store) -> a run's figure (keys/s) or None."""
        g = [pick(d, "gphkv") for d in ds]
        m = [pick(d, "memcached") for d in ds]
        result = and_(f"{x / 1e6:.2f} M keys/s" if x else "no rate passed" for x in g)
        if len(ds) >= 2 and all(g):
            result += f": {agreement(*g)}"
        ratio = and_(f"{x / y:.2f}x" if x and y else "-" for x, y in zip(g, m))
        compared = f"{ratio} memcached's " + and_(f"{y / 1e6:.2f} M" if y else "no rate passed" for y in m)
        return HeadlineRow(what, result, compared, device, date, paths)

    rows = [row("Service, ~20-key gets (default workload), closed-loop peak",
                lambda d, t: default(d, t)["peak"]["keys_per_s"])]
    if not ladder_runs():  # the suite's search for p99 < 1 ms, until the ladder replaced it
        rows.append(row("Service, same load, highest rate with p99 < 1 ms",
                        lambda d, t: (default(d, t).get("best") or {}).get("keys_per_s")))
    return rows + [row(f"Service, gets of {size(ds[-1], 'gphkv')['keys_per_get']} keys, closed loop",
                lambda d, t: size(d, t)["keys_per_s"])]


def ladder_headline():
    """The highest paced rate gphkv holds p99 < 1 ms at, beside memcached's and the null server's (newest ladder)."""
    found = ladder_runs()
    if not found:
        return []
    _, path, d = found[-1]
    c = d["client"]
    pick = lambda s: highest_held(d, s)
    shown = lambda x: f"{rate(x)} calls/s" if x else "no rung"
    m = pick("memcached")
    rows = []
    # Each transport of gphkv that the ladder ran, beside memcached and the null server over the same transport.
    for store, null, name in (("gphkv-coalesced", "null-coalesced", "gphkv coalesced (gRPC)"),
                              ("gphkv-memcached", "null-memcached", "gphkv's memcached port")):
        if store not in ladder_stores(d):
            continue
        g, n = pick(store), pick(null)
        ratio = f"{g / m:.1f}x memcached's {shown(m)}" if g and m else f"memcached: {shown(m)}"
        rows.append(HeadlineRow(f"Service, paced load (open-loop ladder, default workload, {c['threads']} threads × "
                                f"{c['connections']} connections): highest rung with p99 < 1 ms in every rep, {name}",
                                shown(g), f"{ratio}; null server, same transport: {shown(n)}",
                                f"{d['device']} ({d['machine']})", day_of(d["date"]), (path,)))
    return rows


def write_mix_headline():
    """Gets with writes mixed in (newest scripts/write-mix.sh run): its headline store beside memcached and the
    null server of the same call, at each write fraction above 1%."""
    found = runs("write-mix")
    if not found:
        return []
    _, path, d = found[-1]
    m = d["write_mix"]["median_keys_per_s"]
    g = m[d["headline_store"]]
    fractions = [f for f in g if float(f) > 0.01]
    pct = lambda f: f"{float(f) * 100:g}%"
    result = ", ".join(f"{g[f] / 1e6:.2f} M keys/s at {pct(f)} writes" for f in fractions)
    compared = ", ".join(f"{g[f] / m['memcached'][f]:.2f}x memcached's {m['memcached'][f] / 1e6:.2f} M" for f in fractions)
    compared += "; null server " + ", ".join(f"{m['null'][f] / 1e6:.2f} M" for f in fractions)
    c = d["client"]
    return [HeadlineRow(f"Service, ~20-key gets with puts mixed in, closed loop ({c['threads']} threads × "
                        f"{c['connections']} connections × depth {c['depth']})", result, compared,
                        d["device"].split(",")[0], day_of(d["date"]), (path,))]


HEADLINE_ROWS = [engine_headline, bulk_build_headline, front_end_headline, write_mix_headline, ladder_headline]


def headline():
    rows = [row for source in HEADLINE_ROWS for row in source()]
    out = [md_row(["measured", "result", "compared with", "device", "date", "from"]), md_row(["---"] * 6)]
    out += [md_row([r.what, r.result, r.compared, r.device, r.date, links(r.sources)]) for r in rows]
    found = ladder_runs()
    if found:
        # p99 by rung, gphkv beside memcached and the null server (the whole ladder: docs/performance.md).
        _, path, d = found[-1]
        # Each store with its defaults (a variant's column is in docs/performance.md's whole ladder).
        stores = [s for s in ("gphkv-coalesced", "gphkv-memcached", "memcached", "null-coalesced", "null-memcached")
                  if s in ladder_stores(d)]
        out += ["", f"Paced load, p99 of each rep by offered rate ([{os.path.basename(path)}]({path}), "
                    f"{d['device']}, {day_of(d['date'])}):", ""]
        out += ladder_p99_table(d, stores)
    return out


# ---------------------------------------------------------------- the index of bench/results


def unindexed_results():
    """Files in bench/results/ that its README.md (the index) does not name, and names it lists that are gone."""
    import re
    with open(os.path.join(RESULTS, "README.md")) as f:
        index = f.read()
    files = {os.path.basename(p) for p in glob.glob(os.path.join(RESULTS, "*")) if not p.endswith("README.md")}
    # A row names a file in full, or a sibling by its extension after the first name: `x.json`, `.log`.
    named = set()
    for cell in re.findall(r"^\| ([^|]*) \|", index, flags=re.M):
        names = re.findall(r"`([^`]+)`", cell)
        for name in names:
            if name.startswith((".", "_")):
                stem = os.path.splitext(names[0])[0]
                named.add(stem + name)
            else:
                named.add(name)
    return sorted(files - named), sorted(named - files)


# ---------------------------------------------------------------- writing


def rewrite(text, begin, end, body):
    i, j = text.index(begin) + len(begin), text.index(end)
    return text[:i] + "\n" + "\n".join(body) + "\n" + text[j:]


def main():
    targets = [("README.md", "<!-- perf-headline:begin -->", "<!-- perf-headline:end -->", headline()),
               ("docs/performance.md", "<!-- perf:begin -->", "<!-- perf:end -->",
                [line for table in DOC_TABLES for line in table()])]
    stale = []
    for rel, begin, end, body in targets:
        path = os.path.join(ROOT, rel)
        with open(path) as f:
            text = f.read()
        new = rewrite(text, begin, end, body)
        if new == text:
            continue
        stale.append(rel)
        if "--check" not in sys.argv:
            with open(path, "w") as f:
                f.write(new)
    missing, gone = unindexed_results()
    if missing or gone:
        print(f"bench/results/README.md: not listed: {', '.join(missing) or '-'}; "
              f"listed but not there: {', '.join(gone) or '-'}", file=sys.stderr)
    if "--check" in sys.argv and stale:
        print(f"stale: {', '.join(stale)} (python3 scripts/perf-tables.py rewrites them)", file=sys.stderr)
    if "--check" in sys.argv and (stale or missing or gone):
        sys.exit(1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the README's performance section from the JSON in bench/results/.

The section sits between the markers `<!-- perf:begin -->` and `<!-- perf:end -->`
in README.md; everything between them is regenerated, so every figure there
comes from a committed result file (named under each table).

    python3 scripts/readme-perf.py          # rewrite README.md in place
    python3 scripts/readme-perf.py --check  # exit 1 if README.md is stale
"""
import glob
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")


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


def newest(benchmark, pred=lambda d: True):
    found = runs(benchmark, pred)
    return found[-1] if found else None


def engine_gpu():
    hit = newest("engine_bench")
    if not hit:
        return []
    _, path, d = hit
    out = [f"**GPU engine** ({d['device']}, commit `{d['git_commit']}`, `{os.path.basename(d['command'].split()[0])} "
           f"{' '.join(a for a in d['command'].split()[1:] if not a.startswith('--json'))}`; "
           f"`{path}`). 8-byte keys and values, M=16, R=8, 4 cells per bucket. Ceiling: random 128-byte gather "
           "measured in the same run; baseline: bucketed linear probing with the same layout and load.", ""]
    for size in d["sizes"]:
        exp = len(str(size["keys"])) - 1
        keys = f"10^{exp}" if size["keys"] == 10 ** exp else f"{size['keys']:,}"
        out += [f"| {keys} keys, load {size['load']} | G ops/s | / gather ceiling | / baseline |",
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


def engine_gpu_build():
    """The device bulk build, burst paths and lookups during a rebuild (engine_bench --sections=build,...)."""
    # A run of the build sections alone, or a whole engine_bench run (it has them too).
    hits = [h for h in (newest("engine_bench_build"), newest("engine_bench", lambda d: d.get("bulk_build"))) if h]
    if not hits:
        return []
    hit = max(hits)
    _, path, d = hit
    cmd = " ".join([os.path.basename(d["command"].split()[0])] +
                   [a for a in d["command"].split()[1:] if not a.startswith("--json")])
    out = [f"**GPU bulk build and write bursts** ({d['device']}, commit `{d['git_commit']}`, `{cmd}`; `{path}`). "
           "HashGraph-style build on the device (docs/gph.md, \"Bulk build\"), median of the runs.", "",
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
    """What the memory system allows each lookup layout (bench/lookup_bounds.cu)."""
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


def service():
    files = []
    for path in sorted(glob.glob(os.path.join(RESULTS, "service_*.json"))):
        with open(path) as f:
            d = json.load(f)
        if isinstance(d, dict) and d.get("benchmark") == "service_bench":  # older files are bare lists
            files.append((os.path.relpath(path, ROOT), d))
    # The newest run of each kind (backend; light load or not): older ones stay in bench/results.
    newest_of = {}
    for path, d in files:
        kind = (d["backend"], any("streams=1 " in r["config"] for r in d["results"]))
        if kind not in newest_of or d.get("date", "") > newest_of[kind][1].get("date", ""):
            newest_of[kind] = (path, d)
    out = []
    for path, d in sorted(newest_of.values()):
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


def compare():
    """The two newest runs that measured both stores (a run may measure one: TARGETS=gphkv).

    Two, because one bisection search is fragile: a single tail event at one step sends it low.
    """
    both = runs("gphkv-loadgen-compare", lambda d: {"gphkv", "memcached"} <= set(d.get("results", {})))
    out = []
    for _, path, _ in both[-2:]:
        md = path[:-len(".json")] + ".md"
        with open(os.path.join(ROOT, md)) as f:
            text = f.read().strip()
        out += [f"**gphkv vs memcached** (`scripts/loadgen-compare.sh`; `{md}`):", "", text, ""]
    return out


def main():
    body = engine_gpu() + engine_gpu_build() + lookup_bounds() + engine_cpu() + service() + compare()
    readme_path = os.path.join(ROOT, "README.md")
    with open(readme_path) as f:
        readme = f.read()
    begin, end = "<!-- perf:begin -->", "<!-- perf:end -->"
    i, j = readme.index(begin) + len(begin), readme.index(end)
    new = readme[:i] + "\n" + "\n".join(body) + readme[j:]
    if "--check" in sys.argv:
        sys.exit(0 if new == readme else 1)
    with open(readme_path, "w") as f:
        f.write(new)


if __name__ == "__main__":
    main()

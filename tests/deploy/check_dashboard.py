#!/usr/bin/env python3
"""deploy/grafana/gphkv.json against a real server:

  1. starts two gphkv-server shards (CPU backend, each with a data directory
     snapshotted every second) on loopback ports and sends them traffic through
     the CLI, which routes each key to its shard: puts, gets (hits and misses),
     deletes, and a put over --max_value_bytes (an INVALID_ARGUMENT, so error
     series exist);
  2. scrapes /metrics and checks every metric name of every dashboard query,
     and of the recording rules the dashboard uses, against the scrape; label
     matchers against the labels the scraped series carry;
  3. starts a real Prometheus (Debian's) scraping both shards every second
     with deploy/prometheus/rules loaded, and runs every dashboard query
     (Grafana's variables filled in) through its HTTP API: each must parse and
     return data; a per-shard query a series per shard, and its total one
     series, their sum.

Usage: check_dashboard.py GPHKV_SERVER_BIN GPHKV_CLI_BIN
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

import yaml

import deploylib as d

DASHBOARD = os.path.join(d.DEPLOY, "grafana", "gphkv.json")
RULES = os.path.join(d.DEPLOY, "prometheus", "rules", "gphkv.rules.yml")
GRAFANA_VARS = {"$__rate_interval": "5s", "$__interval": "1s", "${datasource}": "", "$job": "gphkv", "$instance": ".*"}


def panels_of(dash):
    for p in dash.get("panels", []):
        yield p
        yield from p.get("panels", [])  # collapsed rows hold their panels


def fill(expr):
    for k, v in GRAFANA_VARS.items():
        expr = expr.replace(k, v)
    return expr


def metric_names(expr):
    """The gphkv series names an expression reads (gphkv_* metrics and gphkv:*
    recording rules): strings, label matchers, ranges and grouping clauses
    are dropped first so label names cannot pass for metrics."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    return set(re.findall(r"\b(gphkv[a-zA-Z0-9_:]*)", e))


def matchers(expr):
    """[(metric, label)] for every label matcher written on a gphkv metric."""
    out = []
    for name, body in re.findall(r"\b(gphkv_[a-zA-Z0-9_]*)\{([^}]*)\}", expr):
        for label in re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", body):
            out.append((name, label))
    return out


class Traffic(threading.Thread):
    """Keeps CLI calls going so rates and histograms have data in every scrape."""

    def __init__(self, cli, server):
        super().__init__(daemon=True)
        self.cli, self.server = cli, server
        self.stop = threading.Event()
        self.calls = 0
        self.failures = []

    def call(self, *args, expect=(0,)):
        p = d.run_cli(self.cli, self.server, *args)
        self.calls += 1
        if p.returncode not in expect and len(self.failures) < 5:
            self.failures.append(f"gphkv {' '.join(args)} -> {p.returncode}: {p.stderr.strip()}")

    def run(self):
        i = 0
        while not self.stop.is_set():
            self.call("put", str(i), f"value-{i}")
            self.call("get", str(i), str(i + 1), expect=(0, 1))
            self.call("get", str(10**12 + i), expect=(1,))
            if i % 5 == 4:
                self.call("del", str(i - 2))
                self.call("stats")
            i += 1


def prometheus_query(base, expr):
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        _, body = d.http_get(url, timeout=10)
    except Exception as e:  # noqa: BLE001 (a 400 carries the parse error)
        body = e.read().decode() if hasattr(e, "read") else json.dumps({"status": "error", "error": str(e)})
    return json.loads(body)


def check_shard_panels(f, dash, base, shards):
    """Each per-shard panel with a total: its per-instance query has a series
    per shard, and its "total" query is their sum (one query, one instant)."""
    found = 0
    for p in panels_of(dash):
        per = [t for t in p.get("targets", []) if t.get("legendFormat") == "{{instance}}"]
        total = [t for t in p.get("targets", []) if t.get("legendFormat") == "total"]
        if not total:
            continue
        found += 1
        if not f.check(len(per) == 1, f"{p['title']}: a total without a per-shard query (legend {{{{instance}}}})"):
            continue
        per_expr = fill(per[0]["expr"])
        r = prometheus_query(base, per_expr)
        instances = {s["metric"].get("instance") for s in r.get("data", {}).get("result", [])}
        f.check(len(instances) == shards, f"{p['title']}: {len(instances)} shards in {per_expr!r}, not {shards}")
        summed = re.sub(r"^sum by \(instance\)", "sum", per_expr)
        f.check(summed != per_expr, f"{p['title']}: the per-shard query is not sum by (instance) (...)")
        for t in total:
            expr = f"({fill(t['expr'])}) - ({summed})"
            res = prometheus_query(base, expr).get("data", {}).get("result", [])
            f.check(len(res) == 1 and abs(float(res[0]["value"][1])) < 1e-6,
                    f"{p['title']}: the total is not the sum of the shards: {expr!r} -> {res}")
    f.check(found >= 3, f"the dashboard has {found} panels with per-shard and total series, wants 3 (keys/s, requests/s, keys stored)")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    server_bin, cli_bin = (os.path.abspath(a) for a in sys.argv[1:])
    f = d.Failures()
    dash = json.load(open(DASHBOARD))
    rules = yaml.safe_load(open(RULES))
    records = {r["record"]: r["expr"] for g in rules["groups"] for r in g["rules"] if "record" in r}

    # Layout: unique ids, panels inside the 24-column grid, none overlapping.
    ids, cells = set(), {}
    for p in panels_of(dash):
        f.check(p.get("id") not in ids, f"panel id {p.get('id')} is used twice")
        ids.add(p.get("id"))
        g = p.get("gridPos", {})
        if not f.check(all(k in g for k in "xywh") and g["x"] + g["w"] <= 24, f"panel {p.get('title')!r}: gridPos {g}"):
            continue
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                other = cells.setdefault((x, y), p.get("title"))
                if other != p.get("title"):
                    f.check(False, f"panels {other!r} and {p.get('title')!r} overlap")
                    break
            else:
                continue
            break
    f.check(dash.get("uid") == "gphkv" and dash.get("schemaVersion", 0) >= 36, "dashboard uid and schemaVersion")

    targets = []  # (panel title, expr)
    for p in panels_of(dash):
        if p.get("type") == "row":
            continue
        ts = p.get("targets", [])
        f.check(bool(ts), f"panel {p.get('title')!r} has no query")
        for t in ts:
            expr = t.get("expr", "")
            f.check(bool(metric_names(expr)), f"panel {p.get('title')!r}: query {expr!r} reads no gphkv metric")
            targets.append((p["title"], expr))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            f.check(bool(metric_names(q)), f"variable {v['name']}: {q!r} reads no gphkv metric")
            targets.append((f"variable {v['name']}", q))
    print(f"dashboard: {len(targets)} queries in {sum(1 for p in panels_of(dash) if p.get('type') != 'row')} panels")

    shard_flags = ("--backend=cpu", "--memory=64MiB", "--max_value_bytes=64", "--initial_capacity=1024",
                   "--snapshot_interval=1s")
    with tempfile.TemporaryDirectory(prefix="gphkv-dashboard-") as tmp, \
            d.LocalServer(server_bin, *shard_flags, f"--data_dir={os.path.join(tmp, 'data')}",
                          log_path=os.path.join(tmp, "server.log")) as server, \
            d.LocalServer(server_bin, *shard_flags, f"--data_dir={os.path.join(tmp, 'data2')}",
                          log_path=os.path.join(tmp, "server2.log")) as server2:
        traffic = Traffic(cli_bin, f"{server.address},{server2.address}")
        traffic.call("put", "1", "x" * 100, expect=(2, 3))  # over --max_value_bytes
        traffic.start()
        try:
            d.wait_for(lambda: traffic.calls >= 20, 60, "the first CLI calls")
            _, text = d.http_get(server.metrics_url)
            samples, types = d.parse_metrics(text)
            exposed = d.exposed_names(samples, types)
            print(f"scrape: {len(exposed)} series names, {sum(len(v) for v in samples.values())} samples")

            # 2. names against the scrape.
            for title, expr in targets:
                for name in sorted(metric_names(expr)):
                    if ":" in name:
                        if f.check(name in records, f"{title}: {name} is not a recording rule of gphkv.rules.yml"):
                            for inner in sorted(metric_names(records[name])):
                                f.check(inner in exposed, f"{title}: rule {name} reads {inner}, absent from /metrics")
                    else:
                        f.check(name in exposed, f"{title}: {name} is absent from a real /metrics scrape")
                for name, label in matchers(expr):
                    if label in ("job", "instance"):  # added by Prometheus at scrape time
                        continue
                    family = re.sub(r"_(bucket|sum|count)$", "", name)
                    series = samples.get(name, []) + samples.get(family, [])
                    f.check(any(label in l for l, _ in series),
                            f"{title}: {name} has no series with label {label!r} in the scrape")
            f.check(not traffic.failures, f"CLI traffic: {traffic.failures}")

            # 3. every query through a real Prometheus.
            if shutil.which("prometheus") is None:
                f.check(False, "prometheus is not installed (scripts/deps/deploy.txt): queries were not run")
                return f.finish("check_dashboard")
            prom_port = d.free_port()
            cfg = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                   "rule_files": [RULES],
                   "scrape_configs": [{"job_name": "gphkv", "scrape_interval": "1s", "scrape_timeout": "1s",
                                       "static_configs": [{"targets": [f"127.0.0.1:{server.metrics_port}",
                                                                       f"127.0.0.1:{server2.metrics_port}"]}]}]}
            cfg_path = os.path.join(tmp, "prometheus.yml")
            with open(cfg_path, "w") as out:
                yaml.safe_dump(cfg, out)
            log = open(os.path.join(tmp, "prometheus.log"), "w")
            prom = subprocess.Popen(["prometheus", f"--config.file={cfg_path}",
                                     f"--storage.tsdb.path={os.path.join(tmp, 'tsdb')}",
                                     f"--web.listen-address=127.0.0.1:{prom_port}"],
                                    stdout=log, stderr=subprocess.STDOUT)
            base = f"http://127.0.0.1:{prom_port}"
            try:
                def ready():
                    r = prometheus_query(base, 'count_over_time(up{job="gphkv"}[1m])')
                    ok = r.get("status") == "success" and r["data"]["result"] and float(r["data"]["result"][0]["value"][1]) >= 8
                    rr = prometheus_query(base, "gphkv:request_errors:ratio_rate5m")
                    return ok and rr.get("data", {}).get("result")
                t = time.monotonic()
                d.wait_for(ready, 90, "Prometheus to hold 8 scrapes and the recording rules", interval=1)
                print(f"prometheus: ready after {time.monotonic() - t:.1f} s")
                for title, expr in targets:
                    if expr.startswith("label_values("):
                        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", fill(expr))
                        r = prometheus_query(base, m.group(1))
                        res = r.get("data", {}).get("result", [])
                        f.check(any(m.group(2) in s["metric"] for s in res), f"{title}: {expr} finds no {m.group(2)} values")
                        continue
                    r = prometheus_query(base, fill(expr))
                    if f.check(r.get("status") == "success", f"{title}: Prometheus refused {fill(expr)!r}: {r.get('error')}"):
                        res = r["data"]["result"]
                        f.check(len(res) > 0, f"{title}: {fill(expr)!r} returned no data from a server under traffic")
                        print(f"  {len(res):3d} series  {title}: {expr[:90]}")
                check_shard_panels(f, dash, base, shards=2)
            finally:
                prom.terminate()
                try:
                    prom.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    prom.kill()
                    prom.wait()
                log.close()
        finally:
            traffic.stop.set()
            traffic.join(timeout=30)
        print(f"traffic: {traffic.calls} CLI calls")
        rc = server.stop()
        f.check(rc == 0, f"gphkv-server exits 0 on SIGTERM, not {rc}")
    return f.finish("check_dashboard")


if __name__ == "__main__":
    sys.exit(main())

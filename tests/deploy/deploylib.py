"""What the deploy tests share: the repository's paths, the server's real flags
(parsed from `gphkv-server --help`), byte sizes, free loopback ports, bounded
waits, and a server started on loopback for a test's lifetime."""

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(REPO, "deploy")
SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


class Failures:
    """Collects check failures so one run reports all of them, not the first."""

    def __init__(self):
        self.items = []
        self.passed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.items.append(what)
            print(f"FAIL: {what}", flush=True)
        return ok

    def finish(self, name):
        print(f"{name}: {self.passed} passed, {len(self.items)} failed")
        return 1 if self.items else 0


def skip(reason):
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP)


def _parse_flags(text):
    flags = {}
    for m in re.finditer(r"--([A-Za-z0-9_]+) \((.*?)\);\s+default:\s+(.*?);(?:\n|$)", text, re.S):
        default = m.group(3).strip()
        if len(default) >= 2 and default[0] == default[-1] == '"':
            default = default[1:-1]
        flags[m.group(1)] = default
    return flags


def binary_flags(binary, source, must_have):
    """{flag: default-as-text} from a binary's --help (Abseil's format:
    `--name (help text); default: value;`). Where --help lists nothing (an
    Abseil usage config that does not match the binary's name), the
    `Flags from .../SOURCE:` section of --helpfull is used instead."""
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    text = out.stdout + out.stderr
    flags = _parse_flags(text)
    if not flags:
        out = subprocess.run([binary, "--helpfull"], capture_output=True, text=True, timeout=30)
        full = out.stdout + out.stderr
        m = re.search(r"Flags from \S*" + re.escape(source) + r":\n(.*?)(?=\n  Flags from |\Z)", full, re.S)
        flags = _parse_flags(m.group(1)) if m else {}
        text = full
    if must_have not in flags:
        raise RuntimeError(f"could not parse flags from {binary} --help:\n{text[:2000]}")
    return flags


def server_flags(server_bin):
    """gphkv-server's flags (binary_flags)."""
    return binary_flags(server_bin, "server/main.cc", "listen_address")


def cli_flags(cli_bin):
    """The gphkv CLI's flags (binary_flags)."""
    return binary_flags(cli_bin, "client/cli_main.cc", "server")


_BYTE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
               "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
               "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}


def parse_byte_size(text):
    """The server's --memory grammar (server/byte_size.cc)."""
    m = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _BYTE_UNITS:
        raise ValueError(f"not a byte size: {text!r}")
    return int(m.group(1)) * _BYTE_UNITS[m.group(2).lower()]


_K8S_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
              "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}


def parse_k8s_quantity(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z]*)", str(text))
    if not m or m.group(2) not in _K8S_UNITS:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    return int(float(m.group(1)) * _K8S_UNITS[m.group(2)])


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def entrypoint_env_flags():
    """{GPHKV_VAR: flag} for the variables deploy/entrypoint.sh turns into flags."""
    text = open(os.path.join(DEPLOY, "entrypoint.sh")).read()
    mapping = {}
    # --listen_address="${GPHKV_LISTEN_ADDRESS:-0.0.0.0:50051}"
    for flag, var in re.findall(r'--([a-z_]+)="\$\{(GPHKV_[A-Z_]+):-', text):
        mapping[var] = flag
    # ${GPHKV_BACKEND:+"--backend=$GPHKV_BACKEND"}
    for var, flag in re.findall(r'\$\{(GPHKV_[A-Z_]+):\+"--([a-z_]+)=', text):
        mapping[var] = flag
    # GPHKV_MEMORY / GPHKV_MEMORY_PERCENT become --memory through $memory.
    if '${memory:+"--memory=' in text:
        mapping["GPHKV_MEMORY"] = "memory"
        mapping["GPHKV_MEMORY_PERCENT"] = "memory"
    return mapping


def healthcheck_env():
    """The GPHKV_* variables deploy/healthcheck.sh reads."""
    return set(re.findall(r"\$\{?(GPHKV_[A-Z_]+)", open(os.path.join(DEPLOY, "healthcheck.sh")).read()))


def strategic_merge(base, patch):
    """`patch` applied to `base` the way kustomize applies a strategic merge
    patch, for what deploy/k8s's patches use: maps merge key by key, a null
    value deletes its key, lists of maps that all have a name merge item by
    name (new names appended), other lists are replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for k, v in patch.items():
            if v is None:
                out.pop(k, None)
            elif k in out:
                out[k] = strategic_merge(out[k], v)
            else:
                out[k] = v
        return out
    named = lambda l: isinstance(l, list) and l and all(isinstance(i, dict) and "name" in i for i in l)
    if named(base) and named(patch):
        out = list(base)
        for item in patch:
            at = next((i for i, b in enumerate(out) if b["name"] == item["name"]), None)
            if at is None:
                out.append(item)
            else:
                out[at] = strategic_merge(out[at], item)
        return out
    return patch


def render_kustomization(folder):
    """[(source file, object)] that `kubectl apply -k FOLDER` would apply, as far
    as deploy/k8s needs: `resources` (files, and folders rendered the same way)
    and `patches` by path (strategic merge, matched by kind and name). Images
    stay as written: the manifests name the image `gphkv`, which `images`
    rewrites."""
    import yaml
    k = yaml.safe_load(open(os.path.join(folder, "kustomization.yaml")))
    out = []
    for res in k.get("resources", []):
        path = os.path.normpath(os.path.join(folder, res))
        if os.path.isdir(path):
            out.extend(render_kustomization(path))
        else:
            out.extend((os.path.relpath(path, REPO), doc) for doc in yaml.safe_load_all(open(path)) if doc)
    for p in k.get("patches", []):
        path = os.path.join(folder, p["path"])
        for patch in yaml.safe_load_all(open(path)):
            hits = [i for i, (_, doc) in enumerate(out)
                    if doc.get("kind") == patch.get("kind") and doc["metadata"]["name"] == patch["metadata"]["name"]]
            if len(hits) != 1:
                raise ValueError(f"{os.path.relpath(path, REPO)} patches {len(hits)} objects, not one")
            src, doc = out[hits[0]]
            out[hits[0]] = (f"{src} + {os.path.relpath(path, REPO)}", strategic_merge(doc, patch))
    return out


def kustomizations():
    """Every folder under deploy/k8s with a kustomization.yaml."""
    found = []
    for root, _, files in os.walk(os.path.join(DEPLOY, "k8s")):
        if "kustomization.yaml" in files:
            found.append(root)
    return sorted(found)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, what, interval=0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            result = predicate()
            if result:
                return result
        except Exception as e:  # noqa: BLE001 (any failure means "not yet")
            last = e
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what} (last error: {last})")


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def run_cli(cli_bin, server, *args, timeout=20):
    return subprocess.run([cli_bin, f"--server={server}", *args],
                          capture_output=True, text=True, timeout=timeout)


def parse_metrics(text):
    """{metric name: [(labels dict, value)]} from Prometheus' text format, and
    {family: type} from its # TYPE lines."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(None, 3)
            types[name] = kind.strip()
            continue
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)", line)
        if not m:
            raise ValueError(f"bad metrics line: {line!r}")
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        samples.setdefault(m.group(1), []).append((labels, float(m.group(4))))
    return samples, types


def exposed_names(samples, types):
    """Every series name a scrape offers, histogram/summary parts included."""
    names = set(samples)
    for family, kind in types.items():
        if kind == "histogram":
            names |= {family + "_bucket", family + "_sum", family + "_count"}
        elif kind == "summary":
            names |= {family, family + "_sum", family + "_count"}
        else:
            names.add(family)
    return names


class LocalServer:
    """gphkv-server on free loopback ports, stopped (SIGTERM, bounded) on exit."""

    def __init__(self, server_bin, *extra_flags, log_path=None):
        self.grpc_port = free_port()
        self.metrics_port = free_port()
        self.address = f"127.0.0.1:{self.grpc_port}"
        self.metrics_url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        self.cmd = [server_bin, f"--listen_address={self.address}",
                    f"--metrics_address=127.0.0.1:{self.metrics_port}", *extra_flags]
        self.log_path = log_path
        self.proc = None

    def __enter__(self):
        self.log = open(self.log_path, "w") if self.log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)
        wait_for(lambda: self.proc.poll() is None and http_get(self.metrics_url)[0] == 200,
                 30, f"{self.cmd[0]} to serve /metrics")
        return self

    def stop(self, timeout=30):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def __exit__(self, *exc):
        self.stop()
        if self.log is not subprocess.DEVNULL:
            self.log.close()

#!/usr/bin/env python3
"""deploy/systemd/gphkv.service: systemd-analyze verify (with ExecStart pointed
at the built server, so the binary is checked too), the hardening score of
systemd-analyze security, and its flags, drain and memory settings against
the server's --help.

Usage: check_systemd.py GPHKV_SERVER_BIN
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import deploylib as d

UNIT = os.path.join(d.DEPLOY, "systemd", "gphkv.service")
MAX_EXPOSURE = 2.5  # systemd-analyze security: 0 (locked down) .. 10 (exposed)


def unit_settings(text):
    """[(key, value)] of the [Service] section, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", text)
    section, out = None, []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        k, _, v = line.partition("=")
        out.append((section, k.strip(), v.strip()))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    server = os.path.abspath(sys.argv[1])
    if shutil.which("systemd-analyze") is None:
        d.skip("systemd-analyze is not installed (Debian package systemd)")
    f = d.Failures()
    flags = d.server_flags(server)
    text = open(UNIT).read()
    settings = unit_settings(text)
    svc = [(k, v) for s, k, v in settings if s == "[Service]"]
    env = {}
    for k, v in svc:
        if k == "Environment":
            name, _, value = v.partition("=")
            env[name] = value

    with tempfile.TemporaryDirectory() as tmp:
        unit = os.path.join(tmp, "gphkv.service")
        open(unit, "w").write(text.replace("/opt/gphkv/bin/gphkv-server", server))
        p = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True, timeout=60)
        out = (p.stdout + p.stderr).strip()
        print(f"$ systemd-analyze verify gphkv.service\n{out}")
        f.check(p.returncode == 0 and not out, "systemd-analyze verify reports nothing")
        p = subprocess.run(["systemd-analyze", "security", "--offline=yes", unit],
                           capture_output=True, text=True, timeout=60)
        m = re.search(r"Overall exposure level for gphkv.service: ([0-9.]+)", p.stdout)
        print(m.group(0) if m else p.stdout + p.stderr)
        f.check(m is not None and float(m.group(1)) <= MAX_EXPOSURE,
                f"systemd-analyze security exposure must be <= {MAX_EXPOSURE}")

    execs = [v for k, v in svc if k == "ExecStart"]
    if f.check(len(execs) == 1, "one ExecStart"):
        words = execs[0].split()
        f.check(words[0] == "/opt/gphkv/bin/gphkv-server", "ExecStart runs /opt/gphkv/bin/gphkv-server (deploy/bundle.sh's layout)")
        given = {}
        for w in words[1:]:
            if w.startswith("$"):
                continue
            m = re.fullmatch(r"--([a-z_]+)=(.*)", w)
            if f.check(m is not None, f"ExecStart argument {w!r} is not --flag=value"):
                f.check(m.group(1) in flags, f"ExecStart: --{m.group(1)} is not a flag of gphkv-server")
                value = re.sub(r"\$\{(\w+)\}", lambda v: env.get(v.group(1), "?"), m.group(2))
                given[m.group(1)] = value
        for extra in re.findall(r"--([a-z_]+)", env.get("GPHKV_FLAGS", "")):
            f.check(extra in flags, f"GPHKV_FLAGS: --{extra} is not a flag of gphkv-server")
        f.check(d.port_of(given.get("listen_address", "")) == d.port_of(flags["listen_address"]),
                "the unit listens on the server's default gRPC port")
        f.check(d.port_of(given.get("metrics_address", "")) == d.port_of(flags["metrics_address"]),
                "the unit serves metrics on the server's default port")
        settings_d = dict(svc)
        stop = settings_d.get("TimeoutStopSec", "90s")
        stop_s = int(re.fullmatch(r"(\d+)s?", stop).group(1))
        grace_s = int(flags["shutdown_grace_ms"]) / 1000
        f.check(stop_s >= grace_s + 10, f"TimeoutStopSec {stop_s} s must outlast the drain ({grace_s} s) by 10 s")
        f.check(settings_d.get("KillSignal") == "SIGTERM", "KillSignal=SIGTERM (the server's drain signal)")
        mem = d.parse_byte_size(given.get("memory", "0"))
        m = re.fullmatch(r"(\d+)([KMGT]?)", settings_d.get("MemoryMax", ""))
        mmax = int(m.group(1)) << (10 * " KMGT".index(m.group(2) or " ")) if m else 0
        f.check(0 < mem <= mmax * 0.85, f"--memory {mem} must leave >= 15% of MemoryMax {mmax} as headroom")
    for key in ("NoNewPrivileges", "ProtectSystem", "DynamicUser", "PrivateTmp", "DevicePolicy"):
        f.check(any(k == key for k, _ in svc), f"hardening: {key}= is set")
    return f.finish("check_systemd")


if __name__ == "__main__":
    sys.exit(main())

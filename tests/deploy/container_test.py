#!/usr/bin/env python3
"""Builds gphkv's container image with podman and runs it for real:

  1. a Debian base image (debootstrap --variant=minbase bookworm, imported into
     podman's store; kept there, so later runs skip this step);
  2. deploy/bundle.sh collects this build's binaries and their shared
     libraries; `podman build --target prebuilt` puts them on that base (no
     compiling inside the image: docs/deploy.md says why);
  3. the image's contract: non-root USER, ENTRYPOINT, HEALTHCHECK, ports, and
     every bundled library resolving inside the image;
  4. the daemon runs in it on loopback ports (--network=host) under a memory
     limit; --memory is derived from that limit by the entrypoint;
  5. from the host: health, put, get through the CLI; the HEALTHCHECK through
     `podman healthcheck run`; /metrics scraped and checked;
  6. SIGTERM; the container must exit 0 within the drain bound, after its
     final snapshot into the data directory (the image's volume, here a named
     one);
  7. a new container on the same volume finds the keys (the snapshot); a put,
     then kill -9, and a third container finds that key too (the log).
  8. the same image under mutual TLS, certificates (deploy/tls-certs.sh)
     mounted read-only and named by the entrypoint's GPHKV_TLS_* variables:
     the host's CLI with a client certificate reads and writes, without one
     (or without TLS) it is refused and changes nothing, the HEALTHCHECK
     passes over TLS, /metrics stays plain HTTP, SIGTERM exits 0.

Usage: container_test.py BUILD_DIR GPHKV_SERVER_BIN GPHKV_CLI_BIN
Environment: GPHKV_TEST_BASE_IMAGE (default localhost/debian-base:bookworm),
GPHKV_DEBIAN_MIRROR (default http://deb.debian.org/debian), GPHKV_TEST_SOURCE_BUILD=1
(build the default `runtime` target from source instead: about 5 minutes on two
cores), GPHKV_TEST_EXPECT_LOADGEN=1 (set by CMake when gphkv-loadgen is built).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import deploylib as d

BASE = os.environ.get("GPHKV_TEST_BASE_IMAGE", "localhost/debian-base:bookworm")
MIRROR = os.environ.get("GPHKV_DEBIAN_MIRROR", "http://deb.debian.org/debian")
IMAGE = "localhost/gphkv:ctest"
MEMORY_LIMIT = 512 << 20  # the container's memory limit (podman run --memory)
MEMORY_PERCENT = 50


class Podman:
    """podman as root with runc and no default ulimits: the settings that work
    on these machines (no Docker engine, no systemd)."""

    def __init__(self, tmp):
        self.conf = os.path.join(tmp, "containers.conf")
        with open(self.conf, "w") as f:
            f.write("[containers]\ndefault_ulimits = []\n")
        self.env = {**os.environ, "CONTAINERS_CONF": self.conf}

    def __call__(self, *args, timeout=120, check=True, input=None, quiet=False):
        cmd = ["podman", "--runtime", "runc", *args]
        p = subprocess.run(cmd, env=self.env, capture_output=True, timeout=timeout, input=input)
        out = p.stdout.decode(errors="replace")
        # Without systemd, podman logs that it cannot set up a healthcheck
        # timer; the healthcheck itself is run below with `podman healthcheck run`.
        err = "\n".join(l for l in p.stderr.decode(errors="replace").splitlines()
                        if "systemd" not in l or "healthcheck" not in l)
        if not quiet or (check and p.returncode != 0):
            print(f"$ podman {' '.join(args)}  -> {p.returncode}\n{out[-3000:]}{err[-3000:]}".rstrip(), flush=True)
        if check and p.returncode != 0:
            raise RuntimeError(f"podman {args[0]} failed with {p.returncode}")
        return p.returncode, out


def ensure_base(podman, scratch):
    rc, _ = podman("image", "exists", BASE, check=False, quiet=True)
    if rc == 0:
        print(f"base image {BASE}: already in podman's store")
        return
    if BASE != "localhost/debian-base:bookworm":
        raise RuntimeError(f"base image {BASE} is not in podman's store")
    if shutil.which("debootstrap") is None:
        d.skip("debootstrap is not installed and the base image is not in podman's store")
    root = os.path.join(scratch, "rootfs")
    t = time.monotonic()
    p = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", root, MIRROR],
                       capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:])
        raise RuntimeError("debootstrap failed")
    tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
    try:
        podman("import", "-", BASE, input=tar.stdout.read(), timeout=300)
    finally:
        tar.wait()
    shutil.rmtree(root, ignore_errors=True)
    print(f"base image {BASE}: made with debootstrap in {time.monotonic() - t:.0f} s")


def metric(samples, name, **labels):
    values = [v for l, v in samples.get(name, []) if all(l.get(k) == v2 for k, v2 in labels.items())]
    return values[0] if values else None


def run_under_mtls(f, podman, cli_bin, tmp, name):
    certs = os.path.join(tmp, "certs")
    subprocess.run([os.path.join(d.DEPLOY, "tls-certs.sh"), certs], check=True, capture_output=True, timeout=60)
    # The server runs as uid 10001; a bind mount keeps the host's owners, so
    # the test makes its throwaway keys readable (Kubernetes: fsGroup does it).
    for key in ("tls.key", "client.key"):
        os.chmod(os.path.join(certs, key), 0o644)
    grpc_port, metrics_port = d.free_port(), d.free_port()
    server = f"127.0.0.1:{grpc_port}"
    mount = "/etc/gphkv/tls"
    podman("run", "-d", "--name", name, "--network=host", "-v", f"{certs}:{mount}:ro",
           "-e", f"GPHKV_LISTEN_ADDRESS={server}", "-e", f"GPHKV_METRICS_ADDRESS=127.0.0.1:{metrics_port}",
           "-e", f"GPHKV_TLS_CERT={mount}/tls.crt", "-e", f"GPHKV_TLS_KEY={mount}/tls.key",
           "-e", f"GPHKV_TLS_CLIENT_CA={mount}/ca.crt", "-e", f"GPHKV_TLS_CA={mount}/ca.crt",
           IMAGE, "--backend=cpu", "--memory=64MiB", "--initial_capacity=4096")
    member = [f"--tls_ca={certs}/ca.crt", f"--tls_cert={certs}/client.crt", f"--tls_key={certs}/client.key"]
    try:
        d.wait_for(lambda: d.run_cli(cli_bin, server, *member, "health", timeout=10).returncode == 0, 60,
                   "the server under mTLS to report SERVING to a client with a certificate")
        f.check(True, "mTLS: health from the host with a client certificate")
    except TimeoutError as e:
        f.check(False, f"mTLS: health from the host: {e}")
        podman("logs", name, check=False)
        return
    rc, _ = podman("healthcheck", "run", name, check=False)
    f.check(rc == 0, "mTLS: the image's HEALTHCHECK passes over TLS (GPHKV_TLS_* variables)")
    p = d.run_cli(cli_bin, server, *member, "put", "7", "member's")
    f.check(p.returncode == 0, f"mTLS: put with a client certificate: {p.returncode} {p.stderr}")
    p = d.run_cli(cli_bin, server, f"--tls_ca={certs}/ca.crt", "put", "7", "intruder's")
    f.check(p.returncode == 3, f"mTLS: a put without a client certificate is refused: {p.returncode} {p.stdout}")
    p = d.run_cli(cli_bin, server, "put", "7", "plain text's")
    f.check(p.returncode == 3, f"mTLS: a put in plain text is refused: {p.returncode} {p.stdout}")
    p = d.run_cli(cli_bin, server, *member, "--raw", "get", "7")
    f.check(p.returncode == 0 and p.stdout == "member's", f"mTLS: the refused puts changed nothing: {p.stdout!r}")
    status, text = d.http_get(f"http://127.0.0.1:{metrics_port}/metrics")
    f.check(status == 200 and "gphkv_build_info" in text, "mTLS: /metrics stays plain HTTP")
    podman("kill", "--signal", "TERM", name)
    rc, out = podman("wait", name, timeout=60)
    f.check(out.strip() == "0", f"mTLS: the container exits 0 after SIGTERM, not {out.strip()!r}")
    p = subprocess.run(["podman", "logs", name], env=podman.env, capture_output=True, text=True, timeout=30)
    f.check("over TLS, client certificates required" in p.stdout + p.stderr,
            "mTLS: the server logged that it requires client certificates")


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    build_dir, server_bin, cli_bin = (os.path.abspath(a) for a in sys.argv[1:])
    if os.geteuid() != 0:
        d.skip("podman runs as root here (the settings of issue 7); this test is not root")
    for tool in ("podman", "runc", "patchelf"):
        if shutil.which(tool) is None:
            d.skip(f"{tool} is not installed (scripts/deps/deploy.txt)")

    f = d.Failures()
    timings = {}
    start = time.monotonic()
    name = f"gphkv-ctest-{os.getpid()}"
    volume = f"gphkv-ctest-data-{os.getpid()}"
    restarted = []  # the containers started on the volume after the first
    with tempfile.TemporaryDirectory(prefix="gphkv-container-") as tmp:
        podman = Podman(tmp)
        try:
            t = time.monotonic()
            ensure_base(podman, tmp)
            timings["base image"] = time.monotonic() - t

            # The bundle: this build's binaries and their libraries.
            t = time.monotonic()
            bundle = os.path.join(build_dir, "deploy", "bundle")
            subprocess.run([os.path.join(d.DEPLOY, "bundle.sh"), build_dir, bundle], check=True, timeout=300)
            for b in ("gphkv-server", "gphkv", "gphkv-entrypoint", "gphkv-healthcheck"):
                f.check(os.access(os.path.join(bundle, "bin", b), os.X_OK), f"bundle has bin/{b}")
            timings["bundle"] = time.monotonic() - t

            if os.environ.get("GPHKV_TEST_EXPECT_LOADGEN") == "1":
                f.check(os.access(os.path.join(bundle, "bin", "gphkv-loadgen"), os.X_OK), "bundle has bin/gphkv-loadgen")

            t = time.monotonic()
            containerfile = os.path.join(d.DEPLOY, "Containerfile")
            if os.environ.get("GPHKV_TEST_SOURCE_BUILD") == "1":
                # The users' default target, compiled inside the image on the
                # same Debian base (CPU backend): minutes, so not CI's default.
                podman("build", "--network=host", "--format", "docker", "--target", "runtime",
                       "--ignorefile", os.path.join(d.DEPLOY, "Containerfile.dockerignore"),
                       "--build-arg", f"BASE_IMAGE={BASE}", "--build-arg", f"BUILDER_IMAGE={BASE}",
                       "--build-arg", "CMAKE_ARGS=-DGPHKV_CUDA=OFF", "-t", IMAGE,
                       "-f", containerfile, d.REPO, timeout=3600, quiet=True)
            else:
                podman("build", "--network=host", "--format", "docker", "--target", "prebuilt",
                       "--build-arg", f"BASE_IMAGE={BASE}", "-t", IMAGE,
                       "-f", containerfile, bundle, timeout=600, quiet=True)
            timings["image build"] = time.monotonic() - t

            # The image's contract.
            _, out = podman("image", "inspect", IMAGE, quiet=True)
            cfg = json.loads(out)[0]["Config"]
            f.check(cfg.get("User") == "10001:10001", f"image USER is 10001:10001, not {cfg.get('User')!r}")
            f.check(cfg.get("Entrypoint") == ["/opt/gphkv/bin/gphkv-entrypoint"], f"ENTRYPOINT {cfg.get('Entrypoint')}")
            hc = json.loads(out)[0].get("Healthcheck") or cfg.get("Healthcheck") or {}
            f.check("/opt/gphkv/bin/gphkv-healthcheck" in (hc.get("Test") or []), f"HEALTHCHECK {hc}")
            f.check({"50051/tcp", "9464/tcp"} <= set(cfg.get("ExposedPorts", {})), f"EXPOSE {cfg.get('ExposedPorts')}")
            rc, out = podman("run", "--rm", "--network=host", "--entrypoint", "/bin/sh", IMAGE, "-c",
                             "set -e; for b in /opt/gphkv/bin/gphkv-server /opt/gphkv/bin/gphkv /opt/gphkv/bin/gphkv-loadgen; do"
                             " if [ -e $b ]; then echo \"== $b\"; ldd $b; fi; done", check=False, quiet=True)
            f.check(rc == 0 and "not found" not in out and "libgrpc" in out and "libprometheus-cpp-pull" in out,
                    "every library of the binaries resolves inside the image (ldd), prometheus-cpp's included: "
                    + "; ".join(l.strip() for l in out.splitlines() if "not found" in l or l.startswith("==")))
            print("in the image: " + ", ".join(l[3:] for l in out.splitlines() if l.startswith("== ")))

            # The daemon, on loopback, under a memory limit.
            grpc_port, metrics_port = d.free_port(), d.free_port()
            server = f"127.0.0.1:{grpc_port}"
            t = time.monotonic()
            def run_container(container):
                # The data directory is the image's default (GPHKV_DATA_DIR, VOLUME
                # /var/lib/gphkv); a named volume keeps it across containers.
                podman("run", "-d", "--name", container, "--network=host", f"--memory={MEMORY_LIMIT}",
                       "-v", f"{volume}:/var/lib/gphkv",
                       "-e", f"GPHKV_LISTEN_ADDRESS={server}",
                       "-e", f"GPHKV_METRICS_ADDRESS=127.0.0.1:{metrics_port}",
                       "-e", f"GPHKV_MEMORY_PERCENT={MEMORY_PERCENT}",
                       IMAGE, "--backend=cpu", "--initial_capacity=4096")

            def healthy(container=name):
                rc, out = podman("inspect", container, "--format", "{{.State.Running}}", check=False, quiet=True)
                if out.strip() != "true":
                    raise RuntimeError(f"the container {container} is not running")
                return d.run_cli(cli_bin, server, "health", timeout=10).returncode == 0

            run_container(name)

            try:
                d.wait_for(healthy, 60, "the containerized server to report SERVING")
                f.check(True, "health from the host: SERVING")
            except (TimeoutError, RuntimeError) as e:
                f.check(False, f"health from the host: {e}")
                podman("logs", name, check=False)
                raise
            timings["start to SERVING"] = time.monotonic() - t

            rc, out = podman("healthcheck", "run", name, check=False)
            f.check(rc == 0, "the image's HEALTHCHECK (podman healthcheck run) passes")
            rc, out = podman("exec", name, "id", "-u", check=False, quiet=True)
            f.check(out.strip() == "10001", f"the server runs as uid 10001, not {out.strip()!r}")

            value = f"hello from the host {os.getpid()}"
            p = d.run_cli(cli_bin, server, "put", "42", value)
            f.check(p.returncode == 0, f"put 42 through the CLI: {p.returncode} {p.stdout} {p.stderr}")
            p = d.run_cli(cli_bin, server, "--raw", "get", "42")
            f.check(p.returncode == 0 and p.stdout == value, f"get 42 returns the value put: {p.returncode} {p.stdout!r} {p.stderr}")
            p = d.run_cli(cli_bin, server, "get", "43")
            f.check(p.returncode != 0 or "not found" in (p.stdout + p.stderr).lower(),
                    f"get of a key never put is a miss: {p.returncode} {p.stdout!r}")

            status, text = d.http_get(f"http://127.0.0.1:{metrics_port}/metrics")
            samples, types = d.parse_metrics(text)
            f.check(status == 200, "/metrics answers 200")
            f.check((metric(samples, "gphkv_requests_total", op="put", code="OK") or 0) >= 1, "/metrics counts the put")
            f.check((metric(samples, "gphkv_requests_total", op="get", code="OK") or 0) >= 1, "/metrics counts the gets")
            f.check((metric(samples, "gphkv_table_keys") or 0) >= 1, "/metrics: gphkv_table_keys >= 1")
            f.check(metric(samples, "gphkv_build_info", backend="cpu") == 1, "/metrics: gphkv_build_info{backend=\"cpu\"} 1")
            expected = MEMORY_LIMIT // 100 * MEMORY_PERCENT
            f.check(metric(samples, "gphkv_memory_limit_bytes") == expected,
                    f"--memory came from the container's memory limit: gphkv_memory_limit_bytes "
                    f"{metric(samples, 'gphkv_memory_limit_bytes')} == {MEMORY_PERCENT}% of {MEMORY_LIMIT} = {expected}")

            # SIGTERM: drain and exit 0, well within the drain bound.
            t = time.monotonic()
            podman("kill", "--signal", "TERM", name)
            rc, out = podman("wait", name, timeout=60)
            stop_s = time.monotonic() - t
            timings["SIGTERM to exit"] = stop_s
            f.check(out.strip() == "0", f"the container exits 0 after SIGTERM, not {out.strip()!r}")
            f.check(stop_s < 15, f"the drain took {stop_s:.1f} s, over the 15 s this idle server should need")
            p = subprocess.run(["podman", "logs", name], env=podman.env, capture_output=True, text=True, timeout=30)
            logs = p.stdout + p.stderr
            f.check("SIGTERM" in logs, "the server logged the SIGTERM it drained on")
            f.check("--memory=" in logs and "% of the" in logs, "the entrypoint logged the --memory it derived")
            f.check("data dir: snapshot /var/lib/gphkv/snapshot-" in logs,
                    "the server took its final snapshot into the volume on SIGTERM")

            # A new container on the volume: the keys are back (from the snapshot).
            t = time.monotonic()
            second = f"{name}-2"
            restarted.append(second)
            run_container(second)
            try:
                d.wait_for(lambda: healthy(second), 60, "the restarted container to report SERVING")
            except (TimeoutError, RuntimeError) as e:
                f.check(False, f"restart on the volume: {e}")
                podman("logs", second, check=False)
                raise
            timings["restart on the volume to SERVING"] = time.monotonic() - t
            p = d.run_cli(cli_bin, server, "--raw", "get", "42")
            f.check(p.returncode == 0 and p.stdout == value,
                    f"after a restart on the same volume, get 42 returns the value put: {p.returncode} {p.stdout!r} {p.stderr}")
            p = d.run_cli(cli_bin, server, "--json", "stats")
            try:
                dd = json.loads(p.stdout).get("data_dir", {})
            except json.JSONDecodeError:
                dd = {}
            f.check(dd.get("dir") == "/var/lib/gphkv" and dd.get("recovered_keys") == 1 and dd.get("recovered_snapshot"),
                    f"stats shows the data directory and what recovery found: {p.stdout!r}")

            # kill -9 after a put: the third container replays it from the log.
            later = f"written before a kill -9 {os.getpid()}"
            p = d.run_cli(cli_bin, server, "put", "43", later)
            f.check(p.returncode == 0, f"put 43: {p.returncode} {p.stderr}")
            podman("kill", "--signal", "KILL", second)
            podman("wait", second, timeout=60, check=False, quiet=True)
            third = f"{name}-3"
            restarted.append(third)
            run_container(third)
            d.wait_for(lambda: healthy(third), 60, "the container after kill -9 to report SERVING")
            p = d.run_cli(cli_bin, server, "--raw", "get", "43")
            f.check(p.returncode == 0 and p.stdout == later, f"after kill -9, get 43 (from the log): {p.returncode} {p.stdout!r}")
            p = d.run_cli(cli_bin, server, "--raw", "get", "42")
            f.check(p.returncode == 0 and p.stdout == value, f"after kill -9, get 42 still there: {p.returncode} {p.stdout!r}")
            podman("kill", "--signal", "TERM", third)
            rc, out = podman("wait", third, timeout=60)
            f.check(out.strip() == "0", f"the third container exits 0 after SIGTERM, not {out.strip()!r}")

            t = time.monotonic()
            run_under_mtls(f, podman, cli_bin, tmp, f"{name}-tls")
            timings["mTLS run"] = time.monotonic() - t
        finally:
            for c in [name, *restarted, f"{name}-tls"]:
                podman("rm", "-f", "--time", "5", c, check=False, quiet=True)
            podman("volume", "rm", "-f", volume, check=False, quiet=True)
            podman("rmi", "-f", IMAGE, check=False, quiet=True)

    timings["total"] = time.monotonic() - start
    print("timings: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
    return f.finish("container_test")


if __name__ == "__main__":
    sys.exit(main())

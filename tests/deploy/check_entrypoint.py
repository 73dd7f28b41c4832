#!/usr/bin/env python3
"""deploy/entrypoint.sh turns GPHKV_* variables into gphkv-server flags, and
deploy/healthcheck.sh into a CLI health call: runs each with a stand-in binary
that prints its arguments, and checks the flags (TLS's included), the
--memory percentage of the memory limit, argument order and refusals."""

import os
import subprocess
import sys
import tempfile

import deploylib as d

ENTRYPOINT = os.path.join(d.DEPLOY, "entrypoint.sh")
HEALTHCHECK = os.path.join(d.DEPLOY, "healthcheck.sh")


def run(env, *args, script=ENTRYPOINT, binary_var="GPHKV_SERVER_BIN"):
    with tempfile.TemporaryDirectory() as tmp:
        fake = os.path.join(tmp, "stand-in")
        with open(fake, "w") as out:
            out.write('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
        os.chmod(fake, 0o755)
        full = {"PATH": "/usr/bin:/bin", binary_var: fake, **env}
        p = subprocess.run(["/bin/sh", script, *args], env=full, capture_output=True, text=True, timeout=10)
        return p.returncode, p.stdout.splitlines(), p.stderr


def healthcheck(env):
    return run(env, script=HEALTHCHECK, binary_var="GPHKV_CLI_BIN")


def main():
    f = d.Failures()

    rc, argv, _ = run({})
    f.check(rc == 0 and argv == ["--listen_address=0.0.0.0:50051", "--metrics_address=0.0.0.0:9464"],
            f"no variables: {rc} {argv}")

    rc, argv, _ = run({"GPHKV_LISTEN_ADDRESS": "127.0.0.1:7000", "GPHKV_METRICS_ADDRESS": "127.0.0.1:7001",
                       "GPHKV_BACKEND": "cpu", "GPHKV_GPU": "3", "GPHKV_LOG_LEVEL": "debug", "GPHKV_MEMORY": "2GiB"},
                      "--max_delay_us=50", "--backend=cuda")
    f.check(rc == 0 and argv == ["--listen_address=127.0.0.1:7000", "--metrics_address=127.0.0.1:7001",
                                 "--backend=cpu", "--gpu=3", "--log_level=debug", "--memory=2GiB",
                                 "--max_delay_us=50", "--backend=cuda"],
            f"every variable, then arguments last (so they win): {rc} {argv}")

    rc, argv, _ = run({"GPHKV_GPUS": "0,1"})
    f.check(rc == 0 and argv[-1] == "--gpus=0,1", f"GPHKV_GPUS: {rc} {argv}")

    # The data directory: the image's default, and turned off by an empty value.
    rc, argv, _ = run({"GPHKV_DATA_DIR": "/var/lib/gphkv", "GPHKV_FSYNC": "always"})
    f.check(rc == 0 and argv[-2:] == ["--data_dir=/var/lib/gphkv", "--fsync=always"],
            f"GPHKV_DATA_DIR and GPHKV_FSYNC: {rc} {argv}")
    rc, argv, _ = run({"GPHKV_DATA_DIR": ""})
    f.check(rc == 0 and not any(a.startswith("--data_dir") for a in argv), f"GPHKV_DATA_DIR= turns it off: {argv}")
    text = open(os.path.join(d.DEPLOY, "Containerfile")).read()
    f.check("GPHKV_DATA_DIR=/var/lib/gphkv" in text and "VOLUME /var/lib/gphkv" in text,
            "the image turns the data directory on, on its volume")

    # memcached's port: the image's default, and none when empty.
    rc, argv, _ = run({"GPHKV_MEMCACHED_ADDRESS": "0.0.0.0:11211"})
    f.check(rc == 0 and argv[-1] == "--memcached_address=0.0.0.0:11211", f"GPHKV_MEMCACHED_ADDRESS: {rc} {argv}")
    rc, argv, _ = run({"GPHKV_MEMCACHED_ADDRESS": ""})
    f.check(rc == 0 and not any(a.startswith("--memcached_address") for a in argv),
            f"GPHKV_MEMCACHED_ADDRESS= turns it off: {argv}")
    f.check("GPHKV_MEMCACHED_ADDRESS=0.0.0.0:11211" in text and "11211/tcp" in text,
            "the image serves memcached's protocol on 11211 and exposes it")

    # 75% of a 32 GiB limit (the Downward API hands over bytes).
    rc, argv, err = run({"GPHKV_MEMORY_PERCENT": "75", "GPHKV_MEMORY_LIMIT_BYTES": str(32 << 30)})
    f.check(rc == 0 and f"--memory={(32 << 30) // 100 * 75}" in argv, f"percent of the limit: {rc} {argv} {err}")
    f.check("75% of the" in err, f"the computed --memory is logged: {err!r}")

    # An explicit GPHKV_MEMORY wins over the percentage.
    rc, argv, _ = run({"GPHKV_MEMORY": "1GiB", "GPHKV_MEMORY_PERCENT": "75", "GPHKV_MEMORY_LIMIT_BYTES": "1000"})
    f.check(rc == 0 and "--memory=1GiB" in argv and sum(a.startswith("--memory") for a in argv) == 1,
            f"GPHKV_MEMORY over GPHKV_MEMORY_PERCENT: {argv}")

    # Refusals: nonsense percentages, and a percentage of no limit.
    for bad in ("0", "101", "75%", "x"):
        rc, argv, err = run({"GPHKV_MEMORY_PERCENT": bad, "GPHKV_MEMORY_LIMIT_BYTES": "1000000"})
        f.check(rc == 64 and not argv, f"GPHKV_MEMORY_PERCENT={bad} must be refused: {rc} {argv}")
    rc, argv, err = run({"GPHKV_MEMORY_PERCENT": "75", "GPHKV_MEMORY_LIMIT_BYTES": "max"})
    f.check(rc == 64 and "no memory limit" in err, f"percent without a limit must be refused: {rc} {err!r}")
    rc, argv, err = run({"GPHKV_MEMORY_PERCENT": "75", "GPHKV_MEMORY_LIMIT_BYTES": str(2**63 - 1)})
    f.check(rc == 64, f"cgroup v1's 'unlimited' must be refused: {rc} {argv}")

    # Arguments with spaces survive as one argument.
    rc, argv, _ = run({}, "--log_level=info", "an argument with spaces")
    f.check(argv[-1] == "an argument with spaces", f"arguments are passed intact: {argv}")

    # TLS: the files become the server's TLS flags.
    rc, argv, _ = run({"GPHKV_TLS_CERT": "/tls/tls.crt", "GPHKV_TLS_KEY": "/tls/tls.key",
                       "GPHKV_TLS_CLIENT_CA": "/tls/ca.crt"})
    f.check(rc == 0 and argv[2:] == ["--tls_cert=/tls/tls.crt", "--tls_key=/tls/tls.key", "--tls_client_ca=/tls/ca.crt"],
            f"TLS variables: {rc} {argv}")

    # The healthcheck asks the port of GPHKV_LISTEN_ADDRESS on loopback; in
    # plain text unless the server has a certificate, then trusting
    # GPHKV_TLS_CA, and under mTLS showing the server's own certificate.
    rc, argv, _ = healthcheck({"GPHKV_LISTEN_ADDRESS": "0.0.0.0:7000"})
    f.check(rc == 0 and argv == ["--server=127.0.0.1:7000", "--timeout=2s", "health"], f"healthcheck, plain: {rc} {argv}")
    rc, argv, _ = healthcheck({"GPHKV_TLS_CERT": "/tls/tls.crt", "GPHKV_TLS_KEY": "/tls/tls.key",
                               "GPHKV_TLS_CA": "/tls/ca.crt"})
    f.check(rc == 0 and argv == ["--server=127.0.0.1:50051", "--timeout=2s", "--tls", "--tls_server_name=localhost",
                                 "--tls_ca=/tls/ca.crt", "health"], f"healthcheck, TLS: {rc} {argv}")
    rc, argv, _ = healthcheck({"GPHKV_TLS_CERT": "/tls/tls.crt", "GPHKV_TLS_KEY": "/tls/tls.key",
                               "GPHKV_TLS_CLIENT_CA": "/tls/ca.crt", "GPHKV_TLS_SERVER_NAME": "gphkv-shards"})
    f.check(rc == 0 and argv == ["--server=127.0.0.1:50051", "--timeout=2s", "--tls", "--tls_server_name=gphkv-shards",
                                 "--tls_cert=/tls/tls.crt", "--tls_key=/tls/tls.key", "health"],
            f"healthcheck, mTLS: {rc} {argv}")

    return f.finish("check_entrypoint")


if __name__ == "__main__":
    sys.exit(main())

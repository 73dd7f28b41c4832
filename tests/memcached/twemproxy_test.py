"""twemproxy (Debian's `nutcracker`) in front of two gphkv servers' memcached
ports (issue 28): the proxy spreads keys over the servers by ketama, the way
memcached users shard today. Through the proxy, a client sets a few hundred
keys, reads them back one by one and in multi-gets (which the proxy splits
per server and joins), deletes some and reads again, all against a model;
then each server is asked directly: every live key is on exactly one of them
with its value, deleted keys on neither, and both hold some. Bad input sent
through the proxy is answered as memcached itself answers it behind the same
proxy (a second pool over a real memcached in the same nutcracker), byte for
byte, connection closes included.

    twemproxy_test.py GPHKV_SERVER_BINARY

Exit 77 (ctest's skip) with the reason when nutcracker or memcached is absent
(CI installs both: scripts/deps/test.txt). GPHKV_TEST_SEED replays a run."""

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "deploy"))
import deploylib as d  # noqa: E402 (after the path is set)
from memcache_text import TextClient, wait_until_serving  # noqa: E402

KEYS = 400
MAX_VALUE_BYTES = 65536  # the servers' --max_value_bytes; the too-large value is past it and memcached's 1 MiB


def find_tool(name, env):
    path = os.environ.get(env) or shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    return path if path and os.access(path, os.X_OK) else None


def nutcracker_config(proxy_port, gphkv_ports, reference_proxy_port, memcached_port):
    """Two pools: `gphkv` over both servers (the subject) and `memcached` over a
    real memcached (the reference for bad input). ketama is memcached's usual
    consistent hashing; auto_eject_hosts stays off so a slow test machine never
    moves keys between servers mid-test."""
    servers = "\n".join(f"    - 127.0.0.1:{p}:1 gphkv{i}" for i, p in enumerate(gphkv_ports))
    return f"""gphkv:
  listen: 127.0.0.1:{proxy_port}
  hash: fnv1a_64
  distribution: ketama
  timeout: 10000
  auto_eject_hosts: false
  servers:
{servers}
memcached:
  listen: 127.0.0.1:{reference_proxy_port}
  hash: fnv1a_64
  distribution: ketama
  timeout: 10000
  auto_eject_hosts: false
  servers:
    - 127.0.0.1:{memcached_port}:1 memcached
"""


def random_key(rng, i):
    # Printable bytes but space and control characters, 1 to 100 bytes, unique by i.
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_-./|{}[]!#$%&*+=?@~^"
    tail = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 90)))
    return f"k{i}:{tail}"


def random_value(rng):
    size = rng.choice([0, 1, 7, 100, 1000, rng.randrange(0, 20000)])
    # Any bytes, \r\n included: the data block is framed by its length.
    return bytes(rng.getrandbits(8) for _ in range(size))


def check_model_through_proxy(f, c, model, keys, what):
    """Every key of `keys` read through the proxy, in multi-gets of up to 60
    keys (mixed hits and misses, the proxy splits them per server)."""
    rng = random.Random(len(model))
    order = list(keys)
    rng.shuffle(order)
    bad = 0
    for start in range(0, len(order), 60):
        chunk = order[start:start + 60]
        got = c.get_many(chunk)
        want = {k: model[k] for k in chunk if k in model}
        if got != want:
            bad += 1
            missing = [k for k in want if k not in got]
            extra = [k for k in got if k not in want]
            wrong = [k for k in want if k in got and got[k] != want[k]]
            print(f"  multi-get of {len(chunk)}: missing {missing[:3]}, extra {extra[:3]}, wrong {wrong[:3]}")
    f.check(bad == 0, f"{what}: {bad} multi-gets through the proxy differ from the model")


def bad_inputs():
    """(name, bytes) sent on a fresh connection to each pool. Most of these the
    proxy's own parser refuses by closing the connection; the too-large value
    and the get after it reach the server."""
    too_large = b"y" * 2_000_000
    return [
        ("value past the limit, connection kept",
         b"set big:fresh 0 0 %d\r\n" % len(too_large) + too_large + b"\r\nget big:fresh\r\nset big:after 0 0 2\r\nok\r\nget big:after\r\n"),
        ("unknown command", b"bogus\r\n"),
        ("data block longer than its length", b"set bad:len 0 0 3\r\nabcde\r\nget bad:len\r\n"),
        ("key of 251 bytes", b"get " + b"k" * 251 + b"\r\n"),
        ("length not a number", b"set bad:num 0 0 xx\r\nabc\r\n"),
        ("negative length", b"set bad:neg 0 0 -1\r\n"),
        ("get without a key", b"get\r\n"),
        ("empty line", b"\r\n"),
        ("delete with a hold time", b"delete bad:hold 5\r\n"),
        ("empty value, misses and duplicates",
         b"set empty:v 0 0 0\r\n\r\nget empty:v nothing:here empty:v\r\ndelete nothing:here\r\n"),
        ("noreply", b"set quiet:k 0 0 1 noreply\r\nq\r\ndelete quiet:none noreply\r\nget quiet:k\r\n"),
    ]


def exchange(port, data, settle_s=1.0):
    """Sends `data` and returns (every byte answered, whether the peer closed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(data)
    s.settimeout(settle_s)
    out, closed = b"", False
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                closed = True
                break
            out += chunk
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    s.close()
    return out, closed


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    server_bin = sys.argv[1]
    nutcracker = find_tool("nutcracker", "GPHKV_NUTCRACKER")
    if not nutcracker:
        d.skip("twemproxy is not installed (apt-get install nutcracker, or GPHKV_NUTCRACKER=PATH)")
    memcached = find_tool("memcached", "GPHKV_MEMCACHED")
    if not memcached:
        d.skip("memcached, the reference for bad input, is not installed (apt-get install memcached)")
    seed = int(os.environ.get("GPHKV_TEST_SEED", random.SystemRandom().randrange(1 << 32)))
    print(f"seed {seed} (GPHKV_TEST_SEED={seed} replays it)", flush=True)
    rng = random.Random(seed)
    f = d.Failures()

    with tempfile.TemporaryDirectory(prefix="gphkv-twemproxy-") as tmp:
        ports = [d.free_port(), d.free_port()]
        flags = ("--backend=cpu", "--memory=64MiB", "--initial_capacity=4096", f"--max_value_bytes={MAX_VALUE_BYTES}")
        with d.LocalServer(server_bin, *flags, f"--memcached_address=127.0.0.1:{ports[0]}",
                           log_path=os.path.join(tmp, "server0.log")) as s0, \
                d.LocalServer(server_bin, *flags, f"--memcached_address=127.0.0.1:{ports[1]}",
                              log_path=os.path.join(tmp, "server1.log")) as s1:
            for p, s in zip(ports, (s0, s1)):
                wait_until_serving(p, proc=s.proc)
            memcached_port, proxy_port, reference_port, stats_port = (d.free_port() for _ in range(4))
            # memcached refuses to run as root without -u.
            as_user = ["-u", "nobody"] if os.geteuid() == 0 else []
            mc = subprocess.Popen([memcached, "-l", "127.0.0.1", "-p", str(memcached_port), "-U", "0", "-m", "64",
                                   *as_user],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            conf = os.path.join(tmp, "nutcracker.yml")
            with open(conf, "w") as out:
                out.write(nutcracker_config(proxy_port, ports, reference_port, memcached_port))
            checked = subprocess.run([nutcracker, "-t", "-c", conf], capture_output=True, text=True)
            if checked.returncode != 0:
                print(checked.stdout + checked.stderr)
                sys.exit("nutcracker refused the configuration")
            proxy = subprocess.Popen([nutcracker, "-c", conf, "-a", "127.0.0.1", "-s", str(stats_port),
                                      "-o", os.path.join(tmp, "nutcracker.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
            try:
                wait_until_serving(memcached_port, proc=mc)
                print(f"through the proxy: {wait_until_serving(proxy_port, proc=proxy)}; "
                      f"reference: {wait_until_serving(reference_port, proc=proxy)}", flush=True)
                run_checks(f, rng, proxy_port, ports, reference_port)
            finally:
                for p in (proxy, mc):
                    p.terminate()
                    p.wait(timeout=10)
                if f.items:
                    with open(os.path.join(tmp, "nutcracker.log")) as log:
                        print("nutcracker's log, last lines:\n" + "".join(log.readlines()[-20:]))
            # SIGTERM drains and exits 0; under ASan (scripts/sanitize.sh runs label memcache) a report
            # at exit, a leak included, is a nonzero status.
            for i, s in enumerate((s0, s1)):
                check_clean_exit(f, s, os.path.join(tmp, f"server{i}.log"), f"server {i}")
    return f.finish("twemproxy")


def check_clean_exit(f, server, log_path, what):
    code = server.stop()
    if not f.check(code == 0, f"{what} exited {code} on SIGTERM"):
        with open(log_path, errors="replace") as log:
            print(f"{what}'s log, last lines:\n" + "".join(log.readlines()[-40:]))


def run_checks(f, rng, proxy_port, ports, reference_port):
    model = {}
    keys = [random_key(rng, i) for i in range(KEYS)]
    with TextClient(proxy_port) as c:
        # 1. Sets, one by one; every fifth with noreply (the proxy forwards it and answers nothing).
        quiet = 0
        for i, k in enumerate(keys):
            v = random_value(rng)
            if i % 5 == 4:
                c.send(f"set {k} 0 0 {len(v)} noreply\r\n".encode() + v + b"\r\n")
                quiet += 1
            else:
                reply = c.set(k, v)
                if not f.check(reply == "STORED", f"set {k!r} through the proxy: {reply!r}"):
                    continue
            model[k] = v
        # A quiet set's effect is checked once a later get on the same connection is answered.
        print(f"set {len(model)} keys through the proxy ({quiet} with noreply)", flush=True)

        # 2. Read back: one key per get for a sample, then everything in multi-gets.
        single = rng.sample(keys, 50)
        wrong = [k for k in single if c.get(k) != model[k]]
        f.check(not wrong, f"single gets through the proxy: {len(wrong)} of 50 wrong, e.g. {wrong[:2]}")
        check_model_through_proxy(f, c, model, keys + [f"absent:{i}" for i in range(40)], "after the sets")
        gets = c.get_many(keys[:20], verb="gets")
        f.check({k: v for k, v in gets.items()} == {k: model[k] for k in keys[:20]}, "gets through the proxy")

        # 3. Overwrite some, delete some (every third of those quietly), delete again.
        for k in rng.sample(keys, 40):
            v = random_value(rng)
            reply = c.set(k, v)
            if f.check(reply == "STORED", f"overwrite {k!r}: {reply!r}"):
                model[k] = v
        deleted = rng.sample(keys, KEYS // 4)
        for i, k in enumerate(deleted):
            if i % 3 == 2:
                c.send(f"delete {k} noreply\r\n")
            else:
                reply = c.command(f"delete {k}\r\n")
                f.check(reply == "DELETED", f"delete {k!r} through the proxy: {reply!r}")
            del model[k]
        again = [c.command(f"delete {k}\r\n") for k in deleted[:10]]
        f.check(again == ["NOT_FOUND"] * 10, f"second deletes through the proxy: {again}")
        check_model_through_proxy(f, c, model, keys, "after the deletes")
        # One multi-get of every key, duplicates included: the proxy splits it over both servers.
        # twemproxy joins the servers' parts of a multi-get out of request order once some keys miss (it
        # does so in front of memcached too), so the values are compared as a multiset: duplicates count.
        everything = keys + keys[:25]
        got = sorted(c.get_values(everything))
        want = sorted((k, model[k]) for k in everything if k in model)
        f.check(got == want, f"one multi-get of {len(everything)} keys: {len(got)} values, {len(want)} expected "
                             f"(duplicates included)")

    # 4. Each server directly: every live key on exactly one, deleted keys on none, both hold some.
    held = []
    for p in ports:
        with TextClient(p) as direct:
            found = {}
            for start in range(0, len(keys), 100):
                found.update(direct.get_many(keys[start:start + 100]))
            held.append(found)
    on_both = [k for k in keys if k in held[0] and k in held[1]]
    on_none = [k for k in model if k not in held[0] and k not in held[1]]
    wrong = [k for k in model if held[0].get(k, held[1].get(k)) != model[k]]
    dead = [k for k in deleted if k in held[0] or k in held[1]]
    print(f"server 0 holds {len(held[0])} keys, server 1 {len(held[1])}; {len(model)} live", flush=True)
    f.check(not on_both, f"{len(on_both)} keys on both servers, e.g. {on_both[:2]}")
    f.check(not on_none, f"{len(on_none)} live keys on neither server, e.g. {on_none[:2]}")
    f.check(not wrong, f"{len(wrong)} keys with a wrong value on their server, e.g. {wrong[:2]}")
    f.check(not dead, f"{len(dead)} deleted keys still on a server, e.g. {dead[:2]}")
    # ketama over two equal servers: each should hold about half; 15% is far below any fair share.
    f.check(all(len(h) >= len(model) * 0.15 for h in held), f"keys spread {len(held[0])} / {len(held[1])}")

    # 5. Bad input through the proxy, against memcached behind the same proxy.
    for name, data in bad_inputs():
        want = exchange(reference_port, data)
        got = exchange(proxy_port, data)
        f.check(got == want, f"bad input ({name}): memcached behind the proxy answered {want[0][:120]!r}"
                             f"{' and closed' if want[1] else ''}, gphkv {got[0][:120]!r}{' and closed' if got[1] else ''}")
    print(f"{len(bad_inputs())} bad inputs compared with memcached behind the same proxy", flush=True)


if __name__ == "__main__":
    sys.exit(main())

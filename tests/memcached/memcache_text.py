"""A raw-socket client of memcached's text protocol for the process tests of
this folder: it sends bytes exactly as written and reads replies line by line,
so a test sees what the server (or a proxy in front of it) really answers."""

import socket
import time


class ConnectionClosed(Exception):
    pass


class TextClient:
    def __init__(self, port, host="127.0.0.1", timeout=10):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionClosed("the connection closed")
        self.buf += chunk

    def line(self):
        """One reply line, without its \\r\\n."""
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode("latin-1")

    def exactly(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def command(self, text):
        """Sends one command line (and data block, if any) and returns the reply line."""
        self.send(text)
        return self.line()

    def set(self, key, value, flags=0, exptime=0):
        value = value if isinstance(value, bytes) else value.encode()
        self.send(f"set {key} {flags} {exptime} {len(value)}\r\n".encode() + value + b"\r\n")
        return self.line()

    def get_values(self, keys, verb="get"):
        """[(key, value)] in the order of the VALUE lines of one get line (duplicates
        kept); VALUE lines checked for shape."""
        self.send(f"{verb} {' '.join(keys)}\r\n")
        found = []
        while True:
            line = self.line()
            if line == "END":
                return found
            parts = line.split(" ")
            if parts[0] != "VALUE" or len(parts) not in (4, 5):
                raise ValueError(f"unexpected reply to {verb}: {line!r}")
            data = self.exactly(int(parts[3]) + 2)
            if data[-2:] != b"\r\n":
                raise ValueError(f"a data block of {parts[1]} not ended by \\r\\n")
            found.append((parts[1], data[:-2]))

    def get_many(self, keys, verb="get"):
        """{key: value} from one get line."""
        return dict(self.get_values(keys, verb))

    def get(self, key):
        return self.get_many([key]).get(key)

    def closed_by_peer(self, wait_s=2.0):
        """True once the other side closes the connection (reads until EOF)."""
        deadline = time.monotonic() + wait_s
        self.sock.settimeout(0.2)
        try:
            while time.monotonic() < deadline:
                try:
                    if not self.sock.recv(65536):
                        return True
                except socket.timeout:
                    continue
                except ConnectionResetError:
                    return True
            return False
        finally:
            self.sock.settimeout(10)


def wait_until_serving(port, timeout_s=30, proc=None):
    """Waits until `version` is answered on the port (a proxy or a server)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"the process serving port {port} exited ({proc.returncode})")
        try:
            with TextClient(port, timeout=2) as c:
                return c.command("version\r\n")
        except (OSError, ConnectionClosed) as e:
            last = e
            time.sleep(0.1)
    raise TimeoutError(f"port {port} did not answer within {timeout_s}s (last error: {last})")

"""Servers for the sorted-set server's tests: ours (build/cdsbench-zset-server) and the real
redis-server (Debian's, installed by scripts/install-deps), each started on a free loopback port
and stopped after; and a raw RESP2 client, so replies are compared byte for byte."""
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, what, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what} exited at start with status {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.05)
    pytest.fail(f"{what} did not listen on port {port} within {timeout} s")


class Running:
    def __init__(self, process, port, log, unixsocket=None):
        self.process, self.port, self.log, self.unixsocket = process, port, log, unixsocket

    def log_text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")


@contextlib.contextmanager
def our_server(*args, unixsocket=False):
    """Our server on a free port (extra command-line args as given); on exit, SIGTERM, and the
    server must stop with status 0 within 20 s."""
    binary = BUILD / "cdsbench-zset-server"
    if not binary.exists():
        pytest.fail(f"{binary} is missing: build it first (make build, or make test)")
    port = free_port()
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryFile() as log:
        sock = os.path.join(d, "zset.sock") if unixsocket else None
        extra = ["--unixsocket", sock] if sock else []
        p = subprocess.Popen([str(binary), "--port", str(port), "--hash-seed", "1", *extra, *map(str, args)],
                             stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_port(port, p, "cdsbench-zset-server")
            yield Running(p, port, log, sock)
        finally:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                code = p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                pytest.fail("cdsbench-zset-server did not stop within 20 s of SIGTERM")
        assert code == 0, f"cdsbench-zset-server exited with {code}: {Running(p, port, log).log_text()}"


@contextlib.contextmanager
def real_redis():
    """The real redis-server on a free loopback port, no persistence; shut down after."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is missing: scripts/install-deps installs it (Debian redis-server)")
    port = free_port()
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryFile() as log:
        p = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                              "--databases", "1", "--dir", d, "--daemonize", "no"], stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_port(port, p, "redis-server")
            yield Running(p, port, log)
        finally:
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def encode(*args):
    """One request in RESP2's multibulk form."""
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(parts)


class RawClient:
    """A RESP2 client that returns each reply as the exact bytes the server sent."""

    def __init__(self, port=None, path=None, timeout=10):
        if path:
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.connect(path)
        else:
            self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.settimeout(timeout)
        self.buffer = b""

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("closed by the server")
        self.buffer += chunk

    def _line(self):
        while b"\r\n" not in self.buffer:
            self._fill()
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line + b"\r\n"

    def reply(self):
        """The next whole reply, as bytes."""
        line = self._line()
        kind, rest = line[:1], line[1:-2]
        if kind in (b"+", b"-", b":"):
            return line
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return line
            while len(self.buffer) < n + 2:
                self._fill()
            body, self.buffer = self.buffer[:n + 2], self.buffer[n + 2:]
            return line + body
        if kind == b"*":
            n = int(rest)
            return line + b"".join(self.reply() for _ in range(max(n, 0)))
        raise AssertionError(f"not a RESP2 reply: {line!r}")

    def call(self, *args):
        self.send(encode(*args))
        return self.reply()

    def closed_by_server(self, timeout=5):
        """True when the server closes the connection (after any bytes it still sends)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    return True
                self.buffer += chunk
        except (socket.timeout, TimeoutError):
            return False
        except ConnectionResetError:
            return True

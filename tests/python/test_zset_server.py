"""The sorted-set server (apps/zset_server) against the real redis-server and real clients:
the same commands sent to both must get the same reply bytes; redis-cli and redis-py drive it;
malformed requests get Redis's protocol errors and a closed connection."""
import glob
import os
import random
import resource
import shutil
import socket
import socketserver
import subprocess
import threading
import time

import pytest
import redis

from conftest import BUILD
from zset_servers import RawClient, encode, free_port, our_server, real_redis

METHODS = ["nr", "sl", "rwl", "fc", "fcplus"]

# Every command the server serves, with the edge cases of its arguments, as Redis 7.0 answers them.
SCRIPT = [
    ["PING"], ["ping", "hello"], ["PING", "a", "b"], ["ECHO", "x y"], ["ECHO"], ["SELECT", "0"], ["SELECT", "1"],
    ["SELECT", "x"], ["DBSIZE"], ["TYPE", "z"], ["EXISTS", "z"],
    ["ZADD", "z", "1", "a", "2", "b", "3", "c"], ["TYPE", "z"], ["EXISTS", "z", "z", "nope"], ["DBSIZE"],
    ["ZADD", "z", "1"], ["ZADD", "z", "nx", "1"], ["ZADD", "z", "xx", "nx", "1", "a"], ["ZADD", "z", "gt", "lt", "1", "a"],
    ["ZADD", "z", "nx", "gt", "1", "a"], ["ZADD", "z", "incr", "1", "a", "2", "b"], ["ZADD", "z", "nan", "a"],
    ["ZADD", "z", "abc", "a"], ["ZADD", "z", " 1", "a"], ["ZADD", "z", "1e400", "a"], ["ZADD", "z", "0x10", "hex"],
    ["ZADD", "z", "ch", "5", "a", "2", "b", "9", "new"], ["ZADD", "z", "xx", "ch", "6", "a", "1", "ghost"],
    ["ZADD", "z", "nx", "100", "a", "4", "fresh"], ["ZADD", "z", "gt", "ch", "1", "a", "50", "b"],
    ["ZADD", "z", "lt", "ch", "1", "a", "70", "b"], ["ZADD", "z", "incr", "0.1", "a"], ["ZADD", "z", "xx", "incr", "1", "ghost"],
    ["ZADD", "z", "nx", "incr", "1", "a"], ["ZADD", "z", "gt", "incr", "-5", "a"], ["ZADD", "z", "-inf", "low", "+inf", "high"],
    ["ZADD", "z", "incr", "-inf", "high"], ["ZINCRBY", "z", "+inf", "low"], ["ZINCRBY", "z", "1", "low"],
    ["ZINCRBY", "z", "x", "a"], ["ZINCRBY", "z", "2.5", "a"], ["ZINCRBY", "other", "3", "m"], ["ZINCRBY", "z"],
    ["ZSCORE", "z", "a"], ["ZSCORE", "z", "nope"], ["ZSCORE", "nokey", "a"], ["ZMSCORE", "z", "a", "nope", "b"],
    ["ZMSCORE", "nokey", "a", "b"], ["ZRANK", "z", "a"], ["ZRANK", "z", "nope"], ["ZREVRANK", "z", "a"], ["ZRANK", "nokey", "a"],
    ["ZCARD", "z"], ["ZCARD", "nokey"], ["ZCOUNT", "z", "-inf", "+inf"], ["ZCOUNT", "z", "(1", "5"], ["ZCOUNT", "z", "(", "5"],
    ["ZCOUNT", "z", "x", "5"], ["ZCOUNT", "z", "5", "1"], ["ZCOUNT", "nokey", "0", "1"],
    ["ZRANGE", "z", "0", "-1"], ["ZRANGE", "z", "0", "-1", "WITHSCORES"], ["ZRANGE", "z", "-3", "-2", "withscores"],
    ["ZRANGE", "z", "5", "2"], ["ZRANGE", "z", "100", "200"], ["ZRANGE", "z", "-100", "1"], ["ZRANGE", "z", "a", "b"],
    ["ZRANGE", "z", "0", "1", "rev"], ["ZRANGE", "z", "0", "1", "limit", "0", "1"], ["ZRANGE", "z", "0", "-1", "rev", "limit", "0", "-1"],
    ["ZRANGE", "z", "(1", "5", "byscore"], ["ZRANGE", "z", "5", "(1", "byscore", "rev", "withscores"],
    ["ZRANGE", "z", "-inf", "+inf", "byscore", "limit", "1", "2"], ["ZRANGE", "z", "-inf", "+inf", "byscore", "limit", "-1", "2"],
    ["ZRANGE", "z", "-inf", "+inf", "byscore", "limit", "1", "-1"], ["ZRANGE", "z", "-inf", "+inf", "byscore", "limit", "0"],
    ["ZRANGE", "z", "x", "1", "byscore"], ["ZRANGE", "z", "0", "1", "foo"], ["ZRANGE", "z", "0", "-1", "bylex", "withscores"],
    ["ZRANGEBYSCORE", "z", "-inf", "+inf"], ["ZRANGEBYSCORE", "z", "(1", "(5", "withscores"],
    ["ZRANGEBYSCORE", "z", "-inf", "+inf", "limit", "2", "3", "withscores"], ["ZRANGEBYSCORE", "z", "0", "1", "byscore"],
    ["ZRANGEBYSCORE", "z", "0", "1", "limit", "a", "1"], ["ZRANGEBYSCORE", "nokey", "0", "1"],
    ["ZREVRANGE", "z", "0", "2"], ["ZREVRANGE", "z", "0", "-1", "withscores"], ["ZREVRANGE", "z", "0", "1", "limit", "0", "1"],
    ["ZREM", "z", "a", "nope", "b"], ["ZREM", "nokey", "a"], ["ZREM", "z"], ["ZCARD", "z"],
    ["ZADD", "bin", "1", "a\x00b", "1", "a", "1", "a\x00", "1", ""], ["ZRANGE", "bin", "0", "-1", "withscores"],
    ["ZADD", "ties", "1", "b", "1", "aa", "1", "a", "1", "ab", "0", "z"], ["ZRANGE", "ties", "0", "-1"], ["ZRANK", "ties", "ab"],
    ["ZREM", "other", "m"], ["EXISTS", "other"], ["TYPE", "other"], ["DEL", "z", "nope", "ties", "z"], ["EXISTS", "z", "ties"],
    ["DBSIZE"], ["FLUSHALL", "foo"], ["FLUSHALL"], ["DBSIZE"], ["FLUSHALL", "SYNC"],
    ["CONFIG", "GET"], ["CONFIG", "foo"], ["COMMAND", "foo"], ["CLIENT", "foo"],
    ["foo", "a", "b"], ["FOO"], ["foo", "x" * 200, "y"], ["foo", "a\r\nb"], ["ZADD"], ["EXEC"],
    ["AUTH", "x"], ["AUTH", "default", "x"], ["HELLO", "x"], ["HELLO", "4"], ["HELLO", "2", "foo"],
]


def replies(port, commands):
    c = RawClient(port)
    try:
        return [c.call(*cmd) for cmd in commands]
    finally:
        c.close()


def compare(ours, theirs, commands):
    for cmd, a, b in zip(commands, ours, theirs):
        assert a == b, f"{cmd}: ours {a!r}, redis-server {b!r}"


@pytest.mark.parametrize("method", ["nr", "fcplus"])
def test_replies_match_redis_server_command_by_command(method):
    with real_redis() as real, our_server("--method", method, "--threads", "2") as ours:
        compare(replies(ours.port, SCRIPT), replies(real.port, SCRIPT), SCRIPT)


def random_command(rng, keys, members):
    key = rng.choice(keys)
    member = lambda: rng.choice(members)  # noqa: E731
    score = lambda: rng.choice(["1", "2", "-1", "0.5", "3e2", "-inf", "+inf", "7", "(1", "x"])  # noqa: E731
    bound = lambda: rng.choice(["-inf", "+inf", "0", "1", "(1", "2", "(2.5", "5", "(5", "x"])  # noqa: E731
    index = lambda: str(rng.randint(-8, 8))  # noqa: E731
    kind = rng.randrange(14)
    if kind < 4:
        flags = rng.sample(["NX", "XX", "GT", "LT", "CH", "INCR"], rng.randint(0, 2))
        pairs = [x for _ in range(rng.randint(1, 3)) for x in (score(), member())]
        return ["ZADD", key, *flags, *pairs]
    if kind == 4:
        return ["ZINCRBY", key, score(), member()]
    if kind == 5:
        return ["ZREM", key, *[member() for _ in range(rng.randint(1, 3))]]
    if kind == 6:
        return [rng.choice(["ZSCORE", "ZRANK", "ZREVRANK"]), key, member()]
    if kind == 7:
        return ["ZMSCORE", key, member(), member()]
    if kind == 8:
        return [rng.choice(["ZCARD", "EXISTS", "TYPE"]), key]
    if kind == 9:
        return ["ZCOUNT", key, bound(), bound()]
    if kind == 10:
        return [rng.choice(["ZRANGE", "ZREVRANGE"]), key, index(), index(), *(["WITHSCORES"] if rng.random() < 0.5 else [])]
    if kind == 11:
        opts = (["WITHSCORES"] if rng.random() < 0.5 else []) + (["LIMIT", index(), index()] if rng.random() < 0.4 else [])
        return ["ZRANGEBYSCORE", key, bound(), bound(), *opts]
    if kind == 12:
        opts = ["BYSCORE"] + (["REV"] if rng.random() < 0.5 else []) + (["LIMIT", index(), index()] if rng.random() < 0.4 else [])
        return ["ZRANGE", key, bound(), bound(), *opts, *(["WITHSCORES"] if rng.random() < 0.5 else [])]
    return ["DEL", key] if rng.random() < 0.7 else ["DBSIZE"]


@pytest.mark.parametrize("method", METHODS)
def test_random_commands_match_redis_server(method):
    rng = random.Random(18)
    keys = ["k1", "k2", "k3"]
    members = ["a", "b", "c", "d", "e", "f", "g", "a" * 40, "m\x00n", ""]
    commands = [random_command(rng, keys, members) for _ in range(3000)]
    with real_redis() as real, our_server("--method", method, "--threads", "2", "--nr-log-entries", "64") as ours:
        compare(replies(ours.port, commands), replies(real.port, commands), commands)


def test_pipelined_requests_get_replies_in_order_split_at_every_byte():
    commands = [["ZADD", "p", str(i), f"m{i}"] for i in range(20)] + [["ZRANGE", "p", "0", "-1", "WITHSCORES"], ["PING"]]
    data = b"".join(encode(*c) for c in commands)
    with real_redis() as real, our_server("--threads", "2") as ours:
        want = replies(real.port, commands)
        c = RawClient(ours.port)
        for i in range(len(data)):  # one byte at a time: every split point of every request
            c.send(data[i:i + 1])
        got = [c.reply() for _ in commands]
        c.close()
    assert got == want


def test_redis_py_drives_the_server_with_pipelines_and_without_transactions():
    with our_server("--threads", "2", unixsocket=True) as ours:
        r = redis.Redis(port=ours.port, protocol=2)
        assert r.ping()
        assert r.zadd("board", {"ann": 3, "bob": 1, "cid": 2}) == 3
        assert r.zadd("board", {"bob": 5}, xx=True, ch=True) == 1
        assert r.zincrby("board", 0.5, "ann") == 3.5
        assert r.zrange("board", 0, -1, withscores=True) == [(b"cid", 2.0), (b"ann", 3.5), (b"bob", 5.0)]
        assert r.zrangebyscore("board", "(2", "+inf") == [b"ann", b"bob"]
        assert r.zrevrange("board", 0, 0) == [b"bob"]
        assert r.zrank("board", "ann") == 1 and r.zrevrank("board", "ann") == 1
        assert r.zscore("board", "nobody") is None
        assert r.zmscore("board", ["ann", "nobody"]) == [3.5, None]
        assert r.zcount("board", 2, 5) == 3 and r.zcard("board") == 3
        pipe = r.pipeline(transaction=False)
        for i in range(500):
            pipe.zadd("many", {f"m{i}": i})
        pipe.zcard("many")
        pipe.zrange("many", 0, 2)
        out = pipe.execute()
        assert out[:500] == [1] * 500 and out[500] == 500 and out[501] == [b"m0", b"m1", b"m2"]
        with pytest.raises(redis.ResponseError, match="MULTI"):  # MULTI refused, so EXEC has none
            r.pipeline(transaction=True).zadd("t", {"x": 1}).execute()
        assert RawClient(ours.port).call("MULTI") == b"-ERR MULTI is not supported: this server has no transactions\r\n"
        assert r.exists("t") == 1  # the ZADD queued after the refused MULTI ran on its own
        assert r.zrem("board", "ann", "bob", "cid") == 3
        assert r.exists("board") == 0 and r.type("board") == b"none"
        assert r.dbsize() == 2
        info = r.info()
        assert info["method"] == "nr" and info["connected_clients"] >= 1 and info["db0"]["keys"] == 2
        assert "cmdstat_zadd" in r.info("commandstats")
        assert r.config_get("proto-max-bulk-len") == {"proto-max-bulk-len": str(512 << 20)}
        u = redis.Redis(unix_socket_path=ours.unixsocket, protocol=2)
        assert u.zcard("many") == 500
        assert r.flushall() and u.dbsize() == 0
        with pytest.raises(redis.ResponseError, match="NOPROTO unsupported protocol version"):  # RESP2 only
            redis.Redis(port=ours.port, protocol=3).ping()


def test_redis_cli_drives_the_server_and_its_pipe_mode():
    cli = shutil.which("redis-cli")
    assert cli, "redis-cli is missing: scripts/install-deps installs it (Debian redis-tools)"
    with our_server("--threads", "2") as ours:
        run = lambda *a, **kw: subprocess.run([cli, "-p", str(ours.port), *a], capture_output=True, text=True,  # noqa: E731
                                              timeout=60, **kw)
        assert run("ZADD", "k", "1", "one", "2", "two").stdout == "2\n"
        assert run("ZRANGE", "k", "0", "-1", "WITHSCORES").stdout == "one\n1\ntwo\n2\n"
        assert run("ZSCORE", "k", "nobody").stdout == "\n"
        assert "ERR unknown command 'NOPE'" in run("NOPE").stdout
        mass = "".join(f"ZADD bulk {i} member:{i}\r\n" for i in range(10000))
        piped = run("--pipe", input=mass)
        assert piped.returncode == 0 and "errors: 0, replies: 10000" in piped.stdout, piped.stdout + piped.stderr
        assert run("ZCARD", "bulk").stdout == "10000\n"


@pytest.mark.parametrize("method", METHODS)
def test_concurrent_clients_on_one_set_lose_no_update(method):
    """Eight clients ZINCRBY the same 50 members of one set at once, in pipelines: every
    member's score is exactly the sum of its increments, and every reply was a number."""
    clients, rounds, members = 8, 60, 50
    with our_server("--method", method, "--threads", "2", "--nr-replicas", "2" if method == "nr" else "1") as ours:
        errors = []

        def client(c):
            try:
                r = redis.Redis(port=ours.port, protocol=2)
                for _ in range(rounds):
                    pipe = r.pipeline(transaction=False)
                    for m in range(members):
                        pipe.zincrby("hot", c + 1, f"m{m}")
                        pipe.zrank("hot", f"m{(m * 7) % members}")
                    for v in pipe.execute():
                        if v is not None and not isinstance(v, (int, float)):
                            errors.append(v)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        r = redis.Redis(port=ours.port, protocol=2)
        # The method's own figures count every operation it combined: NR and FC+ the updates (reads
        # bypass them), FC every operation.
        info, updates = r.info("method"), clients * rounds * members
        assert info["method"] == method
        if method in ("nr", "fcplus"):
            assert info["combined_ops"] == updates and info["combines"] <= updates
        if method == "fc":
            assert info["combined_ops"] == 2 * updates
        if method == "nr":
            assert info["nr_log_entries_written"] == updates
        if method in ("sl", "rwl"):  # at most one wait per operation (tests/unit/test_nr.cpp counts them exactly)
            assert 0 <= info["lock_waits"] <= 2 * updates  # a ZRANK after each ZINCRBY
        want = rounds * sum(range(1, clients + 1))
        assert dict(r.zrange("hot", 0, -1, withscores=True)) == {f"m{m}".encode(): float(want) for m in range(members)}


def test_authentication_is_required_when_a_password_is_set():
    with our_server("--requirepass", "sesame") as ours:
        c = RawClient(ours.port)
        assert c.call("ZCARD", "k") == b"-NOAUTH Authentication required.\r\n"
        assert c.call("NOPE") == b"-ERR unknown command 'NOPE', with args beginning with: \r\n"
        assert c.call("AUTH", "wrong") == b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        assert c.call("AUTH", "sesame") == b"+OK\r\n"
        assert c.call("ZCARD", "k") == b":0\r\n"
        c.close()
        assert redis.Redis(port=ours.port, password="sesame", protocol=2).ping()


PROTOCOL_ERRORS = [
    (b"*1\r\n+PING\r\n", b"-ERR Protocol error: expected '$', got '+'\r\n"),
    (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    (b"*1\r\n$-5\r\nx\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    (b"*1\r\n$2048\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),  # over --proto-max-bulk-len 1kb
    (b'PING "unbalanced\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
]


@pytest.mark.parametrize("request_bytes,reply", PROTOCOL_ERRORS)
def test_malformed_requests_get_redis_protocol_errors_and_a_closed_connection(request_bytes, reply):
    with our_server("--proto-max-bulk-len", "1kb") as ours:
        c = RawClient(ours.port)
        c.send(encode("PING") + request_bytes + encode("PING"))
        assert c.reply() == b"+PONG\r\n"
        assert c.reply() == reply
        assert c.closed_by_server() and c.buffer == b""
        c.close()
        assert RawClient(ours.port).call("PING") == b"+PONG\r\n"  # the server itself goes on


def test_bytes_after_quit_are_not_run_and_the_connection_closes():
    with our_server() as ours:
        c = RawClient(ours.port)
        c.send(encode("ZADD", "k", "1", "a") + encode("QUIT") + encode("ZADD", "k", "2", "b"))
        assert c.reply() == b":1\r\n" and c.reply() == b"+OK\r\n"
        assert c.closed_by_server() and c.buffer == b""
        assert RawClient(ours.port).call("ZCARD", "k") == b":1\r\n"


def test_usage_errors_are_one_line_and_exit_2():
    binary = str(BUILD / "cdsbench-zset-server")
    for args, words in [(["--method", "lf"], "--method: 'lf' is not a method; allowed: nr, sl, rwl, fc or fcplus"),
                        (["--threads", "0"], "--threads: 0 is out of range; allowed: an integer in 1..1024"),
                        (["--nr-replicas", "3", "--threads", "2"], "--nr-replicas: 3 is out of range"),
                        (["--proto-max-bulk-len", "12zb"], "--proto-max-bulk-len: '12zb' is not a size"),
                        (["--port", "70000"], "--port: 70000 is out of range"),
                        (["--idle-poll-us", "-1"], "--idle-poll-us: -1 is out of range; allowed: an integer in 0..100000"),
                        (["--idle-poll-us", "5ms"], "--idle-poll-us: '5ms' is not an integer")]:
        p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and words in p.stderr, (args, p.stderr)


def test_a_port_in_use_is_one_line_and_exit_1():
    with our_server() as ours:
        p = subprocess.run([str(BUILD / "cdsbench-zset-server"), "--port", str(ours.port)], capture_output=True,
                           text=True, timeout=30)
    assert p.returncode == 1 and p.stderr.count("\n") == 1 and f"127.0.0.1:{ours.port}: Address already in use" in p.stderr


def rss_bytes(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_thousand_idle_connections_and_clients_that_leave_mid_request():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 4096)
    if soft < want:  # the server inherits the limit; so does this test's own side of the sockets
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    try:
        with our_server("--threads", "2") as ours:
            idle = [socket.create_connection(("127.0.0.1", ours.port)) for _ in range(1000)]
            c = RawClient(ours.port)
            assert c.call("ZADD", "k", "1", "a") == b":1\r\n"
            info = c.call("INFO", "clients").decode()
            assert "connected_clients:1001\r\n" in info, info
            for i in range(300):  # half a request, then gone
                s = socket.create_connection(("127.0.0.1", ours.port))
                s.sendall(encode("ZADD", "k", str(i), "m" * 1000)[: 40 + i % 700])
                s.close()
            for s in idle:
                s.close()
            assert c.call("ZCARD", "k") == b":1\r\n"  # nothing of the halves ran
            deadline = time.monotonic() + 10
            while b"connected_clients:1\r\n" not in c.call("INFO", "clients") and time.monotonic() < deadline:
                time.sleep(0.05)
            assert b"connected_clients:1\r\n" in c.call("INFO", "clients")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_client_that_never_reads_its_replies_holds_bounded_memory():
    """It pipelines ZRANGEs of a 2,000-member set (about 30 KB a reply) and reads nothing: once 4 MiB
    of replies wait, the server runs no more of its requests, and what it goes on sending piles up
    only to the query buffer's limit (16 MB here), where the connection is closed; other clients
    are served meanwhile."""
    with our_server("--threads", "2", "--client-query-buffer-limit", "16mb") as ours:
        c = RawClient(ours.port)
        members = [x for i in range(2000) for x in (str(i), f"member-{i:08d}")]
        assert c.call("ZADD", "big", *members) == b":2000\r\n"
        start = rss_bytes(ours.process.pid)
        hog = socket.create_connection(("127.0.0.1", ours.port))
        hog.settimeout(5)
        request = encode("ZRANGE", "big", "0", "-1", "WITHSCORES") * 100
        sent = 0
        try:
            while sent < 200 << 20:  # 200 MB of requests would ask for 60 GB of replies
                hog.sendall(request)
                sent += len(request)
        except (socket.timeout, TimeoutError, BrokenPipeError, ConnectionResetError):
            pass
        assert sent < 200 << 20, "the server took every request of a client that reads nothing"
        assert c.call("ZCARD", "big") == b":2000\r\n"
        grown = rss_bytes(ours.process.pid) - start
        assert grown < 64 << 20, f"the server grew by {grown} bytes for one client"
        assert b"client_buffer_limit_disconnections:1\r\n" in c.call("INFO", "stats")
        hog.close()


def test_a_pipeline_sent_whole_before_its_replies_are_read_completes():
    """As redis-py's pipelines do: 200 requests written before any reply is read, their replies
    (16 MB) far more than the socket buffers hold; the server reads on while replies wait, runs the
    requests as the client drains them, and serves another client meanwhile."""
    with our_server("--threads", "1") as ours:
        members = [x for i in range(1000) for x in (str(i), f"member-{i:08d}")]
        batch = b"".join(encode("ZADD", "big", *members[2 * (k % 10) * 100: 2 * (k % 10 + 1) * 100]) +
                         encode("ZRANGE", "big", "0", "-1", "WITHSCORES") for k in range(200))
        writer = RawClient(ours.port, timeout=30)
        sender = threading.Thread(target=writer.send, args=(batch,))
        sender.start()
        other = RawClient(ours.port)
        assert other.call("PING") == b"+PONG\r\n"
        replies = [writer.reply() for _ in range(400)]
        sender.join()
        assert all(r.startswith(b":") for r in replies[0::2])
        assert all(r.startswith(b"*") for r in replies[1::2]) and replies[-1].startswith(b"*2000\r\n")
        assert other.call("ZCARD", "big") == b":1000\r\n"


def test_what_an_idle_worker_removed_is_freed():
    """2,000 NR keys (48 KiB of log each) removed by FLUSHALL: the worker that removed them goes idle,
    and the memory comes back without any further command on it."""
    with our_server("--threads", "1", "--method", "nr") as ours:
        c = RawClient(ours.port)

        def used():
            info = c.call("INFO", "memory").decode()
            return int(info.split("used_memory:")[1].split("\r\n")[0])

        start = used()
        c.send(b"".join(encode("ZADD", f"key:{i}", "1", "m") for i in range(2000)))
        assert all(c.reply() == b":1\r\n" for _ in range(2000))
        full = used()
        assert full - start > 80 << 20, (start, full)
        assert c.call("FLUSHALL") == b"+OK\r\n"
        deadline = time.monotonic() + 10
        while used() - start > 16 << 20 and time.monotonic() < deadline:
            time.sleep(0.3)  # INFO enters no operation: only the worker's idle reclaim frees
        assert used() - start <= 16 << 20, (start, full, used())


def test_buffer_limits_close_the_connection():
    with our_server("--client-output-buffer-limit", "1mb", "--client-query-buffer-limit", "1mb") as ours:
        c = RawClient(ours.port)
        for part in range(10):  # in requests of 230 KB: under the query buffer's limit
            members = [x for i in range(part * 2000, (part + 1) * 2000) for x in (str(i), f"{i:0100d}")]
            assert c.call("ZADD", "big", *members) == b":2000\r\n"
        reader = RawClient(ours.port)
        reader.send(encode("ZRANGE", "big", "0", "-1"))  # a 2.1 MB reply, over the 1 MB limit
        assert reader.closed_by_server() and len(reader.buffer) < 2 << 20
        writer = RawClient(ours.port)
        try:
            writer.send(b"*2\r\n$4\r\nECHO\r\n$3000000\r\n" + b"x" * (2 << 20))  # 2 MB unread: over 1 MB
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert writer.closed_by_server()
        stats = c.call("INFO", "stats").decode()
        assert "client_buffer_limit_disconnections:2\r\n" in stats, stats
        assert c.call("PING") == b"+PONG\r\n"


def test_more_clients_than_maxclients_are_refused_with_an_error():
    with our_server("--maxclients", "3") as ours:
        first = RawClient(ours.port)
        deadline = time.monotonic() + 10  # until the start-up probe's connection is closed and counted out
        while b"connected_clients:1\r\n" not in first.call("INFO", "clients") and time.monotonic() < deadline:
            time.sleep(0.05)
        kept = [first, RawClient(ours.port), RawClient(ours.port)]
        assert all(k.call("PING") == b"+PONG\r\n" for k in kept)
        extra = RawClient(ours.port)
        assert extra.reply() == b"-ERR max number of clients reached\r\n" and extra.closed_by_server()
        kept[0].close()
        time.sleep(0.2)
        assert RawClient(ours.port).call("PING") == b"+PONG\r\n"


def sleeps(process):
    """The times a process's threads blocked: their voluntary context switches, summed."""
    total = 0
    for task in glob.glob(f"/proc/{process.pid}/task/*/status"):
        with open(task) as f:
            total += sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches:"))
    return total


@pytest.mark.parametrize("poll_us, most", [(0, None), (100_000, 30)])
def test_a_worker_that_polls_before_it_sleeps_is_not_put_to_sleep_by_each_request(poll_us, most):
    """300 PINGs one after another: a worker that sleeps at once sleeps between every two of them
    (and must be woken by the client's send); one that polls 100 ms first hardly ever sleeps."""
    with our_server("--threads", "1", "--idle-poll-us", poll_us) as ours:
        c = RawClient(ours.port)
        assert f"idle_poll_us:{poll_us}\r\n" in c.call("INFO", "server").decode()
        before = sleeps(ours.process)
        for _ in range(300):
            assert c.call("PING") == b"+PONG\r\n"
        slept = sleeps(ours.process) - before
        if most is None:
            assert slept >= 250, slept
        else:
            assert slept <= most, slept


LOAD = BUILD / "cdsbench-zset-load"


def load(*args, timeout=120):
    p = subprocess.run([str(LOAD), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    return p.returncode, dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line), p.stderr


@pytest.mark.parametrize("method", METHODS)
def test_the_load_generator_in_process_validates_every_score(method):
    code, out, err = load("--in-process", "--method", method, "--threads", 3, "--update-ratio", 50, "--items", 500,
                          "--duration", 1, "--warmup", 0)
    assert code == 0, err
    assert out["valid"] == "true" and out["result"] == "PASS" and out["method"] == method
    assert int(out["zincrby_requests"]) > 0 and int(out["zrank_requests"]) > 0
    assert len(out["thread_cpu_s"].split(",")) == 3


def test_the_load_generator_drives_our_server_and_redis_server_through_both_drivers():
    """A server started after `--` on a free port: ours, then the real redis-server, each driven by
    our clients and by the real redis-benchmark; the scores validated each time."""
    cpus = sorted(os.sched_getaffinity(0))
    for server in ([str(BUILD / "cdsbench-zset-server"), "--threads", "1", "--method", "fcplus"],
                   ["redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]):
        for driver in ("load", "redis-benchmark"):
            port = free_port()
            # Pinned through redis-benchmark (when this process may use 2 CPUs), not through ours.
            pins = ["--client-cpus", cpus[0], "--server-cpus", cpus[1]] if driver == "redis-benchmark" and len(cpus) > 1 else []
            code, out, err = load("--target", f"127.0.0.1:{port}", "--driver", driver, "--clients", 10, "--pipeline", 4,
                                  "--update-ratio", 20, "--items", 1000, "--duration", 1, "--warmup", 0, *pins, "--",
                                  *server, "--port", port)
            assert code == 0, (server, driver, err)
            assert out["valid"] == "true" and out["driver"] == driver, (server, driver, out)
            assert out["server"] == ("redis-server" if server[0] == "redis-server" else "cdsbench-zset-server")
            assert float(out["requests_per_server_cpu_s"]) > 0 and float(out["requests_per_s"]) > 0
            # Which side was the limit: the pinned CPUs' busy share, the server's sleeps.
            assert 0 <= float(out["server_sleeps_per_request"]) < 2, out
            for side in ("client_cpus_busy", "server_cpus_busy"):
                assert (0 < float(out[side]) <= 1) if pins else out[side] == "unavailable", (side, out)
            if driver == "redis-benchmark":
                assert out["zrank_clients"] == "8" and out["zincrby_clients"] == "2"
                # The client's CPU is redis-benchmark's (a second of work), not only this process's.
                assert float(out["client_cpu_s"]) > 0.2, out


def test_the_load_generator_refuses_bad_options_in_one_line():
    for args, words in [(["--in-process", "--target", "127.0.0.1:1"], "choose one path"),
                        (["--in-process", "--update-ratio", "101"], "--update-ratio: 101 is out of range"),
                        (["--target", "nowhere"], "--target: 'nowhere' is not IPV4:PORT or unix:PATH"),
                        (["--target", "unix:/x", "--driver", "redis-benchmark"], "--driver redis-benchmark: needs"),
                        (["--target", "127.0.0.1:1", "--driver", "memtier"], "--driver: 'memtier' is not a driver"),
                        (["--in-process", "--server-cpus", "1"], "--server-cpus: pins the server started after --")]:
        code, _, err = load(*args)
        assert code == 2 and err.count("\n") == 1 and words in err, (args, err)
    code, _, err = load("--target", f"127.0.0.1:{free_port()}", "--duration", 1)
    assert code == 1 and "Connection refused" in err


def zset_lincheck(*args):
    p = subprocess.run([str(BUILD / "cdsbench-zset-lincheck"), *map(str, args)], capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def test_single_key_commands_are_linearizable_through_the_network_on_ours_and_on_redis_server(tmp_path):
    """The checker's model zsets holds for the real redis-server (so it is Redis's behaviour) and for
    our server with 3 workers under NR on 2 replicas and under FC+; 3 connections per history."""
    with real_redis() as real:
        code, out, err = zset_lincheck("--target", f"127.0.0.1:{real.port}", "--histories", 300, "--out", tmp_path / "redis")
        assert code == 0 and "\nresult=PASS\n" in out and "histories=300 violations=0 unknown=0" in out, out + err
    for method in ("nr", "fcplus"):
        with our_server("--threads", "3", "--method", method, "--nr-replicas", "2" if method == "nr" else "1") as ours:
            code, out, err = zset_lincheck("--target", f"127.0.0.1:{ours.port}", "--histories", 500,
                                           "--out", tmp_path / method)
            assert code == 0 and "histories=500 violations=0 unknown=0" in out, (method, out + err)


class ForgetfulDelServer(socketserver.ThreadingTCPServer):
    """A deliberately broken server of the recorder's eight commands: right in everything but DEL,
    which answers as Redis does and removes nothing."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        self.sets, self.lock = {}, threading.Lock()
        super().__init__(("127.0.0.1", 0), ForgetfulDelHandler)

    def run(self, cmd, key, *args):
        z = self.sets.setdefault(key, {})
        if cmd == b"ZINCRBY":
            z[args[1]] = z.get(args[1], 0) + int(args[0])
            return b"$%d\r\n%d\r\n" % (len(str(z[args[1]])), z[args[1]])
        if cmd == b"ZADD":  # XX CH score member
            changed = args[3] in z and z[args[3]] != int(args[2])
            if args[3] in z:
                z[args[3]] = int(args[2])
            return b":%d\r\n" % changed
        if cmd == b"ZREM":
            return b":%d\r\n" % (z.pop(args[0], None) is not None)
        if cmd in (b"ZSCORE", b"ZRANK"):
            if args[0] not in z:
                return b"$-1\r\n"
            if cmd == b"ZRANK":
                return b":%d\r\n" % sorted((s, m) for m, s in z.items()).index((z[args[0]], args[0]))
            return b"$%d\r\n%d\r\n" % (len(str(z[args[0]])), z[args[0]])
        if cmd == b"ZCARD":
            return b":%d\r\n" % len(z)
        return b":%d\r\n" % (len(z) > 0)  # DEL (forgets to delete) and EXISTS


class ForgetfulDelHandler(socketserver.StreamRequestHandler):
    def handle(self):
        while line := self.rfile.readline():
            args = []
            for _ in range(int(line[1:])):
                n = int(self.rfile.readline()[1:])
                args.append(self.rfile.read(n + 2)[:-2])
            with self.server.lock:
                reply = self.server.run(args[0].upper(), *args[1:])
            self.wfile.write(reply)


def test_the_linearizability_recorder_reports_a_broken_server_with_replays(tmp_path):
    """A server whose DEL removes nothing fails: violations named with the command that records
    one like them again; and the recorder's bad options are one line, exit 2."""
    server = ForgetfulDelServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        target = f"127.0.0.1:{server.server_address[1]}"
        code, out, err = zset_lincheck("--target", target, "--histories", 100, "--seed", 7, "--out", tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    assert code == 1 and "\nresult=FAIL\n" in out, out + err
    violations = [line for line in out.splitlines() if line.startswith("violation method=server history=")]
    assert violations and all(f'--target {target} --threads 3' in v and "--histories 1 --seed " in v for v in violations)
    assert "visualization=" in out
    for args, words in [(["--method", "paxos"], "--method: 'paxos' is not a method"),
                        (["--target", "127.0.0.1:1", "--method", "nr"], "--target: the server's own options"),
                        (["--target", "nowhere"], "--target: 'nowhere' is not IPV4:PORT or unix:PATH"),
                        (["--nr-replicas", "4"], "--nr-replicas: 4 is out of range"),
                        (["--checker", str(tmp_path / "none")], "does not exist")]:
        code, _, err = zset_lincheck(*args)
        assert code == 2 and err.count("\n") == 1 and words in err, (args, err)
    code, _, err = zset_lincheck("--target", f"127.0.0.1:{free_port()}", "--histories", 1)
    assert code == 1 and "Connection refused" in err


def test_soak_many_clients_every_reply_checked():
    """200 clients on 2 workers for 5 s, half updates, every reply checked and every score validated
    (tests/long runs it for a minute per method)."""
    with our_server("--threads", "2", "--method", "nr", "--nr-replicas", "2") as ours:
        code, out, err = load("--target", f"127.0.0.1:{ours.port}", "--clients", 200, "--client-threads", 2,
                              "--pipeline", 4, "--update-ratio", 50, "--items", 2000, "--duration", 5, "--warmup", 0)
    assert code == 0 and out["valid"] == "true", err

"""The sorted-set server's soak test, outside `make test` for time (a minute per method, about 5
minutes): 300 clients on loopback, half of their requests updates, every reply checked and every
member's final score validated by cdsbench-zset-load."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "python"))
from test_zset_server import METHODS, load  # noqa: E402
from zset_servers import our_server  # noqa: E402


@pytest.mark.parametrize("method", METHODS)
def test_a_minute_of_300_clients(method):
    with our_server("--threads", "2", "--method", method) as ours:
        code, out, err = load("--target", f"127.0.0.1:{ours.port}", "--clients", 300, "--client-threads", 2,
                              "--pipeline", 8, "--update-ratio", 50, "--items", 10000, "--duration", 60, "--warmup", 0,
                              timeout=300)
    assert code == 0 and out["valid"] == "true", err
    assert int(out["requests"]) > 0

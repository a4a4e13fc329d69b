"""Sequential writes through the official Python aw-client (from PyPI), ours beside another
server binary (the reference), alternating; prints each row's rate and the server's CPU per
request (its process's user + system time over the row), medians of ROUNDS runs. With
`--busy`, one process spins on a core for the whole run. Prints numbers, no verdict.

The client opens a new connection for every request (it calls `requests.post`, not a
session), so its own time bounds the rate: the `GET /api/0/info` row is that floor.

    tests/python/.venv/bin/python tests/python/client_rate_probe.py [OTHER_BINARY] [--busy]
"""
import datetime
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from aw_client import ActivityWatchClient
from aw_core.models import Event

from aw_server_process import Server

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = os.environ.get("AW_SERVER_BIN", os.path.join(HERE, "..", "..", "target", "release", "aw-server"))
N = int(os.environ.get("N", "2000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rows(client, bucket):
    """(name, one request) for each row; each call sends one request."""
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)
    counter = {"i": 0}

    def at():
        counter["i"] += 1
        return start + datetime.timedelta(seconds=counter["i"])

    return [
        ("heartbeats, merging", lambda: client.heartbeat(bucket, Event(timestamp=at(), duration=0, data={"app": "a", "title": "t"}), pulsetime=10)),
        ("heartbeats, distinct", lambda: client.heartbeat(bucket, Event(timestamp=at(), duration=0, data={"app": "a", "title": str(counter["i"])}), pulsetime=0)),
        ("single-event inserts", lambda: client.insert_event(bucket, Event(timestamp=at(), duration=1, data={"app": "a", "title": str(counter["i"])}))),
        # The floor: the cheapest route, which never reaches the datastore.
        ("GET /api/0/info", client.get_info),
    ]


def run(binary):
    tmp = tempfile.mkdtemp()
    try:
        server = Server(tmp, tmp + "/sqlite.db", binary)
        client = ActivityWatchClient("rate-probe", host="127.0.0.1", port=server.port)
        client.create_bucket("probe", "currentwindow", queued=False)
        out = {}
        for name, send in rows(client, "probe"):
            for _ in range(100):  # warm-up, untimed
                send()
            cpu, t = cpu_seconds(server.proc.pid), time.perf_counter()
            for _ in range(N):
                send()
            took = time.perf_counter() - t
            out[name] = (N / took, (cpu_seconds(server.proc.pid) - cpu) / N * 1e6)
        server.stop()
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    other = args[0] if args else os.path.join(HERE, "..", "..", "..", "reference", "aw-server-rust", "target", "release", "aw-server")
    spinner = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if "--busy" in sys.argv else None
    try:
        results = {"ours": [], "other": []}
        for i in range(ROUNDS):
            order = [("ours", OURS), ("other", other)]
            for name, binary in order if i % 2 == 0 else reversed(order):
                results[name].append(run(binary))
        for row in results["ours"][0]:
            rate = {k: statistics.median(r[row][0] for r in v) for k, v in results.items()}
            cpu = {k: statistics.median(r[row][1] for r in v) for k, v in results.items()}
            print(f"{row:24} req/s ours {rate['ours']:8.0f} other {rate['other']:8.0f} ratio {rate['ours'] / rate['other']:.2f}"
                  f"   server CPU µs/req ours {cpu['ours']:6.1f} other {cpu['other']:6.1f} ratio {cpu['ours'] / cpu['other']:.2f}")
    finally:
        if spinner:
            spinner.kill()


main()

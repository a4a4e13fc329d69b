"""What the probes of the generated year share (`history_probe.py`, `storage_probe.py`): a
server on a fresh temporary database with a year imported, requests to it, and an
open-loop heartbeat stream beside an operation, measured as p95 and max latency counted
from when each heartbeat was due. Numbers only, no verdict.

The server binary is AW_SERVER_BIN, else target/release/aw-server.
"""
import json, os, shutil, subprocess, tempfile, threading, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("AW_SERVER_BIN", os.path.join(HERE, "..", "..", "target", "release", "aw-server"))


class Probe:
    """A server on a new database in a temporary folder, on `port`."""

    def __init__(self, port=5777):
        self.dir = tempfile.mkdtemp()
        self.db = self.dir + "/sqlite.db"
        self.env = dict(os.environ, XDG_CONFIG_HOME=self.dir + "/c", XDG_DATA_HOME=self.dir + "/d", XDG_CACHE_HOME=self.dir + "/k")
        self.port = port
        self.base = f"http://127.0.0.1:{port}/api/0"
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen([BIN, "--port", str(self.port), "--dbpath", self.db, "--no-legacy-import"], env=self.env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            try:
                self.req("GET", "/info")
                return
            except Exception:
                time.sleep(0.1)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()

    def remove(self):
        shutil.rmtree(self.dir)  # an imported year is ~90 MB

    def req(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        r = urllib.request.Request(self.base + path, data=data, method=method, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(r, timeout=600) as resp:
            return resp.status, resp.read()

    def json(self, method, path, body=None):
        return json.loads(self.req(method, path, body)[1])

    def import_year(self, path):
        t = time.time()
        self.req("POST", "/import", json.load(open(path)))
        print(f"import {time.time() - t:.1f}s")
        self.req("POST", "/buckets/hb-probe", {"client": "c", "type": "t", "hostname": "probe"})

    def heartbeats(self, stop, lat):
        # Open loop: one heartbeat is due every 10 ms, and its latency counts from when it was
        # due, so a heartbeat held up behind an operation also delays those due after it (a
        # closed loop would send one heartbeat during a long operation and hide the rest).
        i = 0
        t0 = time.perf_counter()
        while not stop.is_set():
            due = t0 + i * 0.01
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            self.req("POST", "/buckets/hb-probe/heartbeat?pulsetime=5",
                     {"timestamp": f"2030-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}Z", "duration": 0, "data": {"k": 1}})
            lat.append(time.perf_counter() - due)
            i += 1

    def idle(self):
        """The heartbeat p95 with nothing else running, for 3 s."""
        lat = []
        stop = threading.Event()
        th = threading.Thread(target=self.heartbeats, args=(stop, lat))
        th.start()
        time.sleep(3)
        stop.set()
        th.join()
        print(f"heartbeat p95 idle {p95(lat):.2f} ms ({len(lat)} beats)")

    def during(self, name, fn):
        """Runs `fn` with heartbeats beside it; prints its time, the heartbeats' p95 and max,
        and what it returned."""
        lat = []
        stop = threading.Event()
        th = threading.Thread(target=self.heartbeats, args=(stop, lat))
        th.start()
        time.sleep(0.3)
        t = time.time()
        out = fn()
        took = time.time() - t
        time.sleep(0.3)
        stop.set()
        th.join()
        print(f"{name}: {took * 1000:.0f} ms, heartbeat p95 {p95(lat):.2f} ms, max {max(lat) * 1000:.0f} ms ({len(lat)} beats) -> {out}")
        return out


def p95(xs):
    xs = sorted(xs)
    return xs[int(len(xs) * 0.95) - 1] * 1000 if xs else float("nan")

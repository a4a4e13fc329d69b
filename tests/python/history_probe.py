"""Times the history operations of issue 36 on the generated year, with a heartbeat every
10 ms beside them (p95 and max latency, counted from when each heartbeat was due): a
one-day delete across all buckets, a merge of 100,000 events, a privacy dry run and run, a
week's summary cold and cached, and last a delete of the window bucket's whole history.

    cargo run --release -p aw-tests --example write_dataset -- /tmp/year.json
    tests/python/.venv/bin/python tests/python/history_probe.py /tmp/year.json

The server binary is AW_SERVER_BIN, else target/release/aw-server. Prints numbers (no
verdict): BENCHMARKS.md has the latest.
"""
import json, subprocess, sys, threading, time, os, shutil, tempfile, urllib.request
HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("AW_SERVER_BIN", os.path.join(HERE, "..", "..", "target", "release", "aw-server"))
YEAR = sys.argv[1]
d = tempfile.mkdtemp()
env = dict(os.environ, XDG_CONFIG_HOME=d+"/c", XDG_DATA_HOME=d+"/d", XDG_CACHE_HOME=d+"/k")
port = 5777
p = subprocess.Popen([BIN, "--port", str(port), "--dbpath", d+"/sqlite.db", "--no-legacy-import"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
base = f"http://127.0.0.1:{port}/api/0"
def req(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    r = urllib.request.Request(base+path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(r, timeout=600) as resp:
        return resp.status, resp.read()
for _ in range(100):
    try: req("GET", "/info"); break
    except Exception: time.sleep(0.1)
t = time.time(); req("POST", "/import", json.load(open(YEAR))); print(f"import {time.time()-t:.1f}s")
buckets = json.loads(req("GET", "/buckets")[1])
host = [b for b in buckets.values() if b["type"]=="currentwindow"][0]["hostname"]
ends = sorted(b["metadata"]["end"] for b in buckets.values())
print("host", host, "data ends", ends[-1])
req("POST", "/buckets/hb-probe", {"client":"c","type":"t","hostname":"probe"})
def heartbeats(stop, lat):
    # Open loop: one heartbeat is due every 10 ms, and its latency counts from when it was
    # due, so a heartbeat held up behind an operation also delays those due after it (a
    # closed loop would send one heartbeat during a long operation and hide the rest).
    i = 0; t0 = time.perf_counter()
    while not stop.is_set():
        due = t0 + i * 0.01
        wait = due - time.perf_counter()
        if wait > 0: time.sleep(wait)
        req("POST", "/buckets/hb-probe/heartbeat?pulsetime=5", {"timestamp": f"2030-01-01T00:{(i//60)%60:02d}:{i%60:02d}Z", "duration": 0, "data": {"k": 1}})
        lat.append(time.perf_counter()-due); i += 1
def p95(xs):
    xs = sorted(xs); return xs[int(len(xs)*0.95)-1]*1000 if xs else float('nan')
idle = []; stop = threading.Event(); th = threading.Thread(target=heartbeats, args=(stop, idle)); th.start(); time.sleep(3); stop.set(); th.join()
print(f"heartbeat p95 idle {p95(idle):.2f} ms ({len(idle)} beats)")
def during(name, fn):
    lat = []; stop = threading.Event(); th = threading.Thread(target=heartbeats, args=(stop, lat)); th.start(); time.sleep(0.3)
    t = time.time(); out = fn(); took = time.time()-t
    time.sleep(0.3); stop.set(); th.join()
    print(f"{name}: {took*1000:.0f} ms, heartbeat p95 {p95(lat):.2f} ms, max {max(lat)*1000:.0f} ms ({len(lat)} beats) -> {out}")
last_day = ends[-1][:10]
import datetime
day = datetime.date.fromisoformat(last_day) - datetime.timedelta(days=3)
rng = f"start={day}T00:00:00Z&end={day + datetime.timedelta(days=1)}T00:00:00Z"
during("one-day delete, all buckets, dry run", lambda: json.loads(req("DELETE", f"/events?{rng}&hostname=*&dry_run=true")[1])["deleted"])
during("one-day delete, all buckets", lambda: {k: v for k, v in json.loads(req("DELETE", f"/events?{rng}&hostname=*")[1]).items() if k in ("deleted","cut","backup")})
w = [b["id"] for b in buckets.values() if b["type"]=="currentwindow"][0]
req("POST", "/import", {"buckets": {"old-window": {"id": "old-window", "type": "currentwindow", "client": "c", "hostname": host, "created": "2026-01-01T00:00:00Z", "events": json.load(open(YEAR))["buckets"][w]["events"][:100000]}}})
during("merge of a bucket of 100,000 events", lambda: {k: v for k, v in json.loads(req("POST", f"/buckets/{w}/merge?force=true", {"from": "old-window"})[1]).items() if k in ("moved","duplicates")})
req("POST", "/settings/privacy_filters", [{"enabled": True, "field": "title", "pattern": "(?i)github", "action": "redact", "replacement": "(hidden)"}, {"enabled": True, "field": "app", "pattern": "^Slack$", "action": "drop"}])
during("privacy dry run", lambda: {k: v for k, v in json.loads(req("POST", "/privacy/apply", {"dry_run": True})[1]).items() if k in ("events","dropped","redacted")})
during("privacy apply", lambda: {k: v for k, v in json.loads(req("POST", "/privacy/apply", {"dry_run": False})[1]).items() if k in ("events","dropped","redacted")})
s0 = f"start={day - datetime.timedelta(days=6)}T00:00:00Z&end={day+datetime.timedelta(days=1)}T00:00:00Z&hostname={host}&by=day&tz=UTC"
during("summary by day of a week, cold", lambda: len(json.loads(req("GET", f"/summary?{s0}")[1])["groups"]))
during("summary by day of a week, cached", lambda: len(json.loads(req("GET", f"/summary?{s0}")[1])["groups"]))
during("delete all history of the window bucket", lambda: {k: v for k, v in json.loads(req("DELETE", f"/buckets/{w}/events?start=2000-01-01T00:00:00Z&end=2100-01-01T00:00:00Z")[1]).items() if k in ("deleted","cut")})
p.terminate(); p.wait()
shutil.rmtree(d)  # the imported year is ~90 MB

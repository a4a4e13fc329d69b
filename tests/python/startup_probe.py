"""Time from exec to the first answered `GET /api/0/info`, ours beside another server binary
(the reference), on an empty database, on a copy of FULL_DB, and on a copy of FULL_DB whose
query results a clean stop kept (ours reads them back on a thread of its own: "kept");
medians of 8 alternating runs. Prints numbers (no verdict).

    python3 tests/python/startup_probe.py FULL_DB [OTHER_BINARY]
"""
import os, subprocess, tempfile, time, urllib.request, statistics, sys, shutil, json, datetime
def start_time(binary, db, d, before_stop=None):
    env = dict(os.environ, XDG_CONFIG_HOME=d+"/c", XDG_DATA_HOME=d+"/d", XDG_CACHE_HOME=d+"/k")
    t = time.perf_counter()
    p = subprocess.Popen([binary, "--port", "5788", "--dbpath", db], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            urllib.request.urlopen("http://127.0.0.1:5788/api/0/info", timeout=1).read(); break
        except Exception:
            time.sleep(0.001)
    took = time.perf_counter() - t
    if before_stop:
        before_stop()
    p.terminate(); p.wait()
    return took * 1000
HERE = os.path.dirname(os.path.abspath(__file__))
ours = os.environ.get("AW_SERVER_BIN", os.path.join(HERE, "..", "..", "target", "release", "aw-server"))
ref = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "..", "..", "reference", "aw-server-rust", "target", "release", "aw-server")
def warm_year():
    """Asks for every day of the year and the year whole, as the dashboard's Year view does."""
    buckets = json.load(urllib.request.urlopen("http://127.0.0.1:5788/api/0/buckets/"))
    window = next(b for b in buckets if b.startswith("aw-watcher-window"))
    last = buckets[window]["metadata"]["end"][:10]
    end = datetime.date.fromisoformat(last) + datetime.timedelta(days=1)
    days = [f"{end - datetime.timedelta(days=n + 1)}T00:00:00Z/{end - datetime.timedelta(days=n)}T00:00:00Z" for n in range(365)]
    year = [f"{end - datetime.timedelta(days=365)}T00:00:00Z/{end}T00:00:00Z"]
    for periods in (days, year):
        body = json.dumps({"timeperiods": periods, "query": [f'RETURN = sum_durations(query_bucket("{window}"));']}).encode()
        urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:5788/api/0/query/", body, {"Content-Type": "application/json"})).read()
for label in ("empty", "full", "kept"):
    res = {"ours": [], "ref": []}
    # "kept": one copy per server, used by every run (ours keeps its results at each stop).
    keep = {name: tempfile.TemporaryDirectory() for name in res} if label == "kept" else None
    if keep:
        for name, b in (("ours", ours), ("ref", ref)):
            shutil.copy(sys.argv[1], keep[name].name + "/sqlite.db")
            start_time(b, keep[name].name + "/sqlite.db", keep[name].name, before_stop=warm_year if name == "ours" else None)
    for i in range(8):
        for name, b in (("ours", ours), ("ref", ref)) if i % 2 == 0 else (("ref", ref), ("ours", ours)):
            if keep:
                res[name].append(start_time(b, keep[name].name + "/sqlite.db", keep[name].name))
                continue
            # Each run's folder is removed afterwards: a copy of a year is ~90 MB.
            with tempfile.TemporaryDirectory() as d:
                db = d + "/sqlite.db"
                if label == "full":
                    shutil.copy(sys.argv[1], db)
                res[name].append(start_time(b, db, d))
    if keep:
        kept = keep["ours"].name + "/sqlite.db.derived"
        print("kept results file:", os.path.getsize(kept) if os.path.exists(kept) else 0, "bytes")
        for k in keep.values():
            k.cleanup()
    print(label, {k: round(statistics.median(v), 1) for k, v in res.items()})

"""Time from exec to the first answered `GET /api/0/info`, ours beside another server binary
(the reference), on an empty database and on a copy of FULL_DB; medians of 8 alternating
runs. Prints numbers (no verdict).

    python3 tests/python/startup_probe.py FULL_DB [OTHER_BINARY]
"""
import os, subprocess, tempfile, time, urllib.request, statistics, sys, shutil
def start_time(binary, db, d):
    env = dict(os.environ, XDG_CONFIG_HOME=d+"/c", XDG_DATA_HOME=d+"/d", XDG_CACHE_HOME=d+"/k")
    t = time.perf_counter()
    p = subprocess.Popen([binary, "--port", "5788", "--dbpath", db], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while True:
        try:
            urllib.request.urlopen("http://127.0.0.1:5788/api/0/info", timeout=1).read(); break
        except Exception:
            time.sleep(0.001)
    took = time.perf_counter() - t
    p.terminate(); p.wait()
    return took * 1000
HERE = os.path.dirname(os.path.abspath(__file__))
ours = os.environ.get("AW_SERVER_BIN", os.path.join(HERE, "..", "..", "target", "release", "aw-server"))
ref = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "..", "..", "reference", "aw-server-rust", "target", "release", "aw-server")
for label in ("empty", "full"):
    res = {"ours": [], "ref": []}
    for i in range(8):
        for name, b in (("ours", ours), ("ref", ref)) if i % 2 == 0 else (("ref", ref), ("ours", ours)):
            # Each run's folder is removed afterwards: a copy of a year is ~90 MB.
            with tempfile.TemporaryDirectory() as d:
                db = d + "/sqlite.db"
                if label == "full":
                    shutil.copy(sys.argv[1], db)
                res[name].append(start_time(b, db, d))
    print(label, {k: round(statistics.median(v), 1) for k, v in res.items()})

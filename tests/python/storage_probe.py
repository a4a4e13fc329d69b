"""Times issue 48's storage upkeep on the generated year ending yesterday, with a heartbeat
every 10 ms beside each operation (`probe_server.py`): the storage answer, compaction
(dry run and run; the summaries by app, title, domain, category, day and hour compared
before and after), three retention rules (dry run and run), the free space given back,
and the file's size at each point; then, with the server stopped, the conversion of a
copy of the file made in `auto_vacuum=NONE` (as the reference and older versions make
them) by `aw-server compact`. AFK duplicates (aw-watcher-afk #61) are added to a tenth of
the not-AFK events first.

    cargo run --release -p aw-tests --example write_dataset -- /tmp/year.json $(date -d yesterday +%F)
    tests/python/.venv/bin/python tests/python/storage_probe.py /tmp/year.json

Prints numbers (no verdict): BENCHMARKS.md has the latest.
"""
import json, os, sqlite3, subprocess, sys, time
from probe_server import BIN, Probe

YEAR = sys.argv[1]
probe = Probe()
try:
    probe.import_year(YEAR)
except Exception:
    probe.stop()
    raise
req, during, get = probe.req, probe.during, probe.json
buckets = get("GET", "/buckets")
host = [b for b in buckets.values() if b["type"] == "currentwindow"][0]["hostname"]
afk = [b["id"] for b in buckets.values() if b["type"] == "afkstatus"][0]
not_afk = [e for e in get("GET", f"/buckets/{afk}/events?limit=-1") if e["data"]["status"] == "not-afk"]
dups = [dict(e, duration=e["duration"] / 2) for e in not_afk[::10]]
for e in dups:
    e.pop("id", None)
req("POST", f"/buckets/{afk}/events", dups)
print(f"added {len(dups)} AFK duplicates")
probe.idle()


def size():
    return sum(os.path.getsize(probe.db + s) for s in ("", "-wal") if os.path.exists(probe.db + s)) / 1e6


def events():
    return sum(get("GET", f"/buckets/{b}/events/count") for b in get("GET", "/buckets"))


print(f"file {size():.1f} MB, {events()} events")
during("storage answer, measured now", lambda: len(get("GET", "/storage?fresh=true")["measure"]["buckets"]))
spans = [b["metadata"] for b in buckets.values() if b["metadata"].get("end")]
last = max(m["end"] for m in spans)[:10]
first = min(m["start"] for m in spans)[:10]
rng = f"start={first}T00:00:00Z&end={last}T23:59:59Z&hostname={host}"
month = f"start={last[:8]}01T00:00:00Z&end={last}T23:59:59Z&hostname={host}"


def summaries():
    out = {}
    for by in ("app", "title", "domain", "category"):
        out[by] = get("GET", f"/summary?{rng}&by={by}&limit=10000")
    out["day"] = get("GET", f"/summary?{rng}&by=day&tz=Europe/Berlin")
    out["hour"] = get("GET", f"/summary?{month}&by=hour&tz=Asia/Kathmandu")
    return out


before = summaries()
preview = during("compaction, dry run", lambda: {k: v for k, v in get("POST", "/storage/compact", {"dry_run": True}).items() if k in ("events_before", "removed")})
done = during("compaction", lambda: get("POST", "/storage/compact", {"dry_run": False, "expect": preview["removed"]}))
print("  per bucket:", [(b["bucket"], b["events_before"], b["events_after"], b["merged"], b["duplicates"]) for b in done["buckets"]])
print(f"  file {size():.1f} MB after the compaction and its reclaim ({done['reclaimed']})")
after = summaries()
print("  summaries identical:", {k: before[k] == after[k] for k in before})
rules = [
    {"bucket_type": "currentwindow", "older_than_days": 300, "action": "delete"},
    {"bucket_type": "web.tab.current", "older_than_days": 180, "action": "redact", "fields": ["title", "url"], "everywhere": True},
    {"bucket_type": "currentwindow", "older_than_days": 1, "action": "delete_shorter", "shorter_than_seconds": 1},
]
for i, rule in enumerate(rules):
    req("POST", "/settings/retention_rules", [dict(r, enabled=(j == i)) for j, r in enumerate(rules)])
    line = lambda a: [(r["rule"], r["dropped"], r["redacted"], round(r["seconds"])) for r in a["rules"]]
    prev = during(f"retention rule {i} ({rule['action']}), dry run", lambda: line(get("POST", "/retention/apply", {"dry_run": True})))
    expect = [0] * len(rules)
    expect[i] = prev[0][1] + prev[0][2] if prev else 0
    during(f"retention rule {i}, run", lambda: line(get("POST", "/retention/apply", {"dry_run": False, "expect": expect})))
    print(f"  file {size():.1f} MB")
during("give free space back", lambda: {k: v for k, v in get("POST", "/storage/reclaim").items() if k in ("file_bytes_before", "file_bytes_after", "took_ms")})
print(f"file {size():.1f} MB, {events()} events")
probe.stop()
# A copy in the reference's mode, converted offline.
copy = probe.dir + "/none.db"
subprocess.run(["cp", probe.db, copy], check=True)
con = sqlite3.connect(copy)
con.execute("PRAGMA auto_vacuum = NONE")
con.execute("VACUUM")
mode = con.execute("PRAGMA auto_vacuum").fetchone()[0]
con.close()
t = time.time()
r = subprocess.run([BIN, "--dbpath", copy, "compact"], env=probe.env, capture_output=True, text=True)
print(f"aw-server compact of a {os.path.getsize(copy) / 1e6:.1f} MB file in mode {mode}: {time.time() - t:.1f} s, exit {r.returncode}")
con = sqlite3.connect(copy)
print("  mode after:", con.execute("PRAGMA auto_vacuum").fetchone()[0])
con.close()
probe.remove()

"""Times the history operations of issue 36 on the generated year, with a heartbeat every
10 ms beside them (p95 and max latency, counted from when each heartbeat was due): a
one-day delete across all buckets, a merge of 100,000 events, a privacy dry run and run, a
week's summary cold and cached, and last a delete of the window bucket's whole history.

    cargo run --release -p aw-tests --example write_dataset -- /tmp/year.json
    tests/python/.venv/bin/python tests/python/history_probe.py /tmp/year.json

The server binary is AW_SERVER_BIN, else target/release/aw-server (`probe_server.py`).
Prints numbers (no verdict): BENCHMARKS.md has the latest.
"""
import datetime, json, sys
from probe_server import Probe

YEAR = sys.argv[1]
probe = Probe()
probe.import_year(YEAR)
req, during = probe.req, probe.during
buckets = json.loads(req("GET", "/buckets")[1])
host = [b for b in buckets.values() if b["type"]=="currentwindow"][0]["hostname"]
ends = sorted(b["metadata"]["end"] for b in buckets.values())
print("host", host, "data ends", ends[-1])
probe.idle()
last_day = ends[-1][:10]
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
probe.stop()
probe.remove()

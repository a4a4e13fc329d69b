"""The official Python aw-client (PyPI, pinned in requirements.txt) against the real server.

Each test module run starts the real `aw-server` binary on a free loopback port with a
temporary database and private XDG directories, and talks to it only through the client.
"""

import os
import tempfile
import time
from datetime import datetime, timedelta, timezone

import pytest
import requests

from aw_server_process import HANG_TIMEOUT_S, Server

T0 = datetime(2024, 5, 1, 9, 0, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def server():
    tmp = tempfile.TemporaryDirectory()
    s = Server(tmp.name, os.path.join(tmp.name, "sqlite.db"))
    yield s.port
    s.stop()
    tmp.cleanup()


@pytest.fixture()
def client(server, monkeypatch, tmp_path):
    # The client keeps its queue and lock files in XDG dirs: keep them private to the test.
    for var in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    from aw_client import ActivityWatchClient

    name = "aw-test-" + os.urandom(4).hex()
    c = ActivityWatchClient(name, testing=False, host="127.0.0.1", port=server)
    c.wait_for_start(timeout=HANG_TIMEOUT_S)
    yield c


def event(offset_s, duration_s=0.0, **data):
    from aw_core.models import Event

    return Event(timestamp=T0 + timedelta(seconds=offset_s), duration=duration_s, data=data)


def wait_until(predicate, timeout=HANG_TIMEOUT_S):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_info_and_bucket_lifecycle(client):
    info = client.get_info()
    assert info["version"].endswith("(rust)")
    assert len(info["device_id"]) == 36
    client.create_bucket("py-bucket", "currentwindow")
    client.create_bucket("py-bucket", "currentwindow")  # 304: not an error
    buckets = client.get_buckets()
    assert buckets["py-bucket"]["type"] == "currentwindow"
    assert buckets["py-bucket"]["hostname"] == client.client_hostname
    client.delete_bucket("py-bucket", force=True)
    assert "py-bucket" not in client.get_buckets()


def test_queued_heartbeats_merge_into_one_event(client):
    bucket = "py-queued_host"
    client.create_bucket(bucket, "currentwindow", queued=True)
    with client:
        # What aw-watcher-window does: a heartbeat a second, pulsetime = poll + 1.
        for i in range(20):
            client.heartbeat(bucket, event(i, app="editor", title="main.rs"), pulsetime=2.0, queued=True, commit_interval=5)
        assert wait_until(lambda: bucket in client.get_buckets() and client.get_events(bucket) and
                          client.get_events(bucket)[0].duration.total_seconds() >= 15.0)
    events = client.get_events(bucket)
    assert len(events) == 1
    assert events[0].timestamp == T0
    assert events[0].duration == timedelta(seconds=15)
    assert events[0].data == {"app": "editor", "title": "main.rs"}


def test_unqueued_heartbeats_and_state_changes(client):
    bucket = "py-afk_host"
    client.create_bucket(bucket, "afkstatus")
    for i in range(10):
        client.heartbeat(bucket, event(i * 5, status="not-afk"), pulsetime=6.0)
    client.heartbeat(bucket, event(50, status="afk"), pulsetime=6.0)
    events = client.get_events(bucket)
    assert [e.data["status"] for e in events] == ["afk", "not-afk"]
    assert events[1].duration == timedelta(seconds=45)


def test_insert_read_count_delete(client):
    bucket = "py-events"
    client.create_bucket(bucket, "test")
    client.insert_events(bucket, [event(i * 60, 30.5, n=i) for i in range(10)])
    client.insert_event(bucket, event(3600, 1.0, n=99))
    events = client.get_events(bucket, limit=-1)
    assert len(events) == 11
    assert events[0].data["n"] == 99  # newest first
    assert events[-1].timestamp == T0
    assert len(client.get_events(bucket, limit=3)) == 3
    window = client.get_events(bucket, start=T0 + timedelta(seconds=75), end=T0 + timedelta(seconds=250))
    assert [e.data["n"] for e in window] == [4, 3, 2, 1]
    assert window[-1].timestamp == T0 + timedelta(seconds=75)  # clipped
    assert client.get_eventcount(bucket) == 11
    assert client.get_eventcount(bucket, start=T0 + timedelta(seconds=75), end=T0 + timedelta(seconds=250)) == 4
    one = client.get_event(bucket, events[0].id)
    assert one.data["n"] == 99
    # A missing event is 404 (the reference answered 500). This client version means to
    # return None on 404 but tests the falsy error response, so it raises either way.
    with pytest.raises(requests.exceptions.HTTPError) as missing:
        client.get_event(bucket, 987654)
    assert missing.value.response.status_code == 404
    client.delete_event(bucket, events[0].id)
    assert client.get_eventcount(bucket) == 10


def test_query(client):
    bucket = "py-query_host"
    client.create_bucket(bucket, "currentwindow")
    client.insert_events(bucket, [event(0, 60, app="a", title="x"), event(60, 120, app="b", title="y"),
                                  event(180, 30, app="a", title="z")])
    q = f'events = query_bucket("{bucket}"); events = merge_events_by_keys(events, ["app"]); RETURN = sort_by_duration(events);'
    result = client.query(q, [(T0, T0 + timedelta(hours=1)), (T0 + timedelta(days=1), T0 + timedelta(days=2))])
    assert len(result) == 2
    assert [(e["data"]["app"], e["duration"]) for e in result[0]] == [("b", 120.0), ("a", 90.0)]
    assert result[1] == []


def test_settings_and_export_import(client):
    client.set_setting("py-theme", "dark")
    assert client.get_setting("py-theme") == "dark"
    assert client.get_setting()["py-theme"] == "dark"
    bucket = "py-export"
    client.create_bucket(bucket, "test")
    client.insert_events(bucket, [event(i, 1.0, i=i) for i in range(5)])
    exported = client.export_bucket(bucket)
    assert len(exported["buckets"][bucket]["events"]) == 5
    client.delete_bucket(bucket, force=True)
    client.import_bucket(exported["buckets"][bucket])
    assert client.get_eventcount(bucket) == 5
    assert bucket in client.export_all()["buckets"]

"""Our encrypted database files are standard SQLCipher 4 files: the format
of the reference's encrypted build, which uses SQLCipher's defaults too.

Checked against an independent SQLCipher build (the `sqlcipher3-binary` wheel from PyPI):
it reads a file our server wrote, and our server opens a file it wrote. Runs only when the
suite is run on encrypted databases (`AW_DB_PASSWORD` set, an `encryption` build), as the
second pass of scripts/test-all.sh does.
"""

import os
import tempfile

import pytest
import requests

from aw_server_process import Server

PASSWORD = os.environ.get("AW_DB_PASSWORD")

pytestmark = pytest.mark.skipif(
    not PASSWORD, reason="the suite runs on plain databases (AW_DB_PASSWORD unset)"
)


def test_stock_sqlcipher_reads_what_our_server_wrote():
    from sqlcipher3 import dbapi2 as sqlcipher

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "sqlite.db")
        s = Server(tmp, db)
        r = requests.post(f"{s.base}/buckets/b", json={"type": "t", "client": "c", "hostname": "h"})
        assert r.status_code == 200, r.text
        r = requests.post(
            f"{s.base}/buckets/b/events",
            json=[{"timestamp": "2024-05-01T09:00:00Z", "duration": 2.5, "data": {"title": "written by us"}}],
        )
        assert r.status_code == 200, r.text
        s.stop()

        conn = sqlcipher.connect(db)
        # PRAGMA takes no bound parameters: a quoted literal, as our server writes it.
        conn.execute("PRAGMA key = '%s'" % PASSWORD.replace("'", "''"))
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 5
        rows = conn.execute("SELECT endtime - starttime, data FROM events").fetchall()
        assert rows == [(2_500_000_000, '{"title":"written by us"}')]
        conn.close()


def test_our_server_opens_a_file_stock_sqlcipher_wrote():
    from sqlcipher3 import dbapi2 as sqlcipher

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "sqlite.db")
        conn = sqlcipher.connect(db)
        conn.execute("PRAGMA key = '%s'" % PASSWORD.replace("'", "''"))
        # Any content makes SQLCipher write its encrypted header; our server migrates the rest.
        conn.execute("CREATE TABLE written_by_stock_sqlcipher (x)")
        conn.commit()
        conn.close()
        with open(db, "rb") as f:
            assert not f.read(16).startswith(b"SQLite format 3")

        s = Server(tmp, db)
        r = requests.post(f"{s.base}/buckets/b", json={"type": "t", "client": "c", "hostname": "h"})
        assert r.status_code == 200, r.text
        assert requests.get(f"{s.base}/buckets/").json()["b"]["id"] == "b"
        s.stop()

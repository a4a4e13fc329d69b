"""The real aw-server binary as a subprocess, for the Python tests."""

import os
import signal
import socket
import subprocess
import time

BIN = os.environ.get("AW_SERVER_BIN", "../../target/release/aw-server")

# How long the server may take to start or to stop: a guard against a hang only, generous so
# that a slow machine with a busy core passes.
HANG_TIMEOUT_S = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """Our server (or `binary`: the reference beside it in a probe) on `db` with private XDG
    directories (and the environment's AW_DB_PASSWORD, if set), stopped with SIGTERM."""

    def __init__(self, tmp, db, binary=BIN):
        env = dict(os.environ)
        for var, sub in (("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache")):
            env[var] = os.path.join(tmp, sub)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/api/0"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--dbpath", db, "--no-legacy-import"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + HANG_TIMEOUT_S
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert self.proc.poll() is None, "aw-server exited at startup"
                time.sleep(0.05)
        raise AssertionError("aw-server did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=HANG_TIMEOUT_S) == 0

#!/usr/bin/env bash
# Runs the official Python aw-client (from PyPI) against the real aw-server binary, and (on
# encrypted databases) checks our files against an independent SQLCipher build.
# Creates its own virtualenv in tests/python/.venv on first use.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv"
if [ ! -x "$venv/bin/pytest" ] || ! cmp -s "$here/requirements.txt" "$venv/.requirements"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$venv/.requirements"
fi
export AW_SERVER_BIN="${AW_SERVER_BIN:-$here/../../target/release/aw-server}"
cd "$here"
# The SQLCipher check belongs to the encrypted variant only: selected here, not skipped.
tests=(test_aw_client.py)
if [ -n "${AW_DB_PASSWORD:-}" ]; then
    tests+=(test_sqlcipher_format.py)
fi
exec "$venv/bin/pytest" -q -p no:cacheprovider "${tests[@]}"

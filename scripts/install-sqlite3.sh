#!/usr/bin/env bash
# Installs the sqlite3 command (Debian package `sqlite3`), which the tests run as "another
# program" reading the database while the server runs (tests/tests/sequences.rs,
# aw-datastore/tests/file_life.rs), as users' scripts do. The machine image has it; this
# makes sure of it on any other.
set -euo pipefail
if ! command -v sqlite3 >/dev/null 2>&1; then
    echo "installing sqlite3 (Debian package)"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq sqlite3 >/dev/null
fi
sqlite3 --version

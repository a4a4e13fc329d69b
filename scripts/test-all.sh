#!/usr/bin/env bash
# Runs every test of the project: the Rust workspace (unit, integration and end-to-end tests
# against the real server binary; aw-sync's over two Syncthing instances), then the
# Python-client tests, the OpenAPI contract fuzzed by Schemathesis, and the browser tests,
# which install what they need themselves; then the same again on encrypted databases with
# the SQLCipher build. Used by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

# The suites that drive the server binary from outside (AW_SERVER_BIN, or the release build).
run_outside_suites() {
    for suite in tests/python/run.sh tests/schemathesis/run.sh tests/browser/run.sh; do
        if [ -x "$suite" ]; then
            echo "== $suite"
            "$suite"
        fi
    done
}

# A test whose prerequisite is missing (Syncthing, root to mount a tmpfs, a C compiler, a
# kernel that takes time slices) fails here rather than skip; Syncthing and the sqlite3
# command are installed here.
tests/syncthing/install.sh
# The sqlite3 command: "another program" reading the database while a server runs, as
# users' scripts do (tests/tests/sequences.rs, aw-datastore/tests/file_life.rs).
scripts/ensure-command.sh sqlite3 sqlite3
export AW_REQUIRE_PREREQUISITES=1

# Any warning fails the run: formatting, every compiler and clippy lint (the workspace's
# lints in Cargo.toml), and the docs, so a renamed item breaks the build, not the reader
# (intra-doc links are checked).
cargo fmt --all --check
# The datastore's rooms: no import circle, no import from a lower room to a higher one.
python3 scripts/layers.py
# No production file over 500 lines, no function over 100 (80 in aw-datastore).
python3 scripts/shape.py
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo clippy -p aw-tests --all-targets --features encrypted --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --quiet

# The end-to-end tests start the release binary, as users run it.
cargo build --release -p aw-server
cargo test --workspace --all-targets --release
run_outside_suites

# The same tests on encrypted databases (issue 16): the SQLCipher build (OpenSSL built from
# source, nothing needed from the system), the datastore's tests on it, and every test that
# starts the server with a database password.
echo "== encrypted databases"
cargo build --release -p aw-server --features aw-server/encryption-vendored
# Absolute: each test crate runs in its own directory.
encrypted="$(pwd)/target/release/aw-server-encrypted"
cp target/release/aw-server "$encrypted"
cargo test --release -p aw-datastore --features aw-datastore/encryption-vendored
AW_SERVER_BIN="$encrypted" AW_TEST_DB_PASSWORD="test suite password" \
    cargo test --release -p aw-tests -p aw-bench -p aw-client-rust -p aw-sync --features aw-tests/encrypted
AW_SERVER_BIN="$encrypted" AW_DB_PASSWORD="test suite password" run_outside_suites
# Leave the default build in place.
cargo build --release -p aw-server

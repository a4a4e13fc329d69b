#!/usr/bin/env bash
# Runs every test of the project: the Rust workspace (unit, integration and end-to-end tests
# against the real server binary), then the Python-client tests, the OpenAPI contract fuzzed
# by Schemathesis, and the browser tests, which install what they need themselves. Used by
# the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

# The end-to-end tests start the release binary, as users run it.
cargo build --release -p aw-server
cargo test --workspace --all-targets --release

for suite in tests/python/run.sh tests/schemathesis/run.sh tests/browser/run.sh; do
    if [ -x "$suite" ]; then
        echo "== $suite"
        "$suite"
    fi
done

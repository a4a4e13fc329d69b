#!/usr/bin/env bash
# End-to-end tests of the built-in dashboard in headless Chromium (Debian's chromium package,
# driven by playwright-core from npm). Installs both when missing, then runs node's test
# runner against the release binary (AW_SERVER_BIN, default ../../target/release/aw-server).
# Screenshots go to tests/artifacts/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

if [ ! -x /usr/bin/chromium ]; then
    echo "installing chromium (Debian package)"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
fi

if [ ! -d node_modules/playwright-core ] || ! cmp -s package-lock.json node_modules/.package-lock.json.copy; then
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json node_modules/.package-lock.json.copy
fi

export AW_SERVER_BIN="${AW_SERVER_BIN:-$here/../../target/release/aw-server}"
if [ ! -x "$AW_SERVER_BIN" ]; then
    echo "no server binary at $AW_SERVER_BIN (build it: cargo build --release -p aw-server)" >&2
    exit 1
fi
# One test compares the dashboard's desktop query with the Rust client's, printed by an example
# of the aw-tests package; `cargo test` does not leave examples under their plain names.
(cd ../.. && cargo build --release --quiet -p aw-tests --example print_desktop_query)
mkdir -p ../artifacts
# The period arithmetic in a time zone with daylight saving time (no browser).
TZ=Europe/Berlin node --test period.test.mjs
exec node --test --test-concurrency=1 dashboard.test.mjs periods.test.mjs history.test.mjs storage.test.mjs cross_site.test.mjs hostile_data.test.mjs

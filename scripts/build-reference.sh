#!/usr/bin/env bash
# Builds the reference ActivityWatch server (aw-server-rust) at the commit every comparison
# in BENCHMARKS.md names, outside this repository, and prints the paths of its two
# binaries: aw-server, then aw-sync. Benchmarks (`aw-bench --compare`, `aw-soak --compare`)
# and the interop example (`bench/examples/reference_interop.rs`) run it beside ours as a
# black box: it is only compiled here, never read or copied into this repository.
#
# Usage: scripts/build-reference.sh [SOURCE] [DEST]
#   SOURCE  a clone (or bare git directory) of aw-server-rust, or its URL
#           (default: https://github.com/ActivityWatch/aw-server-rust.git)
#   DEST    the build folder (default: $AW_REFERENCE_DIR, else ../reference beside this
#           repository's folder)
# The first build takes about 5 minutes on 2 cores; later runs only print the paths.
set -euo pipefail
commit=59eaae3
source=${1:-https://github.com/ActivityWatch/aw-server-rust.git}
repo_root=$(cd "$(dirname "$0")/.." && pwd)
dest=${2:-${AW_REFERENCE_DIR:-$(dirname "$repo_root")/reference}}
checkout="$dest/aw-server-rust"

mkdir -p "$dest"
if [ ! -d "$checkout/.git" ]; then
  git clone --quiet "$source" "$checkout"
fi
if ! git -C "$checkout" cat-file -e "$commit^{commit}" 2>/dev/null; then
  git -C "$checkout" fetch --quiet origin || true
fi
git -C "$checkout" checkout --quiet "$commit"

# Its own warnings are not ours to read; the whole output only when the build fails.
if ! (cd "$checkout" && cargo build --release --quiet --bin aw-server --bin aw-sync 2>/dev/null); then
  (cd "$checkout" && cargo build --release --bin aw-server --bin aw-sync) >&2
fi
echo "$checkout/target/release/aw-server"
echo "$checkout/target/release/aw-sync"

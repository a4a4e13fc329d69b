#!/usr/bin/env bash
# Installs Syncthing (Debian package `syncthing`) for aw-sync's test over a real folder-sync
# engine (aw-sync/tests/syncthing.rs). The test starts its own instances on loopback with
# discovery and relays off; nothing here starts or enables the system service.
set -euo pipefail
exec "$(dirname "$0")/../../scripts/ensure-command.sh" syncthing syncthing

#!/usr/bin/env bash
# Installs Syncthing (Debian package `syncthing`) for aw-sync's test over a real folder-sync
# engine (aw-sync/tests/syncthing.rs). The test starts its own instances on loopback with
# discovery and relays off; nothing here starts or enables the system service.
set -euo pipefail
if ! command -v syncthing >/dev/null 2>&1; then
    echo "installing syncthing (Debian package)"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq syncthing >/dev/null
fi
syncthing --version

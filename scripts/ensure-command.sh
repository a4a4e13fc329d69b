#!/usr/bin/env bash
# Usage: scripts/ensure-command.sh COMMAND DEBIAN_PACKAGE
# Installs DEBIAN_PACKAGE when COMMAND is not on the PATH (the tests' own prerequisites, so
# a fresh machine needs nothing installed by hand), then prints the command's version.
set -euo pipefail
command_name="$1"
package="$2"
if ! command -v "$command_name" >/dev/null 2>&1; then
    echo "installing $package (Debian package)"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$package" >/dev/null
fi
"$command_name" --version

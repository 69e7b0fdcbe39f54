#!/usr/bin/env bash
# Usage: ensure-os-package.sh COMMAND PACKAGE
# Installs Debian's PACKAGE with apt-get when COMMAND is not on the PATH (or, when COMMAND
# contains a slash, when no file matches it as a glob: '/usr/lib/postgresql/*/bin/postgres');
# stops with a clear message when that is not possible (not root, no apt-get).
set -euo pipefail
cmd="$1"
pkg="$2"
present() {
  if [[ "$cmd" == */* ]]; then compgen -G "$cmd" >/dev/null; else command -v "$cmd" >/dev/null 2>&1; fi
}
if present; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: '$cmd' is missing and apt-get is not available; install the '$pkg' package by hand" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "error: '$cmd' is missing; run as root or install the '$pkg' package: apt-get install $pkg" >&2
    exit 1
  fi
fi
echo "installing $pkg (for $cmd) with apt-get ..." >&2
$SUDO apt-get update -qq >/dev/null
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null
present || { echo "error: installing $pkg did not provide $cmd" >&2; exit 1; }

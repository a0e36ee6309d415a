#!/usr/bin/env bash
# Installs walbench's build dependencies from Debian 12 packages when they are missing.
# Usage: scripts/setup.sh            (as root, or with sudo available)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev libboost-dev libboost-context-dev catch2 libcli11-dev nlohmann-json3-dev libisal-dev
  python3-matplotlib python3-scipy parallel
  libpq-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all build dependencies are installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

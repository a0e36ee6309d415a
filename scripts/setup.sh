#!/usr/bin/env bash
# Installs walbench's build dependencies from Debian 12 packages when they are missing.
# Usage: scripts/setup.sh                  (as root, or with sudo available)
#        scripts/setup.sh --with-postgres  also PostgreSQL 15 (postgresql-15): pg_waldump for the
#                                          pg_waldump test (tests/pg_waldump_test.cc)
set -euo pipefail

with_postgres=0
for arg in "$@"; do
  case "$arg" in
    --with-postgres) with_postgres=1 ;;
    *) echo "setup: unknown option $arg (expected --with-postgres)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev libboost-dev libboost-context-dev catch2 libcli11-dev nlohmann-json3-dev libisal-dev
  python3-matplotlib python3-scipy parallel
  libpq-dev
)
if [ "$with_postgres" -eq 1 ]; then
  packages+=(postgresql-15)
fi

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

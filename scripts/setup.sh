#!/usr/bin/env bash
# Install what wick needs to build, test and benchmark on Debian 12.
# Idempotent: installs only what is missing. Run as root (or with sudo).
set -euo pipefail
pkgs=(cmake make gcc clang pkg-config zlib1g-dev libcmocka-dev libclang-rt-14-dev
      python3 python3-numpy python3-torch libopenblas-dev libblis-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

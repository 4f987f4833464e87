#!/usr/bin/env bash
# Run HERE, on a development machine with network and apt, BEFORE a device
# session: the device machine (scripts/device-check.sh) has no network and no
# cmocka, so this downloads the cmocka .debs (libcmocka0, libcmocka-dev:
# shared library, header; no static archive in Debian's packages) into
# .devdeps/ at the repository root (git-ignored). device-check.sh unpacks
# them into /tmp/devdeps and points CMake at them.
#
# .devdeps/ is ignored by git: a device run must carry it (the device tool's
# `carry: [".devdeps"]`), or copy it there some other way.
#
#   scripts/device-prep.sh          (as root here; apt-get download needs no root elsewhere)
# It ends with scripts/device-check.sh --dry-run (a few seconds, no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .devdeps
cd .devdeps
rm -f libcmocka*.deb
# as root, apt warns that its _apt user cannot write here; the download still works
apt-get download libcmocka0 libcmocka-dev 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
ls libcmocka0_*.deb libcmocka-dev_*.deb >/dev/null
# the same unpack the device check does, to be sure the files are there
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for deb in libcmocka*.deb; do dpkg-deb -x "$deb" "$tmp"; done
lib=$(find "$tmp" -name 'libcmocka.so*' | head -n 1)
hdr=$(find "$tmp" -name cmocka.h | head -n 1)
[ -n "$lib" ] && [ -n "$hdr" ] || { echo "device-prep: the .debs hold no libcmocka.so / cmocka.h" >&2; exit 1; }
echo "device-prep: $(ls libcmocka*.deb | tr '\n' ' ')in $(pwd) (carry .devdeps to the device machine)"
# the device check's dry run (no GPU, no build: a few seconds), so a broken
# script shows here and not in the device session's one short window; its
# table is the list of rows the device run will print
dry=$(mktemp -d)
if BUILD_DIR="$dry" ../scripts/device-check.sh --dry-run >"$dry/out" 2>&1; then
  echo "device-prep: scripts/device-check.sh --dry-run ok ($(grep 'would run' "$dry/out" | grep -vc '^total') rows would run)"
else
  cat "$dry/out" >&2
  echo "device-prep: scripts/device-check.sh --dry-run FAILED (above)" >&2
  rm -rf "$dry"
  exit 1
fi
rm -rf "$dry"

#!/usr/bin/env bash
# setup.sh — make sure the Debian packages gatelab builds and tests with are installed.
# As root it installs what is missing with apt-get; otherwise it prints the command to run.
# Besides the build: chromium and python3 render and look at the HTML report in the
# tests (tests/integration/report_html.sh), unzip unpacks enwik8 for `make data`.
set -euo pipefail
PKGS=(build-essential pkg-config libopenblas-dev libopenblas0-openmp libhdf5-dev hdf5-tools
      libsqlite3-dev sqlite3 libinih-dev libcmocka-dev gnuplot-nox fonts-dejavu-core
      chromium python3 unzip curl)
missing=()
for p in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
    echo "setup: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
    echo "setup: missing Debian packages: ${missing[*]}" >&2
    echo "setup: run: sudo apt-get install ${missing[*]}" >&2
    exit 1
fi

#!/usr/bin/env bash
# setup.sh — make sure the Debian packages gatelab builds and tests with are installed.
# As root it installs what is missing with apt-get; otherwise it prints the command to run.
# Besides the build: chromium and python3 render and look at the HTML report in the
# tests (tests/integration/report_html.sh), unzip unpacks enwik8 for `make data`; numpy, h5py
# and pandas are what the Python package (scripts/python/gatelab) reads with.
set -euo pipefail
PKGS=(build-essential pkg-config libopenblas-dev libopenblas0-openmp libhdf5-dev hdf5-tools
      libsqlite3-dev sqlite3 libinih-dev libjansson-dev libcmocka-dev gnuplot-nox fonts-dejavu-core
      libmicrohttpd-dev
      chromium python3 python3-numpy python3-h5py python3-pandas unzip curl)
# Optional: OpenMPI for build/gatelab-mpi (data-parallel training, docs/mpi.md).  Tried as
# root, never fatal: everything else builds and tests without it (GATELAB_NO_MPI=1: skip).
OPT_PKGS=(libopenmpi-dev openmpi-bin)
optional() {
    [ "${GATELAB_NO_MPI:-0}" = 1 ] && return 0
    local p opt=()
    for p in "${OPT_PKGS[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || opt+=("$p")
    done
    [ ${#opt[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ]; then
        echo "setup: installing ${opt[*]} (optional: build/gatelab-mpi)" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${opt[@]}" > /dev/null 2>&1 ||
            { apt-get update -qq > /dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                  --no-install-recommends "${opt[@]}" > /dev/null 2>&1; } ||
            echo "setup: could not install ${opt[*]}: build/gatelab-mpi is left out, the MPI tests skip" >&2
    else
        echo "setup: optional, for build/gatelab-mpi: sudo apt-get install ${opt[*]}" >&2
    fi
    return 0
}
trap optional EXIT
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

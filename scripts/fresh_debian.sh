#!/usr/bin/env bash
# fresh_debian.sh — the README's two commands on a fresh Debian 12 machine, from a clean clone.
#
# Builds (once) a bare Debian 12 "bookworm" root with debootstrap — variant minbase, the same
# package set as Debian's official container image: no compiler, no make, no git — and caches it
# as a tarball.  Each run unpacks a pristine copy of that root, makes a clean `git clone` of this
# repository's HEAD in it (/root/gatelab, no data/ and no ../shared beside it), and runs inside
# it, as root, what a new user does: `apt-get install make git` (a fresh Debian has neither),
# then `make demo`, then `make test`.  It prints the closing line of both and exits non-zero
# when either fails.  Everything else gatelab needs is installed by `make`'s own first step
# (scripts/setup.sh), from Debian's mirror — the same mirror the host's /etc/apt uses.
#
# What it deliberately does not do: run in CI (a run takes 20–40 minutes, most of it the test
# suite on a fresh build); reach any host but the Debian mirror; touch the host's own packages
# except to install debootstrap when it is missing.
#
#   scripts/fresh_debian.sh             build the cached root if needed, then demo + test
#   scripts/fresh_debian.sh --prepare   only build the cached root (debootstrap)
#   scripts/fresh_debian.sh --demo-only only `make demo` (a quicker check of the first command)
#   scripts/fresh_debian.sh --keep      leave the unpacked root in place afterwards (for a look)
#
# Environment: GATELAB_FRESH_CACHE (default /var/cache/gatelab/fresh-bookworm.tar.gz),
# GATELAB_FRESH_MIRROR (default: the host's Debian mirror, else http://deb.debian.org/debian),
# GATELAB_FRESH_WORK (default /var/tmp), GATELAB_FRESH_LOGS (where demo.log and test.log are
# kept, default /var/tmp/gatelab-fresh-logs).  OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, when set,
# are passed into the chroot (they change OpenBLAS's kernel, which the tests must survive);
# nothing else of the caller's environment is.  docs/fresh-machine.md has the details.
set -euo pipefail

FR_SUITE=bookworm
FR_CACHE=${GATELAB_FRESH_CACHE:-/var/cache/gatelab/fresh-bookworm.tar.gz}
FR_WORKDIR=${GATELAB_FRESH_WORK:-/var/tmp}
FR_LOGS=${GATELAB_FRESH_LOGS:-$FR_WORKDIR/gatelab-fresh-logs}
prepare_only=0 keep=0 goals="demo test"
for a in "$@"; do
    case "$a" in
        --prepare) prepare_only=1 ;;
        --demo-only) goals=demo ;;
        --keep) keep=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "fresh_debian: unknown argument '$a' (use --prepare, --demo-only, --keep or --help)" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" -eq 0 ] || { echo "fresh_debian: needs root (debootstrap, chroot, mount): run it with sudo" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && git rev-parse --show-toplevel) ||
    { echo "fresh_debian: $(dirname "$0")/.. is not a git checkout: the script clones the repository's HEAD" >&2; exit 2; }
rev=$(git -C "$repo" rev-parse HEAD)

# The mirror: the first Debian archive URL the host's apt sources name (deb822 "URIs:" or a
# one-line "deb URL suite" entry), so the chroot reaches exactly what the host reaches.
fr_mirror() {
    local u
    u=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        sed -n -e 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\/\{0,1\}\)\([[:space:]].*\)\{0,1\}$/\1/p' \
               -e 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*\/debian\/\{0,1\}\)[[:space:]].*/\2/p' |
        head -n 1)
    echo "${u:-http://deb.debian.org/debian}"
}
mirror=${GATELAB_FRESH_MIRROR:-$(fr_mirror)}
mirror=${mirror%/}
security=${mirror%/debian}/debian-security

# 1. The cached bare root.  Built in a scratch folder and renamed into place only when complete,
# so an interrupted debootstrap never leaves a half root behind as "the cache".
if [ ! -s "$FR_CACHE" ]; then
    if ! command -v debootstrap > /dev/null; then
        echo "fresh_debian: installing debootstrap on the host" >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap > /dev/null
    fi
    mkdir -p "$(dirname "$FR_CACHE")"
    boot=$(mktemp -d "$FR_WORKDIR/gatelab-debootstrap.XXXXXX")
    trap 'rm -rf "$boot"' EXIT
    echo "fresh_debian: debootstrap --variant=minbase $FR_SUITE from $mirror (once; cached in $FR_CACHE)" >&2
    debootstrap --variant=minbase "$FR_SUITE" "$boot/root" "$mirror" > "$boot/debootstrap.log" 2>&1 ||
        { tail -n 20 "$boot/debootstrap.log" >&2; echo "fresh_debian: debootstrap failed (log above)" >&2; exit 1; }
    # The sources a fresh install has: the release, its updates and the security archive.
    cat > "$boot/root/etc/apt/sources.list" <<EOF
deb $mirror $FR_SUITE main
deb $mirror $FR_SUITE-updates main
deb $security $FR_SUITE-security main
EOF
    rm -rf "$boot/root/var/cache/apt/archives/"*.deb "$boot/root/var/lib/apt/lists/"*
    tar -C "$boot/root" --numeric-owner -czf "$FR_CACHE.part" .
    mv "$FR_CACHE.part" "$FR_CACHE"
    rm -rf "$boot"
    trap - EXIT
    echo "fresh_debian: cached $FR_CACHE ($(du -h "$FR_CACHE" | cut -f1))" >&2
fi
[ "$prepare_only" = 1 ] && { echo "fresh_debian: root cached in $FR_CACHE"; exit 0; }

# 2. A pristine copy, its pseudo-filesystems, and the clone.  /dev is a private tmpfs with the
# few device nodes a build needs, never a bind mount of the host's /dev: the cleanup removes the
# copy with rm -rf, which must not reach anything outside it.
work=$(mktemp -d "$FR_WORKDIR/gatelab-fresh.XXXXXX")
root=$work/root
mounts=()
fr_cleanup() {
    local rc=$? i
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
        umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null || true
    done
    if grep -q " $work/" /proc/mounts; then
        echo "fresh_debian: still mounted under $work (left in place; unmount by hand):" >&2
        grep " $work/" /proc/mounts >&2
    elif [ "$keep" = 1 ]; then
        echo "fresh_debian: root kept in $root (chroot $root /bin/bash; rm -rf $work when done)" >&2
    else
        rm -rf "$work"
    fi
    exit "$rc"
}
trap fr_cleanup EXIT
trap 'echo "fresh_debian: stopped by SIGINT" >&2; exit 130' INT
trap 'echo "fresh_debian: stopped by SIGTERM (from another process)" >&2; exit 143' TERM
trap 'echo "fresh_debian: stopped by SIGHUP (the terminal went away: run it under nohup or setsid)" >&2; exit 129' HUP
fr_mount() {  # fr_mount TYPE SOURCE DIR [OPTIONS]
    mkdir -p "$3"
    mount -t "$1" ${4:+-o "$4"} "$2" "$3"
    mounts+=("$3")
}
mkdir -p "$root"
tar -C "$root" --numeric-owner -xzf "$FR_CACHE"
fr_mount proc proc "$root/proc"
fr_mount sysfs sysfs "$root/sys" ro
fr_mount tmpfs tmpfs "$root/dev" mode=755,size=64m
mknod -m 666 "$root/dev/null" c 1 3
mknod -m 666 "$root/dev/zero" c 1 5
mknod -m 666 "$root/dev/full" c 1 7
mknod -m 666 "$root/dev/random" c 1 8
mknod -m 666 "$root/dev/urandom" c 1 9
mknod -m 666 "$root/dev/tty" c 5 0
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
fr_mount devpts devpts "$root/dev/pts" newinstance,ptmxmode=0666,mode=620
ln -s pts/ptmx "$root/dev/ptmx"
fr_mount tmpfs tmpfs "$root/dev/shm" mode=1777,size=1g
fr_mount tmpfs tmpfs "$root/tmp" mode=1777,size=8g
cp /etc/resolv.conf "$root/etc/resolv.conf"
git clone -q --no-hardlinks "$repo" "$root/root/gatelab"
git -C "$root/root/gatelab" checkout -q --detach "$rev"
echo "fresh_debian: clean clone of $(git -C "$repo" describe --always --dirty) ($rev) in a fresh $FR_SUITE root ($work)" >&2
[ -z "$(git -C "$repo" status --porcelain --untracked-files=no)" ] ||
    echo "fresh_debian: note: the checkout has uncommitted changes; the clone has HEAD only" >&2

# 3. Inside, as root, with a clean environment: what a new user types.
envs=(HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb)
for v in OPENBLAS_CORETYPE OPENBLAS_L2_SIZE; do
    [ -n "${!v:-}" ] && envs+=("$v=${!v}")
done
in_root() { chroot "$root" /usr/bin/env -i "${envs[@]}" /bin/bash -c "$1"; }
echo "fresh_debian: apt-get install make git (a fresh Debian 12 has neither)" >&2
in_root 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq > /dev/null && apt-get install -y -qq --no-install-recommends make git ca-certificates > /dev/null' ||
    { echo "fresh_debian: apt-get inside the root failed (is $mirror reachable?)" >&2; exit 1; }

status=0
for goal in $goals; do
    echo "fresh_debian: make $goal (log: $root/root/$goal.log while it runs)" >&2
    t0=$(date +%s)
    set +e
    in_root "cd /root/gatelab && make $goal > /root/$goal.log 2>&1"
    rc=$?
    set -e
    # the closing line: the suite's "N passed, N failed, N skipped" (make may add its own error
    # line after it), else the last line of the output
    # (|| true: under pipefail a grep that matches nothing would end the script through set -e)
    last=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$root/root/$goal.log" | tail -n 1 || true)
    [ -n "$last" ] || last=$(grep -v '^[[:space:]]*$' "$root/root/$goal.log" | tail -n 1 || true)
    grep -E '^failed: ' "$root/root/$goal.log" | tail -n 1 || true
    printf 'fresh_debian: make %s: exit %d after %d s; closing line: %s\n' "$goal" "$rc" $(($(date +%s) - t0)) "$last"
    if [ "$rc" -ne 0 ]; then
        echo "fresh_debian: make $goal failed; the last 40 lines of its output:" >&2
        tail -n 40 "$root/root/$goal.log" >&2
        status=1
        [ "$goal" = demo ] && break  # the README's order: the tests come after a working demo
    fi
done
mkdir -p "$FR_LOGS"
cp "$root/root/"*.log "$FR_LOGS/" 2>/dev/null && echo "fresh_debian: full logs in $FR_LOGS/" >&2 || true
[ "$status" -eq 0 ] && echo "fresh_debian: PASS: make ${goals// / and make } on a fresh Debian 12 root, clean clone of $rev" ||
    echo "fresh_debian: FAIL (see above)"
exit "$status"

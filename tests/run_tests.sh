#!/usr/bin/env bash
# `make test`: runs every step in tests/steps/ in order. Each step prints lines
# "PASS name", "FAIL name" or "SKIP name: reason"; this driver counts them and ends with
# one line "N passed, N failed, N skipped", exiting 1 if anything failed.
set -u
cd "$(dirname "$0")/.."
export ROOT="$PWD"
mkdir -p tests/build
passed=0 failed=0 skipped=0
for step in tests/steps/*.sh; do
    echo "== $(basename "$step" .sh)"
    log="tests/build/$(basename "$step" .sh).log"
    bash "$step" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log"); s=$(grep -c '^SKIP ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $(basename "$step"): exited $rc without reporting a failure"
        f=1
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
done
echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

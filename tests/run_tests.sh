#!/usr/bin/env bash
# `make test`: runs every step in tests/steps/ in order. Ends with one line
#   N passed, N failed, N skipped; GPU checks: N ran, N skipped (why)
# and exits 1 if anything failed.
#
# A step prints verdict lines, "PASS name", "FAIL name" or "SKIP name: reason", which are
# counted; details indented under them; and progress lines, which start with "... ".
# Everything goes to tests/build/<step>.log. The screen shows the verdicts, the progress
# lines and what follows a FAIL; what a passing case printed (a negative test's expected
# error message, say) stays in the log, as do lines a step marks "@log " (tests/lib.sh's
# log_only). The GPU checks are tests/steps/40_gpu.sh's cases.
set -u
cd "$(dirname "$0")/.."
export ROOT="$PWD" TEST_DRIVER=1
mkdir -p tests/build
# screen LOG: reads a step's output line by line (as it comes: awk may wait for a block),
# writes all of it to LOG (the "@log " marks removed) and the screen's part to stdout.
screen() {
    local line failing=0
    exec 4> "$1"
    while IFS= read -r line; do
        if [[ $line == "@log "* ]]; then printf '%s\n' "${line#@log }" >&4; continue; fi
        printf '%s\n' "$line" >&4
        case $line in
            "FAIL "*) failing=1 ;;
            "PASS "* | "SKIP "*) failing=0 ;;
            "... "*) ;;
            *) [ "$failing" = 1 ] || [[ $line =~ :\ line\ [0-9]+:\  ]] || continue ;;
        esac
        printf '%s\n' "$line"
    done
    exec 4>&-
}

passed=0 failed=0 skipped=0
for step in tests/steps/*.sh; do
    name=$(basename "$step" .sh)
    log="tests/build/$name.log"
    echo "== $name"
    bash "$step" 2>&1 | screen "$log"
    rc=${PIPESTATUS[0]}
    p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log"); s=$(grep -c '^SKIP ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $(basename "$step"): exited $rc without reporting a failure" | tee -a "$log"
        f=1
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
done

# The GPU checks: how many ran, how many were skipped, and why.
gpu_log=tests/build/40_gpu.log
gpu_ran=$(grep -cE '^(PASS|FAIL) ' "$gpu_log" 2>/dev/null) || true
gpu_skipped=$(grep -c '^SKIP ' "$gpu_log" 2>/dev/null) || true
gpu="GPU checks: ${gpu_ran:-0} ran, ${gpu_skipped:-0} skipped"
source tests/lib.sh
if ! have_gpu; then gpu="$gpu ($NO_GPU)"
elif [ "${gpu_skipped:-0}" -gt 0 ]; then gpu="$gpu (why: $gpu_log)"
fi
echo
echo "$passed passed, $failed failed, $skipped skipped; $gpu"
[ "$failed" -eq 0 ]

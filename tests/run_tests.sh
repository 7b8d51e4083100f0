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
passed=0 failed=0 skipped=0
for step in tests/steps/*.sh; do
    name=$(basename "$step" .sh)
    log="tests/build/$name.log"
    echo "== $name"
    bash "$step" 2>&1 | awk -v logfile="$log" '
        /^@log / { print substr($0, 6) > logfile; fflush(logfile); next }
        { print > logfile; fflush(logfile) }
        /^FAIL / { failing = 1; print; fflush(); next }
        /^(PASS|SKIP) / { failing = 0; print; fflush(); next }
        /^\.\.\. / || failing || /: line [0-9]+: / { print; fflush() }'
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

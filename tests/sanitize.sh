#!/usr/bin/env bash
# `make sanitize`: compute-sanitizer's memcheck, racecheck, synccheck and initcheck over
# every chapter's --check at small sizes. The arguments come from each chapter's
# sanitize_args file (in its tests/ folder or at its top; one run a line, e.g.
# "--check -n 1,1021,4097"). Any reported error fails. Ends with "N passed, N failed,
# N skipped".
#   bash tests/sanitize.sh [CHAPTER...]   (default: every chapter)
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
source tests/lib.sh
passed=0 failed=0 skipped=0
mkdir -p tests/build
if ! have_gpu || ! command -v compute-sanitizer >/dev/null 2>&1; then
    echo "SKIP sanitize: ${NO_GPU:-compute-sanitizer is not on the PATH}"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
[ $# -gt 0 ] && CHAPTERS="${*%/}"
for ch in $CHAPTERS; do
    bin=$(chapter_bin "$ch")
    argsfile=$(chapter_test_file "$ch" sanitize_args)
    [ -f "$argsfile" ] || { echo "FAIL $ch: no sanitize_args file"; failed=$((failed + 1)); continue; }
    while IFS= read -r args; do
        case "$args" in ''|'#'*) continue ;; esac
        for tool in memcheck racecheck synccheck initcheck; do
            log="tests/build/sanitize_${ch}_${tool}.log"
            extra=""
            [ "$tool" = memcheck ] && extra="--leak-check full"
            # shellcheck disable=SC2086
            if compute-sanitizer --tool "$tool" $extra --error-exitcode 99 "$bin" $args > "$log" 2>&1 \
               && grep -Eq '(ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards displayed \(0 errors, 0 warnings\))' "$log"; then
                echo "PASS $tool $(basename "$bin") $args"; passed=$((passed + 1))
            else
                echo "FAIL $tool $(basename "$bin") $args (log: $log)"; tail -n 15 "$log" | sed 's/^/    /'
                failed=$((failed + 1))
            fi
        done
    done < "$argsfile"
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

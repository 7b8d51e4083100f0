# Helpers for the test steps: sourced, never run alone.
CHAPTERS=$(ls -d "$ROOT"/0[1-7]_*/ 2>/dev/null | xargs -n1 basename | while read -r c; do [ -f "$ROOT/$c/Makefile" ] && echo "$c"; done)

# The binary a chapter builds: its folder name without the number.
chapter_bin() { echo "$ROOT/$1/${1#??_}"; }

# chapter_test_file CHAPTER NAME: the chapter's test input NAME (bad_args.txt,
# gpu_tests.txt, sanitize_args), in its tests/ folder where it has one, else at its top.
chapter_test_file() {
    if [ -f "$ROOT/$1/tests/$2" ]; then echo "$ROOT/$1/tests/$2"; else echo "$ROOT/$1/$2"; fi
}

# 0 if this machine has a usable CUDA GPU (tests/gpu_here.sh); else 1, and NO_GPU says why
# in one line. Asked once per script.
have_gpu() {
    if [ -z "${GPU_ASKED:-}" ]; then
        NO_GPU=$(bash "$ROOT/tests/gpu_here.sh")
        GPU_ASKED=1
    fi
    [ -z "$NO_GPU" ]
}

# log_only: copies its input into the step's log without showing it on the screen (the
# lines get the "@log " mark that tests/run_tests.sh strips; run alone, a step shows them).
log_only() {
    if [ -n "${TEST_DRIVER:-}" ]; then sed 's/^/@log /'; else cat; fi
}

# run_expect NAME EXPECTED_RC CMD...: PASS if CMD exits EXPECTED_RC, else FAIL with its output.
run_expect() {
    local name=$1 want=$2; shift 2
    local out rc
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -eq "$want" ]; then echo "PASS $name"; else
        echo "FAIL $name (exit $rc, wanted $want)"; printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
    fi
}

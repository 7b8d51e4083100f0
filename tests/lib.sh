# Helpers for the test steps: sourced, never run alone.
CHAPTERS=$(ls -d "$ROOT"/0[1-7]_*/ 2>/dev/null | xargs -n1 basename | while read -r c; do [ -f "$ROOT/$c/Makefile" ] && echo "$c"; done)

# The binary a chapter builds: its folder name without the number.
chapter_bin() { echo "$ROOT/$1/${1#??_}"; }

# chapter_file CHAPTER NAME: the chapter's test input NAME (sanitize_args, bad_args.txt,
# gpu_tests.txt), from its tests/ folder if it has one there, else from the chapter folder.
chapter_file() {
    if [ -f "$ROOT/$1/tests/$2" ]; then echo "$ROOT/$1/tests/$2"; else echo "$ROOT/$1/$2"; fi
}

# 0 if this machine has a usable CUDA GPU.
have_gpu() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '
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

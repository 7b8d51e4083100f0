# Step 3: every chapter binary answers --help and rejects bad input with exit 2, a reason
# and the usage, before touching the GPU.
source "$ROOT/tests/lib.sh"

# expect_usage_error NAME CMD...: exit 2, stderr starts with "program: reason" and holds the usage.
expect_usage_error() {
    local name=$1; shift
    local err rc
    err=$("$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" -eq 2 ] && printf '%s' "$err" | head -n 1 | grep -q ': ' && printf '%s' "$err" | grep -q '^usage: '; then
        echo "PASS $name"
    else
        echo "FAIL $name (exit $rc)"; printf '%s\n' "$err" | head -n 5 | sed 's/^/    /'
    fi
}

# expect_no_gpu NAME CMD...: with every GPU hidden (CUDA_VISIBLE_DEVICES=-1; on a machine
# without a driver there is none to hide), CMD says why it cannot run in one line on stderr,
# which starts with "no CUDA", and exits 77 (cli.h's EXIT_NO_GPU), not 1 (a failed check).
expect_no_gpu() {
    local name=$1; shift
    local err rc
    err=$(CUDA_VISIBLE_DEVICES=-1 "$@" 2>&1 >/dev/null); rc=$?
    if [ "$rc" -eq 77 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [ "${err#no CUDA}" != "$err" ]; then
        echo "PASS $name without a usable GPU: exit 77 and why"
        printf '    (%s)\n' "$err"
    else
        echo "FAIL $name without a usable GPU (exit $rc, wanted 77 and one line starting 'no CUDA')"
        printf '%s\n' "$err" | head -n 5 | sed 's/^/    /'
    fi
}

# common_cli_cases BIN [ARGS...]: --help prints the usage; the bad input every binary shares
# is refused; BIN ARGS says why it cannot run where there is no usable GPU.
common_cli_cases() {
    local bin=$1 b
    shift
    b=$(basename "$bin")
    if "$bin" --help | grep -q '^usage: '; then echo "PASS $b --help"; else echo "FAIL $b --help"; fi
    expect_no_gpu "$b${*:+ $*}" "$bin" "$@"
    expect_usage_error "$b -n -5" "$bin" -n -5
    expect_usage_error "$b -n abc" "$bin" -n abc
    expect_usage_error "$b -n 99999999999999" "$bin" -n 99999999999999
    expect_usage_error "$b -n (no value)" "$bin" -n
    expect_usage_error "$b -n 1,,2" "$bin" -n 1,,2
    expect_usage_error "$b --bogus" "$bin" --bogus
    expect_usage_error "$b --kernel nosuch" "$bin" --kernel nosuch
    expect_usage_error "$b --reps 0" "$bin" --reps 0
}

for ch in $CHAPTERS; do
    bin=$(chapter_bin "$ch")
    if [ ! -x "$bin" ]; then echo "FAIL cli $ch: $bin was not built"; continue; fi
    common_cli_cases "$bin" --check
done

# NN_topic/bad_args.txt (or NN_topic/tests/bad_args.txt): the chapter's own bad input, one
# case a line (the arguments only); each must exit 2 with a reason and the usage.
for ch in $CHAPTERS; do
    bad_args=$(chapter_test_file "$ch" bad_args.txt)
    [ -f "$bad_args" ] || continue
    bin=$(chapter_bin "$ch")
    while read -r args; do
        case "$args" in ''|'#'*) continue ;; esac
        # shellcheck disable=SC2086
        expect_usage_error "$(basename "$bin") $args" "$bin" $args
    done < "$bad_args"
done

# NN_topic/tests/bad_env.txt: bad environments, "VAR=value ... | arguments" a line (chapter
# 07: a launcher's variables); each must exit 2 with a reason and the usage.
for ch in $CHAPTERS; do
    bad_env=$(chapter_test_file "$ch" bad_env.txt)
    [ -f "$bad_env" ] || continue
    bin=$(chapter_bin "$ch")
    while IFS= read -r line; do
        case "$line" in ''|'#'*) continue ;; esac
        vars=${line%%|*} args=${line#*|}
        # shellcheck disable=SC2086
        expect_usage_error "$(basename "$bin") $line" env $vars "$bin" $args
    done < "$bad_env"
done

# Chapter 07's ranks through its launcher: two ranks with the same bad argument both exit 2,
# each naming it, and neither waits for the other (no GPU needed: it fails before one).
launch="$ROOT/07_mnist_mlp/part3_data_parallel/launch.sh"
if [ -f "$launch" ] && [ -x "$ROOT/07_mnist_mlp/mnist_mlp" ]; then
    out=$(timeout 60 bash "$launch" 2 "$ROOT/07_mnist_mlp/mnist_mlp" --bogus --timeout 20 2>&1); rc=$?
    if [ "$rc" -eq 2 ] && printf '%s' "$out" | grep -q "^\[rank 0\] mnist_mlp: rank 0: unknown argument '--bogus'" &&
        printf '%s' "$out" | grep -q "^\[rank 1\] mnist_mlp: rank 1: unknown argument '--bogus'" &&
        printf '%s' "$out" | grep -q "exit status, rank 0 2, rank 1 2"; then
        echo "PASS launch.sh 2 mnist_mlp --bogus: both ranks exit 2, each with the reason"
    else
        echo "FAIL launch.sh 2 mnist_mlp --bogus (exit $rc)"; printf '%s\n' "$out" | tail -n 12 | sed 's/^/    /'
    fi
fi

# chapter_tool_cases NAME CASE...: chapter 07's tool NAME (a second binary, in its tools/
# folder) answers the common cases and refuses each CASE (its own arguments, one string each).
chapter_tool_cases() {
    local name=$1 bin="$ROOT/07_mnist_mlp/tools/$1" args; shift
    if [ -x "$bin" ]; then
        common_cli_cases "$bin"
        for args in "$@"; do
            # shellcheck disable=SC2086
            expect_usage_error "$name $args" "$bin" $args
        done
    elif [ -d "$ROOT/07_mnist_mlp" ]; then
        echo "FAIL cli $name: $bin was not built"
    fi
}

# products_alone (the persistent trainers' two products alone, for Nsight Compute): its own
# bounds and missing values.
chapter_tool_cases products_alone "-n 257" "--kernel" "--reps"

# cluster_barriers (what a cluster barrier costs; it knows only --reps): --reps out of
# range, not a number, or without a value.
chapter_tool_cases cluster_barriers "--reps 1000001" "--reps abc" "--reps"

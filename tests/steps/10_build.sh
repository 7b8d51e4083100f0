# Step 1: every chapter builds (a compile error is a failure). The chapters build side by
# side, one per CPU, the largest first; every 15 s a line says what is being compiled.
#
# What is built: the targets `make` picks (this GPU's own, or ARCH's). Where there is
# neither a GPU nor ARCH, `make` would build five targets, which takes a 2-core machine
# many minutes; this step builds sm_90a, the target with the most code behind it, and
# compiles main.cu to PTX for the other virtual architectures of the default list
# (compute_80, whose PTX the sm_80, sm_86 and sm_89 machine code come from, and
# compute_90): every line of device code goes through the compiler's front end for every
# target, and sm_90a's through ptxas too. `make` afterwards builds the five in full (the
# binaries remember the command they were built with: common.mk's .build_flags).
source "$ROOT/tests/lib.sh"
jobs=$(nproc 2>/dev/null || echo 2)
mode=""
if [ -n "${ARCH+set}" ]; then
    echo "... building for ARCH=$ARCH"
elif have_gpu; then
    echo "... building for this machine's GPU (nvidia-smi says which)"
else
    mode="ARCH=sm_90"
    echo "... no GPU and no ARCH: building sm_90a, and main.cu's PTX for" \
        "$(sed -n 's/^PTX_ARCHS ?= //p' "$ROOT/common.mk") (\`make\` builds every target in full)"
fi

# The chapters, the largest sources first: they take longest, so they start first.
order=$(for ch in $CHAPTERS; do
    echo "$(cat "$ROOT/$ch"/*.cu "$ROOT/$ch"/*.cuh "$ROOT/$ch"/*/*.cuh 2>/dev/null | wc -c) $ch"
done | sort -rn | cut -d' ' -f2)
tasks=()
for ch in $order; do
    # shellcheck disable=SC2086  # $mode is one word or none
    tasks+=("$ch|build|make -C $ROOT/$ch -j$jobs $mode")
    [ -n "$mode" ] && tasks+=("$ch|ptx|make -C $ROOT/$ch -j$jobs ptx_check")
done
echo "... building ${#tasks[@]} parts of $(echo "$CHAPTERS" | wc -w) chapters, $jobs at a time (logs: tests/build/build_*.log)"

# Run the tasks, at most $jobs at a time.
mkdir -p "$ROOT/tests/build"
pids=() names=() logs=()
start=$SECONDS last=$SECONDS next=0
declare -A failed_part=() parts_left=() began=()
for t in "${tasks[@]}"; do ch=${t%%|*}; parts_left[$ch]=$(( ${parts_left[$ch]:-0} + 1 )); done
while [ "$next" -lt "${#tasks[@]}" ] || [ "${#pids[@]}" -gt 0 ]; do
    while [ "$next" -lt "${#tasks[@]}" ] && [ "${#pids[@]}" -lt "$jobs" ]; do
        IFS='|' read -r ch part cmd <<< "${tasks[$next]}"
        log="$ROOT/tests/build/build_${ch}_$part.log"
        bash -c "$cmd" > "$log" 2>&1 &
        began[$ch]=${began[$ch]:-$SECONDS}
        pids+=($!) names+=("$ch|$part") logs+=("$log")
        next=$((next + 1))
    done
    sleep 1
    for i in "${!pids[@]}"; do
        kill -0 "${pids[$i]}" 2>/dev/null && continue
        wait "${pids[$i]}"; rc=$?
        IFS='|' read -r ch part <<< "${names[$i]}"
        [ "$rc" -eq 0 ] || failed_part[$ch]="${failed_part[$ch]:-}${logs[$i]} "
        parts_left[$ch]=$(( parts_left[$ch] - 1 ))
        if [ "${parts_left[$ch]}" -eq 0 ]; then
            if [ -z "${failed_part[$ch]:-}" ]; then echo "PASS build $ch (in $((SECONDS - began[$ch])) s)"
            else
                echo "FAIL build $ch"
                for l in ${failed_part[$ch]}; do
                    echo "    $(basename "$l"):"; grep -v '^\.\.\. ' "$l" | tail -n 30 | sed 's/^/    /'
                done
            fi
        fi
        unset 'pids[i]' 'names[i]' 'logs[i]'
    done
    pids=("${pids[@]}") names=("${names[@]}") logs=("${logs[@]}")
    # Every 15 s: what each running part is compiling (from common/nvcc.sh's lines: each
    # output's latest step, until it is done).
    if [ $((SECONDS - last)) -ge 15 ] && [ "${#pids[@]}" -gt 0 ]; then
        last=$SECONDS
        now=$(cat "${logs[@]}" | awk '
            /^\.\.\. / {
                what = $2; sub(/:$/, "", what); rest = substr($0, length($2) + 6)
                if (rest ~ /^done in /) { delete at[what]; next }
                sub(/^[0-9]+ s, still at /, "", rest)
                if (!(what in seen)) { seen[what] = 1; order[++n] = what }
                at[what] = rest
            }
            END {
                for (i = 1; i <= n; i++)
                    if (order[i] in at) { printf "%s%s: %s", sep, order[i], at[order[i]]; sep = "; " }
            }')
        echo "... $((SECONDS - start)) s: ${now:-starting}"
    fi
done

# Step 4: on a machine with a GPU, every chapter's --check and the cases listed in each
# chapter's gpu_tests.txt (in its tests/ folder or at its top; "name | command", run from
# the repository root). A case that exits 77 is skipped, its last line of output the reason (a data set that is not there;
# a binary that finds no usable GPU exits 77 too). Without a GPU every case is skipped:
# the list goes to the log, and the screen gets one line a chapter.
source "$ROOT/tests/lib.sh"
cases=() chapter_of=()
for ch in $CHAPTERS; do
    cases+=("$ch --check | $(chapter_bin "$ch" | sed "s|^$ROOT/||") --check")
    chapter_of+=("$ch")
    gpu_tests=$(chapter_test_file "$ch" gpu_tests.txt)
    [ -f "$gpu_tests" ] || continue
    while IFS= read -r line; do
        case "$line" in ''|'#'*) continue ;; esac
        cases+=("$line")
        chapter_of+=("$ch")
    done < "$gpu_tests"
done
if ! have_gpu; then
    echo "... no usable GPU ($NO_GPU): all ${#cases[@]} GPU cases skipped (the list: tests/build/40_gpu.log)"
    for i in "${!cases[@]}"; do
        echo "SKIP $(printf '%s' "${cases[$i]%%|*}" | sed 's/ *$//'): $NO_GPU"
    done | log_only
    for ch in $CHAPTERS; do
        n=0
        for c in "${chapter_of[@]}"; do [ "$c" = "$ch" ] && n=$((n + 1)); done
        echo "... $ch: $n GPU case$([ "$n" -eq 1 ] || echo s) skipped"
    done
    exit 0
fi
for c in "${cases[@]}"; do
    name=$(printf '%s' "${c%%|*}" | sed 's/ *$//'); cmd=${c#*| }
    out=$(cd "$ROOT" && bash -c "$cmd" 2>&1); rc=$?
    if [ "$rc" -eq 77 ]; then echo "SKIP $name: $(printf '%s\n' "$out" | tail -n 1)"
    elif [ "$rc" -eq 0 ]; then echo "PASS $name"
    else echo "FAIL $name (exit $rc)"; printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
    fi
done

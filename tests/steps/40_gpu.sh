# Step 4: on a machine with a GPU, every chapter's --check and the cases listed in each
# chapter's gpu_tests.txt (NN_topic/tests/gpu_tests.txt, else NN_topic/gpu_tests.txt;
# "name | command", run from the repository root); without a
# GPU each is reported as skipped, with the reason. A case that exits 77 is skipped too,
# its last line of output the reason (a data set that is not there, say).
source "$ROOT/tests/lib.sh"
cases=()
for ch in $CHAPTERS; do
    cases+=("$ch --check | $(chapter_bin "$ch" | sed "s|^$ROOT/||") --check")
    testfile=$(chapter_file "$ch" gpu_tests.txt)
    [ -f "$testfile" ] || continue
    while IFS= read -r line; do
        case "$line" in ''|'#'*) continue ;; esac
        cases+=("$line")
    done < "$testfile"
done
for c in "${cases[@]}"; do
    name=$(printf '%s' "${c%%|*}" | sed 's/ *$//'); cmd=${c#*| }
    if ! have_gpu; then echo "SKIP $name: no NVIDIA GPU on this machine (nvidia-smi finds none)"; continue; fi
    out=$(cd "$ROOT" && bash -c "$cmd" 2>&1); rc=$?
    if [ "$rc" -eq 77 ]; then echo "SKIP $name: $(printf '%s\n' "$out" | tail -n 1)"
    elif [ "$rc" -eq 0 ]; then echo "PASS $name"
    else echo "FAIL $name (exit $rc)"; printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
    fi
done

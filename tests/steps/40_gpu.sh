# Step 4: on a machine with a GPU, every chapter's --check and the cases listed in each
# chapter's gpu_tests.txt ("name | command", run from the repository root); without a
# GPU each is reported as skipped, with the reason.
source "$ROOT/tests/lib.sh"
cases=()
for ch in $CHAPTERS; do
    cases+=("$ch --check | $(chapter_bin "$ch" | sed "s|^$ROOT/||") --check")
    [ -f "$ROOT/$ch/gpu_tests.txt" ] || continue
    while IFS= read -r line; do
        case "$line" in ''|'#'*) continue ;; esac
        cases+=("$line")
    done < "$ROOT/$ch/gpu_tests.txt"
done
for c in "${cases[@]}"; do
    name=$(printf '%s' "${c%%|*}" | sed 's/ *$//'); cmd=${c#*| }
    if ! have_gpu; then echo "SKIP $name: no NVIDIA GPU on this machine (nvidia-smi finds none)"; continue; fi
    (cd "$ROOT" && run_expect "$name" 0 bash -c "$cmd")
done

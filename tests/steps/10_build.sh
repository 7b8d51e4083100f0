# Step 1: every chapter builds (a compile error is a failure).
source "$ROOT/tests/lib.sh"
for ch in $CHAPTERS; do
    if out=$(make -s -C "$ROOT/$ch" 2>&1); then echo "PASS build $ch"; else
        echo "FAIL build $ch"; printf '%s\n' "$out" | tail -n 30 | sed 's/^/    /'
    fi
done

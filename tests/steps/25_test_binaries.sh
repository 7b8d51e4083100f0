# Step 2b: the binaries only tests use (a chapter Makefile's test-binaries target, written
# into tests/build/) compile, with or without a GPU; step 4 runs them where there is one.
source "$ROOT/tests/lib.sh"
for ch in $CHAPTERS; do
    grep -q '^test-binaries:' "$ROOT/$ch/Makefile" || continue
    if out=$(make -s -C "$ROOT/$ch" test-binaries 2>&1); then echo "PASS build test binaries of $ch"; else
        echo "FAIL build test binaries of $ch"; printf '%s\n' "$out" | tail -n 30 | sed 's/^/    /'
    fi
done

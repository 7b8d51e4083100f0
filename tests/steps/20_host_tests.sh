# Step 2: host tests that need no GPU. Every tests/host/*.c is compiled with gcc and run;
# each prints its own PASS/FAIL/SKIP lines.
source "$ROOT/tests/lib.sh"
mkdir -p "$ROOT/tests/build"
echo "... compiling and running $(ls "$ROOT"/tests/host/*.c | wc -l) host tests (tests/host/*.c, gcc): CPU references, readers, CLI"
for src in "$ROOT"/tests/host/*.c; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .c)
    exe="$ROOT/tests/build/$name"
    if ! out=$(gcc -std=c11 -O1 -g -Wall -Wextra -D_GNU_SOURCE -pthread -I"$ROOT" -o "$exe" "$src" -lm -lz 2>&1); then
        echo "FAIL compile $name"; printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'; continue
    fi
    (cd "$ROOT/tests/build" && "$exe")
    rc=$?
    [ "$rc" -eq 0 ] || echo "FAIL $name exited $rc"
done

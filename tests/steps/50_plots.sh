# Step 5: the plotting script draws every chapter of a small CSV (tests/data/sample.csv).
source "$ROOT/tests/lib.sh"
py=python3
python3 -c 'import matplotlib' 2>/dev/null || py="$ROOT/.venv/bin/python"
if ! "$py" -c 'import matplotlib' 2>/dev/null; then
    echo "... python3 has no matplotlib: making .venv from requirements.txt (make venv)"
    if ! (cd "$ROOT" && make -s venv >/dev/null 2>&1) || ! "$py" -c 'import matplotlib' 2>/dev/null; then
        echo "SKIP plot.py on a sample CSV: matplotlib is not importable and the venv could not be made"
        exit 0
    fi
fi
out="$ROOT/tests/build/plots"
rm -rf "$out"; mkdir -p "$out/results"
cp "$ROOT/tests/data/sample.csv" "$out/results/Test_GPU.csv"
run_expect "plot.py on a sample CSV" 0 "$py" "$ROOT/plots/plot.py" "$out/results" --out "$out"
for ch in $(cut -d, -f2 "$ROOT/tests/data/sample.csv" | tail -n +2 | sort -u); do
    if [ -s "$out/$ch.png" ]; then echo "PASS plot $ch.png drawn"; else echo "FAIL plot $ch.png missing"; fi
done
# Chapter 05's shape-sweep figure (plot_extra.py) from the sample's sweep rows.
if [ -s "$out/05_matmul_tiled_shapes.png" ]; then echo "PASS plot 05_matmul_tiled_shapes.png drawn"
else echo "FAIL plot 05_matmul_tiled_shapes.png missing"; fi
run_expect "plot.py rejects a CSV with a wrong header" 2 bash -c "mkdir -p '$out/bad' && echo 'a,b' > '$out/bad/x.csv' && '$py' '$ROOT/plots/plot.py' '$out/bad' --out '$out'"

# update_results.py: a chapter's rows replaced whole, or (--rows) row by row in place with the
# new ones after the chapter's rows; a missing argument is exit 2.
u="$out/update"; mkdir -p "$u"; S="$ROOT/tests/data/sample.csv"
{ head -1 "$S"; grep ',05_matmul_tiled,' "$S" | head -2 | sed 's/^Test GPU,/New GPU,/'
  grep ',05_matmul_tiled,' "$S" | head -1 | awk -F, -v OFS=, '{$1 = "New GPU"; $5 = "7x7x7"; print}'
} > "$u/new.csv"
cp "$S" "$u/whole.csv"; cp "$S" "$u/rows.csv"
run_expect "update_results.py replaces a chapter" 0 python3 "$ROOT/plots/update_results.py" "$u/whole.csv" "$u/new.csv"
run_expect "update_results.py --rows replaces rows" 0 python3 "$ROOT/plots/update_results.py" --rows "$u/rows.csv" "$u/new.csv"
run_expect "update_results.py: the chapter's rows are the new file's" 0 bash -c \
    "[ \$(grep -c ',05_matmul_tiled,' '$u/whole.csv') -eq 3 ] && [ \$(grep -c '^Test GPU,01_' '$u/whole.csv') -eq 9 ]"
run_expect "update_results.py --rows: two rows in place, one added after the chapter's" 0 bash -c \
    "[ \$(wc -l < '$u/rows.csv') -eq \$((\$(wc -l < '$S') + 1)) ] && diff <(cut -d, -f2- '$S') <(cut -d, -f2- '$u/rows.csv' | sed '/,7x7x7,/d') >/dev/null && [ \$(grep -c '^New GPU' '$u/rows.csv') -eq 3 ] && tail -1 '$u/rows.csv' | grep -q '^New GPU,05_matmul_tiled,.*,7x7x7,'"
run_expect "update_results.py without a second file is exit 2" 2 python3 "$ROOT/plots/update_results.py" --rows "$u/rows.csv"

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

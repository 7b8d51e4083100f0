# Step 6: fuzz chapter 07's IDX and model-file readers with libFuzzer + AddressSanitizer
# for a bounded time (FUZZ_SECONDS, default 10). SKIP where clang's libFuzzer is missing.
# The seeds are four hand-made files and tests/data/fuzz_seeds/, the inputs that reached
# every branch a 30 s run from the four alone reached (58 edges, 83 features, where 10 s
# from the four reached 54 to 58): from them a 10 s run starts at that coverage, and a
# 60 s run found nothing more.
source "$ROOT/tests/lib.sh"
secs=${FUZZ_SECONDS:-10}
src="$ROOT/07_mnist_mlp/tests/fuzz_idx.c"
out="$ROOT/tests/build/fuzz"
[ -f "$src" ] || { echo "SKIP fuzz: $src not found"; exit 0; }
if ! command -v clang >/dev/null 2>&1; then echo "SKIP fuzz 07 readers: clang is not installed"; exit 0; fi
mkdir -p "$out/corpus"
if ! msg=$(clang -g -O1 -fsanitize=fuzzer,address -I"$ROOT" -o "$out/fuzz_idx" "$src" -lz 2>&1); then
    if printf '%s' "$msg" | grep -qi 'fuzzer'; then
        echo "SKIP fuzz 07 readers: this clang has no libFuzzer ($(printf '%s' "$msg" | head -n 1))"; exit 0
    fi
    echo "FAIL fuzz 07 readers: build"; printf '%s\n' "$msg" | tail -n 20 | sed 's/^/    /'; exit 0
fi
# Seeds: a small valid image file, a label file, a gzip image file, a model header.
printf '\000\000\000\000\010\003\000\000\000\001\000\000\000\034\000\000\000\034' > "$out/corpus/images"
head -c 784 /dev/zero >> "$out/corpus/images"
printf '\001\000\000\000\010\001\000\000\000\003\001\002\003' > "$out/corpus/labels"
{ printf '\000\000'; tail -c +3 "$out/corpus/images" | gzip -c; } > "$out/corpus/images_gz"
printf '\003\001MLP7\001\000\000\000\020\003\000\000\001\000\000\000\012\000\000\000' > "$out/corpus/model"
cp "$ROOT"/tests/data/fuzz_seeds/* "$out/corpus/"
echo "... fuzzing chapter 07's IDX and model-file readers for ${secs} s (libFuzzer, AddressSanitizer)"
log="$out/fuzz.log"
if (cd "$out" && ./fuzz_idx -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 corpus > "$log" 2>&1); then
    echo "PASS fuzz 07 readers for ${secs}s ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$') inputs, no crash)"
else
    echo "FAIL fuzz 07 readers (log: $log)"; grep -E 'ERROR|SUMMARY|Test unit' "$log" | head -n 10 | sed 's/^/    /'
fi

# Step: every C/CUDA file is formatted with the repository's .clang-format (100 columns).
# `clang-format -i FILE` formats one.
source "$ROOT/tests/lib.sh"
if ! command -v clang-format >/dev/null 2>&1; then
    echo "SKIP format: clang-format is not installed (apt-get install clang-format)"
else
    cd "$ROOT" || exit 1
    files=$( (git ls-files -co --exclude-standard '*.c' '*.h' '*.cu' '*.cuh' 2>/dev/null ||
        find 0* common tests -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh') | sort -u)
    bad=()
    for f in $files; do
        [ -f "$f" ] || continue
        # clang-format leaves comments and strings as they are: their 100 columns are checked here
        if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f (clang-format -i)")
        elif ! awk 'length > 100 { exit 1 }' "$f"; then bad+=("$f (a line over 100 columns)")
        fi
    done
    if [ ${#bad[@]} -eq 0 ]; then
        echo "PASS format: $(echo "$files" | wc -w) C/CUDA files as clang-format writes them, none over 100 columns"
    else echo "FAIL format: ${#bad[@]} files are not formatted:"
        printf '    %s\n' "${bad[@]}" | head -n 20
    fi
fi

# Step: the lessons stay true. Their results tables and numbers are what plots/tables.py
# writes from the committed CSVs (`make tables` rewrites them), and tests/lesson_check.py
# checks the excerpts against the sources, the anatomy, and that no history crept in.
cd "$ROOT" || exit 1
if out=$(python3 plots/tables.py --check 2>&1); then echo "PASS lessons' tables and numbers match plots/results/"
else echo "FAIL lessons' tables and numbers differ from plots/results/ (make tables):"; printf '%s\n' "$out" | sed 's/^/    /' | head -n 20
fi
python3 tests/lesson_check.py "$ROOT"

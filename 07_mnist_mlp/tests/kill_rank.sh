#!/usr/bin/env bash
# kill_rank.sh: two ranks train through launch.sh; once rank 0 has printed its first epoch,
# rank 1 is killed (SIGKILL). Rank 0 must stop by itself within 60 s, saying that rank 1
# exited or was killed, with exit status 3. Used by gpu_tests.txt (needs 2 GPUs).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
LAUNCH_GRACE=120 bash "$root/07_mnist_mlp/part3_data_parallel/launch.sh" 2 \
    "$root/07_mnist_mlp/mnist_mlp" --train --data synthetic --epochs 1000 --batch 512 >"$log" 2>&1 &
launcher=$!
for ((k = 0; k < 1200; k++)); do
    grep -q '^\[rank 0\] .* epoch   1 ' "$log" && break
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.1
done
victim=$(sed -n 's/^launch.sh: rank 1 is pid \([0-9]*\)$/\1/p' "$log")
if [ -z "$victim" ] || ! grep -q '^\[rank 0\] .* epoch   1 ' "$log"; then
    echo "the two ranks did not start training:"
    tail -n 20 "$log"
    kill "$launcher" 2>/dev/null
    exit 1
fi
kill -KILL "$victim"
killed=$SECONDS
for ((k = 0; k < 700; k++)); do
    kill -0 "$launcher" 2>/dev/null || break
    sleep 0.1
done
took=$((SECONDS - killed))
if kill -0 "$launcher" 2>/dev/null; then
    echo "rank 0 still runs $took s after rank 1 was killed"
    kill "$launcher"
    exit 1
fi
wait "$launcher"
grep -E 'stops:|exit status' "$log"
grep -q '^\[rank 0\] mnist_mlp: rank 0 stops: rank 1 exited or was killed' "$log" &&
    grep -q 'exit status, rank 0 3, rank 1 137' "$log" || {
    echo "rank 0 did not say that rank 1 was gone, or did not exit 3:"
    tail -n 20 "$log"
    exit 1
}
echo "rank 0 stopped $took s after rank 1 was killed"
[ "$took" -le 60 ]

#!/usr/bin/env bash
# launch.sh N PROGRAM [ARGS...]: starts N ranks of PROGRAM on this machine, one process a GPU,
# the way torchrun --nproc-per-node N --no-python PROGRAM ARGS does:
#   - each rank gets RANK=r, WORLD_SIZE=N, LOCAL_RANK=r, LOCAL_WORLD_SIZE=N, and the address
#     of rank 0: MASTER_ADDR (127.0.0.1 unless set) and MASTER_PORT (unless set, a port that
#     nothing on this machine answers on);
#   - every line a rank prints (stdout and stderr) comes out prefixed "[rank r] ";
#   - "launch.sh: rank r is pid P" on stderr for each rank once it runs (to signal one);
#   - when a rank fails, the others get LAUNCH_GRACE seconds (default 15) to stop on their
#     own (mnist_mlp's ranks do, within seconds, saying why), then SIGTERM, then SIGKILL;
#   - "launch.sh: exit status, rank 0 S0, rank 1 S1, ..." on stderr at the end, and the worst
#     of them as its own exit status (128 + the signal for a rank killed by one).
# Example: 07_mnist_mlp/part3_data_parallel/launch.sh 2 07_mnist_mlp/mnist_mlp --train
set -u
usage() {
    echo "usage: launch.sh N PROGRAM [ARGS...]  (N ranks of PROGRAM on this machine)" >&2
    exit 2
}
[ $# -ge 2 ] || usage
n=$1
shift
case "$n" in '' | *[!0-9]*) echo "launch.sh: N must be a whole number, not '$n'" >&2; usage ;; esac
[ "$n" -ge 1 ] || { echo "launch.sh: N must be at least 1" >&2; usage; }
grace=${LAUNCH_GRACE:-15}

# A port nothing answers on: bash's /dev/tcp connects, so a refused connection means free.
free_port() {
    local p=$((20000 + $$ % 20000)) k
    for ((k = 0; k < 200; k++)); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return
        fi
        p=$((p + 1))
    done
    echo "launch.sh: no free port found from $((20000 + $$ % 20000)): set MASTER_PORT" >&2
    exit 1
}
export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
export MASTER_PORT=${MASTER_PORT:-$(free_port)}

dir=$(mktemp -d "${TMPDIR:-/tmp}/launch.XXXXXX")
trap 'rm -rf "$dir"' EXIT
filters=()
for ((r = 0; r < n; r++)); do
    # the rank's program writes its pid, then becomes PROGRAM; its status is written when it ends
    (
        RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n \
            sh -c 'echo $$ > "$0"; exec "$@"' "$dir/pid.$r" "$@" 2>&1
        echo $? >"$dir/status.$r"
    ) 2>&1 | sed -u "s/^/[rank $r] /" &
    filters+=($!)
done

pid_of() { cat "$dir/pid.$1" 2>/dev/null; }
for ((r = 0; r < n; r++)); do
    for ((k = 0; k < 100; k++)); do
        [ -s "$dir/pid.$r" ] || [ -s "$dir/status.$r" ] && break
        sleep 0.05
    done
    [ -s "$dir/pid.$r" ] && echo "launch.sh: rank $r is pid $(pid_of $r)" >&2
done

# Signals to the rest of the ranks: those that have not ended.
signal_rest() {
    local r p
    for ((r = 0; r < n; r++)); do
        p=$(pid_of $r)
        [ -s "$dir/status.$r" ] || { [ -n "$p" ] && kill -"$1" "$p" 2>/dev/null; }
    done
}
trap 'signal_rest TERM; sleep 1; signal_rest KILL; exit 130' INT TERM

failed_at=""
termed=0
while :; do
    ended=0
    for ((r = 0; r < n; r++)); do
        [ -s "$dir/status.$r" ] || continue
        ended=$((ended + 1))
        if [ "$(cat "$dir/status.$r")" != 0 ] && [ -z "$failed_at" ]; then failed_at=$SECONDS; fi
    done
    [ "$ended" -eq "$n" ] && break
    if [ -n "$failed_at" ] && [ $((SECONDS - failed_at)) -ge "$grace" ]; then
        if [ "$termed" -eq 0 ]; then
            echo "launch.sh: a rank failed $grace s ago and $((n - ended)) still run: SIGTERM" >&2
            signal_rest TERM
            termed=$SECONDS
        elif [ $((SECONDS - termed)) -ge 5 ]; then
            echo "launch.sh: SIGKILL to the ranks still running" >&2
            signal_rest KILL
        fi
    fi
    sleep 0.1
done
# every line printed: each filter ends when its rank's output closes (within 3 s; a child
# a killed rank left behind may hold it open)
for ((k = 0; k < 30; k++)); do
    alive=0
    for f in "${filters[@]}"; do kill -0 "$f" 2>/dev/null && alive=1; done
    [ "$alive" -eq 0 ] && break
    sleep 0.1
done
for f in "${filters[@]}"; do kill "$f" 2>/dev/null; done
wait 2>/dev/null

worst=0
line="launch.sh: exit status"
for ((r = 0; r < n; r++)); do
    s=$(cat "$dir/status.$r")
    line="$line, rank $r $s"
    [ "$s" -gt "$worst" ] && worst=$s
done
echo "$line" >&2
exit "$worst"

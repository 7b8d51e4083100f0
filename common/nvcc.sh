#!/usr/bin/env bash
# nvcc.sh NVCC ARGS...: runs NVCC ARGS and says what it compiles while it does. A chapter
# built for several GPUs takes minutes on a small machine, and nvcc is silent all that
# time; this prints one line as nvcc starts each target (read from `nvcc -v`'s command
# lines: cicc writes a virtual architecture's PTX, ptxas a GPU's machine code, gcc the host
# code) and, every 15 s, which it is still at. Each line starts with "... " and names the
# chapter and the output. Warnings and errors pass through unchanged; the exit status is
# nvcc's. Every chapter's Makefile compiles through it (common.mk's NVCC_RUN).
set -u
nvcc=$1
shift
out="" prev=""
for a in "$@"; do
    [ "$prev" = -o ] && out=$a
    prev=$a
done
out=$(basename "${out:-a.out}")
what=$(basename "$PWD")/${out#.ptx_check_} # common.mk's ptx_check: CHAPTER/compute_80.ptx
start=$SECONDS
doing="preprocessing"

# The step a `nvcc -v` command line starts, or nothing for the small ones.
step_of() {
    case "$1" in
        *cicc\"*)
            local arch
            arch=$(printf '%s' "$1" | grep -oE -- '-arch compute_[0-9]+[a-z]?' | head -n 1)
            echo "${arch#-arch } PTX (cicc)" ;;
        ptxas\ -arch=sm_*)
            local arch=${1#ptxas -arch=}
            echo "${arch%% *} machine code (ptxas)" ;;
        gcc\ *\ -c\ *cudafe1.cpp*) echo "host code (gcc)" ;;
    esac
}

# nvcc -v writes its command lines ("#$ ...") to stderr along with any diagnostics: the
# former become progress lines on stdout, the latter go back to stderr as they were.
exec 3>&1
"$nvcc" -v "$@" 2>&1 >&3 | {
    while :; do
        if IFS= read -r -t 15 line; then
            case "$line" in
                '#$ '*)
                    step=$(step_of "${line#\#\$ }")
                    [ -z "$step" ] && continue
                    doing=$step
                    echo "... $what: $step" >&3 ;;
                '# --error '*) ;; # -v's echo of the exit status
                *) printf '%s\n' "$line" >&2 ;;
            esac
        elif [ $? -gt 128 ]; then
            echo "... $what: $((SECONDS - start)) s, still at $doing" >&3
        else
            break
        fi
    done
}
rc=${PIPESTATUS[0]}
[ "$rc" -eq 0 ] && echo "... $what: done in $((SECONDS - start)) s"
exit "$rc"

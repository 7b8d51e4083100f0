/* Exercise 3 (warm-up): the 64 x 64 tile of `transpose_tile64` without its padding column.
 *
 * Asked: instantiate transpose_smem<64, 0, 8>, predict how many shared-memory bank
 * conflicts Nsight Compute counts at 8192 x 8192 and on which side (the stores into the tile
 * or the loads out of it), then look them up:
 *   ncu --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,\
 *   l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum \
 *     ./02_thread_indexing/thread_indexing --bench --reps 1 --kernel ex3_transpose_tile64_nopad
 *
 * Answer: a tile row is now 64 floats, and 64 is a multiple of the 32 banks, so the column
 * a warp reads after the barrier, tile[c][r] for 32 consecutive c, lies in one bank: every
 * such load is a 32-way conflict, 31 extra passes. The stores into the tile write 32
 * neighbouring words of a row and have no conflict: op_st stays near zero, op_ld is large.
 * The matrix has 8192 x 8192 / 32 = 2.1 million warp-wide column loads, so expect about
 * 31 x 2.1 = 65 million conflicts on op_ld, the count ncu_H200.txt shows for
 * `transpose_smem` (the 32 x 32 tile without padding): the tile's size does not change
 * how many column loads there are. It still passes --check; conflicts cost time, not
 * correctness. */
#ifndef CH02_EX3_TRANSPOSE_TILE64_NOPAD_CUH
#define CH02_EX3_TRANSPOSE_TILE64_NOPAD_CUH

#include "../kernels.cuh"

static inline void launch_ex3_transpose_tile64_nopad(const float *in, float *out, int nx, int ny)
{
    launch_transpose_smem<64, 0, 8>(in, out, nx, ny);
}

#endif

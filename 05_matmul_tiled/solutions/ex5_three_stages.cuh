/* Exercise 5 (stretch): a ring of three stages, written out.
 *
 * Asked: double_buffer (step 9) keeps two K slices of 8 in shared memory, one being
 * multiplied and one being copied. Write the main loop for three stages of 16 (a 128x128
 * tile, 8x8 a thread, as in double_buffer), using the chapter's copy (sgemm_copy_plan,
 * sgemm_load_stage_async) and inner product (sgemm_tile_multiply) but your own ring:
 * how many slices are in flight before the loop; which cp.async.wait_group count says
 * "slice kt has landed"; which stage may be refilled at iteration kt, and why one
 * __syncthreads a slice is still enough. Predict its shared memory, its blocks an SM and
 * its speed against double_buffer and hopper.
 *
 * Answer. Before the loop, slices 0 and 1 are copied, one commit group each. At iteration
 * kt this thread has committed kt + 2 groups (slices 0 .. kt + 1), so wait_group 1 (at
 * most one group still pending) means its copies of slice kt have landed; the barrier
 * after it makes that true of every thread's copies, and also says every warp has
 * finished multiplying slice kt - 1. That slice's stage, (kt - 1) % 3 = (kt + 2) % 3, is
 * the one refilled with slice kt + 2, right after the barrier, so one barrier a slice is
 * enough. A group is committed on every iteration, empty or not, so that the count stays
 * the same at the end of K. Shared memory: 3 x 16 x (132 + 128) floats = 49,920 bytes (a
 * dynamic allocation: more than the 48 KB of a static one), two blocks an SM by
 * registers (128 a thread, the same __launch_bounds__ as double_buffer) and by shared
 * memory. Slices of 16 halve the barriers and copy rounds per FMA, and two slices in
 * flight hide DRAM latency better than one: expect a clear step over double_buffer, still
 * short of hopper, whose 128x256 tile and 8x16 threads use each shared load twice as often.
 * Check with `--bench --kernel double_buffer,ex5_three_stages,hopper`. (The chapter's
 * sgemm_mainloop is this loop for any number of stages: compare.) */
#ifndef CH05_SOLUTIONS_EX5_THREE_STAGES_CUH
#define CH05_SOLUTIONS_EX5_THREE_STAGES_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/09_double_buffer.cuh"

/* double_buffer's tile and thread layout, K slices of 16, three stages. */
typedef SgemmConfig<128, 128, 16, 8, 8, 4, 3> Ex5Cfg;

template <typename Cfg> __global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    ex5_three_stages_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                            float beta, float *C, bool b_vec, bool c_vec)
{
    static_assert(Cfg::STAGES == 3, "the ring below is written for three stages");
    extern __shared__ float4 ex5_smem[];
    float *smem = (float *)ex5_smem;
    int m0 = blockIdx.y * Cfg::BM, n0 = blockIdx.x * Cfg::BN;
    int row, col;
    sgemm_thread_origin<Cfg>(threadIdx.x, &row, &col);
    SgemmCopyPlan plan = sgemm_copy_plan<Cfg>(A, B, M, N, N, K, m0, n0, b_vec);
    int tiles = (K + Cfg::BK - 1) / Cfg::BK;
    float acc[Cfg::TM][Cfg::TN] = {{0.0f}};
    /* slices 0 and 1 in flight, one commit group each (empty past the end of K) */
#pragma unroll
    for (int s = 0; s < 2; s++) {
        if (s < tiles)
            sgemm_load_stage_async<Cfg>(smem + s * Cfg::STAGE_FLOATS, plan, A, B, N, K,
                                        s * Cfg::BK);
        sgemm_cp_async_commit();
    }
    for (int kt = 0; kt < tiles; kt++) {
        /* kt + 2 groups committed, at most the newest one (slice kt + 1) still pending: this
           thread's copies of slice kt have landed */
        sgemm_cp_async_wait<1>();
        /* ... everyone's have, and everyone has finished multiplying slice kt - 1 */
        __syncthreads();
        /* so slice kt - 1's stage, (kt + 2) % 3, takes slice kt + 2 */
        if (kt + 2 < tiles)
            sgemm_load_stage_async<Cfg>(smem + (kt + 2) % 3 * Cfg::STAGE_FLOATS, plan, A, B, N, K,
                                        (kt + 2) * Cfg::BK);
        sgemm_cp_async_commit();
        const float *As = smem + kt % 3 * Cfg::STAGE_FLOATS;
        sgemm_tile_multiply<Cfg>(As, As + Cfg::BK * Cfg::AS, acc, row, col);
    }
    sgemm_tile_store<Cfg>(C, M, N, alpha, beta, c_vec, acc, m0 + row, n0 + col);
}

static inline void ex5_three_stages(int M, int N, int K, float alpha, const float *A,
                                    const float *B, float beta, float *C)
{
    typedef Ex5Cfg Cfg;
    static int blocks = -1;
    static unsigned long long set_on = 0;
    /* sets the kernel's dynamic shared memory limit on this GPU (once per device) */
    sgemm_kernel_occupancy<Cfg>(ex5_three_stages_kernel<Cfg>, &blocks, &set_on);
    dim3 grid(sgemm_ceil_div(N, Cfg::BN), sgemm_ceil_div(M, Cfg::BM));
    bool b_vec = N % 4 == 0 && sgemm_aligned16(B);
    bool c_vec = N % 4 == 0 && sgemm_aligned16(C);
    ex5_three_stages_kernel<Cfg>
        <<<grid, Cfg::THREADS, Cfg::SMEM_BYTES>>>(M, N, K, alpha, A, B, beta, C, b_vec, c_vec);
    CHECK_LAUNCH();
}

#endif

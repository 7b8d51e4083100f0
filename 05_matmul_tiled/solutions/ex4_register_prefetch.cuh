/* Exercise 4 (practice): double buffering without cp.async.
 *
 * Asked: before sm_80 there was no cp.async, and kernels overlapped the next slice's loads
 * with this slice's FMAs through registers. Write that version of warptile (step 8): two
 * shared-memory buffers; at the top of each slice, issue the global loads of the next
 * slice into registers; multiply this slice from one buffer; then store the registers
 * into the other buffer, and meet at one barrier. Before running, predict its registers
 * and shared memory, and where it lands between warptile and double_buffer.
 *
 * Answer. The loads are issued before the slice's 512 FMAs and consumed (stored to shared
 * memory) after them, so their latency hides behind the FMAs as with cp.async; one barrier
 * a slice suffices because the buffer being written was last read in the slice before,
 * which every thread finished before that slice's barrier. What it costs: the slice in
 * flight lives in registers, one float4 of A and one of B a thread (8 more registers than
 * warptile's loop needs), and every element still passes through a register and a
 * shared-memory store instruction, where cp.async copies straight into shared memory.
 * Shared memory doubles (two buffers of 8 x (132 + 128) floats, 16,640 bytes, still far
 * below what limits the blocks an SM holds). The registers decide: warptile's 116 and
 * double_buffer's 128 (-Xptxas -v) both allow two blocks of 256 threads an SM; this one
 * stays within the same __launch_bounds__ budget of 128. Prediction: most of the step
 * from warptile to double_buffer, a little less (more instructions a slice). Check with
 * `--bench --kernel warptile,ex4_register_prefetch,double_buffer`. */
#ifndef CH05_SOLUTIONS_EX4_REGISTER_PREFETCH_CUH
#define CH05_SOLUTIONS_EX4_REGISTER_PREFETCH_CUH

#include "common/cuda_utils.cuh"
#include "05_matmul_tiled/fp32/08_warptile.cuh"

/* The global loads of one slice into registers: this thread's A_LOADS float4 of A and
 * B_LOADS float4 of B (warptile's assignment of threads to elements), zeros outside. */
template <typename Cfg, int A_LOADS, int B_LOADS>
__device__ __forceinline__ void ex4_load_slice(float4 (&ra)[A_LOADS], float4 (&rb)[B_LOADS],
                                               const float *A, const float *B, int M, int N, int K,
                                               int m0, int n0, int k0, bool a_vec, bool b_vec)
{
    int tid = threadIdx.x;
#pragma unroll
    for (int l = 0; l < A_LOADS; l++) {
        int idx = tid + l * Cfg::THREADS;
        int m = idx / (Cfg::BK / 4), k = (idx % (Cfg::BK / 4)) * 4;
        ra[l] = sgemm_load4(A, m0 + m, k0 + k, M, K, a_vec);
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; l++) {
        int idx = tid + l * Cfg::THREADS;
        int k = idx / (Cfg::BN / 4), n = (idx % (Cfg::BN / 4)) * 4;
        rb[l] = sgemm_load4(B, k0 + k, n0 + n, K, N, b_vec);
    }
}

/* ... and from the registers into one shared-memory buffer: A transposed and padded, B as
 * it is (warptile's layout). */
template <typename Cfg, int A_LOADS, int B_LOADS> __device__ __forceinline__ void
ex4_store_slice(float *As, float *Bs, const float4 (&ra)[A_LOADS], const float4 (&rb)[B_LOADS])
{
    int tid = threadIdx.x;
#pragma unroll
    for (int l = 0; l < A_LOADS; l++) {
        int idx = tid + l * Cfg::THREADS;
        int m = idx / (Cfg::BK / 4), k = (idx % (Cfg::BK / 4)) * 4;
        As[(k + 0) * Cfg::AS + m] = ra[l].x;
        As[(k + 1) * Cfg::AS + m] = ra[l].y;
        As[(k + 2) * Cfg::AS + m] = ra[l].z;
        As[(k + 3) * Cfg::AS + m] = ra[l].w;
    }
#pragma unroll
    for (int l = 0; l < B_LOADS; l++) {
        int idx = tid + l * Cfg::THREADS;
        int k = idx / (Cfg::BN / 4), n = (idx % (Cfg::BN / 4)) * 4;
        *(float4 *)&Bs[k * Cfg::BN + n] = rb[l];
    }
}

/* warptile's tiles and thread layout, the next slice in flight through registers. */
template <typename Cfg> __global__ void __launch_bounds__(Cfg::THREADS, Cfg::MIN_BLOCKS)
    ex4_register_prefetch_kernel(int M, int N, int K, float alpha, const float *A, const float *B,
                                 float beta, float *C, bool a_vec, bool b_vec, bool c_vec)
{
    constexpr int A_LOADS = Cfg::BM * Cfg::BK / 4 / Cfg::THREADS;
    constexpr int B_LOADS = Cfg::BK * Cfg::BN / 4 / Cfg::THREADS;
    __shared__ __align__(16) float As[2][Cfg::BK * Cfg::AS];
    __shared__ __align__(16) float Bs[2][Cfg::BK * Cfg::BN];
    int m0 = blockIdx.y * Cfg::BM, n0 = blockIdx.x * Cfg::BN;
    int row, col;
    sgemm_thread_origin<Cfg>(threadIdx.x, &row, &col);
    float acc[Cfg::TM][Cfg::TN] = {{0.0f}};
    float4 ra[A_LOADS], rb[B_LOADS];
    /* slice 0 into buffer 0 */
    ex4_load_slice<Cfg>(ra, rb, A, B, M, N, K, m0, n0, 0, a_vec, b_vec);
    ex4_store_slice<Cfg>(As[0], Bs[0], ra, rb);
    __syncthreads();
    int buf = 0;
    for (int k0 = 0; k0 < K; k0 += Cfg::BK) {
        bool more = k0 + Cfg::BK < K;
        /* the next slice's loads go out before this slice's FMAs ... */
        if (more) ex4_load_slice<Cfg>(ra, rb, A, B, M, N, K, m0, n0, k0 + Cfg::BK, a_vec, b_vec);
        sgemm_tile_multiply<Cfg>(As[buf], Bs[buf], acc, row, col);
        /* ... and land in the other buffer after them. Nobody reads that buffer now: its
           last readers finished the slice before, ahead of that slice's barrier. */
        if (more) ex4_store_slice<Cfg>(As[buf ^ 1], Bs[buf ^ 1], ra, rb);
        __syncthreads();
        buf ^= 1;
    }
    sgemm_tile_store<Cfg>(C, M, N, alpha, beta, c_vec, acc, m0 + row, n0 + col);
}

static inline void ex4_register_prefetch(int M, int N, int K, float alpha, const float *A,
                                         const float *B, float beta, float *C)
{
    typedef SgemmWarptileCfg Cfg;
    dim3 grid(sgemm_ceil_div(N, Cfg::BN), sgemm_ceil_div(M, Cfg::BM));
    bool a_vec = K % 4 == 0 && sgemm_aligned16(A);
    bool b_vec = N % 4 == 0 && sgemm_aligned16(B);
    bool c_vec = N % 4 == 0 && sgemm_aligned16(C);
    ex4_register_prefetch_kernel<Cfg>
        <<<grid, Cfg::THREADS>>>(M, N, K, alpha, A, B, beta, C, a_vec, b_vec, c_vec);
    CHECK_LAUNCH();
}

#endif

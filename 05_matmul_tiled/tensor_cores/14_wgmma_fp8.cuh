/* Chapter 05, part two, step 14: FP8 (e4m3) inputs on Hopper's wgmma (sm_90a only).
 *
 *   tc_wgmma_fp8           the persistent kernel (07_wgmma_persistent.cuh) on e4m3 inputs
 *   tc_wgmma_prefetch_fp8  step 12 on e4m3 inputs
 *   tc_wgmma_pingpong_fp8  step 13 on e4m3 inputs
 *
 * The contract is common.cuh's with T = e4m3 (A M x K and Bt N x K, both K-contiguous, C
 * fp32), and per-tensor scales folded into alpha: a caller whose A holds a / scale_a and Bt
 * holds b / scale_b (scaled so that the values use e4m3's range, up to 448) passes
 * alpha * scale_a * scale_b, and gets C = alpha * scale_a * scale_b * (A Bt^T) + beta * C.
 *
 * What changes against bf16 is only the element size, because every stage of the ladder's
 * Hopper kernels is counted in bytes:
 *   - a 128-byte row of a stage (the span of the 128-byte swizzle) is 128 e4m3 values, so
 *     BK = 128: the same 48 KB stages as bf16, with twice the k-slice in them;
 *   - the tensor maps describe 1-byte elements (CU_TENSOR_MAP_DATA_TYPE_UINT8: TMA only moves
 *     bytes), with the same 128-byte boxes;
 *   - the wgmma is m64nNk32 .e4m3.e4m3: 32 bytes of K per instruction, as m64nNk16 for bf16,
 *     so the 4 k-steps of a stage and the descriptors' 32-byte advance stay as they are. The
 *     PTX ISA's wgmma.mma_async section gives this form (scale-d, imm-scale-a, imm-scale-b;
 *     the transpose operands exist only for .f16/.bf16, so 8-bit operands must be K-major,
 *     which the contract is), and its shared-memory layout section states the swizzle atoms
 *     in 128-bit units, the same for every element size (T = 128 / bits elements a unit): the
 *     descriptor of a 128-byte-swizzled K-major tile (1024 bytes between 8-row groups, the
 *     leading offset unused) is the one bf16 uses.
 * Twice the multiply-adds per byte: the tensor cores run e4m3 at twice bf16's rate, so the
 * main loop takes half the time for the same shape while the epilogue (fp32 C) stays the
 * same, which is why steps 12 and 13 matter more here.
 *
 * Accumulation: the products of two e4m3 values (4 significant bits each) are exact, but the
 * tensor cores add them into the fp32 accumulators with reduced precision (about 14
 * significant bits are kept, as measured on H800 in the DeepSeek-V3 Technical Report,
 * arXiv:2412.19437, "Increasing Accumulation Precision"). These kernels do not promote
 * partial sums into separate fp32 registers every few k-steps (that needs a second set of
 * accumulators: 256 registers a thread for a 64x256 warpgroup tile); the check's tolerance
 * (driver/tc_driver.cuh) is derived for that, and the ceiling, cuBLASLt, is run in the same
 * "fast accumulation" mode. */
#ifndef CH05_TENSOR_CORES_13_WGMMA_FP8_CUH
#define CH05_TENSOR_CORES_13_WGMMA_FP8_CUH

#include <cuda_fp8.h>

#include "05_matmul_tiled/tensor_cores/13_wgmma_pingpong.cuh"

typedef __nv_fp8_e4m3 e4m3;

typedef void (*TcFp8Launcher)(int M, int N, int K, float alpha, const e4m3 *A, const e4m3 *Bt,
                              float beta, float *C);

/* 128-byte rows of 128 e4m3 values; TMA copies them as bytes. */
template <> struct TcWgType<e4m3> {
    static constexpr int BK = 128;
    static constexpr CUtensorMapDataType MAP = CU_TENSOR_MAP_DATA_TYPE_UINT8;
};

/* d += A_slice * B_slice for 32 bytes of K: m64nNk32, e4m3 x e4m3, fp32 accumulators. */
template <>
__device__ __forceinline__ void tc_wgmma<e4m3, 128>(float (&d)[64], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " TC_REGS64
                 ", %64, %65, 1, 1, 1;\n"
                 : TC_D64(0)
                 : "l"(a), "l"(b));
}

template <>
__device__ __forceinline__ void tc_wgmma<e4m3, 256>(float (&d)[128], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 " TC_REGS128
                 ", %128, %129, 1, 1, 1;\n"
                 : TC_D64(0), TC_D64(64)
                 : "l"(a), "l"(b));
}

/* ------------------------------------------------------------------ the launchers */

static inline void tc_wgmma_fp8(int M, int N, int K, float alpha, const e4m3 *A, const e4m3 *Bt,
                                float beta, float *C)
{
    int blocks = sgemm_sm_count(); /* one per SM: the persistent kernel */
    tc_wgmma_ws_launch<e4m3, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, blocks, 1);
}

static inline void tc_wgmma_prefetch_fp8(int M, int N, int K, float alpha, const e4m3 *A,
                                         const e4m3 *Bt, float beta, float *C)
{
    tc_wgmma_prefetch(M, N, K, alpha, A, Bt, beta, C);
}

static inline void tc_wgmma_pingpong_fp8(int M, int N, int K, float alpha, const e4m3 *A,
                                         const e4m3 *Bt, float beta, float *C)
{
    tc_wgmma_pingpong(M, N, K, alpha, A, Bt, beta, C);
}

#endif

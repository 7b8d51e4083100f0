/* Chapter 05: C = alpha * A * B + beta * C in fp32, row-major, ten steps from a naive
 * kernel to one tuned for Hopper, and the versions and the dispatcher for other shapes;
 * then the same product on the tensor cores, from WMMA to wgmma with TMA.
 *
 * This file is the chapter's index: every family of versions lives in a file of its own
 * beside it, and including this one (chapter 07 includes "05_matmul_tiled/kernels.cuh")
 * includes them all. Each version, under the file that holds it:
 *
 * THE FP32 LADDER (sgemm_*.cuh)
 *
 * sgemm_common.cuh        the launcher type, the alpha/beta epilogue, 16-byte load/store
 *                         helpers, the SM count and shared-memory limit of the GPU
 * sgemm_basic.cuh
 *   sgemm_naive          one thread per output; neighbouring threads walk different rows of A
 *   sgemm_coalesced      the same, with neighbouring threads on neighbouring columns of C
 *   sgemm_smem           32x32 tiles of A and B staged in shared memory
 *   sgemm_blocktile_1d   each thread computes 8 outputs of one column
 *   sgemm_blocktile_2d   each thread computes an 8x8 tile from registers
 * sgemm_vectorized.cuh
 *   sgemm_vectorized     16-byte loads, A stored transposed so fragments load as float4
 *   sgemm_padded         the transposed A padded so its stores hit 32 different banks
 * sgemm_warptile.cuh      (also SgemmConfig, the tile template that steps 8-10 share)
 *   sgemm_warptile       threads of a warp interleaved in 4x4 sub-tiles (warp tiling)
 * sgemm_pipelined.cuh
 *   sgemm_double_buffer  cp.async copies the next tile while this one is multiplied
 *   sgemm_hopper         the same kernel with the sweep's parameters (sweep.sh): 128x256 tiles,
 *                        K slices of 32, 8x16 per thread, fragments prefetched across slices
 *   sgemm_hopper_small   a 64x64-tile instance for shapes too small to fill the GPU
 * sgemm_staged_epilogue.cuh  (the plain epilogue through shared memory for an odd N, hopper's tile)
 * sgemm_splitk_epilogue.cuh  (split-K's atomic epilogues, used by the pipelined kernel)
 * sgemm_splitk.cuh
 *   sgemm_splitk         the 64x64 tiles with K split over several blocks, for small C and long K
 *   sgemm_splitk_8x8     split-K with 64x128 tiles, 8x8 per thread, vector atomics, and
 *                        the split count chosen to balance the SMs (the MLP's shapes)
 * sgemm_streamk.cuh
 *   sgemm_streamk        stream-K: the (tile, K slice) pairs dealt out evenly to one block per
 *                        slot of the GPU, partial tiles added with atomics (64x128 tiles here;
 *                        sgemm_best uses it with any tile when C has few tiles)
 * sgemm_thin.cuh
 *   sgemm_thin_m         32x128 tiles, for C with few rows (a 64-row tile would be mostly empty)
 *   sgemm_thin_n         128x32 tiles, for C with few columns
 *   sgemm_thin_n_8x8     128x64 tiles, 8x8 per thread, for C with 33 to 64 columns
 * sgemm_gemv.cuh
 *   sgemm_gemv           no tiles: B streamed once, for C with at most 8 rows (M = 1: a
 *                        matrix-vector product)
 * sgemm_model.h           (plain C) the model sgemm_best chooses by: waves, occupancy, the
 *                        remainder wave, a measured efficiency per tile
 * sgemm_best.cuh
 *   sgemm_best           the dispatcher (below)
 *
 * THE TENSOR-CORE LADDER (tc_*.cuh; contract in tc_common.cuh: A and Bt, bf16 or TF32 in,
 * fp32 accumulation and C; each version as tc_<name>_bf16 and, where listed, _tf32)
 *
 * tc_common.cuh           the contract, the launcher types, the pair-store epilogue
 * tc_swizzle.h            (plain C) the XOR swizzle, the ldmatrix lane maps, the tile order
 * tc_round.h              (plain C) fp32 rounded to bf16 and to TF32
 * tc_wmma.cuh
 *   tc_wmma_{bf16,tf32}  nvcuda::wmma fragments, 64x64 tiles (and the tile copies the
 *                        portable versions share)
 * tc_mma.cuh
 *   tc_mma_bf16          mma.sync m16n8k16 with ldmatrix from a plain tile
 *   tc_mma_swizzle_bf16  the same from the XOR-swizzled tile: no bank conflicts
 *   tc_mma_pipeline_{bf16,tf32}  3-stage cp.async, 128x256 tiles (the portable fallback)
 * tc_hopper.cuh           (sm_90a) TMA, mbarriers, wgmma and its descriptors
 * tc_wgmma.cuh
 *   tc_wgmma_{bf16,tf32}             wgmma fed by TMA, 4 stages, a block barrier a stage
 *   tc_wgmma_ws_{bf16,tf32}          warp-specialized: a producer warpgroup, two consumers
 *   tc_wgmma_persistent_{bf16,tf32}  the same, one block per SM walking the tiles
 *   tc_wgmma_splitk_{bf16,tf32}      64x128 tiles with K split (small C: chapter 07)
 * tc_wgmma_cluster.cuh
 *   tc_wgmma_cluster_{bf16,tf32}     the persistent kernel in clusters of two blocks: each
 *                                    loads half of the shared Bt tile, multicast to both
 * tc_best.cuh
 *   tc_best_{bf16,tf32}  the dispatcher: Hopper where TMA can describe the operands, else
 *                        the mma.sync pipeline
 *
 * THE FP32 CONTRACT (chapter 07 relies on it). Every launcher has the signature
 *     void sgemm_<name>(int M, int N, int K, float alpha, const float *A, const float *B,
 *                       float beta, float *C);
 * A is M x K, B is K x N, C is M x N, all row-major, contiguous, device pointers; the call
 * is asynchronous on the default stream. Any M, N, K >= 1 works: shapes that are not
 * multiples of the tiles, of 4 or of 32 take a checked edge path inside the same kernel.
 * Pointers that are not 16-byte aligned or rows whose length is not a multiple of 4 just
 * turn off the 16-byte loads. beta == 0 never reads C (C may hold garbage or NaN).
 *
 *     sgemm_best(...)  same signature: runs each shape the way the model of sgemm_model.h
 *                      predicts fastest on this GPU: one of the tiles of hopper,
 *                      splitk_8x8, hopper_small, thin_m, thin_n or thin_n_8x8, split-K,
 *                      stream-K or neither, or
 *                      gemv for C of at most 8 rows, the rows that fill whole waves apart from the rest, B copied into
 *                      padded rows when N % 4 != 0 (see the chapter README's "Any shape").
 *                      Use this one. For the padded B it keeps one device buffer, made on
 *                      the first call that needs one (never during a graph capture) and
 *                      freed at exit.
 *
 * The tuned kernel's parameters can be set at compile time (-DSGEMM_TUNED_BM=... and the
 * seven others next to SgemmHopperCfg in sgemm_pipelined.cuh); sweep.sh rebuilds with
 * different values. */
#ifndef CH05_KERNELS_CUH
#define CH05_KERNELS_CUH

#include "05_matmul_tiled/fp32/00_common.cuh"

#include "05_matmul_tiled/fp32/01_naive.cuh"
#include "05_matmul_tiled/fp32/06_vectorized.cuh"
#include "05_matmul_tiled/fp32/08_warptile.cuh"
#include "05_matmul_tiled/fp32/09_double_buffer.cuh"
#include "05_matmul_tiled/any_shape/01_splitk.cuh"
#include "05_matmul_tiled/any_shape/02_streamk.cuh"
#include "05_matmul_tiled/any_shape/03_thin.cuh"
#include "05_matmul_tiled/any_shape/04_gemv.cuh"
#include "05_matmul_tiled/any_shape/best.cuh"

#include "05_matmul_tiled/tensor_cores/01_wmma.cuh"
#include "05_matmul_tiled/tensor_cores/best.cuh"

#endif

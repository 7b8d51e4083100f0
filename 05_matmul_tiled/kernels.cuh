/* Chapter 05: C = alpha * A * B + beta * C in fp32, row-major, ten steps from a naive
 * kernel to one tuned for Hopper, and the versions and the dispatcher for other shapes;
 * then the same product on the tensor cores, from WMMA to wgmma with TMA.
 *
 * This file is the chapter's index: every version lives in a file of its own, one folder per
 * part (fp32/, any_shape/, tensor_cores/) and one file per step, and including this one
 * (chapter 07 includes "05_matmul_tiled/kernels.cuh") includes them all. Each version,
 * under the file that holds it:
 *
 * THE FP32 LADDER (fp32/, one step a file)
 *
 * fp32/00_common.cuh       the launcher type, the alpha/beta epilogue, 16-byte load/store
 *                          helpers, the SM count and shared-memory limit of the GPU
 * fp32/01_naive.cuh        sgemm_naive: one thread per output; neighbouring threads walk
 *                          different rows of A
 * fp32/02_coalesced.cuh    sgemm_coalesced: the same, with neighbouring threads on
 *                          neighbouring columns of C
 * fp32/03_smem.cuh         sgemm_smem: 32x32 tiles of A and B staged in shared memory
 * fp32/04_blocktile_1d.cuh sgemm_blocktile_1d: each thread computes 8 outputs of one column
 * fp32/05_blocktile_2d.cuh sgemm_blocktile_2d: each thread computes an 8x8 tile from registers
 * fp32/06_vectorized.cuh   sgemm_vectorized: 16-byte loads, A stored transposed so fragments
 *                          load as float4
 * fp32/07_padded.cuh       sgemm_padded: the transposed A padded so its stores hit 32
 *                          different banks
 * fp32/08_warptile.cuh     sgemm_warptile: threads of a warp interleaved in 4x4 sub-tiles
 *                          (warp tiling); also SgemmConfig, the tile template that steps 8-10
 *                          and the any-shape versions share
 * fp32/09_double_buffer.cuh  sgemm_double_buffer: cp.async copies the next tile while this
 *                          one is multiplied (the pipelined kernel every later fp32 version runs)
 * fp32/10_hopper.cuh       sgemm_hopper: the same kernel with the sweep's parameters
 *                          (records/sweep.sh): 128x256 tiles, K slices of 32, 8x16 per
 *                          thread, fragments prefetched across slices;
 *                          sgemm_hopper_small: a 64x64-tile instance for shapes too small
 *                          to fill the GPU
 *
 * ANY SHAPE (any_shape/: the versions for shapes the ladder's tiles do not fit)
 *
 * any_shape/epilogue_splitk.cuh  split-K's atomic epilogues, used by the pipelined kernel
 * any_shape/epilogue_staged.cuh  the plain epilogue through shared memory for an odd N
 *                          (hopper's tile)
 * any_shape/01_splitk.cuh  sgemm_splitk: the 64x64 tiles with K split over several blocks,
 *                          for small C and long K;
 *                          sgemm_splitk_8x8: split-K with 64x128 tiles, 8x8 per thread,
 *                          vector atomics, and the split count chosen to balance the SMs
 *                          (the MLP's shapes)
 * any_shape/02_streamk.cuh sgemm_streamk: stream-K, the (tile, K slice) pairs dealt out
 *                          evenly to one block per slot of the GPU, partial tiles added with
 *                          atomics (64x128 tiles here; sgemm_best uses it with any tile when
 *                          C has few tiles)
 * any_shape/03_thin.cuh    sgemm_thin_m: 32x128 tiles, for C with few rows (a 64-row tile
 *                          would be mostly empty); sgemm_thin_n: 128x32 tiles, for C with few
 *                          columns; sgemm_thin_n_8x8: 128x64 tiles, 8x8 per thread, for C
 *                          with 33 to 64 columns
 * any_shape/04_gemv.cuh    sgemm_gemv: no tiles, B streamed once, for C with at most 8 rows
 *                          (M = 1: a matrix-vector product)
 * any_shape/model.h        (plain C) the model sgemm_best chooses by: waves, occupancy, the
 *                          remainder wave, an efficiency per tile fit to measurements
 * any_shape/best.cuh       sgemm_best: the dispatcher (below)
 *
 * THE TENSOR-CORE LADDER (tensor_cores/; contract in tensor_cores/common.cuh: A and Bt,
 * bf16 or TF32 in, fp32 accumulation and C; each version as tc_<name>_bf16 and, where
 * listed, _tf32)
 *
 * tensor_cores/common.cuh  the contract, the launcher types, the pair-store epilogue
 * tensor_cores/swizzle.h   (plain C) the XOR swizzle, the ldmatrix lane maps, the tile order
 * tensor_cores/round.h     (plain C) fp32 rounded to bf16 and to TF32
 * tensor_cores/01_wmma.cuh tc_wmma_{bf16,tf32}: nvcuda::wmma fragments, 64x64 tiles (and
 *                          the tile copies the portable versions share)
 * tensor_cores/02_mma.cuh  tc_mma_bf16: mma.sync m16n8k16 with ldmatrix from a plain tile
 *                          (and the kernel steps 3 and 4 configure)
 * tensor_cores/03_mma_swizzle.cuh   tc_mma_swizzle_bf16: the same from the XOR-swizzled
 *                          tile: no bank conflicts
 * tensor_cores/04_mma_pipeline.cuh  tc_mma_pipeline_{bf16,tf32}: 3-stage cp.async,
 *                          128x256 tiles (the portable fallback)
 * tensor_cores/hopper_primitives.cuh  (sm_90a) TMA, mbarriers, wgmma and its descriptors
 * tensor_cores/05_wgmma.cuh         tc_wgmma_{bf16,tf32}: wgmma fed by TMA, 4 stages, a block
 *                          barrier a stage
 * tensor_cores/06_wgmma_ws.cuh      tc_wgmma_ws_{bf16,tf32}: warp-specialized, a producer
 *                          warpgroup, two consumers
 * tensor_cores/07_wgmma_persistent.cuh  tc_wgmma_persistent_{bf16,tf32}: the same, one block
 *                          per SM walking the tiles
 * tensor_cores/08_wgmma_cluster.cuh tc_wgmma_cluster_{bf16,tf32}: the persistent kernel in
 *                          clusters of two blocks: each loads half of the shared Bt tile,
 *                          multicast to both
 * tensor_cores/09_wgmma_splitk.cuh  tc_wgmma_splitk_{bf16,tf32}: 64x128 tiles with K split
 *                          (small C: chapter 07)
 * tensor_cores/10_wgmma_padded.cuh  tc_wgmma_padded_{bf16,tf32}: TMA at any K: A and Bt
 *                          copied into rows padded to 16 bytes, then tc_wgmma_ws on the copies
 * tensor_cores/11_wgmma_ws_128x128.cuh  tc_wgmma_ws_128x128_{bf16,tf32}: step 6's kernel with
 *                          128x128 tiles (a smaller last round)
 * tensor_cores/12_wgmma_prefetch.cuh  tc_wgmma_prefetch_bf16: the persistent kernel with C
 *                          brought into the L2 before the epilogue (driver/tc_driver.cuh)
 * tensor_cores/13_wgmma_pingpong.cuh  tc_wgmma_pingpong_bf16: two consumer warpgroups on
 *                          alternate tiles, one's epilogue behind the other's main loop
 * tensor_cores/14_wgmma_fp8.cuh  tc_wgmma_fp8 and the e4m3 forms of steps 12 and 13
 * tensor_cores/15_mma_skinny.cuh  tc_mma_skinny_{bf16,tf32}: step 4's kernel with 128x128
 *                          tiles, two blocks an SM, and K split: skinny products at any K,
 *                          their long operand read once, no copy
 * tensor_cores/16_wgmma_wide.cuh  tc_wgmma_wide_bf16, tc_wgmma_wide_cluster_bf16: the
 *                          persistent and cluster kernels with 128x320 tiles (fewer L2 bytes
 *                          a multiply-add)
 * tensor_cores/17_wgmma_streamk.cuh  tc_wgmma_streamk_bf16, tc_wgmma_streamk_stagger_bf16:
 *                          the persistent kernel with its last round and a half dealt by
 *                          k-slices (stream-K, tensor_cores/streamk.h), in two orders
 * tensor_cores/18_wgmma_cload.cuh  tc_wgmma_cload_{bf16,tf32}: the persistent kernel with
 *                          C's tile loaded by TMA into shared memory under the main loop
 * tensor_cores/model.h     (plain C) the model tc_best chooses by: rounds of tiles, the last
 *                          round's fill, a fitted efficiency and fixed cost per kernel
 *                          (tensor_cores/best_params.h, from records/tc_calibrate.py)
 * tensor_cores/best.cuh    tc_best_{bf16,tf32}: the dispatcher: the wgmma kernel (or two
 *                          launches, padded copies first, or the skinny kernel) the model
 *                          predicts fastest on a Hopper GPU, else the mma.sync pipeline
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
 *     sgemm_best(...)  same signature: runs each shape the way the model of any_shape/model.h
 *                      predicts fastest on this GPU: one of the tiles of hopper,
 *                      splitk_8x8, hopper_small, thin_m, thin_n or thin_n_8x8, split-K,
 *                      stream-K or neither, or gemv for C of at most 8 rows, the rows
 *                      that fill whole waves apart from the rest, B copied into padded
 *                      rows when N % 4 != 0 (see the chapter README's "Any shape").
 *                      Use this one. For the padded B it keeps one device buffer, made on
 *                      the first call that needs one (never during a graph capture) and
 *                      freed at exit.
 *
 * The tuned kernel's parameters can be set at compile time (-DSGEMM_TUNED_BM=... and the
 * seven others next to SgemmHopperCfg in fp32/10_hopper.cuh); records/sweep.sh rebuilds
 * with different values. */
#ifndef CH05_KERNELS_CUH
#define CH05_KERNELS_CUH

#include "05_matmul_tiled/fp32/00_common.cuh"

#include "05_matmul_tiled/fp32/01_naive.cuh"
#include "05_matmul_tiled/fp32/02_coalesced.cuh"
#include "05_matmul_tiled/fp32/03_smem.cuh"
#include "05_matmul_tiled/fp32/04_blocktile_1d.cuh"
#include "05_matmul_tiled/fp32/05_blocktile_2d.cuh"
#include "05_matmul_tiled/fp32/06_vectorized.cuh"
#include "05_matmul_tiled/fp32/07_padded.cuh"
#include "05_matmul_tiled/fp32/08_warptile.cuh"
#include "05_matmul_tiled/fp32/09_double_buffer.cuh"
#include "05_matmul_tiled/fp32/10_hopper.cuh"

#include "05_matmul_tiled/any_shape/01_splitk.cuh"
#include "05_matmul_tiled/any_shape/02_streamk.cuh"
#include "05_matmul_tiled/any_shape/03_thin.cuh"
#include "05_matmul_tiled/any_shape/04_gemv.cuh"
#include "05_matmul_tiled/any_shape/best.cuh"

#include "05_matmul_tiled/tensor_cores/01_wmma.cuh"
#include "05_matmul_tiled/tensor_cores/02_mma.cuh"
#include "05_matmul_tiled/tensor_cores/03_mma_swizzle.cuh"
#include "05_matmul_tiled/tensor_cores/04_mma_pipeline.cuh"
#include "05_matmul_tiled/tensor_cores/05_wgmma.cuh"
#include "05_matmul_tiled/tensor_cores/06_wgmma_ws.cuh"
#include "05_matmul_tiled/tensor_cores/07_wgmma_persistent.cuh"
#include "05_matmul_tiled/tensor_cores/08_wgmma_cluster.cuh"
#include "05_matmul_tiled/tensor_cores/09_wgmma_splitk.cuh"
#include "05_matmul_tiled/tensor_cores/10_wgmma_padded.cuh"
#include "05_matmul_tiled/tensor_cores/11_wgmma_ws_128x128.cuh"
#include "05_matmul_tiled/tensor_cores/15_mma_skinny.cuh"
#include "05_matmul_tiled/tensor_cores/best.cuh"

#endif

/* Chapter 05, part two, Hopper: wgmma with operands loaded by TMA (sm_90a only).
 *
 *   tc_wgmma_<t>             the copy engine (TMA) loads K-slices of 128 bytes (64 bf16, 32
 *                            tf32) of A and Bt into shared memory, 4 stages deep, each stage's
 *                            arrival signalled on an mbarrier; two warpgroups each issue
 *                            wgmma.mma_async on their 64 rows of a 128x128 tile of C. Everyone
 *                            waits for the tensor cores and meets at a block barrier before a
 *                            stage is refilled.
 *   tc_wgmma_ws_<t>          warp specialization: a third warpgroup only issues TMA copies
 *                            (one thread), the two others only issue wgmma; stages are handed
 *                            back through "empty" mbarriers, so no block barrier remains and
 *                            one group of wgmma stays in flight while the next stage is checked.
 *                            128x256 tiles (the producer gives its registers to the consumers
 *                            with setmaxnreg: 128 accumulators a thread).
 *   tc_wgmma_persistent_<t>  the same with one block per SM walking the tiles in an L2-friendly
 *                            order: the producer loads the next tile while the consumers store
 *                            this one, and no block launch sits between tiles.
 *   tc_wgmma_splitk_<t>      64x128 tiles with K split over a grid layer per range and the
 *                            partial products added into C (small C, long K: chapter 07).
 * <t> is bf16 or tf32. The operands' layout is tc_common.cuh's contract (A and Bt both
 * K-contiguous).
 *
 * The pieces, in the order a reader meets them below:
 * - TMA (cp.async.bulk.tensor): one thread hands the copy engine a tensor map (the matrix's
 *   shape, strides, and the box to copy, made once on the host) and two coordinates; the
 *   engine copies the box into shared memory on its own, fills what lies outside the matrix
 *   with zeros (the edge tiles need no code), and counts the bytes it delivered on an
 *   mbarrier. The box is stored with the 128-byte swizzle: the 16-byte chunk c of row r lands
 *   at chunk c ^ (r % 8), so the 8 rows a tensor-core read touches at one K offset sit in 8
 *   different groups of banks.
 * - mbarrier: a shared-memory barrier with a phase bit. `full[s]` completes when the
 *   producer has arrived (announcing how many bytes to expect) and that many bytes have
 *   landed; `empty[s]` when every consumer thread has arrived, i.e. has finished reading
 *   stage s. Waiting is on the parity of the phase: the n-th use of stage s waits for
 *   parity (n & 1).
 * - wgmma.mma_async: a warpgroup (4 warps, 128 threads) multiplies a 64 x K16 slice of A by
 *   a K16 x N slice of B (K8 for TF32) into accumulators spread over its registers. Both
 *   operands are read straight from shared memory, described by 64-bit descriptors (start
 *   address, the 1024-byte distance between 8-row groups, the swizzle mode). The call only
 *   starts the work: commit_group closes a group of them, wait_group N waits until at most N
 *   groups are still running. The accumulator layout of m64nNk16, thread t of the warpgroup:
 *       rows 16 * (t / 32) + (t % 32) / 4 and that + 8;
 *       columns 8 * j + 2 * (t % 4) and that + 1, for j = 0 .. N/8 - 1;
 *       d[4j], d[4j + 1] on the first row, d[4j + 2], d[4j + 3] on the second.
 * Built for anything but sm_90a, these kernels are empty and their launchers refuse:
 * tc_wgmma_unavailable() says why, and the driver skips them with that reason. */
#ifndef CH05_TC_WGMMA_CUH
#define CH05_TC_WGMMA_CUH

#include <cuda.h>
#include <cudaTypedefs.h>

#include "tc_common.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TC_WGMMA_DEVICE 1
#endif

/* ------------------------------------------------------------------ per input type */

/* BK: the elements of one 128-byte row of a stage (the width of the 128-byte swizzle).
 * Each wgmma eats 32 bytes of K (16 bf16 or 8 tf32), so a stage is 4 wgmma deep either way. */
template <typename T> struct TcWgType;
template <> struct TcWgType<bf16> {
    static constexpr int BK = 64;
    static constexpr CUtensorMapDataType MAP = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
};
template <> struct TcWgType<float> {
    static constexpr int BK = 32;
    static constexpr CUtensorMapDataType MAP = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
};
#define TC_ROW_BYTES 128
#define TC_K_STEPS 4 /* wgmma instructions per stage: 128 bytes of K / 32 */

/* ------------------------------------------------------------------ device helpers */

__device__ __forceinline__ uint32_t tc_smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* The 128-byte swizzle repeats every 8 rows of 128 bytes: stages start 1024-byte aligned. */
__device__ __forceinline__ uint8_t *tc_align1024(uint8_t *p)
{
    uint32_t a = tc_smem_addr(p);
    return p + (((a + 1023u) & ~1023u) - a);
}

__device__ __forceinline__ void tc_mbar_init(uint64_t *bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(tc_smem_addr(bar)), "r"(count));
}

/* Makes the initialized barriers visible to the copy engine (the async proxy). */
__device__ __forceinline__ void tc_mbar_fence_init(void)
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

__device__ __forceinline__ void tc_mbar_arrive_expect(uint64_t *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(tc_smem_addr(bar)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void tc_mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(tc_smem_addr(bar)) : "memory");
}

__device__ __forceinline__ void tc_mbar_wait(uint64_t *bar, unsigned parity)
{
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "TC_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra TC_WAIT;\n"
                 "}\n" ::"r"(tc_smem_addr(bar)),
                 "r"(parity)
                 : "memory");
}

/* One box of a 2-D tensor map into shared memory: column (K) c0, row c1. */
__device__ __forceinline__ void tc_tma_load(void *dst, const CUtensorMap *map, uint64_t *bar, int c0,
                                            int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(tc_smem_addr(dst)),
                 "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(tc_smem_addr(bar))
                 : "memory");
}

/* The shared-memory descriptor of a K-major operand stored with the 128-byte swizzle:
 * start address, leading offset unused (1), 1024 bytes between 8-row groups, mode 1. */
__device__ __forceinline__ uint64_t tc_desc(const void *smem)
{
    uint64_t addr = tc_smem_addr(smem);
    return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void tc_wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void tc_wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void tc_wgmma_wait(void)
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Ties the accumulators to the surrounding asm, so the compiler neither reads them before
 * wait_group nor moves their zeroing past the first wgmma. */
template <int R> __device__ __forceinline__ void tc_fence_regs(float (&d)[R])
{
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+f"(d[i])::"memory");
}

/* wgmma operand lists: 64 or 128 accumulators a thread. */
#define TC_D4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define TC_D16(i) TC_D4(i), TC_D4(i + 4), TC_D4(i + 8), TC_D4(i + 12)
#define TC_D64(i) TC_D16(i), TC_D16(i + 16), TC_D16(i + 32), TC_D16(i + 48)
#define TC_REGS64                                                                             \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                 \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "        \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "        \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define TC_REGS128                                                                            \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                 \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "        \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "        \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "        \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "        \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "        \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, "  \
    "%111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, "    \
    "%125, %126, %127}"

/* d += A_slice * B_slice for one 32-byte K step: m64nNk16 (bf16) or m64nNk8 (tf32), N = 128
 * or 256, accumulating (scale-d = 1) in fp32. */
template <typename T, int N> __device__ __forceinline__ void tc_wgmma(float (&d)[N / 2], uint64_t a, uint64_t b);

template <> __device__ __forceinline__ void tc_wgmma<bf16, 128>(float (&d)[64], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " TC_REGS64
                 ", %64, %65, 1, 1, 1, 0, 0;\n"
                 : TC_D64(0)
                 : "l"(a), "l"(b));
}

template <> __device__ __forceinline__ void tc_wgmma<bf16, 256>(float (&d)[128], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " TC_REGS128
                 ", %128, %129, 1, 1, 1, 0, 0;\n"
                 : TC_D64(0), TC_D64(64)
                 : "l"(a), "l"(b));
}

template <> __device__ __forceinline__ void tc_wgmma<float, 128>(float (&d)[64], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " TC_REGS64
                 ", %64, %65, 1, 1, 1;\n"
                 : TC_D64(0)
                 : "l"(a), "l"(b));
}

template <> __device__ __forceinline__ void tc_wgmma<float, 256>(float (&d)[128], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 " TC_REGS128
                 ", %128, %129, 1, 1, 1;\n"
                 : TC_D64(0), TC_D64(64)
                 : "l"(a), "l"(b));
}

/* One stage of this warpgroup's work: its 64 rows of A (a) times all BN rows of Bt (b),
 * 4 wgmma along the stage's 128 bytes of K. Advancing the descriptors by 32 bytes walks
 * along K inside the swizzled rows (the swizzle is applied to the final address). */
template <typename T, int BN>
__device__ __forceinline__ void tc_wgmma_stage(float (&d)[BN / 2], const uint8_t *a, const uint8_t *b)
{
#pragma unroll
    for (int k = 0; k < TC_K_STEPS; k++) tc_wgmma<T, BN>(d, tc_desc(a + 32 * k), tc_desc(b + 32 * k));
}

/* How a tile leaves the kernel: stored as alpha * acc + beta * C, or (split-K) added. */
enum { TC_EPI_STORE, TC_EPI_ADD };

/* Two neighbouring outputs of row r from column c: one 8-byte access where the row allows
 * it (vec2: N even and C 8-byte aligned), else one by one inside the matrix. */
template <int EPI>
__device__ __forceinline__ void tc_store2(float *C, int M, int N, int r, int c, float v0, float v1,
                                          float alpha, float beta, bool vec2)
{
    if (r >= M || c >= N) return;
    float *p = C + (size_t)r * N + c;
    v0 *= alpha;
    v1 *= alpha;
    if (EPI == TC_EPI_ADD) {
        if (vec2 && c + 1 < N) {
            atomicAdd((float2 *)p, make_float2(v0, v1));
        } else {
            atomicAdd(p, v0);
            if (c + 1 < N) atomicAdd(p + 1, v1);
        }
        return;
    }
    if (vec2 && c + 1 < N) {
        if (beta != 0.0f) {
            float2 old = *(const float2 *)p;
            v0 += beta * old.x;
            v1 += beta * old.y;
        }
        *(float2 *)p = make_float2(v0, v1);
        return;
    }
    p[0] = beta == 0.0f ? v0 : v0 + beta * p[0];
    if (c + 1 < N) p[1] = beta == 0.0f ? v1 : v1 + beta * p[1];
}

/* The warpgroup's 64 x BN accumulators to C, rows from row0, columns from col0. */
template <int BN, int EPI>
__device__ __forceinline__ void tc_epilogue(const float (&d)[BN / 2], float *C, int M, int N, int row0,
                                            int col0, float alpha, float beta, bool vec2)
{
    int t = threadIdx.x % 128;
    int r = row0 + 16 * (t / 32) + (t % 32) / 4, c = col0 + 2 * (t % 4);
#pragma unroll
    for (int j = 0; j < BN / 8; j++) {
        tc_store2<EPI>(C, M, N, r, c + 8 * j, d[4 * j], d[4 * j + 1], alpha, beta, vec2);
        tc_store2<EPI>(C, M, N, r + 8, c + 8 * j, d[4 * j + 2], d[4 * j + 3], alpha, beta, vec2);
    }
}

/* Tile number -> origin, in groups of 8 tile rows: consecutive tiles (running on the SMs at
 * the same time) share 8 row panels of A and a few column panels of Bt, which stay in L2. */
__device__ __forceinline__ void tc_tile_origin(int tile, int tiles_m, int tiles_n, int bm, int bn,
                                               int *m0, int *n0)
{
    const int group = 8;
    int per_group = group * tiles_n, first = tile / per_group * group;
    int rows = tiles_m - first < group ? tiles_m - first : group, in = tile % per_group;
    *m0 = (first + in % rows) * bm;
    *n0 = in / rows * bn;
}

/* ------------------------------------------------------------------ step 5: wgmma + TMA */

/* Two warpgroups, a 128 x BN tile, STAGES stages. Thread 0 keeps STAGES K-slices in flight;
 * each warpgroup multiplies a stage, waits for its own wgmma (wait_group 0), and the block
 * meets at __syncthreads before thread 0 refills the stage just read. */
template <typename T, int BN, int STAGES>
__global__ void __launch_bounds__(256, 1)
tc_wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                int M, int N, int K, float alpha, float beta, float *C, bool vec2)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int BM = 128, BK = TcWgType<T>::BK;
    constexpr int A_BYTES = BM * TC_ROW_BYTES, STAGE_BYTES = A_BYTES + BN * TC_ROW_BYTES;
    __shared__ uint64_t full[STAGES];
    extern __shared__ uint8_t tc_smem_raw[];
    uint8_t *smem = tc_align1024(tc_smem_raw);
    int wg = threadIdx.x / 128, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    int k_tiles = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) tc_mbar_init(&full[s], 1);
        tc_mbar_fence_init();
        for (int kt = 0; kt < STAGES && kt < k_tiles; kt++) {
            uint8_t *st = smem + kt * STAGE_BYTES;
            tc_mbar_arrive_expect(&full[kt], STAGE_BYTES);
            tc_tma_load(st, &map_a, &full[kt], kt * BK, m0);
            tc_tma_load(st + A_BYTES, &map_b, &full[kt], kt * BK, n0);
        }
    }
    __syncthreads();
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++) d[i] = 0.0f;
    for (int kt = 0; kt < k_tiles; kt++) {
        int s = kt % STAGES;
        uint8_t *st = smem + s * STAGE_BYTES;
        tc_mbar_wait(&full[s], (kt / STAGES) & 1);
        tc_fence_regs(d);
        tc_wgmma_fence();
        tc_wgmma_stage<T, BN>(d, st + wg * 64 * TC_ROW_BYTES, st + A_BYTES);
        tc_wgmma_commit();
        tc_wgmma_wait<0>();
        tc_fence_regs(d);
        __syncthreads(); /* both warpgroups are done with stage s */
        if (threadIdx.x == 0 && kt + STAGES < k_tiles) {
            tc_mbar_arrive_expect(&full[s], STAGE_BYTES);
            tc_tma_load(st, &map_a, &full[s], (kt + STAGES) * BK, m0);
            tc_tma_load(st + A_BYTES, &map_b, &full[s], (kt + STAGES) * BK, n0);
        }
    }
    tc_epilogue<BN, TC_EPI_STORE>(d, C, M, N, m0 + 64 * wg, n0, alpha, beta, vec2);
#endif
}

/* ------------------------------------------------------------------ steps 6-7: warp specialization */

/* Warpgroup 0 produces, warpgroups 1 .. CONSUMERS consume (64 rows of the tile each).
 * Tiles tile = blockIdx.x, + gridDim.x, ... (one when the grid has a block per tile; a
 * persistent grid has one block per SM). With EPI == TC_EPI_ADD, grid layer blockIdx.z
 * multiplies K-slices [z * split_tiles, (z + 1) * split_tiles) only and adds its partial
 * product into C. With 256-wide tiles the producer drops to 40 registers and the consumers
 * rise to 232 (setmaxnreg): 128 accumulators a thread plus addresses. */
template <typename T, int BN, int STAGES, int CONSUMERS, int EPI>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), CONSUMERS == 1 ? 2 : 1)
tc_wgmma_ws_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                   int M, int N, int K, float alpha, float beta, float *C, bool vec2, int split_tiles)
{
#ifdef TC_WGMMA_DEVICE
    constexpr int BM = 64 * CONSUMERS, BK = TcWgType<T>::BK;
    constexpr int A_BYTES = BM * TC_ROW_BYTES, STAGE_BYTES = A_BYTES + BN * TC_ROW_BYTES;
    constexpr bool SHIFT_REGS = BN == 256;
    __shared__ uint64_t full[STAGES], empty[STAGES];
    extern __shared__ uint8_t tc_smem_raw[];
    uint8_t *smem = tc_align1024(tc_smem_raw);
    int wg = threadIdx.x / 128;
    int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    int k_first = 0, k_count = (K + BK - 1) / BK;
    if (EPI == TC_EPI_ADD) {
        k_first = blockIdx.z * split_tiles;
        k_count = min(split_tiles, k_count - k_first);
    }
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            tc_mbar_init(&full[s], 1);
            tc_mbar_init(&empty[s], 128 * CONSUMERS);
        }
        tc_mbar_fence_init();
    }
    __syncthreads();
    if (wg == 0) { /* the producer */
        if (SHIFT_REGS) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x != 0) return;
        int it = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int m0, n0;
            tc_tile_origin(tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
            for (int kt = 0; kt < k_count; kt++, it++) {
                int s = it % STAGES;
                uint8_t *st = smem + s * STAGE_BYTES;
                tc_mbar_wait(&empty[s], ((it / STAGES) & 1) ^ 1); /* first round: free */
                tc_mbar_arrive_expect(&full[s], STAGE_BYTES);
                tc_tma_load(st, &map_a, &full[s], (k_first + kt) * BK, m0);
                tc_tma_load(st + A_BYTES, &map_b, &full[s], (k_first + kt) * BK, n0);
            }
        }
        return;
    }
    if (SHIFT_REGS) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    int it = 0, rows = 64 * (wg - 1);
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int m0, n0;
        tc_tile_origin(tile, tiles_m, tiles_n, BM, BN, &m0, &n0);
        float d[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; i++) d[i] = 0.0f;
        int prev = 0;
        for (int kt = 0; kt < k_count; kt++, it++) {
            int s = it % STAGES;
            uint8_t *st = smem + s * STAGE_BYTES;
            tc_mbar_wait(&full[s], (it / STAGES) & 1);
            tc_fence_regs(d);
            tc_wgmma_fence();
            tc_wgmma_stage<T, BN>(d, st + rows * TC_ROW_BYTES, st + A_BYTES);
            tc_wgmma_commit();
            tc_wgmma_wait<1>(); /* the previous stage's group is done: hand that stage back */
            tc_fence_regs(d);
            if (kt > 0) tc_mbar_arrive(&empty[prev]);
            prev = s;
        }
        tc_wgmma_wait<0>();
        tc_fence_regs(d);
        tc_mbar_arrive(&empty[prev]);
        tc_epilogue<BN, EPI>(d, C, M, N, m0 + rows, n0, alpha, beta, vec2);
    }
#endif
}

/* ------------------------------------------------------------------ host side */

/* Which kernels this binary and GPU can run: the device code above exists only in an sm_90a
 * build, and only a compute capability 9.0 GPU runs it. */
__global__ void tc_wgmma_probe_kernel(int *built)
{
#ifdef TC_WGMMA_DEVICE
    *built = 1;
#else
    *built = 0;
#endif
}

/* NULL when the wgmma versions can run here, else the reason they cannot. */
static inline const char *tc_wgmma_unavailable(void)
{
    static int state = -1; /* -1 unknown, 0 usable, 1 wrong GPU, 2 no sm_90a code */
    static char why[160];
    if (state < 0) {
        int dev, major, minor;
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
        if (major != 9 || minor != 0) {
            snprintf(why, sizeof why, "wgmma and TMA need a Hopper GPU (sm_90); this one is sm_%d%d",
                     major, minor);
            state = 1;
        } else {
            int *d_built, built = 0;
            CUDA_CHECK(cudaMalloc(&d_built, sizeof(int)));
            tc_wgmma_probe_kernel<<<1, 1>>>(d_built);
            CHECK_LAUNCH();
            CUDA_CHECK(cudaMemcpy(&built, d_built, sizeof(int), cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaFree(d_built));
            snprintf(why, sizeof why, "this build has no sm_90a code (build with ARCH=sm_90 or the "
                                      "default architecture list)");
            state = built ? 0 : 2;
        }
    }
    return state == 0 ? NULL : why;
}

/* NULL when TMA can describe A (rows x K) and Bt with these pointers, else why not: a
 * tensor map needs 16-byte aligned bases and row strides (K * element size) that are
 * multiples of 16 bytes. Such shapes go to the mma.sync versions instead. */
static inline const char *tc_tma_refusal(int K, size_t elem_bytes, const void *A, const void *Bt)
{
    if ((K * elem_bytes) % 16 != 0)
        return elem_bytes == 2 ? "TMA needs K % 8 == 0 for bf16 (16-byte row strides)"
                               : "TMA needs K % 4 == 0 for tf32 (16-byte row strides)";
    if (!sgemm_aligned16(A) || !sgemm_aligned16(Bt)) return "TMA needs 16-byte aligned A and Bt";
    return NULL;
}

/* cuTensorMapEncodeTiled is a driver function: fetched through the runtime, so the
 * binary needs no -lcuda (and still starts on a machine without a GPU driver). */
static inline PFN_cuTensorMapEncodeTiled_v12000 tc_encode_fn(void)
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = NULL;
    if (!fn) {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q;
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess || !p) {
            fprintf(stderr, "cuTensorMapEncodeTiled is not available from this driver\n");
            exit(1);
        }
        fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
    }
    return fn;
}

/* The tensor map of a rows x K row-major matrix, copied in boxes of box_rows x 128 bytes,
 * 128-byte swizzled, zeros outside the matrix. */
template <typename T>
static inline CUtensorMap tc_tensor_map(const T *base, int rows, int K, int box_rows)
{
    CUtensorMap map;
    cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
    cuuint64_t strides[1] = {(cuuint64_t)K * sizeof(T)};
    cuuint32_t box[2] = {(cuuint32_t)TcWgType<T>::BK, (cuuint32_t)box_rows};
    cuuint32_t step[2] = {1, 1};
    CUresult r = tc_encode_fn()(&map, TcWgType<T>::MAP, 2, (void *)base, dims, strides, box, step,
                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled failed (error %d) for a %d x %d matrix\n", (int)r, rows, K);
        exit(1);
    }
    return map;
}

/* Refuses (exit 1, with the reason) what the driver should have skipped. */
template <typename T>
static inline void tc_wgmma_require(int K, const T *A, const T *Bt)
{
    const char *why = tc_wgmma_unavailable();
    if (!why) why = tc_tma_refusal(K, sizeof(T), A, Bt);
    if (why) {
        fprintf(stderr, "wgmma version called where it cannot run: %s\n", why);
        exit(1);
    }
}

static inline bool tc_vec2(int N, const float *C) { return N % 2 == 0 && ((uintptr_t)C & 7) == 0; }

/* Dynamic shared memory of STAGES stages plus 1 KB to align them. */
static inline int tc_stage_smem(int bm, int bn, int stages) { return stages * (bm + bn) * TC_ROW_BYTES + 1024; }

#define TC_WGMMA_STAGES 4
#define TC_WS_STAGES 4
#define TC_SPLIT_STAGES 4

template <typename T>
static inline void tc_wgmma_launch(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta,
                                   float *C)
{
    constexpr int BN = 128;
    tc_wgmma_require(K, A, Bt);
    int smem = tc_stage_smem(128, BN, TC_WGMMA_STAGES);
    static bool attr_set = false;
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(tc_wgmma_kernel<T, BN, TC_WGMMA_STAGES>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        attr_set = true;
    }
    CUtensorMap ma = tc_tensor_map(A, M, K, 128), mb = tc_tensor_map(Bt, N, K, BN);
    dim3 grid(sgemm_ceil_div(N, BN), sgemm_ceil_div(M, 128));
    tc_wgmma_kernel<T, BN, TC_WGMMA_STAGES><<<grid, 256, smem>>>(ma, mb, M, N, K, alpha, beta, C, tc_vec2(N, C));
    CHECK_LAUNCH();
}

/* The warp-specialized kernel: blocks = 0 gives one block per tile, else a persistent grid
 * of that many blocks; splits > 1 (64x128 tiles only) cuts K into that many grid layers. */
template <typename T, int BN, int CONSUMERS, int EPI>
static inline void tc_wgmma_ws_launch(int M, int N, int K, float alpha, const T *A, const T *Bt, float beta,
                                      float *C, int blocks, int splits)
{
    constexpr int BM = 64 * CONSUMERS, STAGES = TC_WS_STAGES;
    tc_wgmma_require(K, A, Bt);
    int smem = tc_stage_smem(BM, BN, STAGES);
    static bool attr_set = false;
    if (!attr_set) {
        CUDA_CHECK(cudaFuncSetAttribute(tc_wgmma_ws_kernel<T, BN, STAGES, CONSUMERS, EPI>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        attr_set = true;
    }
    int tiles = sgemm_ceil_div(M, BM) * sgemm_ceil_div(N, BN);
    int k_tiles = sgemm_ceil_div(K, TcWgType<T>::BK), split_tiles = sgemm_ceil_div(k_tiles, splits);
    splits = sgemm_ceil_div(k_tiles, split_tiles); /* no empty layer */
    if (EPI == TC_EPI_ADD) tc_prescale(C, M, N, beta);
    CUtensorMap ma = tc_tensor_map(A, M, K, BM), mb = tc_tensor_map(Bt, N, K, BN);
    dim3 grid(blocks > 0 && blocks < tiles ? blocks : tiles, 1, EPI == TC_EPI_ADD ? splits : 1);
    tc_wgmma_ws_kernel<T, BN, STAGES, CONSUMERS, EPI><<<grid, 128 * (CONSUMERS + 1), smem>>>(
        ma, mb, M, N, K, alpha, beta, C, tc_vec2(N, C), split_tiles);
    CHECK_LAUNCH();
}

/* The split count for 64x128 tiles: about two blocks per SM in all (a 64-row tile keeps one
 * consumer warpgroup busy, so two of them share an SM), each layer at least 2 K-slices. */
static inline int tc_wgmma_splits(int M, int N, int K, int bk)
{
    int tiles = sgemm_ceil_div(M, 64) * sgemm_ceil_div(N, 128), k_tiles = sgemm_ceil_div(K, bk);
    int want = sgemm_ceil_div(2 * sgemm_sm_count(), tiles), most = k_tiles / 2;
    int s = want < most ? want : most;
    return s < 1 ? 1 : s;
}

/* ------------------------------------------------------------------ the launchers */

static inline void tc_wgmma_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt, float beta,
                                 float *C)
{
    tc_wgmma_launch(M, N, K, alpha, A, Bt, beta, C);
}
static inline void tc_wgmma_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                                 float beta, float *C)
{
    tc_wgmma_launch(M, N, K, alpha, A, Bt, beta, C);
}

static inline void tc_wgmma_ws_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                    float beta, float *C)
{
    tc_wgmma_ws_launch<bf16, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
}
static inline void tc_wgmma_ws_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                                    float beta, float *C)
{
    tc_wgmma_ws_launch<float, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
}

static inline void tc_wgmma_persistent_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                            float beta, float *C)
{
    tc_wgmma_ws_launch<bf16, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, sgemm_sm_count(), 1);
}
static inline void tc_wgmma_persistent_tf32(int M, int N, int K, float alpha, const float *A,
                                            const float *Bt, float beta, float *C)
{
    tc_wgmma_ws_launch<float, 256, 2, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, sgemm_sm_count(), 1);
}

static inline void tc_wgmma_splitk_bf16(int M, int N, int K, float alpha, const bf16 *A, const bf16 *Bt,
                                        float beta, float *C)
{
    int splits = tc_wgmma_splits(M, N, K, TcWgType<bf16>::BK);
    if (splits == 1)
        tc_wgmma_ws_launch<bf16, 128, 1, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
    else
        tc_wgmma_ws_launch<bf16, 128, 1, TC_EPI_ADD>(M, N, K, alpha, A, Bt, beta, C, 0, splits);
}
static inline void tc_wgmma_splitk_tf32(int M, int N, int K, float alpha, const float *A, const float *Bt,
                                        float beta, float *C)
{
    int splits = tc_wgmma_splits(M, N, K, TcWgType<float>::BK);
    if (splits == 1)
        tc_wgmma_ws_launch<float, 128, 1, TC_EPI_STORE>(M, N, K, alpha, A, Bt, beta, C, 0, 1);
    else
        tc_wgmma_ws_launch<float, 128, 1, TC_EPI_ADD>(M, N, K, alpha, A, Bt, beta, C, 0, splits);
}

#endif

/* Chapter 05, part two: the Hopper (sm_90a) primitives the wgmma versions (05_wgmma.cuh to
 * 09_wgmma_splitk.cuh) are built from, each a line or two of inline PTX.
 *
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
 * Outside an sm_90a build (TC_WGMMA_DEVICE undefined) only the declarations matter: the
 * kernels that use these compile to nothing there. On the host side: whether this binary
 * and GPU can run them (tc_wgmma_unavailable), whether TMA can describe a matrix
 * (tc_tma_refusal), and its tensor map (tc_tensor_map). */
#ifndef CH05_TENSOR_CORES_HOPPER_PRIMITIVES_CUH
#define CH05_TENSOR_CORES_HOPPER_PRIMITIVES_CUH

#include <cuda.h>
#include <cudaTypedefs.h>

#include "05_matmul_tiled/tensor_cores/common.cuh"

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
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n"
                 :
                 : "r"(tc_smem_addr(bar)), "r"(count));
}

/* A ring of n slots, each with a `full` barrier (one arrival: the producer's, with the
 * bytes its copies bring) and an `empty` one (`consumers` arrivals: every consumer that read
 * the slot). One thread initializes; tc_mbar_fence_init makes them visible. */
__device__ __forceinline__ void tc_mbar_init_ring(uint64_t *full, uint64_t *empty, int n,
                                                  unsigned consumers)
{
    for (int s = 0; s < n; s++) {
        tc_mbar_init(&full[s], 1);
        tc_mbar_init(&empty[s], consumers);
    }
}

/* Makes the initialized barriers visible to the copy engine (the async proxy). */
__device__ __forceinline__ void tc_mbar_fence_init(void)
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* Orders this thread's shared-memory accesses (the generic proxy) before the copy engine's
 * later ones (the async proxy): needed before a TMA overwrites a buffer the threads read. */
__device__ __forceinline__ void tc_fence_proxy_async(void)
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void tc_mbar_arrive_expect(uint64_t *bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n"
                 :
                 : "r"(tc_smem_addr(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void tc_mbar_arrive(uint64_t *bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n"
                 :
                 : "r"(tc_smem_addr(bar))
                 : "memory");
}

__device__ __forceinline__ void tc_mbar_wait(uint64_t *bar, unsigned parity)
{
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "TC_WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra TC_WAIT;\n"
                 "}\n"
                 :
                 : "r"(tc_smem_addr(bar)), "r"(parity)
                 : "memory");
}

/* One box of a 2-D tensor map into shared memory: column (K) c0, row c1. */
__device__ __forceinline__ void tc_tma_load(void *dst, const CUtensorMap *map, uint64_t *bar,
                                            int c0, int c1)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n"
                 :
                 : "r"(tc_smem_addr(dst)), "l"((uint64_t)map), "r"(c0), "r"(c1),
                   "r"(tc_smem_addr(bar))
                 : "memory");
}

/* ---- clusters (08_wgmma_cluster.cuh): blocks launched in groups that can reach each
 * other's shared memory. A TMA copy with a CTA mask lands at the same shared-memory offset
 * in every block of the mask and counts its bytes on the mbarrier at the same offset in
 * each; an arrive can go to the mbarrier of another block of the cluster. */
__device__ __forceinline__ unsigned tc_cluster_rank(void)
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

/* Every thread of every block of the cluster meets here: shared-memory writes and barrier
 * initializations before it are visible to the whole cluster after it. */
__device__ __forceinline__ void tc_cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive.release;\n"
                 "barrier.cluster.wait.acquire;\n"
                 :
                 :
                 : "memory");
}

__device__ __forceinline__ void tc_tma_load_multicast(void *dst, const CUtensorMap *map,
                                                      uint64_t *bar, int c0, int c1,
                                                      uint16_t cta_mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".multicast::cluster"
                 " [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :
                 : "r"(tc_smem_addr(dst)), "l"((uint64_t)map), "r"(c0), "r"(c1),
                   "r"(tc_smem_addr(bar)), "h"(cta_mask)
                 : "memory");
}

/* An arrive on the mbarrier at `bar`'s offset in block `cta` of the cluster (itself or another),
 * with the default release.cta ordering: what it announces (wgmma's reads of a stage are
 * over) needs no fence, and a release at cluster scope costs a memory barrier that the
 * warps stall on. */
__device__ __forceinline__ void tc_mbar_arrive_cluster(uint64_t *bar, unsigned cta)
{
    asm volatile("{\n"
                 ".reg .b32 remote;\n"
                 "mapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
                 "}\n"
                 :
                 : "r"(tc_smem_addr(bar)), "r"(cta)
                 : "memory");
}

/* The shared-memory descriptor of a K-major operand stored with the 128-byte swizzle:
 * start address, leading offset unused (1), 1024 bytes between 8-row groups, mode 1. */
__device__ __forceinline__ uint64_t tc_desc(const void *smem)
{
    uint64_t addr = tc_smem_addr(smem);
    return ((addr & 0x3FFFF) >> 4) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void tc_wgmma_fence(void)
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void tc_wgmma_commit(void)
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
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

/* wgmma operand lists: 32, 64 or 128 accumulators a thread. */
#define TC_D4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define TC_D16(i) TC_D4(i), TC_D4(i + 4), TC_D4(i + 8), TC_D4(i + 12)
#define TC_D64(i) TC_D16(i), TC_D16(i + 16), TC_D16(i + 32), TC_D16(i + 48)
#define TC_REGS32                                                             \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define TC_REGS64                                                                      \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "          \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define TC_REGS128                                                                           \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "       \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "       \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "       \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "       \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "       \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, " \
    "%111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, "   \
    "%125, %126, %127}"

/* d += A_slice * B_slice for one 32-byte K step: m64nNk16 (bf16) or m64nNk8 (tf32), N = 128
 * or 256 (and 64 in bf16, step 16's second instruction), accumulating (scale-d = 1) in fp32. */
template <typename T, int N>
__device__ __forceinline__ void tc_wgmma(float (&d)[N / 2], uint64_t a, uint64_t b);

template <>
__device__ __forceinline__ void tc_wgmma<bf16, 64>(float (&d)[32], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " TC_REGS32
                 ", %32, %33, 1, 1, 1, 0, 0;\n"
                 : TC_D16(0), TC_D16(16)
                 : "l"(a), "l"(b));
}

template <>
__device__ __forceinline__ void tc_wgmma<bf16, 128>(float (&d)[64], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " TC_REGS64
                 ", %64, %65, 1, 1, 1, 0, 0;\n"
                 : TC_D64(0)
                 : "l"(a), "l"(b));
}

template <>
__device__ __forceinline__ void tc_wgmma<bf16, 256>(float (&d)[128], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " TC_REGS128
                 ", %128, %129, 1, 1, 1, 0, 0;\n"
                 : TC_D64(0), TC_D64(64)
                 : "l"(a), "l"(b));
}

template <>
__device__ __forceinline__ void tc_wgmma<float, 128>(float (&d)[64], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " TC_REGS64
                 ", %64, %65, 1, 1, 1;\n"
                 : TC_D64(0)
                 : "l"(a), "l"(b));
}

template <>
__device__ __forceinline__ void tc_wgmma<float, 256>(float (&d)[128], uint64_t a, uint64_t b)
{
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 " TC_REGS128
                 ", %128, %129, 1, 1, 1;\n"
                 : TC_D64(0), TC_D64(64)
                 : "l"(a), "l"(b));
}

/* One stage of this warpgroup's work: its 64 rows of A (a) times all BN rows of Bt (b),
 * 4 wgmma along the stage's 128 bytes of K (8 for BN over 256, the widest instruction:
 * BN = 320 is an m64n256 and an m64n64). Advancing the descriptors by 32 bytes walks along
 * K inside the swizzled rows (the swizzle is applied to the final address). */
template <typename T, int BN> __device__ __forceinline__ void
tc_wgmma_stage(float (&d)[BN / 2], const uint8_t *a, const uint8_t *b)
{
    if constexpr (BN > 256) { /* columns 0-255 by m64n256, the rest by a second wgmma */
        constexpr int REST = BN - 256;
        float(&lo)[128] = *reinterpret_cast<float(*)[128]>(&d[0]);
        float(&hi)[REST / 2] = *reinterpret_cast<float(*)[REST / 2]>(&d[128]);
#pragma unroll
        for (int k = 0; k < TC_K_STEPS; k++) {
            tc_wgmma<T, 256>(lo, tc_desc(a + 32 * k), tc_desc(b + 32 * k));
            tc_wgmma<T, REST>(hi, tc_desc(a + 32 * k), tc_desc(b + 256 * TC_ROW_BYTES + 32 * k));
        }
    } else {
#pragma unroll
        for (int k = 0; k < TC_K_STEPS; k++)
            tc_wgmma<T, BN>(d, tc_desc(a + 32 * k), tc_desc(b + 32 * k));
    }
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
        int major = current_device_attribute(cudaDevAttrComputeCapabilityMajor);
        int minor = current_device_attribute(cudaDevAttrComputeCapabilityMinor);
        if (major != 9 || minor != 0) {
            snprintf(why, sizeof why,
                     "wgmma and TMA need a Hopper GPU (sm_90); this one is sm_%d%d", major, minor);
            state = 1;
        } else {
            int *d_built, built = 0;
            CUDA_CHECK(cudaMalloc(&d_built, sizeof(int)));
            tc_wgmma_probe_kernel<<<1, 1>>>(d_built);
            CHECK_LAUNCH();
            CUDA_CHECK(cudaMemcpy(&built, d_built, sizeof(int), cudaMemcpyDeviceToHost));
            CUDA_CHECK(cudaFree(d_built));
            snprintf(why, sizeof why,
                     "this build has no sm_90a code (build with ARCH=sm_90 or the "
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
        return elem_bytes == 2   ? "TMA needs K % 8 == 0 for bf16 (16-byte row strides)"
               : elem_bytes == 1 ? "TMA needs K % 16 == 0 for e4m3 (16-byte row strides)"
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
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                                    cudaEnableDefault, &q));
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
    CUresult r =
        tc_encode_fn()(&map, TcWgType<T>::MAP, 2, (void *)base, dims, strides, box, step,
                       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                       CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "cuTensorMapEncodeTiled failed (error %d) for a %d x %d matrix\n", (int)r,
                rows, K);
        exit(1);
    }
    return map;
}

#endif

/* Chapter 07: the backward pass and the update of the optimized trainer in one launch,
 * mlp_backward_sgd (part1_fused/08_three_launch_steps.cuh runs it after the forward product and the
 * output layer).
 *
 * The fused step (part1_fused/04_fused_steps.cuh) spends three launches after its output layer: the
 * hidden backward (dz1, dW2, db1), chapter 05's dW1 product and the update with the next batch's
 * gather. Inside the epoch graph each costs a few microseconds whatever its size: a kernel's ramp,
 * its chain of dependent loads and its drain, not its bytes or FLOPs. Here the three are one
 * kernel. The product it is built around:
 *
 *      dW1 (784 x H)  =  x^T (784 x B)  .  dz1 (B x H)          K = the batch
 *
 *   - A block owns a BM x BN tile of dW1 and a range of batch rows (K cut into ranges, as
 *     chapter 05's split-K cuts it). It makes the dz1 it multiplies itself, for its BN
 *     hidden units and its rows, from z1, b1, W2 and dz2 (ten FMAs an element, the hidden
 *     backward's arithmetic), in shared memory, where it is the product's B operand: dz1
 *     never goes to memory, and nothing waits for a launch that writes it.
 *   - A is x^T, and x (B x 784, row-major) read as it is already is the k-major A tile that
 *     chapter 05's warp tiles multiply from (a row of x is one k, its columns the m): no
 *     transposed copy xt, no transpose.
 *   - All of a block's operands come in one round of cp.async copies (x, z1, dz2): one
 *     memory latency, then chapter 05's inner product (sgemm_tile_multiply) on the 64x128
 *     tile of splitk_8x8 or the 32x128 tile of thin_m.
 *   - The SGD step of W1 happens where its gradient is complete. With one K range a block
 *     has its tile's whole gradient and steps it at once. With several, each block adds its
 *     share into the velocity with chapter 05's 16-byte atomics and takes a ticket (an atomic
 *     count per tile); the block that draws the last ticket knows every share has landed and
 *     steps the tile. A ticket costs a round trip to L2, far less than an extra launch.
 *   - W2's and b1's gradients are sums over the batch of a1 dz2 and of dz1: the blocks of the first
 *     row of tiles hold them for their units, and the tile's last block (or its only one) steps
 *     W2's rows and b1 for those units; tile 0's also steps b2. But every block of the grid reads
 *     W2 and b1 to make its dz1, so no block may overwrite them while others still read. These 11
 *     thousand parameters (b1, W2, b2) are double-buffered: a step reads one copy and writes its
 *     result into the other, which the next step reads (part1_fused/08_three_launch_steps.cuh
 *     alternates them). W1 is stepped in place: nothing here reads it.
 *   - Extra blocks at the front of the grid gather the next step's batch (x, the labels, z1
 *     cleared for the next forward product) into the other half of the step's double
 *     buffers: this step's x and z1 are still being read. At the front, their short jobs
 *     start at once instead of waiting for a slot behind the product's blocks.
 *
 * The velocity holds mu v from the step before (kernels.cuh's convention); the step adds
 * its gradient g, v = mu v + g, moves w -= lr v and leaves mu v for the next step.
 *
 * The bf16 trainer runs the same kernel with S = MlpBf16: x arrives in bf16 (its gather writes
 * bf16), dz1 is rounded to bf16 as it is made (into rows of its own: the product reads both with
 * ldmatrix), the product is mma.sync on the tensor cores
 * (part2_tensor_cores/02_bf16_backward_mma.cuh), and the SGD step of a W1 tile also writes the
 * tile, new values rounded to bf16, into W1t, the forward product's operand (H x 784).
 *
 * What it costs: every row of tiles makes dz1 again for its rows (25 times with 32-row
 * tiles), which the three launches do once. At a small batch the launches it saves weigh
 * more, at a large one the repeated dz1 can: part1_fused/08_three_launch_steps.cuh times
 * both and keeps the faster. */
#ifndef CH07_KERNELS_BACKWARD_CUH
#define CH07_KERNELS_BACKWARD_CUH

#include "07_mnist_mlp/kernels.cuh"
#include "07_mnist_mlp/part2_tensor_cores/02_bf16_backward_mma.cuh"
#include "07_mnist_mlp/part1_fused/08_backward_kernel_sgd.cuh"

/* The two tiles: chapter 05's geometries (warps, 4x4 sub-tiles, the transposed A). */
enum { MLP_BWD_WIDE, MLP_BWD_THIN, MLP_BWD_NTILES };
typedef SgemmSplitWideCfg MlpBwdWideCfg; /* 64 x 128, 8 x 8 outputs a thread */
typedef SgemmThinMCfg MlpBwdThinCfg;     /* 32 x 128, 4 x 8 outputs a thread */
static const char *const MLP_BWD_TILE_NAMES[MLP_BWD_NTILES] = {"64x128", "32x128"};

#define MLP_BWD_MAX_K 128    /* batch rows a block takes at most (its shared memory) */
#define MLP_BWD_MIN_BLOCKS 4 /* blocks an SM must fit: at most 128 registers a thread */
#define MLP_BWD_K_STEP 16    /* a range is whole BK slices of both tiles */

/* How the launch cuts the product: the tile, and K (the batch) in ranges of k_rows rows. */
typedef struct {
    int tile;   /* MLP_BWD_WIDE or MLP_BWD_THIN */
    int k_rows; /* batch rows of a range: a multiple of MLP_BWD_K_STEP, at most MLP_BWD_MAX_K */
    int splits; /* ranges: ceil(batch / k_rows) */
} MlpBwdPlan;

/* One launch, with the batch and the product in S's precision: MlpFp32 (the optimized trainer: fp32
 * FMAs) or MlpBf16 (the bf16 trainer: x and dz1 in bf16 on tensor cores,
 * part2_tensor_cores/02_bf16_backward_mma.cuh). The caller fills the first group of fields,
 * launch_backward_sgd the rest. */
template <typename S> struct MlpBwdArgsOf {
    const typename S::T *x; /* this step's batch (rows x 784) */
    const float *z1, *dz2;  /* z1 (rows x H, no bias), dz2 (rows x 10) */
    float *w1, *v1;         /* W1 (784 x H) and its velocity, stepped in place */
    bf16 *w1t;              /* MlpBf16: W1 transposed (H x 784), rewritten from the stepped tiles */
    MlpSmall in, out;       /* b1, W2, b2 as this step reads them, and where it writes them */
    int hidden, w2, b2;     /* H, and W2's and b2's offsets in `in` and `out` */
    int rows;               /* this step's batch rows */
    float lr, mu;
    int *tickets;  /* one per tile of dW1 (mlp_bwd_tile_count), all 0 between launches */
    MlpSource src; /* the next batch: next_rows rows (0: none) from position */
    int next_start, next_rows; /* next_start of src, into next */
    MlpBatchOf<S> next;
    /* the launch's geometry, from the plan */
    int k_rows, splits, tiles_n, gemm_blocks, gather_blocks; /* gemm_blocks: tiles x splits */
    bool vec; /* H % 4 == 0: rows of z1 and W1 take 16-byte copies, loads and atomics */
};
typedef MlpBwdArgsOf<MlpFp32> MlpBwdArgs;

/* A block's shared memory from batch row to batch row (k_rows of each), in floats:
 *   As   x rows r0.., pixels m0..m0+BM-1: fp32, chapter 05's transposed A tile (AS floats a
 *        row); bf16, padded rows for ldmatrix (part2_tensor_cores/02_bf16_backward_mma.cuh)
 *   Bs   z1 rows r0.., units n0..n0+BN-1, fp32 (fp32: dz1 replaces it in place)
 *   Ds   bf16 only: dz1 rounded, padded rows
 *   s_dz2, 10 a row */
template <typename Cfg, typename S> struct MlpBwdSmem {
    static constexpr bool MMA = sizeof(typename S::T) == 2;
    static constexpr int A_ROW = MMA ? MlpMmaWarps<Cfg>::A_ROW / 2 : Cfg::AS;
    static constexpr int D_ROW = MMA ? MlpMmaWarps<Cfg>::B_ROW / 2 : 0;
    static constexpr int ROW = A_ROW + Cfg::BN + D_ROW + MLP_CLASSES;
    static_assert(A_ROW % 4 == 0 && D_ROW % 4 == 0, "rows of whole 16-byte pieces");
};

/* ---------------------------------------------------------------------------------------
 * The operands, in one round of asynchronous copies into shared memory:
 *   As [k_rows][AS]  x rows r0.., pixels m0..m0+BM-1: the transposed A tile of chapter 05
 *   Bs [k_rows][BN]  z1 rows r0.., units n0..n0+BN-1 (dz1 replaces it in place)
 *   s_dz2 [k_rows][10]
 * Rows past the batch and columns past the matrix are zero-filled. */
template <typename Cfg, typename S>
__device__ __forceinline__ void mlp_bwd_copy_operands(const MlpBwdArgsOf<S> &a, float *As,
                                                      float *Bs, float *s_dz2, int m0, int n0,
                                                      int r0, int nr)
{
    /* PER: pixels a copy */
    constexpr int PER = 16 / sizeof(typename S::T), A_ROW = MlpBwdSmem<Cfg, S>::A_ROW;
    static_assert(IDX_PIXELS % PER == 0, "rows of x are whole 16-byte pieces");
    const int H = a.hidden, tid = threadIdx.x;
    for (int i = tid; i < a.k_rows * (Cfg::BM / PER); i += Cfg::THREADS) {
        int k = i / (Cfg::BM / PER), m = i % (Cfg::BM / PER) * PER;
        bool ok = k < nr && m0 + m < IDX_PIXELS;
        const typename S::T *src = ok ? a.x + (size_t)(r0 + k) * IDX_PIXELS + m0 + m : a.x;
        sgemm_cp_async16_zfill(As + k * A_ROW + m * (int)sizeof(typename S::T) / 4,
                               (const float *)src, ok);
    }
    if (a.vec) {
        for (int i = tid; i < a.k_rows * (Cfg::BN / 4); i += Cfg::THREADS) {
            int k = i / (Cfg::BN / 4), u = i % (Cfg::BN / 4) * 4;
            bool ok = k < nr && n0 + u < H;
            sgemm_cp_async16_zfill(Bs + k * Cfg::BN + u,
                                   ok ? a.z1 + (size_t)(r0 + k) * H + n0 + u : a.z1, ok);
        }
    } else {
        for (int i = tid; i < a.k_rows * Cfg::BN; i += Cfg::THREADS) {
            int k = i / Cfg::BN, u = i % Cfg::BN;
            bool ok = k < nr && n0 + u < H;
            sgemm_cp_async4_zfill(Bs + i, ok ? a.z1 + (size_t)(r0 + k) * H + n0 + u : a.z1, ok);
        }
    }
    for (int i = tid; i < a.k_rows * MLP_CLASSES; i += Cfg::THREADS) {
        bool ok = i < nr * MLP_CLASSES;
        sgemm_cp_async4_zfill(s_dz2 + i, ok ? a.dz2 + (size_t)r0 * MLP_CLASSES + i : a.dz2, ok);
    }
    sgemm_cp_async_commit();
}

/* dz1 of unit u (column u of Bs) over the block's k_rows rows into Ds, d_row elements a row
 * (fp32: Bs itself, in place of z1; bf16: rounded, into its own rows): a1 =
 * max(z1 + b1, 0), da1 = dz2 . W2[unit], dz1 = da1 where a1 > 0 (mlp_hidden_backward's
 * arithmetic). With GRADS (the first row of tiles) also the sums over the rows of a1 dz2
 * (the unit's row of dW2) and of dz1 (its db1); the other blocks skip those ten FMAs a row.
 * Rows past the batch hold zeros in dz2, so they add nothing. */
template <typename Cfg, typename S, bool GRADS> __device__ __forceinline__ void
mlp_bwd_dz1_column(float *Bs, typename S::T *Ds, int d_row, const float *s_dz2, int k_rows, int u,
                   float bias, const float (&w)[MLP_CLASSES], float (&g)[MLP_CLASSES + 1])
{
    static_assert(MLP_CLASSES % 2 == 0, "a row of dz2 is whole float2s");
#pragma unroll 4
    for (int k = 0; k < k_rows; k++) {
        float d2[MLP_CLASSES];
#pragma unroll
        for (int c = 0; c < MLP_CLASSES; c += 2) {
            float2 pair = *(const float2 *)(s_dz2 + k * MLP_CLASSES + c);
            d2[c] = pair.x, d2[c + 1] = pair.y;
        }
        float act = fmaxf(Bs[k * Cfg::BN + u] + bias, 0.0f);
        if (GRADS)
#pragma unroll
            for (int c = 0; c < MLP_CLASSES; c++) g[c] = fmaf(act, d2[c], g[c]);
        float d = mlp_dz1_of(act, d2, w);
        Ds[k * d_row + u] = S::cvt(d);
        if (GRADS) g[MLP_CLASSES] += d;
    }
}

/* Waits for the operands, then makes dz1 (thread u owning unit n0 + u), and in the first
 * row of tiles (m0 == 0) this thread's sums for W2's row and b1. */
template <typename Cfg, typename S>
__device__ __forceinline__ void mlp_bwd_make_dz1(const MlpBwdArgsOf<S> &a, float *Bs,
                                                 typename S::T *Ds, int d_row, const float *s_dz2,
                                                 int m0, int n0, float (&g)[MLP_CLASSES + 1])
{
    static_assert(Cfg::BN == Cfg::THREADS, "a thread owns one hidden unit of the tile");
    int u = threadIdx.x, j = n0 + u;
    bool unit = j < a.hidden;
    float w[MLP_CLASSES], bias = unit ? a.in.p[j] : 0.0f;
#pragma unroll
    for (int c = 0; c < MLP_CLASSES; c++) {
        w[c] = unit ? a.in.p[a.w2 + j * MLP_CLASSES + c] : 0.0f;
        g[c] = 0.0f;
    }
    g[MLP_CLASSES] = 0.0f;
    sgemm_cp_async_wait<0>();
    __syncthreads();
    if (m0 == 0)
        mlp_bwd_dz1_column<Cfg, S, true>(Bs, Ds, d_row, s_dz2, a.k_rows, u, bias, w, g);
    else
        mlp_bwd_dz1_column<Cfg, S, false>(Bs, Ds, d_row, s_dz2, a.k_rows, u, bias, w, g);
}

/* This thread's TM x TN outputs (chapter 05's warp-tiled layout) into the block's BM x BN
 * tile in shared memory, BN floats a row. */
template <typename Cfg> __device__ __forceinline__ void
mlp_bwd_stage_tile(float *stage, const float (&acc)[Cfg::TM][Cfg::TN], int row, int col)
{
#pragma unroll
    for (int i = 0; i < Cfg::TM; i++) {
        int r = row + (i / 4) * Cfg::WTR * 4 + i % 4;
#pragma unroll
        for (int j = 0; j < Cfg::TN / 4; j++)
            *(float4 *)(stage + r * Cfg::BN + col + j * Cfg::WTC * 4) =
                make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
    }
}

/* A gather block: tile g of the next batch (32 x 32 pixels of 32 rows, through shared
 * memory), and its share of clearing the next z1. */
template <typename Cfg, typename S>
__device__ __forceinline__ void mlp_bwd_gather(const MlpBwdArgsOf<S> &a, int g, float *smem)
{
    mlp_clear(a.next, (size_t)g * Cfg::THREADS + threadIdx.x,
              (size_t)a.gather_blocks * Cfg::THREADS);
    mlp_gather_tile_in<S, Cfg::THREADS / MLP_TILE>((float(*)[MLP_TILE + 1]) smem, a.src,
                                                   a.next_start, a.next_rows, a.next, g,
                                                   threadIdx.x % MLP_TILE, threadIdx.x / MLP_TILE);
}

/* The tile's product, x^T dz1 over the block's rows, and where it goes: with one K range,
 * into `stage` (BM x BN fp32 in shared memory, over the operands, once every warp is done
 * with them); with several, added into v1 (W1's velocity) with 16-byte atomics. fp32: FMAs
 * in chapter 05's warp tiles, added from the registers; MlpBf16: mma.sync on the bf16
 * operands (part2_tensor_cores/02_bf16_backward_mma.cuh), added from the stage. */
template <typename Cfg, typename S>
__device__ __forceinline__ void mlp_bwd_product(const MlpBwdArgsOf<S> &a, const float *As,
                                                const float *Bs, const float *Ds, float *stage,
                                                int m0, int n0)
{
    if constexpr (MlpBwdSmem<Cfg, S>::MMA) {
        float acc[2][MlpMmaWarps<Cfg>::NT][4] = {};
        mlp_mma_product<Cfg>((const bf16 *)As, (const bf16 *)Ds, a.k_rows, acc);
        __syncthreads();
        mlp_mma_stage<Cfg>(stage, acc);
        __syncthreads();
        if (a.splits > 1)
            mlp_stage_atomic_add<Cfg::BM, Cfg::BN, Cfg::THREADS>(a.v1, stage, m0, n0, IDX_PIXELS,
                                                                 a.hidden, a.vec);
    } else {
        int row, col;
        sgemm_thread_origin<Cfg>(threadIdx.x, &row, &col);
        float acc[Cfg::TM][Cfg::TN] = {{0.0f}};
        for (int k = 0; k < a.k_rows; k += Cfg::BK)
            sgemm_tile_multiply<Cfg>(As + k * Cfg::AS, Bs + k * Cfg::BN, acc, row, col);
        if (a.splits > 1) {
            sgemm_tile_atomic_add4<Cfg>(a.v1, IDX_PIXELS, a.hidden, 1.0f, a.vec, acc, m0 + row,
                                        n0 + col);
            return;
        }
        __syncthreads();
        mlp_bwd_stage_tile<Cfg>(stage, acc, row, col);
        __syncthreads();
    }
}

/* The SGD step of the W1 tile at (m0, n0), gradient g staged (NULL: in v already); for
 * MlpBf16 the stepped tile also goes out into W1t (through the stage). */
template <typename Cfg, typename S> __device__ __forceinline__ void
mlp_bwd_step_w1(const MlpBwdArgsOf<S> &a, float *stage, const float *g, int m0, int n0)
{
    constexpr bool MMA = MlpBwdSmem<Cfg, S>::MMA;
    mlp_sgd_tile<Cfg::BM, Cfg::BN, Cfg::THREADS>(a.w1, a.v1, g, MMA ? stage : NULL, m0, n0,
                                                 IDX_PIXELS, a.hidden, a.lr, a.mu, a.vec);
    if constexpr (MMA) {
        __syncthreads();
        mlp_w1t_from_stage<Cfg::BM, Cfg::BN>(a.w1t, stage, m0, n0, a.hidden);
    }
}

/* mlp_backward_sgd: blocks [0, gather_blocks) gather the next batch, the rest are the
 * tiles of dW1 times the K ranges (the ranges of a tile side by side). */
template <typename Cfg, typename S>
__global__ void __launch_bounds__(Cfg::THREADS, MLP_BWD_MIN_BLOCKS)
    mlp_backward_sgd(const MlpBwdArgsOf<S> a)
{
    typedef MlpBwdSmem<Cfg, S> L;
    extern __shared__ float4 mlp_bwd_smem[];
    float *smem = (float *)mlp_bwd_smem;
    if ((int)blockIdx.x < a.gather_blocks) {
        mlp_bwd_gather<Cfg>(a, blockIdx.x, smem);
        return;
    }
    const int block = blockIdx.x - a.gather_blocks, H = a.hidden;
    const int tile = block / a.splits, split = block % a.splits;
    const int m0 = tile / a.tiles_n * Cfg::BM, n0 = tile % a.tiles_n * Cfg::BN;
    const int r0 = split * a.k_rows, nr = min(a.k_rows, a.rows - r0); /* nr <= 0: an empty range */
    const int j = n0 + threadIdx.x;
    float *As = smem, *Bs = As + a.k_rows * L::A_ROW, *Ds = Bs + a.k_rows * Cfg::BN;
    float *s_dz2 = Ds + a.k_rows * L::D_ROW;
    mlp_bwd_copy_operands<Cfg>(a, As, Bs, s_dz2, m0, n0, r0, nr);

    /* dz1; in the first row of tiles, W2's and b1's gradients for the tile's units: stepped
     * at once when the block is the tile's only one, else added up in in.v */
    {
        float g[MLP_CLASSES + 1];
        if constexpr (L::MMA)
            mlp_bwd_make_dz1<Cfg>(a, Bs, (bf16 *)Ds, L::D_ROW * 2, s_dz2, m0, n0, g);
        else
            mlp_bwd_make_dz1<Cfg>(a, Bs, Bs, Cfg::BN, s_dz2, m0, n0, g);
        if (m0 == 0 && a.splits == 1) {
            mlp_bwd_step_unit(a, j, g, tile == 0);
        } else if (m0 == 0 && j < H && nr > 0) {
#pragma unroll
            for (int c = 0; c < MLP_CLASSES; c++)
                atomicAdd(a.in.v + a.w2 + j * MLP_CLASSES + c, g[c]);
            atomicAdd(a.in.v + j, g[MLP_CLASSES]);
        }
    }
    __syncthreads(); /* dz1 complete */

    /* the product: this block's rows of x^T dz1, staged over the operands or added into v1 */
    mlp_bwd_product<Cfg>(a, As, Bs, Ds, smem, m0, n0);

    /* the SGD step of the tile of W1 (and of the first row's small parameters): here, or by
     * the tile's last block */
    if (a.splits == 1) {
        mlp_bwd_step_w1<Cfg>(a, smem, smem, m0, n0);
        return;
    }
    if (!mlp_last_ticket(a.tickets + tile, a.splits)) return;
    mlp_bwd_step_w1<Cfg>(a, smem, NULL, m0, n0);
    if (m0 == 0) mlp_bwd_step_unit(a, j, NULL, tile == 0);
}

/* ------------------------------------------------------------------ host side */

static inline int mlp_bwd_round_k(int rows)
{
    return (rows + MLP_BWD_K_STEP - 1) / MLP_BWD_K_STEP * MLP_BWD_K_STEP;
}

/* The plan for a tile and a range length (rounded up to whole slices). */
static inline MlpBwdPlan mlp_bwd_plan(int tile, int batch, int k_rows)
{
    MlpBwdPlan p = {tile, mlp_bwd_round_k(k_rows), 0};
    p.splits = (batch + p.k_rows - 1) / p.k_rows;
    return p;
}

/* Without timing (--check): the 32x128 tile and one range up to 32 rows, else 64x128 tiles
 * and ranges of 32 rows. Between them the check's shapes take every path: one range and
 * several (tickets), W1 rows of 16-byte and of single floats. */
static inline MlpBwdPlan mlp_bwd_default_plan(int batch)
{
    return batch <= 32 ? mlp_bwd_plan(MLP_BWD_THIN, batch, batch)
                       : mlp_bwd_plan(MLP_BWD_WIDE, batch, 32);
}

/* Tickets a launch may need: one per tile (the 32-row tiles have the most). */
static inline int mlp_bwd_tile_count(int hidden)
{
    return sgemm_ceil_div(IDX_PIXELS, MlpBwdThinCfg::BM) *
           sgemm_ceil_div(hidden, MlpBwdThinCfg::BN);
}

template <typename Cfg, typename S> static inline size_t mlp_bwd_smem_bytes(int k_rows)
{
    size_t operands = (size_t)k_rows * MlpBwdSmem<Cfg, S>::ROW, stage = (size_t)Cfg::BM * Cfg::BN;
    size_t most = operands > stage ? operands : stage, gather = MLP_TILE * (MLP_TILE + 1);
    return (most > gather ? most : gather) * sizeof(float);
}

/* Whether this GPU gives a block the plan's shared memory. */
template <typename S> static inline bool mlp_bwd_fits(const MlpBwdPlan *p)
{
    size_t bytes = p->tile == MLP_BWD_WIDE ? mlp_bwd_smem_bytes<MlpBwdWideCfg, S>(p->k_rows)
                                           : mlp_bwd_smem_bytes<MlpBwdThinCfg, S>(p->k_rows);
    return p->k_rows <= MLP_BWD_MAX_K && bytes <= (size_t)sgemm_smem_limit();
}

template <typename Cfg, typename S> static inline void mlp_bwd_run(MlpBwdArgsOf<S> a)
{
    static unsigned long long set_on = 0; /* bit d: the shared memory limit raised on device d */
    int dev;
    CUDA_CHECK(cudaGetDevice(&dev));
    size_t bytes = mlp_bwd_smem_bytes<Cfg, S>(a.k_rows);
    if (dev >= 64 || !((set_on >> dev) & 1)) {
        size_t most = mlp_bwd_smem_bytes<Cfg, S>(MLP_BWD_MAX_K), limit = (size_t)sgemm_smem_limit();
        CUDA_CHECK(cudaFuncSetAttribute(mlp_backward_sgd<Cfg, S>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)(most < limit ? most : limit)));
        if (dev < 64) set_on |= 1ull << dev;
    }
    static_assert(Cfg::BN == MlpBwdThinCfg::BN, "tiles_n as mlp_bwd_tile_count counts it");
    a.tiles_n = sgemm_ceil_div(a.hidden, Cfg::BN);
    a.gemm_blocks = sgemm_ceil_div(IDX_PIXELS, Cfg::BM) * a.tiles_n * a.splits;
    mlp_backward_sgd<Cfg, S><<<a.gather_blocks + a.gemm_blocks, Cfg::THREADS, bytes>>>(a);
    CHECK_LAUNCH();
}

/* The backward pass and SGD step of a (its first group of fields filled in) with plan p,
 * and the gather of its next batch, if any. */
template <typename S> static inline void launch_backward_sgd(const MlpBwdPlan *p, MlpBwdArgsOf<S> a)
{
    a.k_rows = p->k_rows, a.splits = p->splits;
    a.vec = a.hidden % 4 == 0 && sgemm_aligned16(a.z1) && sgemm_aligned16(a.w1) &&
            sgemm_aligned16(a.v1);
    a.gather_blocks = a.next_rows > 0 ? mlp_gather_blocks(a.next_rows) : 0;
    if (p->tile == MLP_BWD_WIDE)
        mlp_bwd_run<MlpBwdWideCfg>(a);
    else
        mlp_bwd_run<MlpBwdThinCfg>(a);
}

#endif

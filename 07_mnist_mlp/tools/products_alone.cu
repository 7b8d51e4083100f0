/* Chapter 07: the persistent trainers' two products alone (part4_persistent/03_products_fp32.cuh,
 * 04_products_bf16.cuh and 05_products_bf16x3.cuh), in a plain launch that Nsight Compute can
 * profile: it cannot profile the persistent launch itself (cooperative, with clusters). 120
 * blocks of 256 threads, one an SM, each with the trainer's shared memory (PstShared), run
 * one product `--reps` times;
 * the dW1 product, as in the trainer, with the next batch's rows loaded before it and put
 * into x after it (fp32 and bf16x3; bf16's next batch is a TMA copy, left out). It prints
 * the time a repetition (events) and the slowest block's clock cycles. The operands are
 * arbitrary finite numbers: what is measured is the time, not the result (mnist_mlp
 * --check checks the products).
 *
 *   make products_alone
 *   ./tools/products_alone -n 256
 *   ncu --clock-control none --launch-skip 1 --launch-count 1 -k regex:product_alone \
 *       --section WarpStateStats ./tools/products_alone --kernel fp32_dw1
 *
 * Needs sm_90 (227 KB of shared memory a block); elsewhere it says so and exits 0. */
#include "common/cuda_utils.cuh"
#include "07_mnist_mlp/part4_persistent/06_phases.cuh"

static const char *const kProducts[] = {
    "fp32_forward", "fp32_dw1", "bf16x3_forward", "bf16x3_dw1", "bf16_forward", "bf16_dw1", NULL};
static const int kBlocks = 120, kImages = 60000, kHidden = 1024;

/* Product `which` (0 forward, 1 dW1 with the next rows' fetch and put where the trainer has
 * them) `reps` times on shared memory filled with small finite numbers; block b's cycles
 * into cycles[b]. */
template <typename S> __global__ void __launch_bounds__(PST_THREADS, 1)
    product_alone(int which, int reps, int rows, const float *w1, const unsigned char *pixels,
                  float *out, long long *cycles)
{
#ifdef PST_DEVICE
    typedef PstProduct<S> P;
    extern __shared__ __align__(16) unsigned char smem[];
    PstShared<S> &sm = *(PstShared<S> *)smem;
    for (int i = threadIdx.x; i < (int)(sizeof(PstShared<S>) / 4); i += PST_THREADS)
        /* 1.0-ish in bf16, 0.0078 in fp32 */
        ((unsigned *)smem)[i] = 0x3c003c00u + (unsigned)(i % 13);
    const int ks = P::MAX_SLICE;
    P prod;
    prod.load(w1, w1, kHidden, 0, ks, 0, sm.w1s);
    typename P::Row row;
    __syncthreads();
    const PstSplit sp = pst_split(rows, P::GRANULE);
    long long start = clock64();
    for (int r = 0; r < reps; r++) {
        if (which == 0) {
            P::forward(sm.xs, sm.w1s, sm.part, ks, sp, 0.01f, -0.4f);
        } else {
            int image = (blockIdx.x * PST_THREADS + threadIdx.x + 977 * r) % kImages;
            if constexpr (P::X_BUFFERS == 1)
                P::fetch(row, pixels + (size_t)image * IDX_PIXELS, 0, ks);
            __syncthreads();
            prod.dw1_step(sm.xs, sm.part, sm.w1s, ks, rows, 0.01f, 0.9f, 0.01f, -0.4f);
            __syncthreads();
            if constexpr (P::X_BUFFERS == 1)
                P::put(sm.xs, threadIdx.x, row, ks, (int)threadIdx.x < rows, 0.01f, -0.4f);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - start;
    prod.store(out, out, kHidden, 0, ks, 0, sm.w1s);
#endif
}

template <typename S> static void time_product(const char *name, int which, int rows, int reps,
                                               const float *w1, const unsigned char *pixels,
                                               float *out, long long *cycles)
{
    const size_t smem = sizeof(PstShared<S>);
    CUDA_CHECK(cudaFuncSetAttribute(product_alone<S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)smem));
    cudaFuncAttributes fa;
    CUDA_CHECK(cudaFuncGetAttributes(&fa, product_alone<S>));
    /* warm-up */
    product_alone<S><<<kBlocks, PST_THREADS, smem>>>(which, 2, rows, w1, pixels, out, cycles);
    CHECK_LAUNCH();
    cudaEvent_t begin, end;
    CUDA_CHECK(cudaEventCreate(&begin));
    CUDA_CHECK(cudaEventCreate(&end));
    float best_ms = 1e30f;
    for (int t = 0; t < 5; t++) {
        CUDA_CHECK(cudaEventRecord(begin));
        product_alone<S>
            <<<kBlocks, PST_THREADS, smem>>>(which, reps, rows, w1, pixels, out, cycles);
        CHECK_LAUNCH();
        CUDA_CHECK(cudaEventRecord(end));
        CUDA_CHECK(cudaEventSynchronize(end));
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
        if (ms < best_ms) best_ms = ms;
    }
    CUDA_CHECK(cudaEventDestroy(begin));
    CUDA_CHECK(cudaEventDestroy(end));
    long long host[kBlocks], slowest = 0;
    CUDA_CHECK(cudaMemcpy(host, cycles, sizeof(host), cudaMemcpyDeviceToHost));
    for (int b = 0; b < kBlocks; b++) slowest = host[b] > slowest ? host[b] : slowest;
    printf("%-14s rows %3d  %3d registers  %7.2f us a repetition  %7.0f cycles (slowest block)\n",
           name, rows, fa.numRegs, best_ms * 1000.0f / reps, (double)slowest / reps);
}

static const char kUsage[] =
    "usage: products_alone [--kernel NAME[,NAME...]] [-n ROWS[,ROWS...]] [--reps N] [--help]\n"
    "the persistent trainers' two products alone, in a launch Nsight Compute can profile\n"
    "  --kernel NAME  fp32_forward, fp32_dw1, bf16x3_forward, bf16x3_dw1, bf16_forward, bf16_dw1\n"
    "                 (default: all six)\n"
    "  -n ROWS        batch rows, 1-256 (default 256)\n"
    "  --reps N       repetitions in one launch, 1-100000 (default 100); the best of 5 launches\n";

static void usage_fail(const char *why, const char *what)
{
    fprintf(stderr, "products_alone: %s%s\n%s", why, what, kUsage);
    exit(2);
}

/* The flags above into o (kernel, sizes, reps); bad input: a reason and the usage, exit 2. */
static void parse_products_args(int argc, char **argv, const ProgramSpec *spec, Options *o)
{
    memset(o, 0, sizeof *o);
    o->reps = 100;
    char err[512], name[64];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(kUsage, stdout);
            exit(0);
        }
        const bool has_value = i + 1 < argc;
        if (!strcmp(a, "--kernel")) {
            if (!has_value) usage_fail("--kernel needs a name", "");
            o->kernel = argv[++i];
            if (cli_unknown_kernel(spec, o->kernel, name, sizeof name))
                usage_fail("unknown product: ", name);
        } else if (!strcmp(a, "-n") || !strcmp(a, "--size")) {
            if (!has_value) usage_fail("-n needs batch rows", "");
            if (cli_parse_size_list(argv[++i], spec, o, err, sizeof err)) usage_fail(err, "");
        } else if (!strcmp(a, "--reps")) {
            long long v;
            if (!has_value) usage_fail("--reps needs a number", "");
            if (cli_parse_ll(argv[++i], 1, 100000, &v, err, sizeof err))
                usage_fail("--reps: ", err);
            o->reps = (int)v;
        } else {
            usage_fail("unknown argument: ", a);
        }
    }
}

int main(int argc, char **argv)
{
    const ProgramSpec spec = {"products_alone", "",   "",  NULL, kProducts, 1,
                              PST_MAX_ROWS,     NULL, NULL};
    Options o;
    parse_products_args(argc, argv, &spec, &o);
    DeviceInfo info;
    get_device_info(&info);
    if (info.major < 9) {
        printf(
            "products_alone: skipped on %s (sm_%d%d): the persistent trainers need sm_90's 227 KB "
            "of shared "
            "memory a block\n",
            info.name, info.major, info.minor);
        return 0;
    }
    float *w1, *out;
    unsigned char *pixels;
    long long *cycles;
    const size_t w1_bytes = (size_t)IDX_PIXELS * kHidden * sizeof(float);
    CUDA_CHECK(cudaMalloc(&w1, w1_bytes));
    CUDA_CHECK(cudaMemset(w1, 0, w1_bytes));
    CUDA_CHECK(cudaMalloc(&out, w1_bytes));
    CUDA_CHECK(cudaMalloc(&pixels, (size_t)kImages * IDX_PIXELS));
    CUDA_CHECK(cudaMemset(pixels, 7, (size_t)kImages * IDX_PIXELS));
    CUDA_CHECK(cudaMalloc(&cycles, kBlocks * sizeof(long long)));
    printf("%s, %d blocks of %d threads, %d repetitions\n", info.name, kBlocks, PST_THREADS,
           o.reps);
    const long long default_rows = PST_MAX_ROWS;
    for (int s = 0; s < size_count(&o, 1); s++) {
        int rows = (int)size_at(&o, &default_rows, s);
        if (kernel_selected(&o, "fp32_forward"))
            time_product<MlpFp32>("fp32_forward", 0, rows, o.reps, w1, pixels, out, cycles);
        if (kernel_selected(&o, "fp32_dw1"))
            time_product<MlpFp32>("fp32_dw1", 1, rows, o.reps, w1, pixels, out, cycles);
        if (kernel_selected(&o, "bf16x3_forward"))
            time_product<MlpBf16x3>("bf16x3_forward", 0, rows, o.reps, w1, pixels, out, cycles);
        if (kernel_selected(&o, "bf16x3_dw1"))
            time_product<MlpBf16x3>("bf16x3_dw1", 1, rows, o.reps, w1, pixels, out, cycles);
        if (kernel_selected(&o, "bf16_forward"))
            time_product<MlpBf16>("bf16_forward", 0, rows, o.reps, w1, pixels, out, cycles);
        if (kernel_selected(&o, "bf16_dw1"))
            time_product<MlpBf16>("bf16_dw1", 1, rows, o.reps, w1, pixels, out, cycles);
    }
    CUDA_CHECK(cudaFree(w1));
    CUDA_CHECK(cudaFree(out));
    CUDA_CHECK(cudaFree(pixels));
    CUDA_CHECK(cudaFree(cycles));
    return 0;
}

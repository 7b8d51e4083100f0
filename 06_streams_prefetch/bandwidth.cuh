/* Chapter 06: --bench, copy bandwidth. Pageable, registered and pinned host memory, both
 * directions, 4 KiB to 1 GiB, against the nominal rate of the PCIe link. */
#ifndef CH06_BANDWIDTH_CUH
#define CH06_BANDWIDTH_CUH

#include "common/report.h"
#include "flags.cuh"
#include "kernels.cuh"

static const size_t SWEEP_MAX = 1ULL << 30; /* bandwidth sweep: 4 KiB ... 1 GiB */

typedef struct {
    int gen_cur, width_cur, gen_max, width_max;
    double nominal_gbs; /* of the maximum generation and width; 0 if unknown */
    char name[32];      /* e.g. "pcie_gen5_x16" */
} PcieLink;

/* The link as nvidia-smi reports it. The current generation drops at idle to save power
 * and comes back under load, so the nominal rate is that of the maximum link. */
static void query_pcie_link(PcieLink *l)
{
    char bus[32] = "", cmd[256];
    int dev, got = 0;
    memset(l, 0, sizeof *l);
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
    for (int attempt = 0; attempt < 2 && got != 4; attempt++) {
        snprintf(
            cmd, sizeof cmd,
            "nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.width.current,"
            "pcie.link.gen.max,pcie.link.width.max --format=csv,noheader,nounits%s%s 2>/dev/null",
            attempt == 0 ? " -i " : "", attempt == 0 ? bus : "");
        FILE *f = popen(cmd, "r");
        if (!f) continue;
        got = fscanf(f, "%d, %d, %d, %d", &l->gen_cur, &l->width_cur, &l->gen_max, &l->width_max);
        pclose(f);
    }
    if (got == 4) l->nominal_gbs = sp_pcie_gbs(l->gen_max, l->width_max);
    if (l->nominal_gbs > 0.0) {
        snprintf(l->name, sizeof l->name, "pcie_gen%d_x%d", l->gen_max, l->width_max);
        printf("PCIe link (nvidia-smi): gen %d x%d now, gen %d x%d at most; "
               "nominal %.2f GB/s per direction\n",
               l->gen_cur, l->width_cur, l->gen_max, l->width_max, l->nominal_gbs);
    } else {
        snprintf(l->name, sizeof l->name, "pcie_unknown");
        printf("PCIe link: nvidia-smi did not say; bandwidth rows have no ceiling\n");
    }
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
    cudaMemcpyKind kind;
} Copy;

static void run_copy(void *ctx)
{
    Copy *c = (Copy *)ctx;
    CUDA_CHECK(cudaMemcpy(c->dst, c->src, c->bytes, c->kind));
}

/* One host memory kind, both directions, 4 KiB to max_bytes in steps of 4. Returns the
 * best H2D rate seen. */
static double sweep_kind(const Options *o, const DeviceInfo *info, const PcieLink *link,
                         const char *kind, const char *role, void *host, void *dev,
                         size_t max_bytes)
{
    static const char *dirs[2] = {"h2d", "d2h"};
    double best = 0.0;
    for (int d = 0; d < 2; d++) {
        for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
            Copy c = {d == 0 ? dev : host, d == 0 ? host : dev, bytes,
                      d == 0 ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost};
            int reps = bytes >= (64u << 20) ? (o->reps < 5 ? o->reps : 5) : o->reps;
            float ms = time_median_ms(run_copy, &c, 2, reps);
            char name[32], size[32];
            snprintf(name, sizeof name, "%s_%s", dirs[d], kind);
            snprintf(size, sizeof size, "%zu", bytes);
            BenchRow r = {name,
                          role,
                          size,
                          ms,
                          gbs((double)bytes, ms),
                          "GB/s",
                          link->name,
                          link->nominal_gbs};
            report_row(o->csv, info->name, CHAPTER, &r, 0.0);
            if (d == 0 && r.value > best) best = r.value;
        }
    }
    return best;
}

static void bench_bandwidth(const Options *o, const DeviceInfo *info)
{
    PcieLink link;
    query_pcie_link(&link);
    size_t max_bytes = SWEEP_MAX;
    while (max_bytes > 4096 && (double)max_bytes > 0.25 * (double)info->free_bytes) max_bytes /= 4;
    void *page = xmalloc(max_bytes), *pin, *dev;
    memset(page, 1, max_bytes); /* touch every page before timing */
    CUDA_CHECK(cudaMallocHost(&pin, max_bytes));
    memset(pin, 1, max_bytes);
    CUDA_CHECK(cudaMalloc(&dev, max_bytes));
    CUDA_CHECK(cudaMemset(dev, 1, max_bytes));

    table_header("copy bandwidth: GB/s one way; ceiling = nominal rate of the PCIe link");
    sweep_kind(o, info, &link, "pageable", "naive", page, dev, max_bytes);
    CUDA_CHECK(cudaHostRegister(page, max_bytes, cudaHostRegisterDefault));
    sweep_kind(o, info, &link, "registered", "step", page, dev, max_bytes);
    CUDA_CHECK(cudaHostUnregister(page));
    double best = sweep_kind(o, info, &link, "pinned", "optimized", pin, dev, max_bytes);
    for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
        char size[32];
        snprintf(size, sizeof size, "%zu", bytes);
        double ms = link.nominal_gbs > 0 ? (double)bytes / (link.nominal_gbs * 1e6) : 0.0;
        BenchRow r = {link.name,        "ceiling", size,      ms,
                      link.nominal_gbs, "GB/s",    link.name, link.nominal_gbs};
        report_row(o->csv, info->name, CHAPTER, &r, 0.0);
    }
    if (link.nominal_gbs > 0.0)
        printf("best pinned H2D: %.2f GB/s = %.1f%% of %s (%.2f GB/s)%s\n", best,
               100.0 * best / link.nominal_gbs, link.name, link.nominal_gbs,
               best > link.nominal_gbs
                   ? "; above the nominal rate: the reported link is not the physical one (a VM?)"
                   : "");
    free(page);
    CUDA_CHECK(cudaFreeHost(pin));
    CUDA_CHECK(cudaFree(dev));
}

#endif

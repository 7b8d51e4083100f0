/* The CUDA side shared by every chapter: error checks, device info, poisoning, event
 * timing (warm-up, then the median of many repetitions) and the copy-bandwidth ceiling. */
#ifndef COMMON_CUDA_UTILS_CUH
#define COMMON_CUDA_UTILS_CUH

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "host.h"

/* Every CUDA call goes through this: on an error, say where and what, and exit 1. */
#define CUDA_CHECK(call)                                                                       \
    do {                                                                                       \
        cudaError_t err_ = (call);                                                             \
        if (err_ != cudaSuccess) {                                                             \
            fprintf(stderr, "CUDA error at %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
                    cudaGetErrorString(err_));                                                 \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)

/* After every launch: catches bad configurations at once; errors inside the kernel
 * surface at the next synchronizing CUDA_CHECK. */
#define CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

/* One attribute of the current GPU (cudaDevAttr...). */
static inline int current_device_attribute(cudaDeviceAttr attr)
{
    int dev, value;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, dev));
    return value;
}

typedef struct {
    char name[256];
    int major, minor;
    int sms;
    int l2_bytes;
    double peak_mem_gbs; /* from memory clock and bus width; a lead, not a ceiling */
    size_t free_bytes, total_bytes;
} DeviceInfo;

/* CUDA version numbers as the runtime gives them (12040) in the form people read (12.4). */
static inline void cuda_version_str(int v, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10);
}

/* Returns if this machine can run CUDA code; else says why in one line and exits
 * EXIT_NO_GPU (cli.h). Three cases told apart: no driver at all (libcuda.so.1 missing: the
 * runtime reports cudaErrorInsufficientDriver, and cudaDriverGetVersion gives 0), a driver
 * older than the runtime this binary was built with, and a driver that finds no GPU. */
static inline void require_gpu(void)
{
    int count = 0, driver = 0, runtime = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaSuccess && count > 0) return;
    char drv[16], rt[16];
    if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
    cuda_version_str(driver, drv, sizeof drv);
    cuda_version_str(runtime, rt, sizeof rt);
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (driver == 0)
        fprintf(stderr, "no CUDA driver on this machine (libcuda.so.1 not found): running the "
                        "kernels needs an NVIDIA GPU and its driver\n");
    else if (err != cudaSuccess && driver < runtime)
        fprintf(stderr,
                "the NVIDIA driver is too old for this build: it supports CUDA %s, this "
                "binary was built with CUDA %s (%s)\n",
                drv, rt, cudaGetErrorString(err));
    else if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0))
        fprintf(stderr, "no CUDA GPU: the NVIDIA driver (CUDA %s) finds none%s%s%s\n", drv,
                visible ? " (CUDA_VISIBLE_DEVICES=" : "", visible ? visible : "",
                visible ? ")" : "");
    else
        fprintf(stderr, "no usable CUDA GPU: %s (driver CUDA %s, runtime %s)\n",
                cudaGetErrorString(err), drv, rt);
    exit(EXIT_NO_GPU);
}

/* Fills info for the current device; first require_gpu: exits EXIT_NO_GPU with the reason
 * where this machine cannot run CUDA code.
 * Uses cudaDeviceGetAttribute: CUDA 13 removed cudaDeviceProp's clock-rate fields. */
static inline void get_device_info(DeviceInfo *info)
{
    require_gpu();
    int dev = 0, mem_khz = 0, bus_bits = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    CUDA_CHECK(cudaDeviceGetAttribute(&info->major, cudaDevAttrComputeCapabilityMajor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&info->minor, cudaDevAttrComputeCapabilityMinor, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&info->sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&info->l2_bytes, cudaDevAttrL2CacheSize, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
    info->peak_mem_gbs = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9; /* double data rate */
    CUDA_CHECK(cudaMemGetInfo(&info->free_bytes, &info->total_bytes));
}

static inline void print_device_info(const DeviceInfo *info)
{
    printf("GPU: %s (sm_%d%d), %d SMs, L2 %.0f MB, %.1f GB free of %.1f GB, "
           "memory peak %.0f GB/s (from clock and bus width)\n",
           info->name, info->major, info->minor, info->sms, info->l2_bytes / 1e6,
           info->free_bytes / 1e9, info->total_bytes / 1e9, info->peak_mem_gbs);
}

/* Before allocating: exit 2 with the reason if `bytes` will not fit in free GPU memory
 * (keeping 5% spare for the runtime). */
static inline void require_device_memory(const ProgramSpec *spec, const DeviceInfo *info,
                                         double bytes, const char *what)
{
    if (bytes > 0.95 * (double)info->free_bytes)
        cli_fail(spec, "%s needs %.2f GB of GPU memory but only %.2f GB is free", what, bytes / 1e9,
                 info->free_bytes / 1e9);
}

/* Fills a device buffer with 0xFF bytes: as floats that is NaN, so any element a kernel
 * fails to write shows up as an error in the comparison. */
static inline void poison_device(void *ptr, size_t bytes)
{
    CUDA_CHECK(cudaMemset(ptr, 0xFF, bytes));
}

/* Runs fn(ctx) `warmup` times, then times `reps` runs one by one with CUDA events and
 * returns the median in milliseconds. fn must only enqueue work on the default stream. */
typedef void (*TimedFn)(void *ctx);

static inline int compare_floats(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The median of ms[0..n) (sorts ms in place). */
static inline float median_ms(float *ms, int n)
{
    qsort(ms, (size_t)n, sizeof(float), compare_floats);
    return n % 2 ? ms[n / 2] : 0.5f * (ms[n / 2 - 1] + ms[n / 2]);
}

/* Runs fn(ctx) `warmup` times, then times `reps` runs one by one with CUDA events into
 * ms[0..reps). */
static inline void time_runs_ms(TimedFn fn, void *ctx, int warmup, int reps, float *ms)
{
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < warmup; i++) fn(ctx);
    CUDA_CHECK(cudaDeviceSynchronize());
    for (int i = 0; i < reps; i++) {
        CUDA_CHECK(cudaEventRecord(start, 0));
        fn(ctx);
        CUDA_CHECK(cudaEventRecord(stop, 0));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&ms[i], start, stop));
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
}

static inline float time_median_ms(TimedFn fn, void *ctx, int warmup, int reps)
{
    float *ms = (float *)xmalloc(sizeof(float) * (size_t)reps);
    time_runs_ms(fn, ctx, warmup, reps, ms);
    float median = median_ms(ms, reps);
    free(ms);
    return median;
}

typedef struct {
    void *dst;
    const void *src;
    size_t bytes;
} CopyCtx;

static inline void run_d2d_copy(void *p)
{
    CopyCtx *c = (CopyCtx *)p;
    CUDA_CHECK(cudaMemcpyAsync(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice, 0));
}

/* The memory-bound ceiling: device-to-device cudaMemcpy of `bytes`, counting bytes read
 * plus bytes written. Returns GB/s; *ms_out (if not NULL) gets the median time. */
static inline double copy_bandwidth_gbs(size_t bytes, int reps, float *ms_out)
{
    CopyCtx c;
    c.bytes = bytes;
    CUDA_CHECK(cudaMalloc(&c.dst, bytes));
    CUDA_CHECK(cudaMalloc((void **)&c.src, bytes));
    CUDA_CHECK(cudaMemset((void *)c.src, 1, bytes));
    float ms = time_median_ms(run_d2d_copy, &c, 3, reps);
    CUDA_CHECK(cudaFree(c.dst));
    CUDA_CHECK(cudaFree((void *)c.src));
    if (ms_out) *ms_out = ms;
    return 2.0 * (double)bytes / (ms * 1e-3) / 1e9;
}

/* Blocks of `block` threads that fill every SM exactly once: the grid size for a
 * grid-stride loop. */
static inline int resident_blocks(int block)
{
    int sms = current_device_attribute(cudaDevAttrMultiProcessorCount);
    int threads_per_sm = current_device_attribute(cudaDevAttrMaxThreadsPerMultiProcessor);
    return sms * (threads_per_sm / block);
}

/* GB/s from bytes moved and milliseconds. */
static inline double gbs(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

#endif

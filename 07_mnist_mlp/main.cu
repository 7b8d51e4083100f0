/* Chapter 07 driver: a 784-H-10 MLP trained on MNIST entirely on the GPU, by trainers
 * that go from the naive kernels of chapters 01-05 to a fused step captured in one CUDA
 * graph per epoch (one of them fed through chapter 06's double buffer instead of keeping
 * the data set on the GPU), plus the same trainer on cuBLAS, the same step with its two big
 * products on chapter 05's tensor cores in TF32 and in bf16, and a whole epoch in one
 * persistent launch with the weights on the chip (fp32, fp32 on tensor cores, and bf16).
 *
 *   --check   one training step of every trainer against a double-precision CPU step,
 *             and a finite-difference check of the CPU gradients (synthetic data)
 *   --bench   epoch time of every trainer at each batch size, against PyTorch (--peer)
 *   --train   train one trainer (--impl), printing one line per epoch
 *   --gpus N  the same three for the data-parallel trainer: the fused step on N GPUs,
 *             gradients summed with NCCL's all-reduce (part three of the README)
 *
 * The chapter's files, one question each:
 *   kernels.cuh        the kernels no earlier chapter teaches
 *   kernels_batch.cuh  the batch: its types and the gather
 *   kernels_tc.cuh     ... and those of the tensor-core trainers (the update that writes W1t)
 *   lowp.h             their roundings (bf16, TF32) and transposed copies as pure functions
 *   trainers.cuh       the table of trainers: which trainers there are
 *   trainer.cuh        what a trainer is: its state, a row, a family; create and destroy
 *   steps_unfused.cuh  the unfused step (naive, resident, best_kernels)
 *   steps_fused.cuh    the fused step (fused, step_graph, epoch_graph, cublas)
 *   steps_fed.cuh      the fused step fed through chapter 06's double buffer (fed)
 *   steps_tc.cuh       the fused step on tensor cores (tf32, bf16)
 *   steps_three.cuh    the three-launch step's family (optimized, bf16) and its backward
 *                      kernel's choice; steps_three_parts.cuh the step itself;
 *                      kernels_backward*.cuh, kernels_sgd_steps.cuh that kernel
 *   steps_persistent.cuh  a whole epoch in one launch (persistent, persistent_bf16x3,
 *                      persistent_bf16);
 *                      kernels_persistent.cuh its kernel's loop, kernels_persistent_phases.cuh
 *                      its phases (kernels_persistent_batch.cuh how a batch arrives),
 *                      kernels_persistent_products.cuh its two products (with
 *                      kernels_persistent_fp32.cuh, _bf16x3.cuh and _bf16.cuh, one each),
 *                      kernels_persistent_sync.cuh how its blocks reach each other
 *   epochs.cuh         how a trainer runs: graphs, an epoch, a training run
 *   flags.cuh          the chapter's command line
 *   data.cuh           the data: IDX files or the synthetic set, pixel statistics
 *   check.cuh          --check
 *   bench.cuh          --bench
 *   nccl_comm.cuh      NCCL: whether this build has it, communicators, the all-reduce alone
 *   data_parallel.cuh  the data-parallel trainer (--gpus N): its replicas and one step;
 *   data_parallel_epoch.cuh   its epochs, test pass, replicas compared, --train
 *   data_parallel_split.h   how it cuts each batch over the GPUs (plain C, host-tested)
 *   data_parallel_check.cuh, data_parallel_bench.cuh   its --check and --bench
 *   idx.h, model_file.h, reference.h  the IDX reader, weight files, the CPU reference
 *   main.cu            --train, and what runs when */
#include "bench.cuh"
#include "check.cuh"
#include "data.cuh"
#include "data_parallel_epoch.cuh"
#include "data_parallel_bench.cuh"
#include "data_parallel_check.cuh"
#include "epochs.cuh"
#include "flags.cuh"
#include "model_file.h"
#include "trainers.cuh"

/* ------------------------------------------------------------------ --train */

static int train_one(const Options *o, const DeviceInfo *info, const Data *d)
{
    const Flags *f = &FLAGS;
    const Impl *impl = find_impl(f->impl ? f->impl : (o->kernel ? o->kernel : "optimized"));
    int n_train = f->train_size < d->train.count ? f->train_size : d->train.count;
    int batch = f->batch < n_train ? f->batch : n_train;
    MlpLayout l = mlp_layout(IDX_PIXELS, f->hidden);
    float *p0 = (float *)xmalloc(l.total * sizeof(float));
    char err[1200];
    if (f->load) {
        if (model_load(f->load, &l, p0, err, sizeof err)) cli_fail(&SPEC, "--load: %s", err);
        printf("loaded %s\n", f->load);
    } else {
        mlp_init(p0, &l, o->seed);
    }
    printf("training %s: 784-%d-10, batch %d, lr %g, momentum %g, %d epochs on %d images, seed %llu\n",
           f->gpus ? "data parallel" : impl->name, f->hidden, batch, learning_rate(batch), f->momentum, f->epochs,
           n_train, o->seed);
    TrainResult r = {0.0, 0.0, 0, 0};
    int failed = 0;
    if (f->gpus) { /* data_parallel_epoch.cuh: p0 becomes the trained parameters */
#ifdef HAVE_NCCL
        failed = dp_train(d, n_train, batch, info->name, o->seed, p0, &r);
#endif
    } else {
        char why[200];
        if (impl_unsupported(impl, f->hidden, batch, why, sizeof why))
            cli_fail(&SPEC, "--impl %s cannot train H = %d in batches of %d here: %s", impl->name, f->hidden, batch, why);
        Trainer t;
        trainer_create(&t, impl, &d->train, n_train, &d->test, f->hidden, batch, d->mean, d->std, o->seed);
        trainer_set_params(&t, p0, (float)learning_rate(batch), (float)f->momentum);
        r = train(&t, f->epochs, info->name, d->name, f->epoch_csv);
        CUDA_CHECK(cudaMemcpy(p0, t.params, l.total * sizeof(float), cudaMemcpyDeviceToHost));
        trainer_destroy(&t);
    }
    printf("test accuracy %.2f%%, median epoch time %.2f ms\n", r.accuracy, r.median_ms);
    if (f->save) {
        if (model_save(f->save, &l, p0, err, sizeof err)) {
            fprintf(stderr, "mnist_mlp: --save: %s\n", err);
            exit(1);
        }
        printf("saved %s\n", f->save);
    }
    free(p0);
    if (f->min_accuracy > 0.0 && r.accuracy < f->min_accuracy) {
        fprintf(stderr, "test accuracy %.2f%% is below --min-accuracy %.2f%%\n", r.accuracy, f->min_accuracy);
        return 1;
    }
    return failed;
}

/* --gpus N: the data-parallel check and bench (data_parallel_check.cuh, _bench.cuh); a build
 * without NCCL never gets here (dp_validate_args refused --gpus). */
static int data_parallel_check_bench(const Options *o, const DeviceInfo *info, const Data *d)
{
    int failures = 0;
#ifdef HAVE_NCCL
    if (o->check) failures += dp_check(o);
    if (o->bench) failures += dp_bench(o, info, d);
#else
    (void)o; (void)info; (void)d;
#endif
    return failures;
}

int main(int argc, char **argv)
{
    Options o;
    list_impl_names();
    parse_args(argc, argv, &SPEC, &o);
    if (FLAGS.impl) o.kernel = FLAGS.impl;
    if (FLAGS.train && !FLAGS.impl && o.kernel && strchr(o.kernel, ','))
        cli_fail(&SPEC, "--train trains one trainer: give one --impl (or one --kernel), not a list");
    if (FLAGS.train && o.check && o.bench) o.check = o.bench = 0; /* --train alone: train only */
    if (FLAGS.train && FLAGS.load && FLAGS.epochs == 0 && FLAGS.save)
        cli_fail(&SPEC, "--save with --epochs 0 would only copy the --load file");
    dp_validate_args(&o);
    Data d;
    memset(&d, 0, sizeof d);
    if (FLAGS.train || o.bench) load_data(&FLAGS, &d);

    DeviceInfo info;
    get_device_info(&info);
    print_device_info(&info);
    int max_batch = FLAGS.batch;
    for (int s = 0; s < o.nsizes; s++) max_batch = o.sizes[s].dim[0] > max_batch ? (int)o.sizes[s].dim[0] : max_batch;
    require_device_memory(&SPEC, &info, trainer_bytes(FLAGS.hidden, max_batch, 60000, 10000), "the trainer");

    int failures = 0;
    if (FLAGS.gpus) failures += data_parallel_check_bench(&o, &info, &d);
    else if (o.check) failures += run_checks(&o);
    if (o.bench && !FLAGS.gpus) {
        if (o.nsizes == 0) {
            failures += bench_batch(&o, &info, &d, 256, FLAGS.hidden);
            failures += bench_batch(&o, &info, &d, 32, FLAGS.hidden);
        }
        for (int s = 0; s < o.nsizes; s++)
            failures += bench_batch(&o, &info, &d, (int)o.sizes[s].dim[0], o.sizes[s].ndims > 1 ? (int)o.sizes[s].dim[1] : FLAGS.hidden);
    }
    if (FLAGS.train) failures += train_one(&o, &info, &d);
    idx_free(&d.train);
    idx_free(&d.test);
    if (CUBLAS) cublasDestroy(CUBLAS);
    return failures ? 1 : 0;
}

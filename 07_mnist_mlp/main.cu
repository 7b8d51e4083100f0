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
 *             gradients summed with NCCL's all-reduce (part3_data_parallel/README.md);
 *             or, started by a launcher (part3_data_parallel/launch.sh, torchrun,
 *             mpirun), as one rank of N processes, one GPU each
 *
 * The chapter's files, one question each (a folder per part, each file numbered by the
 * step of the version table where a reader meets it):
 *   kernels.cuh        the kernels no earlier chapter teaches, and where each one lives
 *   driver/            trainer_table.cuh the table of trainers: which trainers there are;
 *                      trainer.cuh what a trainer is: its state, a row, a family; create and
 *                      destroy; epochs.cuh how a trainer runs: graphs, an epoch, a training
 *                      run; flags.cuh the command line; data.cuh the IDX files or the
 *                      synthetic set, pixel statistics; check.cuh --check; bench.cuh --bench;
 *                      idx.h, model_file.h, cpu_reference.h the IDX reader, weight files, the
 *                      CPU reference
 *   part1_fused/       01_unfused_* the unfused step (naive, resident, best_kernels);
 *                      02_batch_gather.cuh the batch: its types and the gather;
 *                      04_fused_steps.cuh the fused step (fused, step_graph, epoch_graph,
 *                      cublas), 04_gemm_tune.cuh its products' plans; 05_fed_steps.cuh the
 *                      fused step fed through chapter 06's double buffer (fed);
 *                      08_three_launch_steps.cuh the three-launch step's family (optimized,
 *                      bf16) and its backward kernel's choice, 08_three_launches.cuh the step
 *                      itself, 08_backward_kernel*.cuh that kernel
 *   part2_tensor_cores/  01_tc_kernels.cuh the tensor-core trainers' kernels (the update that
 *                      writes W1t), 01_roundings.h their roundings (bf16, TF32) and
 *                      transposed copies as pure functions, 01_tc_steps.cuh the fused step on
 *                      tensor cores (tf32, bf16); 02_bf16_backward_mma.cuh the backward
 *                      kernel's product in bf16
 *   part3_data_parallel/  data parallel: 00_launcher_env.h who this process is under a launcher,
 *                      00_rendezvous.h how the ranks meet and watch each other (both plain C,
 *                      host-tested), 00_ranks.cuh the program as one rank, launch.sh a
 *                      launcher of N local ranks; 01_batch_split.h how each batch is cut
 *                      over the GPUs (plain C, host-tested); 02_nccl_comm.cuh NCCL: whether
 *                      this build has it, communicators, waits that end; 02_nccl_buffers.cuh
 *                      gradient buffers (plain or symmetric memory), the collectives, the
 *                      all-reduce alone; 03_dp_trainer.cuh the replicas, 03_dp_step.cuh one
 *                      step; 04_dp_epochs.cuh its epochs, test pass,
 *                      replicas compared, --train; 05_dp_check.cuh, 06_dp_bench.cuh its
 *                      --check and --bench
 *   part4_persistent/  a whole epoch in one launch (persistent, persistent_bf16x3,
 *                      persistent_bf16): 01_cluster_sync.cuh how its blocks reach each other;
 *                      02_products.cuh its two products (03_products_fp32.cuh,
 *                      04_products_bf16.cuh and 05_products_bf16x3.cuh, one each);
 *                      06_phases.cuh its phases, 07_softmax_backward.cuh two of them,
 *                      08_batch.cuh how a batch arrives; 09_kernel.cuh the kernel's loop;
 *                      10_launch.cuh where and how it launches, 11_persistent_steps.cuh its
 *                      family
 *   solutions/         the lesson's exercises' answers, each a family of steps with a row
 *                      (role exercise) in driver/trainer_table.cuh
 *   figures/           the lesson's explanatory drawings (make_figures.py)
 *   main.cu            --train, and what runs when */
#include "07_mnist_mlp/driver/bench.cuh"
#include "07_mnist_mlp/driver/check.cuh"
#include "07_mnist_mlp/driver/data.cuh"
#include "07_mnist_mlp/part3_data_parallel/04_dp_epochs.cuh"
#include "07_mnist_mlp/part3_data_parallel/06_dp_bench.cuh"
#include "07_mnist_mlp/part3_data_parallel/05_dp_check.cuh"
#include "07_mnist_mlp/driver/epochs.cuh"
#include "07_mnist_mlp/driver/flags.cuh"
#include "07_mnist_mlp/driver/model_file.h"
#include "07_mnist_mlp/driver/trainer_table.cuh"

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
    printf(
        "training %s: 784-%d-10, batch %d, lr %g, momentum %g, %d epochs on %d images, seed %llu\n",
        dp_active() ? "data parallel" : impl->name, f->hidden, batch, learning_rate(batch),
        f->momentum, f->epochs, n_train, o->seed);
    TrainResult r = {0.0, 0.0, 0, 0};
    int failed = 0;
    if (dp_active()) { /* part3_data_parallel/04_dp_epochs.cuh: p0 becomes the trained parameters */
#ifdef HAVE_NCCL
        failed = dp_train(d, n_train, batch, info->name, o->seed, p0, &r);
#endif
    } else {
        char why[200];
        if (impl_unsupported(impl, f->hidden, batch, why, sizeof why))
            cli_fail(&SPEC, "--impl %s cannot train H = %d in batches of %d here: %s", impl->name,
                     f->hidden, batch, why);
        Trainer t;
        trainer_create(&t, impl, &d->train, n_train, &d->test, f->hidden, batch, d->mean, d->std,
                       o->seed);
        trainer_set_params(&t, p0, (float)learning_rate(batch), (float)f->momentum);
        r = train(&t, f->epochs, info->name, d->name, f->epoch_csv);
        CUDA_CHECK(cudaMemcpy(p0, t.params, l.total * sizeof(float), cudaMemcpyDeviceToHost));
        trainer_destroy(&t);
    }
    printf("test accuracy %.2f%%, median epoch time %.2f ms\n", r.accuracy, r.median_ms);
    if (f->save && dp_is_rank0()) { /* under a launcher: rank 0's copy (the replicas are one) */
        if (model_save(f->save, &l, p0, err, sizeof err)) {
            fprintf(stderr, "mnist_mlp: --save: %s\n", err);
            exit(1);
        }
        printf("saved %s\n", f->save);
    }
    free(p0);
    if (f->min_accuracy > 0.0 && r.accuracy < f->min_accuracy) {
        fprintf(stderr, "test accuracy %.2f%% is below --min-accuracy %.2f%%\n", r.accuracy,
                f->min_accuracy);
        return 1;
    }
    return failed;
}

/* --gpus N or a launcher's ranks: the data-parallel check and bench
 * (part3_data_parallel/05_dp_check.cuh and 06_dp_bench.cuh); a build without NCCL never gets
 * here (dp_validate_args refused). */
static int data_parallel_check_bench(const Options *o, const DeviceInfo *info, const Data *d)
{
    int failures = 0;
#ifdef HAVE_NCCL
    if (o->check) failures += dp_check(o);
    if (o->bench) failures += dp_bench(o, info, d);
#else
    (void)o;
    (void)info;
    (void)d;
#endif
    return failures;
}

int main(int argc, char **argv)
{
    Options o;
    list_impl_names();
    dp_world_init(argc, argv, &SPEC); /* under a launcher: this rank's place (00_ranks.cuh) */
    parse_args(argc, argv, &SPEC, &o);
    if (FLAGS.impl) o.kernel = FLAGS.impl;
    if (FLAGS.train && !FLAGS.impl && o.kernel && strchr(o.kernel, ','))
        cli_fail(&SPEC,
                 "--train trains one trainer: give one --impl (or one --kernel), not a list");
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
    for (int s = 0; s < o.nsizes; s++)
        max_batch = o.sizes[s].dim[0] > max_batch ? (int)o.sizes[s].dim[0] : max_batch;
    require_device_memory(&SPEC, &info, trainer_bytes(FLAGS.hidden, max_batch, 60000, 10000),
                          "the trainer");
    dp_world_join(); /* under a launcher: every rank checked its input; they meet here */

    int failures = 0;
    if (dp_active())
        failures += data_parallel_check_bench(&o, &info, &d);
    else if (o.check)
        failures += run_checks(&o);
    if (o.bench && !dp_active()) {
        if (o.nsizes == 0) {
            failures += bench_batch(&o, &info, &d, 256, FLAGS.hidden);
            failures += bench_batch(&o, &info, &d, 32, FLAGS.hidden);
        }
        for (int s = 0; s < o.nsizes; s++)
            failures += bench_batch(&o, &info, &d, (int)o.sizes[s].dim[0],
                                    o.sizes[s].ndims > 1 ? (int)o.sizes[s].dim[1] : FLAGS.hidden);
    }
    if (FLAGS.train) failures += train_one(&o, &info, &d);
    idx_free(&d.train);
    idx_free(&d.test);
    if (CUBLAS) cublasDestroy(CUBLAS);
    return dp_world_finish(failures ? 1 : 0);
}

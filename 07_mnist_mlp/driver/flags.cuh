/* Chapter 07: the chapter's command line. Besides the flags every chapter takes
 * (common/cli.h): --train and the trainer's shape and schedule, the data, the model
 * files, the bench's side files, and --gpus with its buckets and timeline (data
 * parallel); their defaults, and the learning rate's. */
#ifndef CH07_FLAGS_CUH
#define CH07_FLAGS_CUH

#include <math.h>

#include "common/cli.h"
#include "07_mnist_mlp/part3_data_parallel/02_nccl_comm.cuh"
#include "07_mnist_mlp/driver/trainer_table.cuh"

typedef struct {
    int train;
    const char *impl;
    const char *data; /* NULL: the first of DEFAULT_DATA (driver/data.cuh) that exists */
    int hidden, batch, epochs, train_size;
    double lr, momentum, min_accuracy;
    const char *save, *load, *epoch_csv, *stage_csv, *peer;
    /* --gpus N: data-parallel over N GPUs (0: one GPU, no NCCL); buckets -1: default */
    int gpus, buckets;
    const char *timeline;   /* --timeline FILE: the data-parallel bench's timeline */
    int symmetric;          /* --symmetric: the gradients in NCCL's symmetric memory */
    const char *rendezvous; /* --rendezvous SPEC (read ahead of the rest: 00_ranks.cuh) */
} Flags;

static int parse_double_flag(const char *text, double lo, double hi, double *out, char *err,
                             size_t errlen)
{
    char *end = NULL;
    double v = text ? strtod(text, &end) : 0.0;
    if (!text || end == text || *end != '\0' || !isfinite(v)) {
        snprintf(err, errlen, "'%s' is not a number", text ? text : "");
        return -1;
    }
    if (v < lo || v > hi) {
        snprintf(err, errlen, "%s is out of range [%g, %g]", text, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

static int extra_flag(int argc, char **argv, int *i, char *err, size_t errlen, void *ctx)
{
    Flags *f = (Flags *)ctx;
    const char *a = argv[*i];
    struct {
        const char *name;
        int *target;
        long long lo, hi;
    } ints[] = {
        {"--hidden", &f->hidden, 1, 8192},    {"--batch", &f->batch, 1, 60000},
        {"--epochs", &f->epochs, 0, 1000},    {"--train-size", &f->train_size, 1, 60000},
        {"--gpus", &f->gpus, 1, DP_MAX_GPUS}, {"--buckets", &f->buckets, 0, DP_MAX_BUCKETS}};
    struct {
        const char *name;
        double *target;
        double lo, hi;
    } reals[] = {{"--lr", &f->lr, 1e-12, 1e38},
                 {"--momentum", &f->momentum, 0.0, 0.999},
                 {"--min-accuracy", &f->min_accuracy, 0.0, 100.0},
                 {"--timeout", &DP_WORLD.timeout_s, 1.0, 86400.0}};
    struct {
        const char *name;
        const char **target;
    } strs[] = {{"--data", &f->data},
                {"--save", &f->save},
                {"--load", &f->load},
                {"--epoch-csv", &f->epoch_csv},
                {"--stage-csv", &f->stage_csv},
                {"--peer", &f->peer},
                {"--impl", &f->impl},
                {"--timeline", &f->timeline},
                {"--rendezvous", &f->rendezvous}};
    if (!strcmp(a, "--train")) {
        f->train = 1;
        return 1;
    }
    if (!strcmp(a, "--symmetric")) {
        f->symmetric = 1;
        return 1;
    }
    int known = 0;
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) known |= !strcmp(a, ints[k].name);
    for (size_t k = 0; k < sizeof reals / sizeof reals[0]; k++) known |= !strcmp(a, reals[k].name);
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) known |= !strcmp(a, strs[k].name);
    if (!known) return 0;
    if (*i + 1 >= argc) {
        snprintf(err, errlen, "%s needs a value", a);
        return -1;
    }
    const char *v = argv[++*i];
    char why[160];
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        if (strcmp(a, ints[k].name)) continue;
        long long x;
        if (cli_parse_ll(v, ints[k].lo, ints[k].hi, &x, why, sizeof why)) {
            snprintf(err, errlen, "%s: %s", a, why);
            return -1;
        }
        *ints[k].target = (int)x;
    }
    for (size_t k = 0; k < sizeof reals / sizeof reals[0]; k++) {
        if (strcmp(a, reals[k].name)) continue;
        if (parse_double_flag(v, reals[k].lo, reals[k].hi, reals[k].target, why, sizeof why)) {
            snprintf(err, errlen, "%s: %s", a, why);
            return -1;
        }
    }
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++)
        if (!strcmp(a, strs[k].name)) *strs[k].target = v;
    if (!strcmp(a, "--impl") && !find_impl(v)) {
        snprintf(err, errlen, "unknown --impl '%s' (see the --kernel list below)", v);
        return -1;
    }
    return 1;
}

static Flags FLAGS = {0,    NULL, NULL, 1024, 256,  10, 0,  0.0,  0.9, 0.0,
                      NULL, NULL, NULL, NULL, NULL, 0,  -1, NULL, 0,   NULL};

/* Without --lr: 0.05 at batch 256, scaled with the batch (0.00625 at batch 32), so that
 * a step moves the weights about as far per image at every batch size. */
static double learning_rate(int batch) { return FLAGS.lr > 0.0 ? FLAGS.lr : 0.05 * batch / 256.0; }

static const ProgramSpec SPEC = {
    "mnist_mlp",
    "Chapter 07: a 784-H-10 MLP trained on MNIST on the GPU, naive to fused + CUDA graphs, vs "
    "cuBLAS and PyTorch.",
    "--check: BATCHxHIDDEN shapes of the two-step check (default 1x3,37x50,32x1024,256x1024);\n"
    "                   --bench: batch sizes (default 256,32); BATCHxHIDDEN also sets H",
    "\nchapter flags:\n"
    "  --train          train one trainer (--impl, default optimized), one line per epoch\n"
    "  --impl NAME      the trainer (same names as --kernel)\n"
    "  --data DIR       folder of the four IDX files (.gz or raw), or 'synthetic'\n"
    "                   (default: data/mnist, data/fashion-mnist, "
    "/usr/share/datasets/fashion-mnist)\n"
    "  --hidden H       hidden units (default 1024)\n"
    "  --batch B        batch size of --train (default 256)\n"
    "  --lr X           learning rate (default 0.05 x batch / 256)\n"
    "  --momentum X     SGD momentum in [0, 0.999] (default 0.9; 0: plain SGD)\n"
    "  --epochs N       epochs (default 10; 0 with --load: evaluate only)\n"
    "  --train-size N   train on the first N training images (default all)\n"
    "  --save FILE      write the trained weights (atomically) to FILE\n"
    "  --load FILE      start from the weights in FILE\n"
    "  --min-accuracy P exit 1 if the final test accuracy is below P percent\n"
    "  --epoch-csv FILE append one row per epoch (impl, loss, accuracy, time) to FILE\n"
    "  --stage-csv FILE append the bench's launch-by-launch step times to FILE\n"
    "  --peer FILE      CSV with PyTorch's rows (peer/torch_reference.py): the bench's ceiling\n"
    "\ndata parallel (part3_data_parallel/), " DP_NCCL_NOTE ":\n"
    "  one process per GPU: under a launcher (part3_data_parallel/launch.sh N, torchrun, mpirun)\n"
    "                   mnist_mlp is rank RANK of WORLD_SIZE (or OMPI_COMM_WORLD_RANK/_SIZE) on\n"
    "                   GPU LOCAL_RANK, and trains, checks or benches the fused step over NCCL,\n"
    "                   each GPU a replica with --batch / WORLD_SIZE images of every batch\n"
    "  --gpus N         the same with N GPUs driven by this one process (no launcher)\n"
    "                   (--batch: the global batch; --bench: -n is the batch per GPU, default\n"
    "                   256,1024,4096 x H 1024,4096)\n"
    "  --rendezvous S   where the ranks meet: env (MASTER_ADDR:MASTER_PORT, the default),\n"
    "                   file:PATH (a file every rank can read; rank 0 writes its address\n"
    "                   there) or tcp:HOST:PORT\n"
    "  --timeout S      seconds a rank waits for the others (the rendezvous, a collective)\n"
    "                   before it stops them all (default 60)\n"
    "  --buckets K      dW1's all-reduce in K pieces, each started when its rows are done\n"
    "                   (default 2; 0: one all-reduce after the whole backward pass)\n"
    "  --symmetric      the gradients in NCCL's symmetric memory (ncclMemAlloc, registered\n"
    "                   windows); --bench: also, in rows ..._sym, beside the plain runs\n"
    "  --timeline FILE  with --bench: every launch and all-reduce of two steps, per GPU and "
    "stream\n"
    "\nexit status: 0 done; 1 a check failed, accuracy below --min-accuracy, replicas that\n"
    "  differ, or a CUDA/NCCL error; 2 bad input (under a launcher: on any rank, named on\n"
    "  every rank); 3 data parallel: a rank exited or was killed, never came, or made no\n"
    "  progress within --timeout (every other rank stops too)\n",
    IMPL_NAMES.name,
    2,
    60000,
    extra_flag,
    &FLAGS};

#endif

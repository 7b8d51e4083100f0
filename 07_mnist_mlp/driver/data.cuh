/* Chapter 07: the data a trainer learns from. The four IDX files of MNIST (or
 * Fashion-MNIST) read by driver/idx.h, or a synthetic ten-class set made in memory; the pixel
 * mean and standard deviation the trainers normalize with. */
#ifndef CH07_DATA_CUH
#define CH07_DATA_CUH

#include <math.h>
#include <sys/stat.h>

#include "common/host.h"
#include "07_mnist_mlp/driver/flags.cuh"
#include "07_mnist_mlp/driver/idx.h"
#include "07_mnist_mlp/driver/cpu_reference.h"
#include "07_mnist_mlp/driver/synthetic.h"

typedef struct {
    IdxDataset train, test;
    float mean, std; /* of the training pixels scaled to [0, 1] */
    char name[64];   /* "mnist", "fashion-mnist", "synthetic" */
} Data;

static const char *const DEFAULT_DATA[] = {"data/mnist",
                                           "../data/mnist",
                                           "data/fashion-mnist",
                                           "../data/fashion-mnist",
                                           "/usr/share/datasets/fashion-mnist",
                                           NULL};

static int has_idx_files(const char *dir)
{
    char p[1024];
    struct stat st;
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", dir);
    if (stat(p, &st) == 0) return 1;
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte", dir);
    return stat(p, &st) == 0;
}

static void pixel_stats(const IdxDataset *ds, int count, float *mean, float *std)
{
    double s = 0.0, s2 = 0.0, n = (double)count * IDX_PIXELS;
    for (size_t i = 0; i < (size_t)count * IDX_PIXELS; i++) {
        double v = ds->pixels[i] / 255.0;
        s += v;
        s2 += v * v;
    }
    *mean = (float)(s / n);
    *std = (float)sqrt(fmax(s2 / n - (s / n) * (s / n), 1e-12));
}

/* Loads (or synthesizes) train and test sets; any problem is a usage error (exit 2). */
static void load_data(Flags *f, Data *d)
{
    const char *dir = f->data;
    for (int i = 0; !dir && DEFAULT_DATA[i]; i++)
        if (has_idx_files(DEFAULT_DATA[i])) dir = DEFAULT_DATA[i];
    if (!dir)
        cli_fail(&SPEC, "no MNIST files found (looked in data/mnist, data/fashion-mnist and "
                        "/usr/share/datasets/fashion-mnist): run `make data` or pass --data DIR");
    if (!strcmp(dir, "synthetic")) {
        synthesize(&d->train, 6000, 11);
        synthesize(&d->test, 1000, 12);
        snprintf(d->name, sizeof d->name, "synthetic");
    } else {
        char err[1400];
        if (idx_load(dir, "train", &d->train, err, sizeof err) ||
            idx_load(dir, "t10k", &d->test, err, sizeof err))
            cli_fail(&SPEC, "--data %s: %s", dir, err);
        const char *base = strrchr(dir, '/');
        base = base && base[1] ? base + 1 : dir;
        snprintf(d->name, sizeof d->name, "%s", base);
    }
    if (f->train_size == 0) f->train_size = d->train.count;
    if (f->train_size > d->train.count)
        cli_fail(&SPEC, "--train-size %d, but %s has only %d training images", f->train_size, dir,
                 d->train.count);
    pixel_stats(&d->train, f->train_size < d->train.count ? f->train_size : d->train.count,
                &d->mean, &d->std);
    printf(
        "data: %s (%s): %d training images (%d used), %d test images, pixel mean %.4f std %.4f\n",
        d->name, dir, d->train.count,
        f->train_size < d->train.count ? f->train_size : d->train.count, d->test.count, d->mean,
        d->std);
}

#endif

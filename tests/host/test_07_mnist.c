/* Host test: chapter 07's IDX reader on the real MNIST files in data/mnist (`make data`
 * puts them there; .ci/run runs it). 60000 training and 10000 test images of 28x28,
 * labels 0-9 with MNIST's own count of each class, and the pixel mean of the training
 * set that every MNIST normalization uses (0.1307). SKIP, with the reason, where
 * data/mnist holds no files. Runs in tests/build; $ROOT (set by run_tests.sh) names the
 * repository, else it is two folders up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "07_mnist_mlp/driver/idx.h"

/* The class counts of MNIST's training and test labels. */
static const int TRAIN_COUNTS[10] = {5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949};
static const int TEST_COUNTS[10] = {980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009};

static int failures = 0;

static void result(int ok, const char *what, const char *detail)
{
    printf("%s 07 real MNIST: %s%s%s\n", ok ? "PASS" : "FAIL", what, detail[0] ? ": " : "", detail);
    failures += !ok;
}

/* One split: its count, and each class as often as in MNIST. */
static void check_split(const char *dir, const char *prefix, int want, const int counts[10],
                        IdxDataset *ds)
{
    char err[1400] = "", what[96], detail[256] = "";
    snprintf(what, sizeof what, "%s: %d images of 28x28 load", prefix, want);
    if (idx_load(dir, prefix, ds, err, sizeof err) != 0) {
        result(0, what, err);
        ds->count = 0;
        return;
    }
    if (ds->count != want) snprintf(detail, sizeof detail, "%d images", ds->count);
    result(ds->count == want, what, detail);
    int seen[10] = {0}, ok = 1;
    for (int i = 0; i < ds->count; i++) seen[ds->labels[i]]++; /* idx_load refused labels > 9 */
    for (int c = 0; c < 10; c++)
        if (seen[c] != counts[c]) {
            snprintf(detail, sizeof detail, "class %d appears %d times, MNIST has %d", c, seen[c],
                     counts[c]);
            ok = 0;
            break;
        }
    snprintf(what, sizeof what,
             "%s: labels 0-9, each class as often as in MNIST (%d zeros ... %d nines)", prefix,
             counts[0], counts[9]);
    result(ok, what, ok ? "" : detail);
}

int main(void)
{
    const char *root = getenv("ROOT");
    char dir[1024], probe[1100];
    snprintf(dir, sizeof dir, "%s/data/mnist", root && root[0] ? root : "../..");
    struct stat st;
    snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte", dir);
    int raw = stat(probe, &st) == 0;
    snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte.gz", dir);
    if (!raw && stat(probe, &st) != 0) {
        printf(
            "SKIP 07 real MNIST: %s holds no MNIST files (`make data` fetches them; .ci/run does; "
            "offline it cannot)\n",
            dir);
        return 0;
    }
    IdxDataset train, test;
    check_split(dir, "train", 60000, TRAIN_COUNTS, &train);
    check_split(dir, "t10k", 10000, TEST_COUNTS, &test);
    if (train.count > 0) {
        double sum = 0.0;
        size_t n = (size_t)train.count * IDX_PIXELS;
        for (size_t i = 0; i < n; i++) sum += train.pixels[i];
        double mean = sum / n / 255.0;
        char detail[64];
        snprintf(detail, sizeof detail, "%.4f", mean);
        result(mean > 0.1306 && mean < 0.1308, "train: pixel mean 0.1307 of [0, 1]", detail);
        idx_free(&train);
    }
    if (test.count > 0) idx_free(&test);
    return failures ? 1 : 0;
}

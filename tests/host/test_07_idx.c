/* Host test for chapter 07's IDX reader: good files load (raw and gzip), and broken
 * files are refused with a message that names what is wrong. The files are built here,
 * in the current directory (tests/build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "07_mnist_mlp/driver/idx.h"

static int failures = 0;

static void put_be32(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* An image file of n images of rows x cols (pixel i = i % 251) with `delta` bytes cut
 * (negative) or added (positive) at the end, and the given magic. */
static unsigned char *image_file(unsigned magic, unsigned n, unsigned rows, unsigned cols,
                                 long delta, size_t *len)
{
    size_t data = (size_t)n * rows * cols;
    *len = (size_t)((long)(16 + data) + delta);
    unsigned char *b = calloc(*len + 16, 1);
    put_be32(b, magic);
    put_be32(b + 4, n);
    put_be32(b + 8, rows);
    put_be32(b + 12, cols);
    for (size_t i = 16; i < *len; i++) b[i] = (unsigned char)((i - 16) % 251);
    return b;
}

static unsigned char *label_file(unsigned magic, unsigned n, unsigned bad_label, size_t *len)
{
    *len = 8 + (size_t)n;
    unsigned char *b = calloc(*len, 1);
    put_be32(b, magic);
    put_be32(b + 4, n);
    for (unsigned i = 0; i < n; i++) b[8 + i] = (unsigned char)(i % 10);
    if (bad_label && n > 2) b[8 + 2] = (unsigned char)bad_label;
    return b;
}

static void write_file(const char *path, const unsigned char *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, len, f);
    fclose(f);
}

static void write_gz(const char *path, const unsigned char *b, size_t len)
{
    gzFile g = gzopen(path, "wb");
    gzwrite(g, b, (unsigned)len);
    gzclose(g);
}

/* Writes a split "dir/prefix-*" from the two buffers (gzip if gz) and loads it. */
static int load_split(const char *dir, const unsigned char *img, size_t img_len,
                      const unsigned char *lab, size_t lab_len, int gz, IdxDataset *ds, char *err,
                      size_t errlen)
{
    char p[256];
    mkdir(dir, 0755);
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte%s", dir, gz ? ".gz" : "");
    (gz ? write_gz : write_file)(p, img, img_len);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte%s", dir, gz ? ".gz" : "");
    (gz ? write_gz : write_file)(p, lab, lab_len);
    return idx_load(dir, "train", ds, err, errlen);
}

static void expect_ok(const char *name, int rc, const IdxDataset *ds, unsigned n, const char *err)
{
    int ok = rc == 0 && ds->count == (int)n &&
             ds->pixels[IDX_PIXELS + 5] == (unsigned char)((IDX_PIXELS + 5) % 251) &&
             ds->labels[n - 1] == (unsigned char)((n - 1) % 10);
    printf("%s 07 idx: %s\n", ok ? "PASS" : "FAIL", name);
    if (!ok) printf("    rc %d, error: %s\n", rc, rc ? err : "(none)");
    failures += !ok;
}

static void expect_refused(const char *name, int rc, const char *err, const char *keyword)
{
    int ok = rc != 0 && strstr(err, keyword) != NULL;
    printf("%s 07 idx refuses %s\n", ok ? "PASS" : "FAIL", name);
    if (ok)
        printf("    (%s)\n", err);
    else
        printf("    rc %d, wanted a message with '%s', got: %s\n", rc, keyword,
               rc ? err : "(accepted)");
    failures += !ok;
}

/* One broken case: build the files, load them, expect a refusal naming `keyword`. */
static void broken(const char *name, unsigned char *img, size_t il, unsigned char *lab, size_t ll,
                   int gz, const char *keyword)
{
    static int case_no = 0;
    char dir[64];
    snprintf(dir, sizeof dir, "idx_broken_%d", case_no++); /* fresh: NAME.gz wins over NAME */
    IdxDataset ds;
    char err[512] = "";
    int rc = load_split(dir, img, il, lab, ll, gz, &ds, err, sizeof err);
    if (rc == 0) idx_free(&ds);
    expect_refused(name, rc, err, keyword);
    free(img);
    free(lab);
}

static void test_good_files(void)
{
    size_t il, ll;
    unsigned char *img = image_file(0x803, 7, 28, 28, 0, &il), *lab = label_file(0x801, 7, 0, &ll);
    IdxDataset ds;
    char err[512] = "";
    int rc = load_split("idx_raw", img, il, lab, ll, 0, &ds, err, sizeof err);
    expect_ok("loads a raw pair of 7 images", rc, &ds, 7, err);
    if (rc == 0) idx_free(&ds);
    rc = load_split("idx_gz", img, il, lab, ll, 1, &ds, err, sizeof err);
    expect_ok("loads a gzip pair of 7 images", rc, &ds, 7, err);
    if (rc == 0) idx_free(&ds);
    free(img);
    free(lab);
}

static void test_broken_headers(void)
{
    size_t il, ll;
    unsigned char *img, *lab;
    img = image_file(0x801, 5, 28, 28, 0, &il);
    lab = label_file(0x801, 5, 0, &ll);
    broken("a labels file given as images (bad magic)", img, il, lab, ll, 0, "bad magic");
    img = image_file(0x803, 5, 28, 28, 0, &il);
    lab = label_file(0x803, 5, 0, &ll);
    broken("an images magic on the labels (bad magic)", img, il, lab, ll, 0, "bad magic");
    img = image_file(0x0D03, 5, 28, 28, 0, &il);
    lab = label_file(0x801, 5, 0, &ll);
    broken("float pixels (type 0x0D, bad magic)", img, il, lab, ll, 1, "bad magic");
    img = image_file(0x803, 5, 27, 28, 0, &il);
    lab = label_file(0x801, 5, 0, &ll);
    broken("27x28 images (wrong dimensions)", img, il, lab, ll, 0, "wrong dimensions");
    img = image_file(0x803, 5, 28, 32, 0, &il);
    lab = label_file(0x801, 5, 0, &ll);
    broken("28x32 images (wrong dimensions)", img, il, lab, ll, 1, "wrong dimensions");
    img = image_file(0x803, 0, 28, 28, 0, &il);
    lab = label_file(0x801, 0, 0, &ll);
    broken("an empty set", img, il, lab, ll, 0, "no items");
}

static void test_broken_lengths(void)
{
    size_t il, ll;
    unsigned char *img, *lab;
    img = image_file(0x803, 5, 28, 28, -1, &il);
    lab = label_file(0x801, 5, 0, &ll);
    broken("images one byte short (truncated)", img, il, lab, ll, 0, "truncated");
    img = image_file(0x803, 5, 28, 28, -(long)(5 * IDX_PIXELS + 6), &il);
    lab = label_file(0x801, 5, 0, &ll);
    broken("a 10-byte images file (truncated header)", img, il, lab, ll, 0, "truncated");
    img = image_file(0x803, 5, 28, 28, 3, &il);
    lab = label_file(0x801, 5, 0, &ll);
    broken("3 bytes after the images", img, il, lab, ll, 1, "unexpected bytes");
    img = image_file(0x803, 5, 28, 28, 0, &il);
    lab = label_file(0x801, 5, 0, &ll);
    ll--;
    broken("labels one byte short (truncated)", img, il, lab, ll, 0, "truncated");
    img = image_file(0x803, 5, 28, 28, 0, &il);
    lab = label_file(0x801, 4, 0, &ll);
    broken("5 images, 4 labels (count mismatch)", img, il, lab, ll, 0, "count mismatch");
    img = image_file(0x803, 5, 28, 28, 0, &il);
    lab = label_file(0x801, 5, 10, &ll);
    broken("label 10", img, il, lab, ll, 0, "out of range");
    img = image_file(0x803, 5, 28, 28, 0, &il);
    lab = label_file(0x801, 5, 255, &ll);
    broken("label 255", img, il, lab, ll, 1, "out of range");
}

/* A gzip file cut in half, and one with its compressed bytes scrambled. */
static void test_broken_gzip(void)
{
    size_t il, ll;
    unsigned char *img = image_file(0x803, 50, 28, 28, 0, &il),
                  *lab = label_file(0x801, 50, 0, &ll);
    IdxDataset ds;
    char err[512] = "";
    load_split("idx_gzcut", img, il, lab, ll, 1, &ds, err, sizeof err);
    idx_free(&ds);
    const char *path = "idx_gzcut/train-images-idx3-ubyte.gz";
    FILE *f = fopen(path, "rb");
    unsigned char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    write_file(path, buf, n / 2);
    int rc = idx_load("idx_gzcut", "train", &ds, err, sizeof err);
    if (rc == 0) idx_free(&ds);
    expect_refused("a gzip file cut in half", rc, err, "truncated");
    for (size_t i = 20; i < n - 8; i += 7) buf[i] ^= 0x5A;
    write_file(path, buf, n);
    rc = idx_load("idx_gzcut", "train", &ds, err, sizeof err);
    if (rc == 0) idx_free(&ds);
    expect_refused("scrambled gzip data", rc, err, "gzip");
    rc = idx_load("idx_nowhere", "train", &ds, err, sizeof err);
    expect_refused("a missing folder", rc, err, "cannot open");
    free(img);
    free(lab);
}

/* The real files of Debian's dataset-fashion-mnist, where that package is installed. */
static void test_debian_files(void)
{
    const char *dir = "/usr/share/datasets/fashion-mnist";
    struct stat st;
    if (stat(dir, &st) != 0) {
        printf("SKIP 07 idx reads Debian's Fashion-MNIST: %s is not installed\n", dir);
        return;
    }
    IdxDataset train, test;
    char err[512] = "";
    int ok = idx_load(dir, "train", &train, err, sizeof err) == 0 && train.count == 60000;
    ok = ok && idx_load(dir, "t10k", &test, err, sizeof err) == 0 && test.count == 10000;
    printf("%s 07 idx reads Debian's Fashion-MNIST (60000 + 10000 images)%s%s\n",
           ok ? "PASS" : "FAIL", ok ? "" : ": ", ok ? "" : err);
    failures += !ok;
    if (ok) {
        idx_free(&train);
        idx_free(&test);
    }
}

int main(void)
{
    test_good_files();
    test_broken_headers();
    test_broken_lengths();
    test_broken_gzip();
    test_debian_files();
    return failures ? 1 : 0;
}

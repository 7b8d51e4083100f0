/* Reading the MNIST files: the IDX format, gzip-compressed or raw.
 *
 *   offset 0   4 bytes  magic: 0x00, 0x00, type (0x08 = unsigned byte), number of dims
 *   offset 4   4 bytes per dim, big-endian: the sizes (images: count, rows, cols;
 *              labels: count)
 *   then       the data, one byte per element, row-major
 *
 * Everything is checked, and a bad file is refused with what is wrong: a bad magic,
 * images that are not 28x28, a file shorter or longer than its header says, image and
 * label counts that differ, a label above 9, a broken gzip stream. The whole file is
 * decoded in memory first, so the parser can be fuzzed on plain byte buffers
 * (tests/fuzz_idx.c). Plain C with zlib: the host tests compile it with gcc. */
#ifndef CH07_IDX_H
#define CH07_IDX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define IDX_ROWS 28
#define IDX_COLS 28
#define IDX_PIXELS (IDX_ROWS * IDX_COLS)
#define IDX_CLASSES 10
/* The largest decoded file accepted: the 60,000 training images take 47 MB. */
#define IDX_MAX_BYTES ((size_t)256 << 20)

typedef struct {
    unsigned char *pixels; /* count x 784, row-major, 0..255 */
    unsigned char *labels; /* count, 0..9 */
    int count;
} IdxDataset;

static inline unsigned idx_be32(const unsigned char *p)
{
    return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | (unsigned)p[3];
}

/* Inflates a gzip buffer into a new malloc'd one of at most max_out bytes. Returns 0, or
 * -1 with the reason in err. */
static inline int idx_gunzip(const unsigned char *in, size_t len, size_t max_out,
                             unsigned char **out, size_t *out_len, char *err, size_t errlen)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
        snprintf(err, errlen, "zlib could not start");
        return -1;
    }
    size_t cap = len * 4 + 1024, used = 0;
    if (cap > max_out) cap = max_out;
    unsigned char *buf = (unsigned char *)malloc(cap);
    int rc = Z_OK;
    zs.next_in = (unsigned char *)in;
    zs.avail_in = (uInt)(len > 0xFFFFFFFFu ? 0xFFFFFFFFu : len);
    while (buf && rc == Z_OK) {
        if (used == cap) {
            if (cap == max_out) break;
            size_t grown = cap * 2 < max_out ? cap * 2 : max_out;
            unsigned char *bigger = (unsigned char *)realloc(buf, grown);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap = grown;
        }
        zs.next_out = buf + used;
        zs.avail_out = (uInt)(cap - used);
        rc = inflate(&zs, Z_NO_FLUSH);
        used = cap - zs.avail_out;
    }
    inflateEnd(&zs);
    if (!buf) {
        snprintf(err, errlen, "out of memory while decompressing");
        return -1;
    }
    if (rc != Z_STREAM_END) {
        if (used == max_out && rc == Z_OK)
            snprintf(err, errlen, "decompresses to more than %zu bytes", max_out);
        else if (rc == Z_BUF_ERROR || rc == Z_OK)
            snprintf(err, errlen, "gzip stream is truncated (ends after %zu decompressed bytes)",
                     used);
        else
            snprintf(err, errlen, "gzip data is corrupt (%s)", zs.msg ? zs.msg : "zlib error");
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = used;
    return 0;
}

/* Checks the magic and the sizes of an IDX header with `ndims` dimensions; on success
 * *count is the first size and *data_bytes the number of bytes the header promises. */
static inline int idx_check_header(const unsigned char *buf, size_t len, int ndims, unsigned *count,
                                   size_t *data_bytes, char *err, size_t errlen)
{
    size_t header = 4 + 4 * (size_t)ndims;
    if (len < 4) {
        snprintf(err, errlen, "truncated: %zu bytes, too short for the 4-byte magic", len);
        return -1;
    }
    unsigned magic = idx_be32(buf), want = 0x0800u | (unsigned)ndims;
    if (magic != want) {
        snprintf(err, errlen, "bad magic 0x%08x (expected 0x%08x: unsigned bytes, %d dimension%s)",
                 magic, want, ndims, ndims > 1 ? "s" : "");
        return -1;
    }
    if (len < header) {
        snprintf(err, errlen, "truncated: %zu bytes, the header alone needs %zu", len, header);
        return -1;
    }
    *count = idx_be32(buf + 4);
    if (*count == 0) {
        snprintf(err, errlen, "the header says it holds no items");
        return -1;
    }
    size_t per_item = 1;
    if (ndims == 3) {
        unsigned rows = idx_be32(buf + 8), cols = idx_be32(buf + 12);
        if (rows != IDX_ROWS || cols != IDX_COLS) {
            snprintf(err, errlen, "wrong dimensions: images are %ux%u, expected %dx%d", rows, cols,
                     IDX_ROWS, IDX_COLS);
            return -1;
        }
        per_item = IDX_PIXELS;
    }
    *data_bytes = (size_t)*count * per_item;
    if (len - header < *data_bytes) {
        snprintf(err, errlen,
                 "truncated: the header promises %u items (%zu bytes) but only %zu bytes follow",
                 *count, *data_bytes, len - header);
        return -1;
    }
    if (len - header > *data_bytes) {
        snprintf(err, errlen, "%zu unexpected bytes after the %u items the header promises",
                 len - header - *data_bytes, *count);
        return -1;
    }
    return 0;
}

/* Parses decoded image and label files into ds (which then owns fresh copies). */
static inline int idx_parse_pair(const unsigned char *img, size_t img_len, const unsigned char *lab,
                                 size_t lab_len, IdxDataset *ds, char *err, size_t errlen)
{
    unsigned n_img, n_lab;
    size_t img_bytes, lab_bytes;
    char why[200];
    memset(ds, 0, sizeof *ds);
    if (idx_check_header(img, img_len, 3, &n_img, &img_bytes, why, sizeof why)) {
        snprintf(err, errlen, "images: %s", why);
        return -1;
    }
    if (idx_check_header(lab, lab_len, 1, &n_lab, &lab_bytes, why, sizeof why)) {
        snprintf(err, errlen, "labels: %s", why);
        return -1;
    }
    if (n_img != n_lab) {
        snprintf(err, errlen, "count mismatch: %u images but %u labels", n_img, n_lab);
        return -1;
    }
    if (n_img > 0x7FFFFFFFu) {
        snprintf(err, errlen, "%u items is more than this reader handles", n_img);
        return -1;
    }
    for (size_t i = 0; i < lab_bytes; i++) {
        if (lab[8 + i] >= IDX_CLASSES) {
            snprintf(err, errlen, "labels: label %u of item %zu is out of range 0..9", lab[8 + i],
                     i);
            return -1;
        }
    }
    ds->pixels = (unsigned char *)malloc(img_bytes);
    ds->labels = (unsigned char *)malloc(lab_bytes);
    if (!ds->pixels || !ds->labels) {
        free(ds->pixels);
        free(ds->labels);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(ds->pixels, img + 16, img_bytes);
    memcpy(ds->labels, lab + 8, lab_bytes);
    ds->count = (int)n_img;
    return 0;
}

/* Reads a whole file and, if it starts with the gzip magic 1f 8b, inflates it. */
static inline int idx_read_file(const char *path, unsigned char **out, size_t *out_len, char *err,
                                size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %.700s", path);
        return -1;
    }
    size_t cap = 1 << 20, len = 0, got;
    unsigned char *raw = (unsigned char *)malloc(cap);
    while (raw && (got = fread(raw + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            if (cap >= IDX_MAX_BYTES) {
                free(raw);
                raw = NULL;
                break;
            }
            unsigned char *bigger = (unsigned char *)realloc(raw, cap * 2);
            if (!bigger) {
                free(raw);
                raw = NULL;
                break;
            }
            raw = bigger;
            cap *= 2;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (!raw || bad) {
        free(raw);
        snprintf(err, errlen, "%.700s: %s", path,
                 bad ? "read error" : "too large or out of memory");
        return -1;
    }
    if (len >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) {
        char why[200];
        int rc = idx_gunzip(raw, len, IDX_MAX_BYTES, out, out_len, why, sizeof why);
        free(raw);
        if (rc) snprintf(err, errlen, "%.700s: %s", path, why);
        return rc;
    }
    *out = raw;
    *out_len = len;
    return 0;
}

/* Loads one split (prefix "train" or "t10k") from dir, trying NAME.gz then NAME. */
static inline int idx_load(const char *dir, const char *prefix, IdxDataset *ds, char *err,
                           size_t errlen)
{
    const char *kinds[2] = {"images-idx3-ubyte", "labels-idx1-ubyte"};
    unsigned char *buf[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    char path[2][1024];
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        snprintf(path[k], sizeof path[k], "%s/%s-%s.gz", dir, prefix, kinds[k]);
        FILE *probe = fopen(path[k], "rb");
        if (probe)
            fclose(probe);
        else
            snprintf(path[k], sizeof path[k], "%s/%s-%s", dir, prefix, kinds[k]);
        rc = idx_read_file(path[k], &buf[k], &len[k], err, errlen);
    }
    if (rc == 0) {
        char why[300];
        rc = idx_parse_pair(buf[0], len[0], buf[1], len[1], ds, why, sizeof why);
        if (rc) snprintf(err, errlen, "%.300s + %.300s: %s", path[0], path[1], why);
    }
    free(buf[0]);
    free(buf[1]);
    return rc;
}

static inline void idx_free(IdxDataset *ds)
{
    free(ds->pixels);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}

#endif

/* Model files: the parameters behind a header that says what they are and a checksum
 * that says they arrived whole.
 *
 *   offset  0  "MLP7"            magic
 *           4  u32 version       1
 *           8  u32 inputs        784
 *          12  u32 hidden        H
 *          16  u32 classes       10
 *          20  u32 crc32         zlib's CRC-32 of the payload
 *          24  u64 payload bytes 4 x (floats of the parameter array, see driver/cpu_reference.h)
 *          32  payload           the parameter array, little-endian IEEE floats
 *
 * Saving writes a temporary file beside the target and renames it over the target, so a
 * crash never leaves half a model under the real name. Loading refuses a file whose
 * magic, version, shapes, length or checksum is wrong, saying which. Plain C with zlib. */
#ifndef CH07_MODEL_FILE_H
#define CH07_MODEL_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "07_mnist_mlp/driver/cpu_reference.h"

#define MODEL_MAGIC "MLP7"
#define MODEL_VERSION 1u
#define MODEL_HEADER_BYTES 32

static inline void model_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t model_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint32_t model_crc(const unsigned char *p, size_t n)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, p, chunk);
        p += chunk;
        n -= chunk;
    }
    return (uint32_t)crc;
}

/* Builds the header for a parameter array of layout l. */
static inline void model_header(unsigned char *h, const MlpLayout *l, const float *params)
{
    uint64_t bytes = (uint64_t)l->total * sizeof(float);
    memcpy(h, MODEL_MAGIC, 4);
    model_put32(h + 4, MODEL_VERSION);
    model_put32(h + 8, (uint32_t)l->in);
    model_put32(h + 12, (uint32_t)l->hidden);
    model_put32(h + 16, MLP_CLASSES);
    model_put32(h + 20, model_crc((const unsigned char *)params, (size_t)bytes));
    model_put32(h + 24, (uint32_t)bytes);
    model_put32(h + 28, (uint32_t)(bytes >> 32));
}

/* Checks a whole model file held in buf against the expected shape and copies its
 * parameters into params (l->total floats). Returns 0, or -1 with the reason in err. */
static inline int model_parse(const unsigned char *buf, size_t len, const MlpLayout *l,
                              float *params, char *err, size_t errlen)
{
    if (len < MODEL_HEADER_BYTES) {
        snprintf(err, errlen, "truncated: %zu bytes, shorter than the %d-byte header", len,
                 MODEL_HEADER_BYTES);
        return -1;
    }
    if (memcmp(buf, MODEL_MAGIC, 4) != 0) {
        snprintf(err, errlen, "not a model file (bad magic; expected \"%s\")", MODEL_MAGIC);
        return -1;
    }
    uint32_t version = model_get32(buf + 4), in = model_get32(buf + 8),
             hidden = model_get32(buf + 12);
    uint32_t classes = model_get32(buf + 16), crc = model_get32(buf + 20);
    uint64_t bytes = (uint64_t)model_get32(buf + 24) | (uint64_t)model_get32(buf + 28) << 32;
    if (version != MODEL_VERSION) {
        snprintf(err, errlen, "version %u, this program reads version %u", version, MODEL_VERSION);
        return -1;
    }
    if (in != (uint32_t)l->in || hidden != (uint32_t)l->hidden || classes != MLP_CLASSES) {
        snprintf(err, errlen,
                 "shape mismatch: the file holds a %u-%u-%u network, this run is %d-%d-%d", in,
                 hidden, classes, l->in, l->hidden, MLP_CLASSES);
        return -1;
    }
    if (bytes != (uint64_t)l->total * sizeof(float)) {
        snprintf(err, errlen, "header says %llu payload bytes, a %u-%u-%u network has %zu",
                 (unsigned long long)bytes, in, hidden, classes, l->total * sizeof(float));
        return -1;
    }
    if (len - MODEL_HEADER_BYTES != bytes) {
        snprintf(err, errlen, "%s: %zu payload bytes, the header says %llu",
                 len - MODEL_HEADER_BYTES < bytes ? "truncated" : "trailing bytes",
                 len - MODEL_HEADER_BYTES, (unsigned long long)bytes);
        return -1;
    }
    uint32_t actual = model_crc(buf + MODEL_HEADER_BYTES, (size_t)bytes);
    if (actual != crc) {
        snprintf(err, errlen, "checksum mismatch (stored %08x, computed %08x): the file is corrupt",
                 crc, actual);
        return -1;
    }
    memcpy(params, buf + MODEL_HEADER_BYTES, (size_t)bytes);
    return 0;
}

/* Writes path.tmp.PID, flushes it to disk, then renames it to path. */
static inline int model_save(const char *path, const MlpLayout *l, const float *params, char *err,
                             size_t errlen)
{
    char tmp[1100];
    unsigned char header[MODEL_HEADER_BYTES];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    model_header(header, l, params);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "cannot create %.400s", tmp);
        return -1;
    }
    int ok = fwrite(header, 1, sizeof header, f) == sizeof header &&
             fwrite(params, sizeof(float), l->total, f) == l->total && fflush(f) == 0 &&
             fsync(fileno(f)) == 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        snprintf(err, errlen, "cannot write %.400s", path);
        return -1;
    }
    return 0;
}

static inline int model_load(const char *path, const MlpLayout *l, float *params, char *err,
                             size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s", path);
        return -1;
    }
    size_t want = MODEL_HEADER_BYTES + l->total * sizeof(float);
    unsigned char *buf = (unsigned char *)malloc(want + 1);
    size_t len = buf ? fread(buf, 1, want + 1, f) : 0; /* one byte more finds trailing bytes */
    fclose(f);
    if (!buf) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char why[256];
    int rc = model_parse(buf, len, l, params, why, sizeof why);
    if (rc) snprintf(err, errlen, "%s: %s", path, why);
    free(buf);
    return rc;
}

#endif

/* libFuzzer target for the file readers of chapter 07: the IDX parser (after gzip
 * decoding, as idx_read_file does it) and the model-file parser. Any input must be either
 * accepted as a well-formed file or refused with a message: no crash, no out-of-bounds
 * access (AddressSanitizer watches), no leak. tests/steps/60_fuzz.sh builds and runs it
 * (from the repository root):
 *   clang -g -O1 -fsanitize=fuzzer,address -I. -o fuzz_idx 07_mnist_mlp/tests/fuzz_idx.c -lz
 *   ./fuzz_idx -max_total_time=30 CORPUS_DIR
 * The first byte picks what the rest is: images, labels, an image/label pair cut at the
 * second byte's fraction, or a model file. */
#include <stdint.h>

#include "07_mnist_mlp/driver/idx.h"
#include "07_mnist_mlp/driver/model_file.h"

/* Small enough that one input never decodes to more than a few MB. */
#define FUZZ_MAX_DECODED ((size_t)4 << 20)

static int decode(const uint8_t *in, size_t len, unsigned char **out, size_t *out_len, char *err,
                  size_t errlen)
{
    if (len >= 2 && in[0] == 0x1f && in[1] == 0x8b)
        return idx_gunzip(in, len, FUZZ_MAX_DECODED, out, out_len, err, errlen);
    *out = (unsigned char *)malloc(len ? len : 1);
    if (len) memcpy(*out, in, len);
    *out_len = len;
    return 0;
}

static const unsigned char GOOD_LABELS[8 + 3] = {0, 0, 8, 1, 0, 0, 0, 3, 1, 2, 3};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    char err[1024];
    unsigned char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;
    IdxDataset ds;
    int mode = data[0] % 4;
    const uint8_t *body = data + 2;
    size_t blen_in = size - 2;
    if (mode == 0 && decode(body, blen_in, &a, &alen, err, sizeof err) == 0) {
        if (idx_parse_pair(a, alen, GOOD_LABELS, sizeof GOOD_LABELS, &ds, err, sizeof err) == 0)
            idx_free(&ds);
    } else if (mode == 1 && decode(body, blen_in, &a, &alen, err, sizeof err) == 0) {
        unsigned count;
        size_t bytes;
        idx_check_header(a, alen, 1, &count, &bytes, err, sizeof err);
    } else if (mode == 2) {
        size_t cut = blen_in * data[1] / 255;
        if (decode(body, cut, &a, &alen, err, sizeof err) == 0 &&
            decode(body + cut, blen_in - cut, &b, &blen, err, sizeof err) == 0 &&
            idx_parse_pair(a, alen, b, blen, &ds, err, sizeof err) == 0)
            idx_free(&ds);
    } else if (mode == 3) {
        MlpLayout l = mlp_layout(IDX_PIXELS, 1 + data[1] % 4);
        float *params = (float *)malloc(l.total * sizeof(float));
        model_parse(body, blen_in, &l, params, err, sizeof err);
        free(params);
    }
    free(a);
    free(b);
    return 0;
}

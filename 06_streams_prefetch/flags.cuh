/* Chapter 06: the chapter's command line (--work, --chunks, --timeline besides the flags
 * every chapter takes) and the names --kernel accepts. */
#ifndef CH06_FLAGS_CUH
#define CH06_FLAGS_CUH

#include <string.h>

#include "common/cli.h"
#include "common/versions.h"

#define CHAPTER "06_streams_prefetch"

typedef struct {
    int work;   /* --work: multiply-adds per element; 0: 16 in --check, balanced in --bench */
    int chunks; /* --chunks: pieces of the array in the chunked pipelines */
    const char *timeline; /* --timeline FILE: where the timeline goes (bench only) */
} ChapterFlags;

static ChapterFlags FLAGS = {0, 64, NULL};

/* The pipelines' and unified memory's names and "bandwidth" (the copy sweep), filled from
 * their tables by main before the command line is read. */
static NameList KERNEL_NAMES;

static int parse_chapter_flag(int argc, char **argv, int *i, char *err, size_t errlen, void *ctx)
{
    ChapterFlags *f = (ChapterFlags *)ctx;
    const char *a = argv[*i];
    int is_work = !strcmp(a, "--work"), is_chunks = !strcmp(a, "--chunks");
    if (!is_work && !is_chunks && strcmp(a, "--timeline")) return 0;
    if (*i + 1 >= argc) {
        snprintf(err, errlen, "%s needs a value", a);
        return -1;
    }
    const char *value = argv[++*i];
    if (!is_work && !is_chunks) {
        f->timeline = value;
        return 1;
    }
    long long v;
    char why[256];
    if (cli_parse_ll(value, 1, is_work ? 1000000 : 4096, &v, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", a, why);
        return -1;
    }
    if (is_work)
        f->work = (int)v;
    else
        f->chunks = (int)v;
    return 1;
}

static const ProgramSpec SPEC = {
    "streams_prefetch",
    "Chapter 06: hide PCIe copies behind kernels: pinned memory, streams, double buffering,\n"
    "unified memory prefetch; against the PCIe link rate and the bound max(H2D, kernel, D2H).",
    "number of floats, up to 1073741824 (check default: 1,3,1021,4097,1000003,2^28;\n"
    "                   bench default: pipelines at 2^28, unified memory at 2^25,\n"
    "                   copy bandwidth 4 KiB..1 GiB)",
    "  --work N         multiply-adds per element (default: 16 in --check; in --bench chosen\n"
    "                   so the kernel takes as long as the larger copy)\n"
    "  --chunks C       pieces the array is cut into by the chunked pipelines (default 64;\n"
    "                   --check also always runs 7)\n"
    "  --timeline FILE  with --bench: write start and end of every copy and kernel of four\n"
    "                   pipelines (16 chunks) to FILE, tab-separated, for plot_extra.py\n",
    KERNEL_NAMES.name,
    1,
    1LL << 30,
    parse_chapter_flag,
    &FLAGS};

#endif

/* Command-line parsing shared by every chapter binary.
 *
 * Common flags: --check, --bench, --kernel NAME, -n/--size LIST, --reps N, --csv FILE,
 * --seed N, --help. A size LIST is one or more comma-separated sizes; a size is a
 * positive integer or, for matrix chapters, up to three of them joined by 'x'
 * (e.g. "4096", "127x129x131", "1,1023,1025"). Bad input never gets past parse_args:
 * it prints a one-line reason and the usage on stderr and exits 2.
 *
 * A chapter with flags of its own passes a handler that consumes them (see
 * ExtraFlagFn); everything else stays the same in every chapter. Plain C, no CUDA:
 * the host tests compile it with gcc. */
#ifndef COMMON_CLI_H
#define COMMON_CLI_H

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_SIZES 32
#define CLI_MAX_DIMS 3

/* Exit status of a binary that cannot run on this machine: no CUDA driver, no GPU, or a
 * driver older than the CUDA runtime it was built with (common/cuda_utils.cuh's
 * require_gpu). Neither 1 (a check failed) nor 2 (bad input): 77, which test drivers read
 * as "skipped" (tests/steps/40_gpu.sh does). */
#define EXIT_NO_GPU 77

typedef struct {
    long long dim[CLI_MAX_DIMS]; /* unused trailing dims are 0 */
    int ndims;
} ProblemSize;

typedef struct {
    int check;          /* --check: validate every version, exit 1 on a failure */
    int bench;          /* --bench: time every version and print the table */
    const char *kernel; /* --kernel NAME[,NAME...]: those versions only (NULL: all) */
    ProblemSize sizes[CLI_MAX_SIZES];
    int nsizes;      /* 0: the chapter's defaults */
    int reps;        /* --reps: timed repetitions (median is reported) */
    const char *csv; /* --csv FILE: append one CSV row per version and size */
    unsigned long long seed;
} Options;

/* What a chapter tells the parser about itself. */
typedef struct {
    const char *program;        /* e.g. "vector_add" */
    const char *summary;        /* one line: what the program does */
    const char *size_help;      /* what -n means in this chapter, with its default */
    const char *extra_usage;    /* usage lines of the chapter's own flags, or NULL */
    const char *const *kernels; /* NULL-terminated list of valid --kernel names */
    int max_dims;               /* 1 for vectors, 2 or 3 for matrices */
    long long max_dim;          /* the largest value one dimension may take */
    /* Consumes argv[*i] (and its value) if it is a flag of the chapter's; returns 1 if
     * consumed, 0 if not the chapter's, or -1 after writing a reason into err. */
    int (*extra_flag)(int argc, char **argv, int *i, char *err, size_t errlen, void *ctx);
    void *extra_ctx;
} ProgramSpec;

static inline void cli_print_usage(FILE *f, const ProgramSpec *spec)
{
    fprintf(f,
            "usage: %s [--check] [--bench] [--kernel NAME] [-n SIZE[,SIZE...]] [--reps N]\n"
            "       %*s [--csv FILE] [--seed N] [--help]%s\n",
            spec->program, (int)strlen(spec->program), "",
            spec->extra_usage ? " [chapter flags below]" : "");
    fprintf(f, "%s\n\n", spec->summary);
    fprintf(
        f,
        "  --check          validate every version against the CPU reference (exit 1 on failure)\n"
        "  --bench          time every version, print the table (default: both)\n"
        "  --kernel NAME    run one version only (or a comma-separated list); one of:");
    for (const char *const *k = spec->kernels; k && *k; k++) fprintf(f, " %s", *k);
    fprintf(f, "\n  -n, --size LIST  %s\n", spec->size_help);
    fprintf(f, "  --reps N         timed repetitions, median reported (default 20)\n"
               "  --csv FILE       append one row per version and size to FILE\n"
               "  --seed N         seed of the random inputs (default 1234)\n"
               "  --help           this text\n");
    if (spec->extra_usage) fprintf(f, "%s", spec->extra_usage);
    fprintf(f,
            "exit status: 0 all went well, 1 a check failed (or a CUDA error), 2 bad input,\n"
            "  %d no usable GPU here (no CUDA driver, no GPU, or a driver older than this build)\n",
            EXIT_NO_GPU);
}

/* What a usage error does, for a program that runs as one of several processes (chapter
 * 07's ranks tell the other ranks before exiting): set once, called with the reason in
 * place of the lines below, and never returns. NULL: the lines below. */
typedef void (*CliFailHook)(const ProgramSpec *spec, const char *reason);
static inline CliFailHook *cli_fail_hook(void)
{
    static CliFailHook hook = NULL;
    return &hook;
}

/* Prints "program: reason" and the usage on stderr, then exits 2. */
static inline void cli_fail(const ProgramSpec *spec, const char *fmt, ...)
{
    char reason[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    if (*cli_fail_hook()) (*cli_fail_hook())(spec, reason);
    fprintf(stderr, "%s: %s\n", spec->program, reason);
    cli_print_usage(stderr, spec);
    exit(2);
}

/* Parses a whole decimal integer in [lo, hi]; returns 0 on success, else writes why. */
static inline int cli_parse_ll(const char *text, long long lo, long long hi, long long *out,
                               char *err, size_t errlen)
{
    char *end = NULL;
    if (text == NULL || *text == '\0') {
        snprintf(err, errlen, "missing number");
        return -1;
    }
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (end == text || *end != '\0') {
        snprintf(err, errlen, "'%s' is not a whole number", text);
        return -1;
    }
    if (errno == ERANGE || v > hi) {
        snprintf(err, errlen, "'%s' is too large (at most %lld)", text, hi);
        return -1;
    }
    if (v < lo) {
        snprintf(err, errlen, "'%s' is too small (at least %lld)", text, lo);
        return -1;
    }
    *out = v;
    return 0;
}

/* Parses one size such as "4096" or "127x129x131". */
static inline int cli_parse_size(const char *text, int max_dims, long long max_dim,
                                 ProblemSize *out, char *err, size_t errlen)
{
    char buf[128];
    if (strlen(text) >= sizeof buf) {
        snprintf(err, errlen, "size '%.20s...' is too long", text);
        return -1;
    }
    strcpy(buf, text);
    memset(out, 0, sizeof *out);
    char *save = NULL;
    for (char *tok = strtok_r(buf, "x", &save); tok; tok = strtok_r(NULL, "x", &save)) {
        if (out->ndims == max_dims) {
            snprintf(err, errlen, "size '%s' has more than %d dimension%s", text, max_dims,
                     max_dims > 1 ? "s" : "");
            return -1;
        }
        char why[128];
        if (cli_parse_ll(tok, 1, max_dim, &out->dim[out->ndims], why, sizeof why) != 0) {
            snprintf(err, errlen, "bad size '%s': %s", text, why);
            return -1;
        }
        out->ndims++;
    }
    if (out->ndims == 0 || text[0] == 'x' || text[strlen(text) - 1] == 'x' || strstr(text, "xx")) {
        snprintf(err, errlen, "bad size '%s'", text);
        return -1;
    }
    return 0;
}

static inline int cli_parse_size_list(const char *text, const ProgramSpec *spec, Options *o,
                                      char *err, size_t errlen)
{
    const char *p = text;
    o->nsizes = 0;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char one[128];
        if (len == 0 || len >= sizeof one) {
            snprintf(err, errlen, "bad size list '%s'", text);
            return -1;
        }
        if (o->nsizes == CLI_MAX_SIZES) {
            snprintf(err, errlen, "more than %d sizes in '%s'", CLI_MAX_SIZES, text);
            return -1;
        }
        memcpy(one, p, len);
        one[len] = '\0';
        if (cli_parse_size(one, spec->max_dims, spec->max_dim, &o->sizes[o->nsizes], err, errlen))
            return -1;
        o->nsizes++;
        if (!comma) return 0;
        p = comma + 1;
    }
}

/* Whether `name` (len characters of it) is one of the chapter's versions. */
static inline int cli_is_known_kernel(const ProgramSpec *spec, const char *name, size_t len)
{
    for (const char *const *k = spec->kernels; k && *k; k++)
        if (strlen(*k) == len && strncmp(*k, name, len) == 0) return 1;
    return 0;
}

/* --kernel takes one name or a comma-separated list; NULL if every name is known, else
 * the first unknown one (copied into buf). */
static inline const char *cli_unknown_kernel(const ProgramSpec *spec, const char *list, char *buf,
                                             size_t len)
{
    for (const char *p = list;; p++) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (!cli_is_known_kernel(spec, p, n)) {
            snprintf(buf, len, "%.*s", (int)n, p);
            return buf;
        }
        if (!end) return NULL;
        p = end;
    }
}

/* The value of flag argv[*i], advancing *i; exits 2 if it is missing. */
static inline const char *cli_value(const ProgramSpec *spec, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) cli_fail(spec, "%s needs a value", argv[*i]);
    return argv[++*i];
}

/* Parses argv into o. Returns 0, or exits 2 on bad input and 0 after --help. */
static inline void parse_args(int argc, char **argv, const ProgramSpec *spec, Options *o)
{
    char err[512];
    long long v;
    memset(o, 0, sizeof *o);
    o->reps = 20;
    o->seed = 1234;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cli_print_usage(stdout, spec);
            exit(0);
        } else if (!strcmp(a, "--check")) {
            o->check = 1;
        } else if (!strcmp(a, "--bench")) {
            o->bench = 1;
        } else if (!strcmp(a, "--kernel")) {
            o->kernel = cli_value(spec, argc, argv, &i);
            if (cli_unknown_kernel(spec, o->kernel, err, sizeof err))
                cli_fail(spec, "unknown kernel '%s' (see the list below)", err);
        } else if (!strcmp(a, "-n") || !strcmp(a, "--size")) {
            if (cli_parse_size_list(cli_value(spec, argc, argv, &i), spec, o, err, sizeof err))
                cli_fail(spec, "%s", err);
        } else if (!strcmp(a, "--reps")) {
            if (cli_parse_ll(cli_value(spec, argc, argv, &i), 1, 100000, &v, err, sizeof err))
                cli_fail(spec, "--reps: %s", err);
            o->reps = (int)v;
        } else if (!strcmp(a, "--csv")) {
            o->csv = cli_value(spec, argc, argv, &i);
        } else if (!strcmp(a, "--seed")) {
            if (cli_parse_ll(cli_value(spec, argc, argv, &i), 0, LLONG_MAX, &v, err, sizeof err))
                cli_fail(spec, "--seed: %s", err);
            o->seed = (unsigned long long)v;
        } else {
            int r = spec->extra_flag
                        ? spec->extra_flag(argc, argv, &i, err, sizeof err, spec->extra_ctx)
                        : 0;
            if (r < 0) cli_fail(spec, "%s", err);
            if (r == 0) cli_fail(spec, "unknown argument '%s'", a);
        }
    }
    if (!o->check && !o->bench) o->check = o->bench = 1;
}

/* Whether version `name` is selected by --kernel (all are when none was given). */
static inline int kernel_selected(const Options *o, const char *name)
{
    if (o->kernel == NULL) return 1;
    size_t n = strlen(name);
    for (const char *p = o->kernel;; p++) {
        const char *end = strchr(p, ',');
        if ((size_t)((end ? end : p + strlen(p)) - p) == n && strncmp(p, name, n) == 0) return 1;
        if (!end) return 0;
        p = end;
    }
}

/* How many sizes to run: those of -n, or the chapter's `ndefaults`. */
static inline int size_count(const Options *o, int ndefaults)
{
    return o->nsizes ? o->nsizes : ndefaults;
}

/* The s-th size to run (first dimension): from -n, or defaults[s]. */
static inline long long size_at(const Options *o, const long long *defaults, int s)
{
    return o->nsizes ? o->sizes[s].dim[0] : defaults[s];
}

/* The largest first dimension given with -n, or `fallback` without -n: what a chapter
 * sizes its GPU memory check by. */
static inline long long largest_size(const Options *o, long long fallback)
{
    long long largest = o->nsizes ? 0 : fallback;
    for (int s = 0; s < o->nsizes; s++)
        if (o->sizes[s].dim[0] > largest) largest = o->sizes[s].dim[0];
    return largest;
}

/* "4096", "127x129" or "127x129x131": the CSV and table form of a size. */
static inline const char *size_str(const ProblemSize *s, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < s->ndims && used < len; d++)
        used += (size_t)snprintf(buf + used, len - used, d ? "x%lld" : "%lld", s->dim[d]);
    return buf;
}

#endif

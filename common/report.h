/* The benchmark table on stdout and the CSV rows every chapter writes.
 * CSV columns: gpu,chapter,kernel,role,size,time_ms,value,unit,ceiling,ceiling_value,pct_of_ceiling
 * role is naive, step, optimized, ceiling, or exercise (an exercise's answer, in the
 * chapter's solutions/). pct_of_ceiling is 100*value/ceiling_value for rates and
 * 100*ceiling_time/time for times (unit "ms"), so above 100 is always better than the
 * reference. Plain C: the host tests compile it with gcc. */
#ifndef COMMON_REPORT_H
#define COMMON_REPORT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CSV_HEADER \
    "gpu,chapter,kernel,role,size,time_ms,value,unit,ceiling,ceiling_value,pct_of_ceiling"

typedef struct {
    const char *kernel;
    const char *role; /* naive | step | optimized | ceiling | exercise */
    const char *size; /* "268435456", "8192x8192", ... */
    double time_ms;   /* median time */
    double value;     /* the rate (GB/s, TFLOP/s) or, with unit "ms", the time */
    const char *unit;
    const char *ceiling;  /* name of the reference, e.g. "d2d_copy", "cub", "cublas" */
    double ceiling_value; /* the reference's value in the same unit */
} BenchRow;

/* Above 100 means better than the reference, whether the unit is a rate or a time. */
static inline double pct_of_ceiling(const BenchRow *r)
{
    if (r->ceiling_value <= 0.0 || r->value <= 0.0) return 0.0;
    if (strcmp(r->unit, "ms") == 0) return 100.0 * r->ceiling_value / r->value;
    return 100.0 * r->value / r->ceiling_value;
}

/* Copies s into out with commas and newlines replaced, so a GPU name stays one field. */
static inline const char *csv_field(const char *s, char *out, size_t len)
{
    size_t i = 0;
    for (; s[i] && i + 1 < len; i++)
        out[i] = (s[i] == ',' || s[i] == '\n' || s[i] == '\r') ? ' ' : s[i];
    out[i] = '\0';
    return out;
}

/* Appends one row to path, writing the header first if the file is new or empty.
 * Returns 0, or -1 (with a message on stderr) if the file cannot be written. */
static inline int csv_append(const char *path, const char *gpu, const char *chapter,
                             const BenchRow *r)
{
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "cannot open CSV file '%s' for appending\n", path);
        return -1;
    }
    char g[128], k[96];
    if (ftell(f) == 0) fprintf(f, "%s\n", CSV_HEADER);
    fprintf(f, "%s,%s,%s,%s,%s,%.6g,%.6g,%s,%s,%.6g,%.2f\n", csv_field(gpu, g, sizeof g), chapter,
            csv_field(r->kernel, k, sizeof k), r->role, r->size, r->time_ms, r->value, r->unit,
            r->ceiling, r->ceiling_value, pct_of_ceiling(r));
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "error writing CSV file '%s'\n", path);
        return -1;
    }
    return 0;
}

static inline void table_header(const char *title)
{
    printf("\n%s\n", title);
    printf("%-24s %-9s %-16s %11s %12s %9s %8s\n", "version", "role", "size", "time (ms)", "rate",
           "% ceiling", "speedup");
}

/* One table line; speedup is against base_ms (the naive version), or blank if base_ms <= 0. */
static inline void table_row(const BenchRow *r, double base_ms)
{
    char rate[32], speed[16] = "";
    if (strcmp(r->unit, "ms") == 0)
        snprintf(rate, sizeof rate, "-"); /* the time says it */
    else
        snprintf(rate, sizeof rate, "%.4g %s", r->value, r->unit);
    if (base_ms > 0.0) snprintf(speed, sizeof speed, "%.2fx", base_ms / r->time_ms);
    printf("%-24s %-9s %-16s %11.4f %12s %8.1f%% %8s\n", r->kernel, r->role, r->size, r->time_ms,
           rate, pct_of_ceiling(r), speed);
}

/* Prints the table line and, if csv is not NULL, appends the CSV row (exit 1 if the file
 * cannot be written: a benchmark whose results are lost should not look successful). */
static inline void report_row(const char *csv, const char *gpu, const char *chapter,
                              const BenchRow *r, double base_ms)
{
    table_row(r, base_ms);
    if (csv && csv_append(csv, gpu, chapter, r) != 0) exit(1);
}

#endif

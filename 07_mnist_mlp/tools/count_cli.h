/* Chapter 07: the command line of the small programs of part four that take one count
 * (tools/cluster_barriers, solutions/p4_ex3_cluster_size, solutions/p4_ex4_stamped_shares),
 * and their skip below sm_90. FLAG N with N in lo .. hi (default def), or --help; bad input:
 * the reason and the usage on stderr, exit 2. */
#ifndef CH07_COUNT_CLI_H
#define CH07_COUNT_CLI_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_utils.cuh" /* DeviceInfo, and cli.h's cli_parse_ll */

static void tool_usage_fail(const char *prog, const char *usage, const char *why, const char *what)
{
    fprintf(stderr, "%s: %s%s\n%s", prog, why, what, usage);
    exit(2);
}

static long long tool_count_arg(int argc, char **argv, const char *prog, const char *usage,
                                const char *flag, long long lo, long long hi, long long def)
{
    long long n = def;
    char need[64], colon[64], err[128];
    snprintf(need, sizeof need, "%s needs a number", flag);
    snprintf(colon, sizeof colon, "%s: ", flag);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("%s", usage);
            exit(0);
        } else if (!strcmp(argv[i], flag)) {
            if (i + 1 >= argc) tool_usage_fail(prog, usage, need, "");
            if (cli_parse_ll(argv[++i], lo, hi, &n, err, sizeof err))
                tool_usage_fail(prog, usage, colon, err);
        } else {
            tool_usage_fail(prog, usage, "unknown argument: ", argv[i]);
        }
    }
    return n;
}

/* 1, saying so, where the GPU is older than sm_90: these programs need it for `why`. */
static int tool_below_sm90(const DeviceInfo *info, const char *prog, const char *why)
{
    if (info->major >= 9) return 0;
    printf("%s: skipped on %s (sm_%d%d): %s\n", prog, info->name, info->major, info->minor, why);
    return 1;
}

#endif

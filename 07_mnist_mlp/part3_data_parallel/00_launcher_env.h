/* Chapter 07, part three: who this process is, when a launcher started it as one rank of a
 * world of n processes, one GPU each. Plain C: tests/host/test_07_rendezvous.c checks it
 * without a GPU.
 *
 * A launcher tells each process its place through the environment:
 *   torchrun (and launch.sh beside this file): RANK, WORLD_SIZE, LOCAL_RANK (the rank on its
 *     own machine, which picks the GPU), MASTER_ADDR and MASTER_PORT (where rank 0 listens);
 *   mpirun (Open MPI): OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
 *     OMPI_COMM_WORLD_LOCAL_RANK; the rendezvous address is passed on by hand
 *     (mpirun -x MASTER_ADDR=host -x MASTER_PORT=29500 ...) or is a shared file.
 * RANK wins over OMPI_COMM_WORLD_RANK when both are set. LOCAL_RANK left unset is taken to
 * be RANK (every rank on one machine). torchrun's agent keeps a store of its own listening on
 * MASTER_PORT and says so (TORCHELASTIC_USE_AGENT_STORE=True): then the ranks meet on
 * MASTER_PORT + 1. Every value is checked here, so that a typing error
 * in a launch line becomes a one-line reason, never a rank that waits for the others. */
#ifndef CH07_LAUNCHER_ENV_H
#define CH07_LAUNCHER_ENV_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DP_MAX_WORLD 1024

typedef struct {
    int on; /* 1: started by a launcher as one rank of a world */
    int rank, world, local_rank;
    const char *rank_var; /* the variables it came from, for messages */
    const char *world_var;
    char addr[256]; /* MASTER_ADDR, "" if unset */
    int port;       /* MASTER_PORT, 0 if unset */
} DpEnv;

/* The environment as a function, so that the host test can pass one of its own. */
typedef const char *(*DpGetenv)(const char *name);

/* A whole decimal number in [lo, hi] from variable `name`, or -1 with the reason in err. */
static inline int dp_env_int(DpGetenv get, const char *name, long lo, long hi, int *out, char *err,
                             size_t errlen)
{
    const char *text = get(name);
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || !*text || end == text || *end != '\0' || errno == ERANGE) {
        snprintf(err, errlen, "%s='%s' is not a whole number", name, text ? text : "");
        return -1;
    }
    if (v < lo || v > hi) {
        snprintf(err, errlen, "%s=%ld is out of range [%ld, %ld]", name, v, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Reads the launcher's variables into e. Returns 0 (e->on says whether any launcher's
 * variables were there), or -1 with a one-line reason in err. */
static inline int dp_env_read(DpEnv *e, DpGetenv get, char *err, size_t errlen)
{
    static const char *const SETS[2][3] = {
        {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"}};
    memset(e, 0, sizeof *e);
    for (int s = 0; s < 2 && !e->on; s++) {
        const char *rank = get(SETS[s][0]), *world = get(SETS[s][1]), *local = get(SETS[s][2]);
        if (!rank && !world) {
            if (local) {
                snprintf(err, errlen, "%s is set but %s and %s are not", SETS[s][2], SETS[s][0],
                         SETS[s][1]);
                return -1;
            }
            continue;
        }
        if (!rank || !world) {
            snprintf(err, errlen, "%s is set but %s is not: a launcher sets both",
                     rank ? SETS[s][0] : SETS[s][1], rank ? SETS[s][1] : SETS[s][0]);
            return -1;
        }
        e->on = 1;
        e->rank_var = SETS[s][0];
        e->world_var = SETS[s][1];
        if (dp_env_int(get, SETS[s][1], 1, DP_MAX_WORLD, &e->world, err, errlen) ||
            dp_env_int(get, SETS[s][0], 0, DP_MAX_WORLD - 1, &e->rank, err, errlen))
            return -1;
        if (e->rank >= e->world) {
            snprintf(err, errlen, "%s=%d but %s=%d: ranks are 0 .. %d", SETS[s][0], e->rank,
                     SETS[s][1], e->world, e->world - 1);
            return -1;
        }
        e->local_rank = e->rank;
        if (local && dp_env_int(get, SETS[s][2], 0, DP_MAX_WORLD - 1, &e->local_rank, err, errlen))
            return -1;
    }
    const char *addr = get("MASTER_ADDR"), *port = get("MASTER_PORT");
    if (!e->on) return 0;
    if (addr && !*addr) addr = NULL;
    if (port && !*port) port = NULL;
    if (!addr != !port) {
        snprintf(err, errlen, "%s is set but %s is not: rank 0's address needs both",
                 addr ? "MASTER_ADDR" : "MASTER_PORT", addr ? "MASTER_PORT" : "MASTER_ADDR");
        return -1;
    }
    if (addr) {
        if (strlen(addr) >= sizeof e->addr) {
            snprintf(err, errlen, "MASTER_ADDR is longer than %zu characters", sizeof e->addr - 1);
            return -1;
        }
        snprintf(e->addr, sizeof e->addr, "%s", addr);
        if (dp_env_int(get, "MASTER_PORT", 1, 65535, &e->port, err, errlen)) return -1;
        const char *agent = get("TORCHELASTIC_USE_AGENT_STORE");
        if (agent && (!strcmp(agent, "True") || !strcmp(agent, "true") || !strcmp(agent, "1"))) {
            if (e->port == 65535) {
                snprintf(err, errlen,
                         "MASTER_PORT=65535 is torchrun's own store, and 65536 is no port");
                return -1;
            }
            e->port++;
        }
    }
    return 0;
}

#endif

/* Chapter 07, part three: mnist_mlp as one rank of a world of processes, one GPU each, the
 * way production training runs (PyTorch's DDP under torchrun, MPI programs).
 *
 *   launch.sh 2 ./mnist_mlp --train          (or torchrun --nproc-per-node 2 --no-python ...,
 *                                              or mpirun -np 2 -x MASTER_ADDR -x MASTER_PORT ...)
 *
 * Each process reads its rank, the world size and its GPU from the launcher's environment
 * (00_launcher_env.h), parses its arguments, loads its data, and only then meets the others
 * (00_rendezvous.h): rank 0 makes the NCCL unique id and hands it to every rank with the
 * verdict, and each rank joins the world's communicator with it (02_nccl_comm.cuh). From
 * there on the program is the same as with --gpus N in one process, each process driving
 * one of the N replicas; rank 0 prints and writes the files, the other ranks print only
 * errors.
 *
 * Failures never hang a rank:
 *   - bad input on any rank (cli_fail, through the hook below): before the rendezvous it
 *     travels in that rank's hello, and every rank exits 2 naming it ("rank 1: --batch
 *     ..."); after it, the control channel carries it, with the same result;
 *   - a rank that ends without saying bye (killed, or an error: the atexit handler below
 *     tells rank 0 when it can) or stops making progress while armed (a collective that
 *     does not end) makes every rank exit 3 within the timeout, after the watcher has
 *     aborted the NCCL communicators (so that no kernel waits on for a peer that is gone);
 *   - a rank that never comes to the rendezvous: the others exit 3 after the timeout. */
#ifndef CH07_RANKS_CUH
#define CH07_RANKS_CUH

#include <fcntl.h>
#include <unistd.h>

#include "common/cli.h"
#include "07_mnist_mlp/part3_data_parallel/00_launcher_env.h"
#include "07_mnist_mlp/part3_data_parallel/00_rendezvous.h"

#ifdef HAVE_NCCL
#include <nccl.h>
#define DP_ID_BYTES sizeof(ncclUniqueId)
#else
#define DP_ID_BYTES 128
#endif

#define DP_DEFAULT_TIMEOUT_S 60.0

typedef struct {
    int ranks;              /* 1: a launcher started this process as one rank of a world */
    DpEnv env;              /* what the launcher said */
    int rank, world;        /* 0 and 1 without a launcher */
    int device;             /* this rank's GPU */
    const char *rendezvous; /* --rendezvous: NULL (MASTER_ADDR/PORT), file:PATH, tcp:HOST:PORT */
    double timeout_s;       /* --timeout */
    RdvConfig cfg;
    char host[256];
    Rdv rdv;
    int joined, finished;          /* past the rendezvous; past rdv_finish */
    int saved_stdout;              /* ranks > 0: the real stdout while theirs is muted (-1) */
    unsigned char id[DP_ID_BYTES]; /* the world communicator's NCCL unique id */
    int id_used;
    void (*abort_comms)(void); /* 02_nccl_comm.cuh: ncclCommAbort on every communicator */
    const ProgramSpec *spec;
} DpWorld;

static DpWorld DP_WORLD; /* dp_world_init fills it */

/* The process's rendezvous, or NULL when there is none (one process, or not yet met). */
static Rdv *dp_rdv(void) { return DP_WORLD.joined && DP_WORLD.world > 1 ? &DP_WORLD.rdv : NULL; }

/* Rank 0 (or the only process) prints the reports and writes the files. */
static int dp_is_rank0(void) { return DP_WORLD.rank == 0; }

/* --rendezvous SPEC: NULL or "env" (MASTER_ADDR/MASTER_PORT), "file:PATH", "tcp:HOST:PORT";
 * fills cfg's address, or returns -1 with the reason. */
static int dp_parse_rendezvous(const char *spec, const DpEnv *e, RdvConfig *cfg, char *host,
                               size_t hostlen, char *err, size_t errlen)
{
    cfg->file = NULL;
    cfg->host = e->addr[0] ? e->addr : NULL;
    cfg->port = e->port;
    if (!spec || !strcmp(spec, "env")) {
        if (!cfg->host && e->world > 1) {
            snprintf(
                err, errlen,
                "%s=%d needs a rendezvous: MASTER_ADDR and MASTER_PORT (torchrun sets them), or "
                "--rendezvous file:PATH",
                e->world_var, e->world);
            return -1;
        }
        return 0;
    }
    if (!strncmp(spec, "file:", 5) && spec[5]) {
        cfg->file = spec + 5;
        return 0;
    }
    const char *colon = !strncmp(spec, "tcp:", 4) ? strrchr(spec + 4, ':') : NULL;
    if (colon && colon > spec + 4 && (size_t)(colon - spec - 4) < hostlen) {
        char *end = NULL;
        long port = strtol(colon + 1, &end, 10);
        if (end != colon + 1 && *end == '\0' && port >= 1 && port <= 65535) {
            snprintf(host, hostlen, "%.*s", (int)(colon - spec - 4), spec + 4);
            cfg->host = host;
            cfg->port = (int)port;
            return 0;
        }
    }
    snprintf(err, errlen,
             "--rendezvous '%s': give env, file:PATH or tcp:HOST:PORT (a port 1-65535)", spec);
    return -1;
}

/* ------------------------------------------------------------------ failures */

/* The watcher's hook when the world breaks: no kernel may go on waiting for a dead peer. */
static void dp_on_break(void *ctx, int status, const char *why)
{
    (void)ctx;
    (void)status;
    (void)why;
    if (DP_WORLD.abort_comms) DP_WORLD.abort_comms();
}

/* Leaves the world with `status` because of `why` (this rank's own trouble): the others hear
 * of it, this rank's communicators are aborted, and the process exits. */
static void dp_world_stop(int status, const char *why)
{
    const char *program = DP_WORLD.spec ? DP_WORLD.spec->program : "mnist_mlp";
    if (DP_WORLD.ranks)
        fprintf(stderr, "%s: rank %d: %s\n", program, DP_WORLD.rank, why);
    else
        fprintf(stderr, "%s: %s\n", program, why);
    rdv_fail(dp_rdv(), status, why);
    if (DP_WORLD.abort_comms) DP_WORLD.abort_comms();
    fflush(stdout);
    exit(status);
}

/* The rendezvous. problem: NULL, or why this rank cannot run (its usage error). Returns
 * rdv_join's status, why filled when it is not RDV_OK. */
static int dp_world_meet(const char *problem, char *why, size_t whylen)
{
    DpWorld *w = &DP_WORLD;
    char local_problem[RDV_REASON];
    if (problem) snprintf(local_problem, sizeof local_problem, "%s", problem);
#ifdef HAVE_NCCL
    if (w->rank == 0 && !problem) {
        ncclUniqueId id;
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r == ncclSuccess)
            memcpy(w->id, &id, sizeof id);
        else
            snprintf(local_problem, sizeof local_problem, "ncclGetUniqueId failed: %s (%s)",
                     ncclGetErrorString(r), ncclGetLastError(NULL));
        if (r != ncclSuccess) problem = local_problem;
    }
#endif
    w->cfg.rank = w->rank;
    w->cfg.world = w->world;
    w->cfg.timeout_s = w->timeout_s;
    w->cfg.program = w->spec->program;
    int rc =
        rdv_join(&w->rdv, &w->cfg, problem ? local_problem : NULL, w->id, DP_ID_BYTES, why, whylen);
    w->joined = 1;
    if (rc == RDV_OK) w->rdv.on_break = dp_on_break;
    return rc;
}

/* Every usage error of a rank goes through here (common/cli.h's hook): the reason on this
 * rank's stderr, then to every other rank, and exit 2. */
static void dp_cli_fail_hook(const ProgramSpec *spec, const char *reason)
{
    *cli_fail_hook() = NULL; /* a failure inside this one must not come back here */
    fprintf(stderr, "%s: rank %d: %s\n", spec->program, DP_WORLD.rank, reason);
    if (DP_WORLD.rank == 0) cli_print_usage(stderr, spec); /* once for the world */
    fflush(stderr);
    char why[RDV_TEXT + 64];
    if (!DP_WORLD.joined) dp_world_meet(reason, why, sizeof why);
    rdv_fail(dp_rdv(), RDV_INPUT, reason);
    if (DP_WORLD.abort_comms) DP_WORLD.abort_comms();
    exit(2);
}

/* A rank that exits before its normal end (an error's exit(1), a failed check inside a
 * library) tells the others, so that they stop at once instead of at the timeout. */
static void dp_world_atexit(void)
{
    DpWorld *w = &DP_WORLD;
    if (!w->ranks || w->finished) return;
    if (w->saved_stdout >= 0) {
        fflush(stdout);
        dup2(w->saved_stdout, 1);
    }
    char why[RDV_TEXT + 64];
    if (!w->joined && w->world > 1) {
        *cli_fail_hook() = NULL;
        dp_world_meet("stopped before the rendezvous (its own output says why)", why, sizeof why);
    }
    rdv_fail(dp_rdv(), RDV_BROKEN, "stopped before the end of the run (its own output says why)");
    if (w->abort_comms) w->abort_comms();
}

/* ------------------------------------------------------------------ the program's side */

static const char *dp_getenv(const char *name) { return getenv(name); }

/* Before anything else in main: who this process is. Under a launcher, the rendezvous
 * flags are read ahead of the other arguments (a usage error in those must still reach the
 * other ranks), and every later usage error goes to the hook. Errors in the environment
 * itself exit 2 here: the other ranks cannot be told (they time out at the rendezvous). */
static void dp_world_init(int argc, char **argv, const ProgramSpec *spec)
{
    DpWorld *w = &DP_WORLD;
    char err[400];
    w->spec = spec;
    w->world = 1;
    w->timeout_s = DP_DEFAULT_TIMEOUT_S;
    w->saved_stdout = -1;
    if (dp_env_read(&w->env, dp_getenv, err, sizeof err)) cli_fail(spec, "%s", err);
    if (!w->env.on) return;
    w->ranks = 1;
    w->rank = w->env.rank;
    w->world = w->env.world;
    for (int i = 1; i + 1 < argc; i++) {
        if (!strcmp(argv[i], "--rendezvous")) w->rendezvous = argv[i + 1];
        if (!strcmp(argv[i], "--timeout")) {
            char *end = NULL;
            double t = strtod(argv[i + 1], &end);
            if (end != argv[i + 1] && *end == '\0' && t >= 1.0 && t <= 86400.0) w->timeout_s = t;
        }
    }
    if (dp_parse_rendezvous(w->rendezvous, &w->env, &w->cfg, w->host, sizeof w->host, err,
                            sizeof err))
        cli_fail(spec, "%s", err);
    *cli_fail_hook() = dp_cli_fail_hook;
    atexit(dp_world_atexit);
}

/* Under a launcher: this rank's GPU, LOCAL_RANK of the visible ones (or the only one, when
 * the launcher gives each process its own through CUDA_VISIBLE_DEVICES). A usage error if
 * there is none. */
static void dp_world_pick_device(void)
{
    DpWorld *w = &DP_WORLD;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count == 0)
        cli_fail(w->spec, "no usable CUDA GPU here (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
    if (count == 1)
        w->device = 0;
    else if (w->env.local_rank < count)
        w->device = w->env.local_rank;
    else
        cli_fail(w->spec, "local rank %d, but %d GPUs are visible (one a rank on each machine)",
                 w->env.local_rank, count);
    e = cudaSetDevice(w->device);
    if (e != cudaSuccess)
        cli_fail(w->spec, "cannot use GPU %d: %s", w->device, cudaGetErrorString(e));
}

/* Under a launcher, once every argument and the data are checked: the rendezvous. Ranks
 * other than 0 then print one line and mute their stdout (rank 0 reports for the world). */
static void dp_world_join(void)
{
    DpWorld *w = &DP_WORLD;
    if (!w->ranks) return;
    char why[RDV_TEXT + 64];
    int rc = dp_world_meet(NULL, why, sizeof why);
    if (rc == RDV_INPUT) {
        fprintf(stderr, "%s: rank %d stops: %s\n", w->spec->program, w->rank, why);
        exit(2);
    }
    if (rc != RDV_OK) {
        fprintf(stderr, "%s: %s\n", w->spec->program, why);
        exit(3);
    }
    if (w->world > 1)
        printf("rank %d of %d on GPU %d: met the others (%s); %s\n", w->rank, w->world, w->device,
               w->cfg.file ? "through the rendezvous file" : "at rank 0's address and port",
               w->rank ? "rank 0 reports, this rank prints only errors from here on"
                       : "this rank reports for all");
    if (w->rank > 0) {
        fflush(stdout);
        int null = open("/dev/null", O_WRONLY);
        w->saved_stdout = dup(1);
        if (null >= 0 && w->saved_stdout >= 0) dup2(null, 1);
        if (null >= 0) close(null);
    }
}

/* The normal end: stdout back, bye to the others (rank 0 waits for every rank's). Returns
 * the process's exit status: `status`, or 3 if a rank never ended. */
static int dp_world_finish(int status)
{
    DpWorld *w = &DP_WORLD;
    if (!w->ranks || !w->joined) return status;
    if (w->saved_stdout >= 0) {
        fflush(stdout);
        dup2(w->saved_stdout, 1);
        close(w->saved_stdout);
        w->saved_stdout = -1;
    }
    char why[RDV_TEXT];
    int rc = rdv_finish(dp_rdv(), why, sizeof why);
    w->finished = 1;
    *cli_fail_hook() = NULL;
    if (rc) {
        fprintf(stderr, "%s: %s\n", w->spec->program, why);
        return 3;
    }
    return status;
}

/* Collective work: while armed, the watcher ends the world if the main thread makes no
 * progress (dp_progress) for the timeout. Nested calls count. */
static int DP_ARMED = 0;
static void dp_arm(const char *what)
{
    if (DP_ARMED++ == 0) rdv_arm(dp_rdv(), what);
}
static void dp_disarm(void)
{
    if (--DP_ARMED == 0) rdv_disarm(dp_rdv());
}
static void dp_progress(void) { rdv_tick(dp_rdv()); }

#endif

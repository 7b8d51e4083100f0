/* Host test for chapter 07's one-process-per-GPU plumbing, which needs no GPU:
 *   - the launcher's environment (07_mnist_mlp/part3_data_parallel/00_launcher_env.h):
 *     torchrun's and mpirun's variables, and every way they can be wrong;
 *   - the rendezvous and control channel (00_rendezvous.h), as 2 or 3 forked processes on
 *     127.0.0.1: the payload (the NCCL id) reaches every rank, by TCP and by a file; a
 *     gather and a barrier; a rank with bad input makes every rank exit 2 with its reason;
 *     a rank killed after the rendezvous (SIGKILL, rank 0 or another) makes the others exit
 *     3 naming it, within the timeout; a rank that never comes makes the others time out
 *     with a clear message; a rank stuck with its watchdog armed, and one that fails late,
 *     stop every rank. Short timeouts (2 s) keep it quick. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "07_mnist_mlp/part3_data_parallel/00_launcher_env.h"
#include "07_mnist_mlp/part3_data_parallel/00_rendezvous.h"

static int failures = 0;

static void result(int ok, const char *what, const char *detail)
{
    printf("%s 07 %s%s%s\n", ok ? "PASS" : "FAIL", what, detail && detail[0] ? ": " : "",
           detail ? detail : "");
    fflush(stdout);
    failures += !ok;
}

/* ------------------------------------------------------------------ the environment */

static const char *const *FAKE_ENV; /* NAME=value strings, NULL-terminated */

static const char *fake_getenv(const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = FAKE_ENV; *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* want_ok: dp_env_read succeeds; then the fields, else a word the reason must hold. */
static void env_case(const char *what, const char *const *env, int want_ok, int on, int rank,
                     int world, int local, int port, const char *word)
{
    DpEnv e;
    char err[300] = "";
    FAKE_ENV = env;
    int rc = dp_env_read(&e, fake_getenv, err, sizeof err);
    char detail[400];
    int ok;
    if (want_ok)
        ok = rc == 0 && e.on == on &&
             (!on ||
              (e.rank == rank && e.world == world && e.local_rank == local && e.port == port));
    else
        ok = rc != 0 && strstr(err, word) != NULL;
    snprintf(detail, sizeof detail, "rc %d, on %d, rank %d/%d, local %d, port %d, '%s'", rc, e.on,
             e.rank, e.world, e.local_rank, e.port, err);
    char name[200];
    snprintf(name, sizeof name, "launcher env: %s", what);
    result(ok, name, ok ? "" : detail);
}

static void test_env(void)
{
    const char *none[] = {"PATH=/bin", NULL};
    const char *torchrun[] = {
        "RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500",
        NULL};
    const char *no_local[] = {"RANK=3", "WORLD_SIZE=4", NULL};
    const char *mpi[] = {"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=3",
                         "OMPI_COMM_WORLD_LOCAL_RANK=0", NULL};
    const char *both[] = {"RANK=0", "WORLD_SIZE=2", "OMPI_COMM_WORLD_RANK=1",
                          "OMPI_COMM_WORLD_SIZE=2", NULL};
    const char *rank_only[] = {"RANK=0", NULL};
    const char *world_only[] = {"WORLD_SIZE=2", NULL};
    const char *local_only[] = {"LOCAL_RANK=0", NULL};
    const char *too_big[] = {"RANK=2", "WORLD_SIZE=2", NULL};
    const char *negative[] = {"RANK=-1", "WORLD_SIZE=2", NULL};
    const char *zero_world[] = {"RANK=0", "WORLD_SIZE=0", NULL};
    const char *junk[] = {"RANK=one", "WORLD_SIZE=2", NULL};
    const char *bad_port[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=x", NULL};
    const char *big_port[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_ADDR=h", "MASTER_PORT=70000", NULL};
    const char *port_only[] = {"RANK=0", "WORLD_SIZE=2", "MASTER_PORT=29500", NULL};
    const char *bad_local[] = {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=-3", NULL};
    const char *agent[] = {"RANK=1",
                           "WORLD_SIZE=2",
                           "LOCAL_RANK=1",
                           "MASTER_ADDR=h",
                           "MASTER_PORT=29500",
                           "TORCHELASTIC_USE_AGENT_STORE=True",
                           NULL};
    env_case("none set: one process", none, 1, 0, 0, 0, 0, 0, NULL);
    env_case("torchrun's five", torchrun, 1, 1, 1, 2, 1, 29500, NULL);
    env_case("LOCAL_RANK unset is RANK", no_local, 1, 1, 3, 4, 3, 0, NULL);
    env_case("mpirun's OMPI_COMM_WORLD_*", mpi, 1, 1, 2, 3, 0, 0, NULL);
    env_case("RANK wins over OMPI_COMM_WORLD_RANK", both, 1, 1, 0, 2, 0, 0, NULL);
    env_case("RANK without WORLD_SIZE", rank_only, 0, 0, 0, 0, 0, 0, "WORLD_SIZE is not");
    env_case("WORLD_SIZE without RANK", world_only, 0, 0, 0, 0, 0, 0, "RANK is not");
    env_case("LOCAL_RANK alone", local_only, 0, 0, 0, 0, 0, 0, "LOCAL_RANK is set");
    env_case("RANK >= WORLD_SIZE", too_big, 0, 0, 0, 0, 0, 0, "ranks are 0 .. 1");
    env_case("RANK negative", negative, 0, 0, 0, 0, 0, 0, "out of range");
    env_case("WORLD_SIZE 0", zero_world, 0, 0, 0, 0, 0, 0, "out of range");
    env_case("RANK not a number", junk, 0, 0, 0, 0, 0, 0, "not a whole number");
    env_case("MASTER_PORT not a number", bad_port, 0, 0, 0, 0, 0, 0, "MASTER_PORT='x'");
    env_case("MASTER_PORT above 65535", big_port, 0, 0, 0, 0, 0, 0, "MASTER_PORT=70000");
    env_case("MASTER_PORT without MASTER_ADDR", port_only, 0, 0, 0, 0, 0, 0, "MASTER_ADDR is not");
    env_case("LOCAL_RANK negative", bad_local, 0, 0, 0, 0, 0, 0, "LOCAL_RANK=-3");
    env_case("under torchrun's agent store: MASTER_PORT + 1", agent, 1, 1, 1, 2, 1, 29501, NULL);
}

/* ------------------------------------------------------------------ the rendezvous */

#define TIMEOUT_S 2.0
#define MAX_RANKS 3
#define ID_BYTES 128

enum { OK_RUN, BAD_INPUT, KILLED, NEVER, STUCK, LATE_FAIL, MISMATCH };

typedef struct {
    int scenario, world, port, victim; /* victim: the rank that misbehaves (or is absent) */
    const char *file;
} Plan;

static int free_port(void)
{
    int bound = 0;
    char err[200];
    int fd = rdv_listen(0, &bound, err, sizeof err);
    if (fd >= 0) close(fd);
    return bound;
}

/* What one rank does; its exit status is what the parent checks. `ready` is written one
 * byte once this rank has passed the rendezvous. */
static void rank_main(const Plan *p, int rank, int ready)
{
    RdvConfig cfg = {rank, p->world, "127.0.0.1", p->port, p->file, TIMEOUT_S, "rdvtest"};
    if (p->scenario == MISMATCH && rank == p->victim) cfg.world = p->world + 1;
    const char *problem = NULL;
    if (p->scenario == BAD_INPUT && rank == p->victim) problem = "--batch 3 is not a multiple of 2";
    unsigned char id[ID_BYTES];
    for (int i = 0; i < ID_BYTES; i++) id[i] = rank == 0 ? (unsigned char)(7 * i + 1) : 0;
    Rdv r;
    char why[RDV_TEXT];
    int rc = rdv_join(&r, &cfg, problem, id, ID_BYTES, why, sizeof why);
    if (rc != RDV_OK) {
        fprintf(stderr, "rdvtest: %s\n", why);
        _exit(rc);
    }
    for (int i = 0; i < ID_BYTES; i++)
        if (id[i] != (unsigned char)(7 * i + 1)) _exit(20); /* the id did not arrive */
    if (write(ready, "x", 1) != 1) _exit(21);
    if (p->scenario == OK_RUN) {
        char mine[32], *all[MAX_RANKS];
        size_t lens[MAX_RANKS];
        snprintf(mine, sizeof mine, "rank %d", rank);
        if (rdv_gather(&r, mine, strlen(mine), all, lens, why, sizeof why)) _exit(22);
        if (rank == 0)
            for (int k = 0; k < p->world; k++) {
                snprintf(mine, sizeof mine, "rank %d", k);
                if (lens[k] != strlen(mine) || memcmp(all[k], mine, lens[k])) _exit(23);
                free(all[k]);
            }
        if (rdv_barrier(&r, why, sizeof why)) _exit(24);
        _exit(rdv_finish(&r, why, sizeof why) ? 25 : 0);
    }
    if (p->scenario == STUCK && rank == p->victim) rdv_arm(&r, "an all-reduce");
    if (p->scenario == LATE_FAIL && rank == p->victim) {
        rdv_sleep(0.2);
        rdv_fail(&r, RDV_INPUT, "a replica needs 9.00 GB of GPU memory but has 1.00 GB free");
        fprintf(stderr, "rdvtest: rank %d: a replica needs 9.00 GB\n", rank);
        _exit(RDV_INPUT);
    }
    for (;;) rdv_sleep(0.05); /* the watcher ends this process, or the parent does */
}

typedef struct {
    pid_t pid[MAX_RANKS];
    int status[MAX_RANKS]; /* exit status, 128 + signal, or -1: still running at the end */
    char err[MAX_RANKS][2048];
    double ended[MAX_RANKS]; /* seconds after the victim was killed (KILLED) */
} Outcome;

/* Runs the plan's ranks (all but the victim for NEVER); for KILLED, SIGKILLs the victim once
 * every rank is past the rendezvous. Waits at most `limit` seconds for all. */
static void run_plan(const Plan *p, Outcome *o, double limit)
{
    memset(o, 0, sizeof *o);
    int ready[2];
    if (pipe(ready)) exit(1);
    char path[MAX_RANKS][64];
    for (int k = 0; k < p->world; k++) {
        o->status[k] = -1;
        o->pid[k] = 0;
        if (p->scenario == NEVER && k == p->victim) continue;
        snprintf(path[k], sizeof path[k], "test_07_rdv_err_%d_%ld.txt", k, (long)getpid());
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            close(ready[0]);
            if (!freopen(path[k], "w", stderr)) _exit(30);
            setvbuf(stderr, NULL, _IONBF, 0);
            rank_main(p, k, ready[1]);
            _exit(31);
        }
        o->pid[k] = pid;
    }
    close(ready[1]);
    double t0 = rdv_now(), killed_at = -1.0;
    int live = 0;
    for (int k = 0; k < p->world; k++) live += o->pid[k] > 0;
    int passed = 0;
    while (live > 0 && rdv_now() - t0 < limit) {
        if (p->scenario == KILLED && killed_at < 0) {
            char c;
            struct pollfd pfd = {ready[0], POLLIN, 0};
            if (poll(&pfd, 1, 10) == 1 && read(ready[0], &c, 1) == 1 && ++passed == p->world) {
                kill(o->pid[p->victim], SIGKILL);
                killed_at = rdv_now();
            }
        }
        for (int k = 0; k < p->world; k++) {
            int st;
            if (o->pid[k] <= 0 || o->status[k] != -1) continue;
            if (waitpid(o->pid[k], &st, WNOHANG) == o->pid[k]) {
                o->status[k] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                o->ended[k] = killed_at >= 0 ? rdv_now() - killed_at : rdv_now() - t0;
                live--;
            }
        }
        rdv_sleep(0.01);
    }
    close(ready[0]);
    for (int k = 0; k < p->world; k++) {
        if (o->pid[k] <= 0) continue;
        if (o->status[k] == -1) {
            kill(o->pid[k], SIGKILL);
            waitpid(o->pid[k], NULL, 0);
        }
        FILE *f = fopen(path[k], "r");
        size_t n = f ? fread(o->err[k], 1, sizeof o->err[k] - 1, f) : 0;
        o->err[k][n] = '\0';
        if (f) fclose(f);
        remove(path[k]);
    }
}

/* Every rank but `skip` (-1: none) ended with `status` and said `word` on stderr, and (if
 * within_s > 0) did so within within_s seconds. */
static void expect(const char *what, const Plan *p, const Outcome *o, int skip, int status,
                   const char *word, double within_s)
{
    char detail[3000] = "";
    int ok = 1;
    for (int k = 0; k < p->world && ok; k++) {
        if (k == skip || o->pid[k] <= 0) continue;
        if (o->status[k] != status || (word && !strstr(o->err[k], word)) ||
            (within_s > 0 && o->ended[k] > within_s)) {
            ok = 0;
            snprintf(detail, sizeof detail,
                     "rank %d: status %d (wanted %d) after %.1f s, stderr '%s'", k, o->status[k],
                     status, o->ended[k], o->err[k]);
        }
    }
    char name[300];
    snprintf(name, sizeof name, "rendezvous: %s", what);
    result(ok, name, detail);
}

static void test_rendezvous(void)
{
    Outcome o;
    char file[128];
    snprintf(file, sizeof file, "test_07_rdv_file_%ld", (long)getpid());

    Plan ok3 = {OK_RUN, 3, free_port(), -1, NULL};
    run_plan(&ok3, &o, 20);
    expect("3 ranks over TCP: the id reaches all, gather, barrier, bye", &ok3, &o, -1, 0, NULL, 0);

    Plan okf = {OK_RUN, 2, 0, -1, file};
    run_plan(&okf, &o, 20);
    expect("2 ranks through a rendezvous file", &okf, &o, -1, 0, NULL, 0);
    result(access(file, F_OK) != 0, "rendezvous: rank 0 removes the file", file);

    Plan bad = {BAD_INPUT, 3, free_port(), 1, NULL};
    run_plan(&bad, &o, 20);
    expect("rank 1's bad input: every rank exits 2 with its reason", &bad, &o, -1, RDV_INPUT,
           "rank 1: --batch 3 is not a multiple of 2", 0);

    Plan mis = {MISMATCH, 2, free_port(), 1, NULL};
    run_plan(&mis, &o, 20);
    expect("world sizes that disagree: exit 2, named", &mis, &o, -1, RDV_INPUT,
           "rank 1 says the world has 3 ranks, rank 0 says 2", 0);

    Plan kill1 = {KILLED, 3, free_port(), 1, NULL};
    run_plan(&kill1, &o, 20);
    expect("rank 1 killed after the rendezvous: ranks 0 and 2 exit 3 at once", &kill1, &o, 1,
           RDV_BROKEN, "rank 1 exited or was killed", TIMEOUT_S);

    Plan kill0 = {KILLED, 3, free_port(), 0, NULL};
    run_plan(&kill0, &o, 20);
    expect("rank 0 killed after the rendezvous: ranks 1 and 2 exit 3 at once", &kill0, &o, 0,
           RDV_BROKEN, "rank 0 exited or was killed", TIMEOUT_S);

    Plan never2 = {NEVER, 3, free_port(), 2, NULL};
    run_plan(&never2, &o, 20);
    expect("rank 2 never comes: ranks 0 and 1 time out, naming it", &never2, &o, 2, RDV_BROKEN,
           "rank 2 never arrived within 2 s", 0);

    Plan never0 = {NEVER, 2, free_port(), 0, NULL};
    run_plan(&never0, &o, 20);
    expect("rank 0 never comes: rank 1 times out, saying where it looked", &never0, &o, 0,
           RDV_BROKEN, "could not reach rank 0 at 127.0.0.1:", 0);

    Plan stuck = {STUCK, 3, free_port(), 1, NULL};
    run_plan(&stuck, &o, 20);
    expect("rank 1 armed and stuck: every rank exits 3 after the timeout", &stuck, &o, -1,
           RDV_BROKEN, "no progress for 2 s while an all-reduce", 3 * TIMEOUT_S);

    Plan late = {LATE_FAIL, 3, free_port(), 2, NULL};
    run_plan(&late, &o, 20);
    expect("rank 2 fails after the rendezvous: every rank exits 2 with its reason", &late, &o, -1,
           RDV_INPUT, "rank 2: a replica needs 9.00 GB", 0);

    /* a world of one needs no network */
    Rdv r;
    RdvConfig one = {0, 1, NULL, 0, NULL, TIMEOUT_S, "rdvtest"};
    char why[RDV_TEXT] = "";
    unsigned char id[4] = {1, 2, 3, 4};
    int rc = rdv_join(&r, &one, "--gpus 2 goes with no launcher", id, 4, why, sizeof why);
    result(rc == RDV_INPUT && strstr(why, "rank 0: --gpus 2") != NULL,
           "rendezvous: a world of one refuses its own bad input at once", why);
    rc = rdv_join(&r, &one, NULL, id, 4, why, sizeof why);
    result(rc == RDV_OK && rdv_finish(&r, why, sizeof why) == RDV_OK,
           "rendezvous: a world of one joins and ends at once", "");
}

int main(void)
{
    test_env();
    test_rendezvous();
    return failures ? 1 : 0;
}

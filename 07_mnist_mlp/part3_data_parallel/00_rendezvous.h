/* Chapter 07, part three: how the ranks of a world meet, and how each learns at once that
 * another is gone. Plain C and POSIX sockets (no CUDA, no MPI): tests/host/
 * test_07_rendezvous.c runs it as forked processes on 127.0.0.1.
 *
 * The rendezvous. Rank 0 listens on a TCP port: MASTER_PORT (as torchrun sets it), or any
 * free port, whose address it then writes into a file every rank can read (--rendezvous
 * file:PATH, for machines that share a file system). Every other rank connects and says
 * hello: its rank, the world size it was given, and either "ok" or the one-line reason
 * why it cannot run (bad input). When all have said hello, rank 0 sends every rank the
 * verdict: ok with the payload (the NCCL unique id, which every rank needs to join the
 * communicator), or the first rank's reason, which every rank then prints before exiting
 * 2. A rank that never arrives makes the others give up after the timeout.
 *
 *     rank 1 --hello(1, ok)-----------.
 *     rank 2 --hello(2, "--batch ..")-+-> rank 0 --verdict(ok + id, or "rank 2: --batch ..")--> all
 *     rank 3 --hello(3, ok)-----------'
 *
 * The control channel. The connections stay open for the whole run, and a thread in every
 * process (the watcher) reads them. A closed connection is the operating system telling
 * that a process ended: rank 0 sees it first (or a rank's "fail" message) and sends "abort"
 * to every other rank; a rank that sees rank 0's connection close stops too. A normal end
 * is announced first ("bye"), so that closing then is not news. The watcher also watches
 * the main thread: while armed (during collective work), no progress (rdv_tick) for the
 * timeout breaks the world too, which catches a rank that is alive but stuck. On a break
 * the watcher prints one line, calls the program's hook (chapter 07 aborts its NCCL
 * communicators there, so that no kernel spins on for a peer that is gone) and ends the
 * process: every rank exits within the timeout, none hangs.
 *
 * Exit statuses: RDV_INPUT (2) for bad input on some rank, RDV_BROKEN (3) for a rank lost,
 * a timeout or a broken connection. */
#ifndef CH07_RENDEZVOUS_H
#define CH07_RENDEZVOUS_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

enum { RDV_OK = 0, RDV_INPUT = 2, RDV_BROKEN = 3 };

/* Message types; every message is a header (magic, type, a number, payload length, in
 * network byte order) and its payload. */
enum {
    RDV_HELLO = 1, /* rank -> 0: a = rank; payload: world size (4 bytes), reason ("" = ok) */
    RDV_VERDICT,   /* 0 -> rank: a = RDV_OK/INPUT/BROKEN; payload: the id, then the reason */
    RDV_FAIL,      /* rank -> 0: a = exit status; payload: why this rank stops */
    RDV_ABORT,     /* 0 -> rank: a = exit status; payload: why the world stops */
    RDV_DATA,      /* rank -> 0: a = rank; payload: its part of a gather */
    RDV_RELEASE,   /* 0 -> rank: the gather (or barrier) is complete */
    RDV_BYE,       /* rank -> 0: this rank ended normally */
    RDV_END        /* 0 -> rank: every rank ended normally */
};
#define RDV_MAGIC 0x4d4e5256u /* "MNRV" */
#define RDV_MAX_MESSAGE (1u << 24)
#define RDV_REASON 600
#define RDV_TEXT (RDV_REASON + 128) /* a reason with the words around it */
#define RDV_GRACE_S 5.0 /* how long the break hook may take before the process ends anyway */

typedef struct {
    int rank, world;
    const char *host;    /* TCP: rank 0's address, which the other ranks connect to */
    int port;            /* TCP: the port rank 0 listens on (0 with a file) */
    const char *file;    /* or: the file into which rank 0 writes "host port" */
    double timeout_s;    /* the wait for the others, and for the main thread's progress */
    const char *program; /* the first word of every message */
} RdvConfig;

typedef struct {
    RdvConfig cfg;
    int *fd;  /* rank 0: fd[r] the connection to rank r (-1: none); others: fd[0] to rank 0 */
    int *bye; /* rank 0: rank r said bye */
    char **data;
    size_t *data_len;
    int byes, gathered, released, ended;
    int listen_fd;
    pthread_t watcher;
    int watching, stop;
    pthread_mutex_t lock; /* the state below, and every send */
    int broken;           /* an exit status once the world broke (0: it stands) */
    int finishing, leaving;
    char why[RDV_TEXT + 32];
    int armed;
    double last_tick;
    char what[96];
    void (*on_break)(void *ctx, int status, const char *why);
    void *on_break_ctx;
} Rdv;

static inline double rdv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline void rdv_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ------------------------------------------------------------------ messages */

/* All of buf onto fd; 0, or -1 (the peer is gone). MSG_NOSIGNAL: no SIGPIPE for it. */
static inline int rdv_write_all(int fd, const void *buf, size_t len)
{
    const char *p = (const char *)buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Exactly len bytes from fd before the monotonic time `deadline` (< 0: no deadline):
 * 0, -1 (closed or an error), -2 (the deadline passed). */
static inline int rdv_read_all(int fd, void *buf, size_t len, double deadline)
{
    char *p = (char *)buf;
    while (len > 0) {
        int wait_ms = -1;
        if (deadline >= 0) {
            double left = deadline - rdv_now();
            if (left <= 0) return -2;
            wait_ms = (int)(left * 1000) + 1;
        }
        struct pollfd pfd = {fd, POLLIN, 0};
        int k = poll(&pfd, 1, wait_ms);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        if (k == 0) continue;
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static inline int rdv_send_msg(int fd, int type, int a, const void *p1, size_t n1, const void *p2,
                               size_t n2)
{
    uint32_t h[4] = {htonl(RDV_MAGIC), htonl((uint32_t)type), htonl((uint32_t)a),
                     htonl((uint32_t)(n1 + n2))};
    if (rdv_write_all(fd, h, sizeof h)) return -1;
    if (n1 && rdv_write_all(fd, p1, n1)) return -1;
    if (n2 && rdv_write_all(fd, p2, n2)) return -1;
    return 0;
}

/* One message: its type and number, its payload malloc'ed into *body (NUL-terminated).
 * 0, -1 (closed, an error or not one of ours), -2 (the deadline passed). */
static inline int rdv_recv_msg(int fd, int *type, int *a, char **body, size_t *len, double deadline)
{
    uint32_t h[4];
    int rc = rdv_read_all(fd, h, sizeof h, deadline);
    if (rc) return rc;
    if (ntohl(h[0]) != RDV_MAGIC || ntohl(h[3]) > RDV_MAX_MESSAGE) return -1;
    *type = (int)ntohl(h[1]);
    *a = (int)ntohl(h[2]);
    *len = ntohl(h[3]);
    *body = (char *)malloc(*len + 1);
    if (!*body) return -1;
    rc = rdv_read_all(fd, *body, *len, deadline);
    if (rc) {
        free(*body);
        *body = NULL;
        return rc;
    }
    (*body)[*len] = '\0';
    return 0;
}

/* ------------------------------------------------------------------ sockets */

/* Rank 0's listening socket on `port` (0: any free port, written to *bound), on every
 * interface: IPv6 with IPv4 mapped in where the machine has IPv6, else IPv4. */
static inline int rdv_listen(int port, int *bound, char *err, size_t errlen)
{
    int one = 1, zero = 0;
    for (int v6 = 1; v6 >= 0; v6--) {
        int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
        if (fd < 0) continue;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_storage ss;
        memset(&ss, 0, sizeof ss);
        socklen_t sl;
        if (v6) {
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            a->sin6_family = AF_INET6;
            a->sin6_addr = in6addr_any;
            a->sin6_port = htons((uint16_t)port);
            sl = sizeof *a;
        } else {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            a->sin_family = AF_INET;
            a->sin_addr.s_addr = htonl(INADDR_ANY);
            a->sin_port = htons((uint16_t)port);
            sl = sizeof *a;
        }
        if (bind(fd, (struct sockaddr *)&ss, sl) == 0 && listen(fd, 128) == 0) {
            sl = sizeof ss;
            getsockname(fd, (struct sockaddr *)&ss, &sl);
            *bound = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                              : ((struct sockaddr_in *)&ss)->sin_port);
            return fd;
        }
        int e = errno;
        close(fd);
        /* a port in use is the answer; no IPv6 on this machine is a reason to try IPv4 */
        if (e == EADDRINUSE || e == EACCES || !v6) {
            snprintf(err, errlen, "cannot listen on port %d: %s", port, strerror(e));
            return -1;
        }
    }
    snprintf(err, errlen, "cannot open a socket: %s", strerror(errno));
    return -1;
}

/* One attempt to connect to host:port, at most `wait_s` for each address; the socket or
 * -1 with the reason in err. Non-blocking connect, so that an unreachable host costs
 * wait_s, not the operating system's minutes of retries. */
static inline int rdv_connect(const char *host, int port, double wait_s, char *err, size_t errlen)
{
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(host, service, &hints, &res);
    if (g) {
        snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(g));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) continue;
        int flags = fcntl(fd, F_GETFL, 0), rc, soerr = 0;
        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
        rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc < 0 && errno == EINPROGRESS) {
            struct pollfd pfd = {fd, POLLOUT, 0};
            rc = poll(&pfd, 1, (int)(wait_s * 1000) + 1) == 1 ? 0 : -1;
            socklen_t sl = sizeof soerr;
            if (rc == 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            if (rc < 0) soerr = ETIMEDOUT;
            rc = soerr ? -1 : 0;
            errno = soerr;
        }
        if (rc < 0) {
            snprintf(err, errlen, "%s", strerror(errno));
            close(fd);
            fd = -1;
            continue;
        }
        fcntl(fd, F_SETFL, flags);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    freeaddrinfo(res);
    return fd;
}

/* The file rendezvous: rank 0 writes "host port" into a temporary file beside PATH and
 * renames it, so that a reader sees the whole line or nothing. */
static inline int rdv_write_address(const char *path, const char *host, int port, char *err,
                                    size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s %d\n", host, port) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write the rendezvous file %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static inline int rdv_read_address(const char *path, char *host, size_t hostlen, int *port)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[400];
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    char h[300];
    if (!ok || sscanf(line, "%299s %d", h, port) != 2 || *port < 1 || *port > 65535) return -1;
    snprintf(host, hostlen, "%s", h);
    return 0;
}

/* ------------------------------------------------------------------ the watcher */

static inline int rdv_peers(const Rdv *r) { return r->cfg.rank == 0 ? r->cfg.world : 1; }

/* The grace thread: however the break hook fares, the process ends. */
static inline void *rdv_reaper(void *arg)
{
    Rdv *r = (Rdv *)arg;
    rdv_sleep(RDV_GRACE_S);
    _exit(r->broken ? r->broken : RDV_BROKEN);
    return NULL;
}

/* The world broke, for the reason `why`, found out about rank `culprit` (this rank's own
 * number when it found the trouble itself). Records it once; tells the others (rank 0:
 * every rank but the culprit; another rank: rank 0, when the trouble is its own); prints
 * one line; calls the program's hook, a reaper thread making sure the process ends even if
 * the hook does not return; ends the process with `status`. Returns only if the world had
 * broken before or this process is already leaving. */
static inline void rdv_break(Rdv *r, int status, const char *why, int culprit)
{
    int me = r->cfg.rank;
    char text[RDV_TEXT + 32];
    if (culprit == me)
        snprintf(text, sizeof text, "rank %d: %s", me, why);
    else
        snprintf(text, sizeof text, "%s", why);
    pthread_mutex_lock(&r->lock);
    if (r->broken || r->leaving) {
        pthread_mutex_unlock(&r->lock);
        return;
    }
    r->broken = status;
    snprintf(r->why, sizeof r->why, "%s", text);
    if (me == 0) {
        for (int k = 1; k < r->cfg.world; k++)
            if (k != culprit && r->fd[k] >= 0 && !r->bye[k])
                rdv_send_msg(r->fd[k], RDV_ABORT, status, text, strlen(text), NULL, 0);
    } else if (culprit == me && r->fd[0] >= 0) {
        rdv_send_msg(r->fd[0], RDV_FAIL, status, why, strlen(why), NULL, 0);
    }
    pthread_mutex_unlock(&r->lock);
    fprintf(stderr, "%s: rank %d stops: %s\n", r->cfg.program, me, culprit == me ? why : text);
    fflush(stderr);
    if (r->on_break) {
        pthread_t reaper;
        if (pthread_create(&reaper, NULL, rdv_reaper, r) == 0) pthread_detach(reaper);
        r->on_break(r->on_break_ctx, status, text);
    }
    fflush(stdout);
    _exit(status);
}

/* One message (or a closed connection) from peer k: what it means for the world. */
static inline void rdv_handle(Rdv *r, int k)
{
    int type = 0, a = 0;
    char *body = NULL, why[RDV_TEXT];
    size_t len = 0;
    int fd = r->fd[k];
    int rc = rdv_recv_msg(fd, &type, &a, &body, &len, rdv_now() + r->cfg.timeout_s);
    int me = r->cfg.rank;
    if (rc) {
        pthread_mutex_lock(&r->lock);
        int expected = me == 0 ? r->bye[k] : (r->ended || r->finishing);
        close(fd);
        r->fd[k] = -1;
        pthread_mutex_unlock(&r->lock);
        if (expected) return;
        if (me == 0)
            snprintf(why, sizeof why,
                     "rank %d exited or was killed (its connection to rank 0 closed)", k);
        else
            snprintf(why, sizeof why, "rank 0 exited or was killed (the connection to it closed)");
        rdv_break(r, RDV_BROKEN, why, k);
        return;
    }
    pthread_mutex_lock(&r->lock);
    if (me == 0 && type == RDV_BYE) {
        r->bye[k] = 1;
        r->byes++;
    } else if (me == 0 && type == RDV_DATA && !r->data[k]) {
        r->data[k] = body;
        r->data_len[k] = len;
        body = NULL;
        r->gathered++;
    } else if (me != 0 && type == RDV_RELEASE) {
        r->released++;
    } else if (me != 0 && type == RDV_END) {
        r->ended = 1;
    }
    pthread_mutex_unlock(&r->lock);
    if (type == RDV_FAIL && me == 0) {
        snprintf(why, sizeof why, "rank %d: %s", k, body);
        rdv_break(r, a == RDV_INPUT ? RDV_INPUT : RDV_BROKEN, why, k);
    } else if (type == RDV_ABORT && me != 0) {
        rdv_break(r, a == RDV_INPUT ? RDV_INPUT : RDV_BROKEN, body, 0);
    }
    free(body);
}

static inline void *rdv_watch(void *arg)
{
    Rdv *r = (Rdv *)arg;
    int n = rdv_peers(r);
    struct pollfd *pfd = (struct pollfd *)calloc((size_t)n, sizeof *pfd);
    int *who = (int *)calloc((size_t)n, sizeof *who);
    while (!r->stop) {
        int m = 0;
        pthread_mutex_lock(&r->lock);
        for (int k = 0; k < n; k++)
            if (r->fd[k] >= 0) {
                pfd[m].fd = r->fd[k];
                pfd[m].events = POLLIN;
                pfd[m].revents = 0;
                who[m++] = k;
            }
        int armed = r->armed;
        double idle = rdv_now() - r->last_tick;
        char what[96];
        snprintf(what, sizeof what, "%s", r->what);
        pthread_mutex_unlock(&r->lock);
        if (armed && idle > r->cfg.timeout_s) {
            char why[RDV_TEXT];
            snprintf(why, sizeof why, "no progress for %.0f s while %s (a rank may be stuck)",
                     r->cfg.timeout_s, what);
            rdv_break(r, RDV_BROKEN, why, r->cfg.rank);
        }
        int k = m ? poll(pfd, (nfds_t)m, 100) : (rdv_sleep(0.1), 0);
        for (int i = 0; k > 0 && i < m && !r->stop; i++)
            if (pfd[i].revents) rdv_handle(r, who[i]);
    }
    free(pfd);
    free(who);
    return NULL;
}

/* ------------------------------------------------------------------ the main thread's side */

/* Collective work begins (what: for the message); every rdv_tick restarts its clock. */
static inline void rdv_arm(Rdv *r, const char *what)
{
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    r->armed = 1;
    r->last_tick = rdv_now();
    snprintf(r->what, sizeof r->what, "%s", what);
    pthread_mutex_unlock(&r->lock);
}

static inline void rdv_tick(Rdv *r)
{
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    r->last_tick = rdv_now();
    pthread_mutex_unlock(&r->lock);
}

static inline void rdv_disarm(Rdv *r)
{
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    r->armed = 0;
    pthread_mutex_unlock(&r->lock);
}

/* 0 while the world stands, else the exit status the watcher is ending it with. */
static inline int rdv_broken(Rdv *r)
{
    if (!r) return 0;
    pthread_mutex_lock(&r->lock);
    int b = r->broken;
    pthread_mutex_unlock(&r->lock);
    return b;
}

/* The program calls this where it must stop (bad input found late, an error, a timeout it
 * saw itself): every other rank hears why and exits with `status`; the caller exits next. */
static inline void rdv_fail(Rdv *r, int status, const char *why)
{
    if (!r) return;
    pthread_mutex_lock(&r->lock);
    if (!r->broken && !r->leaving) {
        char msg[RDV_REASON + 16];
        snprintf(msg, sizeof msg, "rank 0: %s", why);
        if (r->cfg.rank == 0) {
            for (int k = 1; k < r->cfg.world; k++)
                if (r->fd[k] >= 0 && !r->bye[k])
                    rdv_send_msg(r->fd[k], RDV_ABORT, status, msg, strlen(msg), NULL, 0);
        } else if (r->fd[0] >= 0) {
            rdv_send_msg(r->fd[0], RDV_FAIL, status, why, strlen(why), NULL, 0);
        }
    }
    r->leaving = 1;
    pthread_mutex_unlock(&r->lock);
}

/* Waits under the lock until *counter reaches `want`, the world breaks or `deadline`
 * passes: 0, or -1 on a break or a timeout. */
static inline int rdv_wait_for(Rdv *r, const int *counter, int want, double deadline)
{
    pthread_mutex_lock(&r->lock);
    while (*counter < want && !r->broken && rdv_now() < deadline) {
        pthread_mutex_unlock(&r->lock);
        rdv_sleep(0.001);
        pthread_mutex_lock(&r->lock);
    }
    int ok = *counter >= want;
    pthread_mutex_unlock(&r->lock);
    return ok ? 0 : -1;
}

/* Every rank hands rank 0 `len` bytes; rank 0 gets them all in out[k], out_len[k] (its own
 * is a copy; the caller frees each), then every rank goes on. With len 0 it is a barrier.
 * 0, or RDV_BROKEN with the reason in why (a rank did not arrive within the timeout). */
static inline int rdv_gather(Rdv *r, const void *data, size_t len, char **out, size_t *out_len,
                             char *why, size_t whylen)
{
    double deadline = rdv_now() + r->cfg.timeout_s;
    if (r->cfg.rank != 0) {
        pthread_mutex_lock(&r->lock);
        int want = r->released + 1;
        int sent =
            r->fd[0] >= 0 && rdv_send_msg(r->fd[0], RDV_DATA, r->cfg.rank, data, len, NULL, 0) == 0;
        pthread_mutex_unlock(&r->lock);
        if (sent && rdv_wait_for(r, &r->released, want, deadline) == 0) return RDV_OK;
        snprintf(why, whylen, "rank %d: rank 0 did not end the gather within %.0f s", r->cfg.rank,
                 r->cfg.timeout_s);
        return RDV_BROKEN;
    }
    if (rdv_wait_for(r, &r->gathered, r->cfg.world - 1, deadline)) {
        snprintf(why, whylen, "rank 0: not every rank reached the gather within %.0f s",
                 r->cfg.timeout_s);
        return RDV_BROKEN;
    }
    pthread_mutex_lock(&r->lock);
    for (int k = 0; k < r->cfg.world; k++) {
        if (k == 0) {
            out[0] = (char *)malloc(len + 1);
            if (len) memcpy(out[0], data, len);
            out[0][len] = '\0';
            out_len[0] = len;
        } else {
            out[k] = r->data[k];
            out_len[k] = r->data_len[k];
            r->data[k] = NULL;
        }
        if (k && r->fd[k] >= 0) rdv_send_msg(r->fd[k], RDV_RELEASE, 0, NULL, 0, NULL, 0);
    }
    r->gathered = 0;
    pthread_mutex_unlock(&r->lock);
    return RDV_OK;
}

static inline int rdv_barrier(Rdv *r, char *why, size_t whylen)
{
    char *out[1] = {NULL};
    size_t n[1];
    if (r->cfg.rank != 0) return rdv_gather(r, NULL, 0, out, n, why, whylen);
    char **all = (char **)calloc((size_t)r->cfg.world, sizeof(char *));
    size_t *lens = (size_t *)calloc((size_t)r->cfg.world, sizeof(size_t));
    int rc = rdv_gather(r, NULL, 0, all, lens, why, whylen);
    for (int k = 0; k < r->cfg.world; k++) free(all[k]);
    free(all);
    free(lens);
    return rc;
}

/* The normal end: this rank says bye; rank 0 waits (up to the timeout) for every rank's,
 * then tells all that the run ended. The watcher stops and the connections close. 0, or
 * RDV_BROKEN if a rank never said bye. */
static inline int rdv_finish(Rdv *r, char *why, size_t whylen)
{
    if (!r) return RDV_OK;
    int rc = RDV_OK;
    pthread_mutex_lock(&r->lock);
    r->finishing = 1;
    r->armed = 0;
    if (r->cfg.rank != 0 && r->fd[0] >= 0) rdv_send_msg(r->fd[0], RDV_BYE, 0, NULL, 0, NULL, 0);
    pthread_mutex_unlock(&r->lock);
    if (r->cfg.rank == 0) {
        if (rdv_wait_for(r, &r->byes, r->cfg.world - 1, rdv_now() + r->cfg.timeout_s)) {
            snprintf(why, whylen, "rank 0: not every rank ended within %.0f s of rank 0",
                     r->cfg.timeout_s);
            rc = RDV_BROKEN;
        }
        pthread_mutex_lock(&r->lock);
        for (int k = 1; k < r->cfg.world; k++)
            if (r->fd[k] >= 0) rdv_send_msg(r->fd[k], RDV_END, 0, NULL, 0, NULL, 0);
        pthread_mutex_unlock(&r->lock);
    }
    pthread_mutex_lock(&r->lock);
    r->leaving = 1;
    pthread_mutex_unlock(&r->lock);
    if (r->watching) {
        r->stop = 1;
        pthread_join(r->watcher, NULL);
        r->watching = 0;
    }
    for (int k = 0; k < rdv_peers(r); k++)
        if (r->fd[k] >= 0) close(r->fd[k]);
    return rc;
}

/* ------------------------------------------------------------------ the rendezvous */

static inline void rdv_start_watcher(Rdv *r)
{
    r->last_tick = rdv_now();
    if (r->cfg.world > 1 && pthread_create(&r->watcher, NULL, rdv_watch, r) == 0) r->watching = 1;
}

/* Rank 0: takes every hello, then sends the verdict. */
static inline int rdv_host(Rdv *r, const char *problem, const unsigned char *payload,
                           size_t payload_len, char *why, size_t whylen)
{
    const RdvConfig *c = &r->cfg;
    char err[RDV_REASON], where[400];
    int bound = 0;
    r->listen_fd = rdv_listen(c->file ? 0 : c->port, &bound, err, sizeof err);
    if (r->listen_fd < 0) {
        snprintf(why, whylen, "rank 0: %s", err);
        return RDV_BROKEN;
    }
    char host[256] = "";
    if (c->file) {
        if (c->host && *c->host)
            snprintf(host, sizeof host, "%s", c->host);
        else if (gethostname(host, sizeof host - 1) != 0)
            snprintf(host, sizeof host, "127.0.0.1");
        if (rdv_write_address(c->file, host, bound, err, sizeof err)) {
            snprintf(why, whylen, "rank 0: %s", err);
            close(r->listen_fd);
            return RDV_BROKEN;
        }
        snprintf(where, sizeof where, "%s:%d (from %s)", host, bound, c->file);
    } else {
        snprintf(where, sizeof where, "port %d", bound);
    }
    /* every hello, until all ranks came or the deadline; processes that claim a rank
       already taken (or none of the world's) get the verdict too, from `spare` */
    char first[RDV_TEXT] = "", mismatch[RDV_REASON] = "";
    int came = 1, problems = problem ? 1 : 0, first_rank = problem ? 0 : -1, spare[16], spares = 0;
    if (problem) snprintf(first, sizeof first, "rank 0: %s", problem);
    double deadline = rdv_now() + c->timeout_s;
    while (came < c->world && rdv_now() < deadline) {
        struct pollfd pfd = {r->listen_fd, POLLIN, 0};
        int left_ms = (int)((deadline - rdv_now()) * 1000) + 1;
        if (poll(&pfd, 1, left_ms < 200 ? left_ms : 200) <= 0) continue;
        int fd = accept(r->listen_fd, NULL, NULL);
        if (fd < 0) continue;
        int type, rank;
        char *body = NULL;
        size_t len;
        double hello_by = rdv_now() + 5.0 < deadline ? rdv_now() + 5.0 : deadline;
        if (rdv_recv_msg(fd, &type, &rank, &body, &len, hello_by) || type != RDV_HELLO || len < 4) {
            free(body);
            close(fd); /* not one of ours, or gone before its hello */
            continue;
        }
        uint32_t w;
        memcpy(&w, body, 4);
        int world = (int)ntohl(w);
        const char *reason = body + 4;
        if (rank < 1 || rank >= c->world || r->fd[rank] >= 0) {
            if (!mismatch[0] && (rank < 0 || rank >= c->world))
                snprintf(mismatch, sizeof mismatch,
                         "a process says it is rank %d, but the world has ranks 0 .. %d", rank,
                         c->world - 1);
            else if (!mismatch[0])
                snprintf(mismatch, sizeof mismatch, "two processes say they are rank %d", rank);
            if (spares < 16)
                spare[spares++] = fd;
            else
                close(fd);
            free(body);
            continue;
        }
        came++;
        r->fd[rank] = fd;
        if (world != c->world && !mismatch[0])
            snprintf(mismatch, sizeof mismatch,
                     "rank %d says the world has %d ranks, rank 0 says %d", rank, world, c->world);
        if (reason[0]) {
            problems++;
            if (first_rank < 0 || rank < first_rank) {
                first_rank = rank;
                snprintf(first, sizeof first, "rank %d: %s", rank, reason);
            }
        }
        free(body);
    }
    close(r->listen_fd);
    r->listen_fd = -1;
    if (c->file) unlink(c->file);
    int status = RDV_OK;
    if (came < c->world) {
        int n = snprintf(why, whylen, "rank 0: rank%s", c->world - came > 1 ? "s" : "");
        for (int k = 1, listed = 0; k < c->world && n < (int)whylen; k++)
            if (r->fd[k] < 0)
                n += snprintf(why + n, whylen - (size_t)n, "%s %d", listed++ ? "," : "", k);
        if (n < (int)whylen)
            snprintf(why + n, whylen - (size_t)n,
                     " never arrived within %.0f s (rank 0 listened on %s)", c->timeout_s, where);
        status = RDV_BROKEN;
    } else if (mismatch[0]) {
        snprintf(why, whylen, "rank 0: %s", mismatch);
        status = RDV_INPUT;
    } else if (problems) {
        if (problems > 1)
            snprintf(why, whylen, "%s (and %d more rank%s refused %s input)", first, problems - 1,
                     problems > 2 ? "s" : "", problems > 2 ? "their" : "its");
        else
            snprintf(why, whylen, "%s", first);
        status = RDV_INPUT;
    }
    unsigned char *id = (unsigned char *)calloc(payload_len ? payload_len : 1, 1);
    if (status == RDV_OK && payload_len) memcpy(id, payload, payload_len);
    const char *text = status == RDV_OK ? "" : why;
    for (int k = 1; k < c->world; k++)
        if (r->fd[k] >= 0 &&
            rdv_send_msg(r->fd[k], RDV_VERDICT, status, id, payload_len, text, strlen(text)) &&
            status == RDV_OK) {
            snprintf(why, whylen, "rank 0: rank %d left before the verdict", k);
            status = RDV_BROKEN;
        }
    for (int k = 0; k < spares; k++) {
        rdv_send_msg(spare[k], RDV_VERDICT, status == RDV_OK ? RDV_INPUT : status, id, payload_len,
                     status == RDV_OK ? "rank 0: not a rank of this world" : text,
                     strlen(status == RDV_OK ? "rank 0: not a rank of this world" : text));
        close(spare[k]);
    }
    free(id);
    return status;
}

/* Another rank: connects to rank 0 (until the deadline), says hello, takes the verdict. */
static inline int rdv_visit(Rdv *r, const char *problem, unsigned char *payload, size_t payload_len,
                            char *why, size_t whylen)
{
    const RdvConfig *c = &r->cfg;
    char host[300] = "", err[RDV_REASON] = "no attempt", where[400];
    int port = c->port, fd = -1;
    double deadline = rdv_now() + c->timeout_s;
    snprintf(where, sizeof where, "%s:%d", c->host ? c->host : "?", c->port);
    while (fd < 0 && rdv_now() < deadline) {
        if (c->file) {
            if (rdv_read_address(c->file, host, sizeof host, &port)) {
                snprintf(err, sizeof err, "no address in %s yet", c->file);
                rdv_sleep(0.05);
                continue;
            }
            snprintf(where, sizeof where, "%s:%d (from %s)", host, port, c->file);
        } else {
            snprintf(host, sizeof host, "%s", c->host);
        }
        double left = deadline - rdv_now();
        fd = rdv_connect(host, port, left < 1.0 ? left : 1.0, err, sizeof err);
        if (fd < 0) {
            rdv_sleep(0.1);
            continue;
        }
        uint32_t w = htonl((uint32_t)c->world);
        const char *p = problem ? problem : "";
        if (rdv_send_msg(fd, RDV_HELLO, c->rank, &w, 4, p, strlen(p))) {
            snprintf(err, sizeof err, "the connection closed during the hello");
            close(fd);
            fd = -1;
        }
    }
    if (fd < 0) {
        snprintf(why, whylen, "rank %d: could not reach rank 0 at %s within %.0f s (%s)", c->rank,
                 where, c->timeout_s, err);
        return RDV_BROKEN;
    }
    /* rank 0 may have started later than this rank: give it its whole timeout, and a
       second for its verdict to travel */
    int type, status;
    char *body = NULL;
    size_t len;
    int rc = rdv_recv_msg(fd, &type, &status, &body, &len, rdv_now() + c->timeout_s + 1.0);
    if (rc || type != RDV_VERDICT || len < payload_len) {
        snprintf(why, whylen, "rank %d: rank 0 at %s %s", c->rank, where,
                 rc == -2 ? "sent no verdict within the timeout" : "closed the connection");
        free(body);
        close(fd);
        return RDV_BROKEN;
    }
    r->fd[0] = fd;
    if (status == RDV_OK) {
        if (payload_len) memcpy(payload, body, payload_len);
    } else {
        snprintf(why, whylen, "%s", body + payload_len);
        status = status == RDV_INPUT ? RDV_INPUT : RDV_BROKEN;
    }
    free(body);
    return status;
}

/* The rendezvous of this rank (cfg: its rank, the world, where to meet). problem: NULL, or
 * why this rank cannot run. payload: rank 0 gives payload_len bytes (the NCCL id), every
 * other rank receives them. Returns RDV_OK (the watcher then runs), RDV_INPUT (some
 * rank's problem, named in why as "rank R: reason") or RDV_BROKEN (why says what). A world
 * of one needs no network. */
static inline int rdv_join(Rdv *r, const RdvConfig *cfg, const char *problem,
                           unsigned char *payload, size_t payload_len, char *why, size_t whylen)
{
    memset(r, 0, sizeof *r);
    r->cfg = *cfg;
    if (!r->cfg.program) r->cfg.program = "rendezvous";
    r->listen_fd = -1;
    pthread_mutex_init(&r->lock, NULL);
    int n = rdv_peers(r);
    r->fd = (int *)malloc((size_t)n * sizeof(int));
    r->bye = (int *)calloc((size_t)n, sizeof(int));
    r->data = (char **)calloc((size_t)n, sizeof(char *));
    r->data_len = (size_t *)calloc((size_t)n, sizeof(size_t));
    for (int k = 0; k < n; k++) r->fd[k] = -1;
    int status;
    if (cfg->world == 1) {
        status = problem ? RDV_INPUT : RDV_OK;
        if (problem) snprintf(why, whylen, "rank 0: %s", problem);
    } else if (cfg->rank == 0) {
        status = rdv_host(r, problem, payload, payload_len, why, whylen);
    } else {
        status = rdv_visit(r, problem, payload, payload_len, why, whylen);
    }
    if (status == RDV_OK)
        rdv_start_watcher(r);
    else
        r->leaving = 1;
    return status;
}

#endif

/* Chapter 06: the event timeline. Every op (a copy, a kernel) of a pipeline records a CUDA
 * event before and after itself on its stream; afterwards the events are read against an
 * origin event and written as one tab-separated line per op, which plot_extra.py draws as
 * bars, one row per stream. Chapter 07's data-parallel trainer writes the same file format,
 * one row per GPU and stream.
 *
 *   Timeline *tl = ...;  tl->count = 0;
 *   cudaEventRecord(origin, s);
 *   int i = sp_op_begin(tl, s, "compute", "kernel", chunk);
 *   ... the op on s ...
 *   sp_op_end(tl, i, s);
 *   ... synchronize ...
 *   timeline_write_header(f);  timeline_write(f, "pipeline name", tl, origin);
 *
 * Events are per device: the origin must be on the device of the ops it is read against. */
#ifndef CH06_EVENT_TIMELINE_CUH
#define CH06_EVENT_TIMELINE_CUH

#include "common/cuda_utils.cuh"

#define SP_TIMELINE_MAX 4096

typedef struct {
    char stream[24]; /* row of the figure: "stream 3", "h2d", "compute", ... */
    const char *op;  /* "h2d", "kernel" or "d2h" */
    int chunk;
    cudaEvent_t start, end;
} TimelineOp;

typedef struct {
    TimelineOp ops[SP_TIMELINE_MAX];
    int count;
} Timeline;

/* Records the start of one op on stream s; returns its index, or -1 without a timeline. */
static inline int sp_op_begin(Timeline *tl, cudaStream_t s, const char *stream, const char *op,
                              int chunk)
{
    if (tl == NULL) return -1;
    if (tl->count == SP_TIMELINE_MAX) {
        fprintf(stderr, "timeline full (%d ops)\n", SP_TIMELINE_MAX);
        exit(1);
    }
    TimelineOp *t = &tl->ops[tl->count];
    snprintf(t->stream, sizeof t->stream, "%s", stream);
    t->op = op;
    t->chunk = chunk;
    CUDA_CHECK(cudaEventCreate(&t->start));
    CUDA_CHECK(cudaEventCreate(&t->end));
    CUDA_CHECK(cudaEventRecord(t->start, s));
    return tl->count++;
}

static inline void sp_op_end(Timeline *tl, int idx, cudaStream_t s)
{
    if (tl != NULL) CUDA_CHECK(cudaEventRecord(tl->ops[idx].end, s));
}

static inline void timeline_write_header(FILE *f)
{
    fprintf(f, "pipeline\tstream\top\tchunk\tstart_ms\tend_ms\n");
}

/* One line per op of tl (pipeline, stream, op, chunk, start and end in ms since origin),
 * after the ops are done; destroys their events and empties tl. */
static inline void timeline_write(FILE *f, const char *pipeline, Timeline *tl, cudaEvent_t origin)
{
    for (int i = 0; i < tl->count; i++) {
        float t0, t1;
        CUDA_CHECK(cudaEventElapsedTime(&t0, origin, tl->ops[i].start));
        CUDA_CHECK(cudaEventElapsedTime(&t1, origin, tl->ops[i].end));
        fprintf(f, "%s\t%s\t%s\t%d\t%.4f\t%.4f\n", pipeline, tl->ops[i].stream, tl->ops[i].op,
                tl->ops[i].chunk, t0, t1);
        CUDA_CHECK(cudaEventDestroy(tl->ops[i].start));
        CUDA_CHECK(cudaEventDestroy(tl->ops[i].end));
    }
    tl->count = 0;
}

#endif

/* Exercise 5 (stretch): depth_k8's schedule as a CUDA graph.
 *
 * Asked: capture the 3 x chunks copies and kernels of depth_k8 into a CUDA graph once and
 * launch the graph on every run. Predict first: which gets faster, the host's side (the
 * calls that issue the work) or the GPU's (the time the bench measures)? Then try it with
 * many small chunks (--chunks 4096).
 *
 * Answer: stream capture records what pipeline_depth_first issues, on eight streams, as a
 * graph whose edges are the streams' orders. A capture starts on one stream (streams[0]);
 * the other seven join it by waiting for an event recorded there (the fork), and it ends
 * when streams[0] has waited for an event of each of them (the join). The graph is
 * instantiated once and kept, and rebuilt only when the run's buffers, size, chunks or work
 * change (an executable graph holds its pointers and kernel arguments by value).
 *
 * A graph launch replaces 3 x chunks API calls by one, so the host is free almost at once.
 * The GPU's time hardly moves at the default 64 chunks: there the host issues all the work
 * long before the link has carried it, and the link, not the issue, sets the time. With
 * thousands of chunks each copy is small and short, the calls that issue it cost about as
 * much, and the graph may win: graphs pay where the host's issuing is what the GPU waits
 * for. The timeline (--timeline) still uses the streams: a graph replayed would not
 * re-record the events of a run. */
#ifndef CH06_EX5_GRAPH_K8_CUH
#define CH06_EX5_GRAPH_K8_CUH

#include "../kernels.cuh"

#define EX5_STREAMS 8

/* The executable graph of the last run and what it was built for. */
typedef struct {
    cudaGraphExec_t exec;
    const float *h_in, *d_in;
    float *h_out, *d_out;
    long long n;
    int work, chunks;
    cudaStream_t origin;
} Ex5Graph;

static Ex5Graph ex5_graph = {};

static inline int ex5_same(const Ex5Graph *g, const Pipeline *p)
{
    return g->exec != NULL && g->h_in == p->h_in && g->h_out == p->h_out && g->d_in == p->d_in &&
           g->d_out == p->d_out && g->n == p->n && g->work == p->work && g->chunks == p->chunks &&
           g->origin == p->streams[0];
}

/* Captures depth first over EX5_STREAMS streams into a graph and instantiates it. */
static inline void ex5_build(Ex5Graph *g, const Pipeline *p)
{
    Pipeline q = *p;
    q.nstreams = EX5_STREAMS;
    q.timeline = NULL;
    cudaStream_t origin = p->streams[0];
    cudaEvent_t fork, join[EX5_STREAMS];
    CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    for (int s = 0; s < EX5_STREAMS; s++)
        CUDA_CHECK(cudaEventCreateWithFlags(&join[s], cudaEventDisableTiming));
    /* The first call of sp_grid asks the device for its size: not inside a capture. */
    sp_grid(p->n);

    CUDA_CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
    CUDA_CHECK(cudaEventRecord(fork, origin));
    for (int s = 1; s < EX5_STREAMS; s++) CUDA_CHECK(cudaStreamWaitEvent(q.streams[s], fork, 0));
    pipeline_depth_first(&q);
    for (int s = 1; s < EX5_STREAMS; s++) {
        CUDA_CHECK(cudaEventRecord(join[s], q.streams[s]));
        CUDA_CHECK(cudaStreamWaitEvent(origin, join[s], 0));
    }
    cudaGraph_t graph;
    CUDA_CHECK(cudaStreamEndCapture(origin, &graph));

    if (g->exec != NULL) {
        /* The old graph may still be running: wait before it is destroyed. */
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaGraphExecDestroy(g->exec));
    }
    CUDA_CHECK(cudaGraphInstantiate(&g->exec, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
    CUDA_CHECK(cudaEventDestroy(fork));
    for (int s = 0; s < EX5_STREAMS; s++) CUDA_CHECK(cudaEventDestroy(join[s]));
    g->h_in = p->h_in;
    g->h_out = p->h_out;
    g->d_in = p->d_in;
    g->d_out = p->d_out;
    g->n = p->n;
    g->work = p->work;
    g->chunks = p->chunks;
    g->origin = origin;
}

static inline void ex5_graph_k8(const Pipeline *p)
{
    if (p->timeline != NULL) {
        Pipeline q = *p;
        q.nstreams = EX5_STREAMS;
        pipeline_depth_first(&q);
        return;
    }
    if (!ex5_same(&ex5_graph, p)) ex5_build(&ex5_graph, p);
    CUDA_CHECK(cudaGraphLaunch(ex5_graph.exec, p->streams[0]));
}

#endif

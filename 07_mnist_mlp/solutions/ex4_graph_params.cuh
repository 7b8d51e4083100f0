/* Exercise 4 (practice): a step graph whose arguments change, instead of the device cursor.
 *
 * Asked: step_graph replays one captured step for every step of the epoch, and its kernels find
 * the batch's position in device memory (the cursor) because a replay repeats the captured
 * arguments. The runtime can change them between replays: cudaGraphExecKernelNodeSetParams gives
 * one kernel node of an executable graph new arguments (cudaGraphExecUpdate takes a whole new
 * graph of the same shape). Write a trainer that passes the position as arguments (the loss slot
 * to the output layer, the next batch's position to the update's gather), captures the step once,
 * and before every replay sets those two nodes' arguments. Predict first: what does a step cost
 * the host now, against step_graph's one cudaGraphLaunch, and at which batch size could that show?
 *
 * Answer: the step below passes the output layer its loss slot (step_loss + s, no cursor) and the
 * update's gather a pointer to the next batch's start (starts + s + 1 in a device array of the
 * epoch's starts, where the fused step passes the cursor); the hidden backward advances nothing.
 * The first step of each length (a whole batch, the epoch's short last one) runs its launches
 * directly, which does every launcher's one-time set-up outside a capture, and is then captured
 * once for the later steps. Every later step sets two arguments (ex4_set_arg: the node's other
 * arguments as captured, cudaGraphKernelNodeGetParams; the kernel's signature gives their count
 * and checks the new one's type) and launches the graph: three calls to the runtime where
 * step_graph makes one. The GPU runs the same kernels on the same data, so the results are the
 * fused step's. Where the GPU's step is long (batch 256) the host's extra calls hide behind it;
 * where it is short (batch 32) they may not. And an epoch graph has no "between replays" at all:
 * its 235 or 1,875 steps are one replay, which is why the chapter reads positions from device
 * memory (or, in a whole-epoch graph, captures every step with its own arguments). */
#ifndef CH07_EX4_GRAPH_PARAMS_CUH
#define CH07_EX4_GRAPH_PARAMS_CUH

#include <tuple>
#include <type_traits>

#include "07_mnist_mlp/part1_fused/04_fused_steps.cuh"

/* The family's own state: the epoch's starts, and a graph for each length of step. */
typedef struct {
    int *starts;               /* starts[i] = i * batch, i = 0 .. steps */
    cudaGraph_t graph[2];      /* [0]: a whole batch; [1]: the epoch's short last batch */
    cudaGraphExec_t exec[2];   /* NULL: not captured yet */
    cudaGraphNode_t loss[2];   /* the output layer's node: its loss slot changes */
    cudaGraphNode_t gather[2]; /* the update's node: its next batch's start changes */
    float lr[2], mu[2];        /* what each graph was captured with */
} Ex4Graphs;

static Ex4Graphs *ex4_graphs(const Trainer *t) { return (Ex4Graphs *)t->own; }

/* The fused step with positions as arguments: step s's loss slot and batch s + 1's start. */
static void ex4_launches(Trainer *t, int s, int batch, float lr, float mu)
{
    const MlpLayout *l = &t->l;
    int H = t->hidden;
    float *P = t->params, *V = t->vel;
    MlpSource next = train_source(t);
    MlpBatch dst = fused_batch(t);
    gemm(t, batch, H, IDX_PIXELS, 1.0f, t->x, P + l->w1, 1.0f, t->z1);
    launch_output_layer<true>(t->z1, P + l->b1, P + l->w2, P + l->b2, t->y, batch, H, t->dz2,
                              V + l->b2, t->step_loss + s, NULL, t->batch, NULL);
    launch_hidden_backward(t->z1, P + l->b1, t->dz2, P + l->w2, batch, H, t->dz1, V + l->w2,
                           V + l->b1, NULL);
    gemm(t, IDX_PIXELS, H, batch, 1.0f, t->xt, t->dz1, 1.0f, V + l->w1);
    launch_update(P, V, l->total, lr, mu, &next, ex4_graphs(t)->starts + s + 1, t->n_train,
                  t->batch, &dst);
}

/* The kernel node of `graph` that launches `kernel` (one in a step). */
static cudaGraphNode_t ex4_find(cudaGraph_t graph, const void *kernel)
{
    size_t n = 0;
    CUDA_CHECK(cudaGraphGetNodes(graph, NULL, &n));
    cudaGraphNode_t *nodes = (cudaGraphNode_t *)xmalloc(n * sizeof *nodes), found = NULL;
    CUDA_CHECK(cudaGraphGetNodes(graph, nodes, &n));
    for (size_t i = 0; i < n && !found; i++) {
        cudaGraphNodeType type;
        CUDA_CHECK(cudaGraphNodeGetType(nodes[i], &type));
        if (type != cudaGraphNodeTypeKernel) continue;
        cudaKernelNodeParams p;
        CUDA_CHECK(cudaGraphKernelNodeGetParams(nodes[i], &p));
        if (p.func == kernel) found = nodes[i];
    }
    free(nodes);
    if (!found) {
        fprintf(stderr, "internal error: a captured step has no node of the kernel it launched\n");
        exit(1);
    }
    return found;
}

/* Argument I of the kernel that `node` launches in `exec` becomes `value`; the others stay as
 * captured. The kernel's signature gives the number of arguments and the type of argument I. */
template <int I, typename... A, typename V>
static void ex4_set_arg(void (*kernel)(A...), cudaGraphExec_t exec, cudaGraphNode_t node, V value)
{
    (void)kernel;
    static_assert(std::is_same<typename std::tuple_element<I, std::tuple<A...>>::type, V>::value,
                  "the new value has the argument's type");
    cudaKernelNodeParams p;
    CUDA_CHECK(cudaGraphKernelNodeGetParams(node, &p));
    void *args[sizeof...(A)];
    for (size_t i = 0; i < sizeof...(A); i++) args[i] = p.kernelParams[i];
    args[I] = &value;
    p.kernelParams = args;
    CUDA_CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &p));
}

static void ex4_drop(Ex4Graphs *g, int k)
{
    if (!g->exec[k]) return;
    CUDA_CHECK(cudaGraphExecDestroy(g->exec[k]));
    CUDA_CHECK(cudaGraphDestroy(g->graph[k]));
    g->exec[k] = NULL;
}

/* Graph k from step s's launches (captured, not run), and the two nodes whose arguments change.
 * The graph itself is kept: SetParams names a node of the graph the executable came from. */
static void ex4_capture(Trainer *t, int k, int s, int batch, float lr, float mu)
{
    Ex4Graphs *g = ex4_graphs(t);
    ex4_drop(g, k);
    CUDA_CHECK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeThreadLocal));
    ex4_launches(t, s, batch, lr, mu);
    CUDA_CHECK(cudaStreamEndCapture(cudaStreamPerThread, &g->graph[k]));
    CUDA_CHECK(cudaGraphInstantiate(&g->exec[k], g->graph[k], 0));
    g->loss[k] = ex4_find(g->graph[k], (const void *)mlp_output_layer<true, false>);
    g->gather[k] = ex4_find(g->graph[k], (const void *)mlp_update_and_gather);
    g->lr[k] = lr, g->mu[k] = mu;
}

static void ex4_step(Trainer *t, int s, int batch, float lr, float mu)
{
    Ex4Graphs *g = ex4_graphs(t);
    int k = batch == t->batch ? 0 : 1;
    if (!g->exec[k] || g->lr[k] != lr || g->mu[k] != mu) {
        ex4_launches(t, s, batch, lr, mu); /* this step, one launch at a time */
        ex4_capture(t, k, s, batch, lr, mu);
        return;
    }
    float *slot = t->step_loss + s;
    const int *start = g->starts + s + 1;
    ex4_set_arg<9>(mlp_output_layer<true, false>, g->exec[k], g->loss[k], slot);
    ex4_set_arg<7>(mlp_update_and_gather, g->exec[k], g->gather[k], start);
    CUDA_CHECK(cudaGraphLaunch(g->exec[k], cudaStreamPerThread));
}

static void ex4_create(Trainer *t)
{
    Ex4Graphs *g = (Ex4Graphs *)xmalloc(sizeof *g);
    memset(g, 0, sizeof *g);
    t->own = g;
    int steps = steps_per_epoch(t);
    int *starts = (int *)xmalloc((size_t)(steps + 1) * sizeof(int));
    for (int i = 0; i <= steps; i++) starts[i] = i * t->batch;
    g->starts = (int *)dalloc((size_t)(steps + 1) * sizeof(int));
    CUDA_CHECK(
        cudaMemcpy(g->starts, starts, (size_t)(steps + 1) * sizeof(int), cudaMemcpyHostToDevice));
    free(starts);
}

static void ex4_destroy(Trainer *t)
{
    Ex4Graphs *g = ex4_graphs(t);
    for (int k = 0; k < 2; k++) ex4_drop(g, k);
    CUDA_CHECK(cudaFree(g->starts));
    free(g);
    t->own = NULL;
}

static const StepFamily EX4_STEPS = {
    .fused = 1,
    .capturable = 0, /* the family captures its own graphs */
    .create = ex4_create,
    .destroy = ex4_destroy,
    .begin_epoch = gather_first_batch,
    .step = ex4_step,
    .evaluate = evaluate_fp32,
    .tolerances = NULL,
    .stages = NULL,
    .epoch = NULL,
    .unsupported = NULL,
    .z1_sum = NULL,
    .next_order_drawn = NULL,
};

#endif

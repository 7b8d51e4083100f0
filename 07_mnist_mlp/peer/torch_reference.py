#!/usr/bin/env python3
"""The PyTorch peer of mnist_mlp, at its best. The same 784-H-10 MLP, initialization, data,
batch order and hyperparameters as the C trainers (torch_inputs.py), trained by each of
these configurations, all with torch.optim.SGD(momentum, fused=True), which updates every
parameter and momentum buffer in one kernel:

  eager        a plain loop of steps: PyTorch launches each step's kernels one by one.
  step_graph   each step captured once in a CUDA graph (one for the full batch, one for the
               last partial batch) and replayed: no Python or launch cost per kernel.
  epoch_graph  the whole epoch, every step and the last partial batch, captured in ONE CUDA
               graph; per epoch only the new batch order is copied into the static index
               tensor the graph reads, then one replay. (Where that capture fails, two
               graphs, the full batches and the last partial one: Run.capture_epoch says
               when that happens and prints it.)
  compile      torch.compile(mode="max-autotune-no-cudagraphs") on forward + loss, whose
               backward AOTAutograd compiles too (fused elementwise kernels, autotuned
               matmuls); the optimizer step stays outside. Then the whole epoch in one
               CUDA graph, as epoch_graph. Only the full batch is compiled: the epoch's one
               last partial batch runs the uncompiled step inside the same graph (a second
               max-autotune compile would cost as long again, for 1 step in 235).
               In fp32 the matmuls stay cuBLAS's (max_autotune_gemm_backends "ATEN"): the
               Triton fp32 templates fail to compile on an H100 with this PyTorch ("No valid
               triton configs", out of shared memory), and without TF32 they would be
               competing with cuBLAS SGEMM on the same FMA units anyway.

Those are what a PyTorch user reaches for to make this loop fast: a fused optimizer, no
per-kernel overhead (graphs), fewer and better kernels (compile). Each configuration runs
in each precision of --precisions:

  fp32  TF32 off (allow_tf32 False, matmul precision "highest"): the C trainers' math;
  tf32  TF32 matmuls (allow_tf32 True, precision "high");
  bf16  torch.autocast(bfloat16) around forward + loss; fp32 weights and fused SGD.

Linear layers use cuBLAS's plain GEMM rather than cuBLASLt's bias-fused one
(DISABLE_ADDMM_CUDA_LT=1, set below before torch is imported): in fp32 the cuBLASLt call
fails inside a whole-epoch graph capture with CUBLAS_STATUS_INTERNAL_ERROR on an H100
with PyTorch 2.11, which would leave epoch_graph without a row. compile does not use
either path (inductor emits its own matmul calls and fuses the bias).

Every configuration starts from the same weights and zero momentum: warm-up steps (where
compile compiles) and graph capture come first, then the weights and momentum buffers are
put back. An epoch's time covers the order upload, all steps and reading the epoch's loss
back (summed on the GPU), as in mnist_mlp; the shuffles are drawn before the clock starts,
which only favours PyTorch. The median is over epochs 2 and on. Rows: one per
configuration, precision and batch size, kernel torch_<config>[_<precision> unless fp32],
judged against the fastest configuration of the same precision and batch.

usage: torch_reference.py [--data DIR] [--batches 256,32] [--precisions fp32,tf32,bf16]
                          [--compile-batches 256] [--compile-precisions fp32,bf16]
                          [--epochs 10] [--timing-epochs 3]
                          [--csv FILE] [--epoch-csv FILE]
"""
import argparse
import contextlib
import gc
import os
import sys
import time
import types

import torch_inputs as inputs

os.environ.setdefault("DISABLE_ADDMM_CUDA_LT", "1")  # read by PyTorch at its first addmm (see above)

CHAPTER = "07_mnist_mlp"
CONFIGS = ("eager", "step_graph", "epoch_graph", "compile")
PRECISIONS = ("fp32", "tf32", "bf16")
WARMUP_STEPS = 3  # per batch shape, on a side stream, as PyTorch's CUDA graph recipe does
CSV_HEADER = "gpu,chapter,kernel,role,size,time_ms,value,unit,ceiling,ceiling_value,pct_of_ceiling"
EPOCH_HEADER = "gpu,impl,dataset,batch,epoch,train_loss,test_accuracy,epoch_ms"


def kernel_name(config, precision):
    return f"torch_{config}" if precision == "fp32" else f"torch_{config}_{precision}"


def set_precision(torch, precision):
    """TF32 for the fp32 matmuls only with tf32; bf16 runs under autocast (see Run)."""
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")


def precision_problem(torch, precision):
    """Why this GPU cannot run the precision, or None."""
    major, minor = torch.cuda.get_device_capability()
    if precision != "fp32" and major < 8:
        return f"{precision} needs compute capability 8.0 or newer (this GPU has {major}.{minor})"
    return None


def capture(torch, fn, stream):
    """fn's kernels recorded in a CUDA graph (nothing runs now): replay() runs them.
    Captured on `stream`, the stream the warm-up ran on, so that everything a library sets
    up per stream on first use (cuBLAS's workspace, say) exists before the capture begins;
    thread_local: compile's worker threads may make CUDA calls meanwhile."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
        fn()
    return graph


def fused_sgd_problem(torch):
    """Why this PyTorch cannot run SGD(fused=True) on the GPU, or None."""
    try:
        p = torch.zeros(4, device="cuda", requires_grad=True)
        p.grad = torch.ones_like(p)
        torch.optim.SGD([p], lr=0.1, momentum=0.9, fused=True).step()
        return None
    except (RuntimeError, TypeError, ValueError) as e:
        return f"this PyTorch has no fused SGD ({(str(e).strip().splitlines() or [''])[0][:200]})"


class Run:
    """One configuration's training: model, fused SGD, the static order it reads, and its
    graphs. The data set (data.x, data.y, ...) stays on the GPU, shared by every Run."""

    def __init__(self, torch, args, data, weights, batch, precision, config):
        self.torch, self.data, self.batch, self.config = torch, data, batch, config
        self.n = data.x.shape[0]
        dev = data.x.device
        nn = torch.nn
        self.model = nn.Sequential(nn.Linear(784, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 10)).to(dev)
        with torch.no_grad():
            self.model[0].weight.copy_(torch.from_numpy(weights[0].T.copy()))
            self.model[2].weight.copy_(torch.from_numpy(weights[1].T.copy()))
            self.model[0].bias.zero_()
            self.model[2].bias.zero_()
        self.initial = [p.detach().clone() for p in self.model.parameters()]
        lr = args.lr if args.lr else 0.05 * batch / 256
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=args.momentum, fused=True)
        self.loss_fn = nn.CrossEntropyLoss()
        self.bf16 = precision == "bf16"
        self.loss = self.batch_loss
        self.compiled = None
        if config == "compile":  # the full batch only (see the top of this file)
            import torch._inductor.config as inductor_config
            # fp32: cuBLAS's matmuls (see the top); set for the whole run of this Run, since
            # the backward is compiled later, at the first backward call
            inductor_config.max_autotune_gemm_backends = "ATEN" if precision == "fp32" else "ATEN,TRITON"
            self.compiled = torch.compile(self.batch_loss, mode=args.compile_mode, dynamic=False)
        self.loss_sum = torch.zeros((), device=dev)
        self.perm = torch.arange(self.n, device=dev)  # this epoch's order, read by every step
        # (first row, rows) of one full batch and of the last partial one, if any
        self.shapes = [(0, min(batch, self.n))] + ([(self.n - self.n % batch, self.n % batch)]
                                                   if self.n % batch and self.n > batch else [])
        self.graphs = {}
        self.note = ""

    def batch_loss(self, idx):
        """Mean cross-entropy over rows idx: forward + loss (under bf16 autocast for bf16)."""
        torch = self.torch
        with torch.autocast(self.data.x.device.type, dtype=torch.bfloat16, enabled=self.bf16,
                            cache_enabled=False):  # graphs need the weight-cast cache off
            logits = self.model(self.data.x.index_select(0, idx))
            return self.loss_fn(logits, self.data.y.index_select(0, idx))

    def step(self, idx):
        """One SGD step on rows idx; adds the batch's summed loss to loss_sum, on the GPU."""
        self.opt.zero_grad(set_to_none=True)
        if self.compiled is not None and idx.shape[0] == self.batch:
            loss = self.compiled(idx)
        else:
            loss = self.loss(idx)
        loss.backward()
        self.opt.step()
        self.loss_sum.add_(loss.detach(), alpha=idx.shape[0])

    def all_steps(self, full=True, partial=True):
        """Every step of an epoch in the order held by self.perm (eager; captured by epoch
        graphs): the full batches, then the last partial one."""
        if full:
            self.loss_sum.zero_()
        for first in range(0, self.n, self.batch):
            if (full if self.n - first >= self.batch else partial):
                self.step(self.perm[first:first + self.batch])

    def capture_epoch(self, stream):
        """The epoch as one CUDA graph, or, where that capture fails, as two: the full
        batches, then the last partial batch. In fp32 with a partial last batch the one-graph
        capture fails on an H100 with PyTorch 2.11 (cuBLASLt returns an internal error for a
        full batch's bias-fused GEMM once the capture holds both batch shapes; epoch graphs
        without a partial batch, such as batch 32's, capture, and so do tf32 and bf16). Two
        replays an epoch cost one launch more than one."""
        torch = self.torch
        try:
            self.graphs = {"epoch": capture(torch, self.all_steps, stream)}
            return ""
        except Exception as e:
            if len(self.shapes) < 2:
                raise
            why = (str(e).strip().splitlines() or [""])[0][:160]
            torch.cuda.synchronize()
        self.graphs = {"full": capture(torch, lambda: self.all_steps(partial=False), stream),
                       "partial": capture(torch, lambda: self.all_steps(full=False), stream)}
        return f" (two graphs: one for the whole epoch failed to capture: {why})"

    def replay_steps(self):
        """step_graph's epoch: per step, copy its rows' indices into the graph's input, replay."""
        self.loss_sum.zero_()
        for first in range(0, self.n, self.batch):
            idx = self.perm[first:first + self.batch]
            graph, static_idx = self.graphs[idx.shape[0]]
            static_idx.copy_(idx)
            graph.replay()

    def prepare(self):
        """Warm-up steps on every batch shape (compile compiles here), the graphs, then the
        initial weights and zero momentum back. Returns (warm-up s, capture s)."""
        torch = self.torch
        t0 = time.perf_counter()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for first, rows in self.shapes:
                for _ in range(WARMUP_STEPS):
                    self.step(self.perm[first:first + rows])
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        if self.config == "step_graph":
            for _, rows in self.shapes:
                static_idx = torch.zeros(rows, dtype=torch.int64, device=self.perm.device)
                self.graphs[rows] = (capture(torch, lambda idx=static_idx: self.step(idx), side), static_idx)
        elif self.config == "compile":
            with torch._dynamo.config.patch(error_on_recompile=True):  # no compiling inside a capture
                self.note = self.capture_epoch(side)
        elif self.config == "epoch_graph":
            self.note = self.capture_epoch(side)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        with torch.no_grad():
            for p, p0 in zip(self.model.parameters(), self.initial):
                p.copy_(p0)
            for state in self.opt.state.values():
                if state.get("momentum_buffer") is not None:
                    state["momentum_buffer"].zero_()  # then the first step computes v = g, as in C
        return t1 - t0, t2 - t1

    def epoch(self, order):
        """One timed epoch on a pinned host order: (mean training loss, ms)."""
        torch = self.torch
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        self.perm.copy_(order, non_blocking=True)
        if self.config == "eager":
            self.all_steps()
        elif self.config == "step_graph":
            self.replay_steps()
        else:
            for graph in self.graphs.values():  # the epoch, or its full batches then the partial one
                graph.replay()
        loss = self.loss_sum.item() / self.n
        return loss, (time.perf_counter() - t0) * 1e3

    def accuracy(self):
        torch = self.torch
        with torch.no_grad():
            pred = self.model(self.data.test_x).argmax(dim=1)
            return 100.0 * (pred == self.data.test_y).sum().item() / self.data.test_y.shape[0]


def train(torch, args, data, weights, batch, precision, config, orders, clock):
    """Prepares and trains one configuration; returns its summary (a namespace) or None
    when it could not run here (the reason printed)."""
    name = kernel_name(config, precision)
    epochs = args.epochs if config in ("epoch_graph", "compile") else min(args.timing_epochs, args.epochs)
    if config == "compile" and args.compile_batches is not None and batch not in args.compile_batches:
        print(f"  {name} batch {batch}: not run (--compile-batches {','.join(map(str, args.compile_batches))})")
        return None
    if config == "compile" and args.compile_precisions is not None and precision not in args.compile_precisions:
        print(f"  {name} batch {batch}: not run (--compile-precisions {','.join(args.compile_precisions)})")
        return None
    try:
        if config == "compile":
            import torch._dynamo
            torch._dynamo.reset()  # a fresh compile for each precision and batch size
        run = Run(torch, args, data, weights, batch, precision, config)
        warm, cap = run.prepare()
    except Exception as e:  # torch.compile without Triton, a capture that fails here, ...
        why = (str(e).strip().splitlines() or [""])[0][:300]
        what = "torch.compile or its capture" if config == "compile" else "the warm-up or the capture"
        print(f"  {name} batch {batch}: skipped, {what} failed here: {type(e).__name__}: {why}")
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()
            if config == "compile":
                torch._dynamo.reset()
        return None
    clock.add("compile" if config == "compile" else "warm-up", warm)
    clock.add("capture", cap)
    print(f"  {name} batch {batch}: warm-up {warm:.1f} s{' (compiling)' if config == 'compile' else ''}, "
          f"capture {cap:.2f} s, {epochs} epochs{run.note}", flush=True)
    times, acc = [], 0.0
    t0 = time.perf_counter()
    for e, order in enumerate(orders[:epochs], start=1):
        loss, ms = run.epoch(order)
        if loss != loss or loss in (float("inf"), float("-inf")):
            print(f"  {name} batch {batch}: training diverged at epoch {e}: no row")
            return None
        acc = run.accuracy()
        times.append(ms)
        print(f"  {name:<25} epoch {e:3d}  train loss {loss:.4f}  test accuracy {acc:6.2f}%  "
              f"epoch {ms:9.2f} ms", flush=True)
        if args.epoch_csv:
            inputs.csv_append(args.epoch_csv, EPOCH_HEADER,
                              f"{data.gpu},{name},{data.name},{batch},{e},{loss:.6f},{acc:.2f},{ms:.4f}")
    clock.add("epochs", time.perf_counter() - t0)
    rest = sorted(times[1:]) or times
    return types.SimpleNamespace(name=name, ms=rest[(len(rest) - 1) // 2], acc=acc, epochs=epochs)


def write_rows(args, data, batch, results):
    """The rows of one precision and batch size, each against the fastest of them."""
    best = min(results, key=lambda r: r.ms)
    for r in results:
        pct = 100.0 * best.ms / r.ms
        print(f"{r.name:<25} batch {batch:4d}: median epoch {r.ms:9.2f} ms ({r.epochs} epochs), "
              f"test accuracy {r.acc:.2f}%, {pct:6.1f}% of the fastest ({best.name})")
        if args.csv:
            inputs.csv_append(args.csv, CSV_HEADER,
                              f"{data.gpu},{CHAPTER},{r.name},ceiling,{batch},{r.ms:.6g},{r.ms:.6g},ms,"
                              f"{best.name},{best.ms:.6g},{pct:.2f}")


class Clock:
    """Where the script's time went, for the closing line."""

    def __init__(self):
        self.start, self.spent = time.perf_counter(), {}

    def add(self, part, seconds):
        self.spent[part] = self.spent.get(part, 0.0) + seconds

    def line(self):
        total = time.perf_counter() - self.start
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in self.spent.items())
        return f"time: {parts}, other {total - sum(self.spent.values()):.1f} s; total {total:.1f} s"


def load_data(torch, np, args, clock, dev="cuda"):
    """The data set on the GPU, normalized as main.cu does, and the pinned batch orders."""
    t0 = time.perf_counter()
    train_x, train_y = inputs.load_split(np, args.data, "train")
    test_x, test_y = inputs.load_split(np, args.data, "t10k")
    train_x, train_y = train_x[:args.train_size], train_y[:args.train_size]
    mean, std = inputs.pixel_stats(np, train_x)

    def norm(x):
        return (torch.from_numpy(x.astype(np.float32)).to(dev) / 255.0 - mean) / std

    data = types.SimpleNamespace(x=norm(train_x), y=torch.from_numpy(train_y.astype(np.int64)).to(dev),
                                 test_x=norm(test_x), test_y=torch.from_numpy(test_y.astype(np.int64)).to(dev),
                                 name=os.path.basename(os.path.normpath(args.data)),
                                 gpu=torch.cuda.get_device_name(0).replace(",", " "))
    orders = [torch.tensor(o, dtype=torch.int64).pin_memory()
              for o in inputs.shuffles(len(train_x), args.epochs, args.seed)]
    clock.add("data", time.perf_counter() - t0)
    return data, orders


def csv_list(allowed):
    """An argparse type: a comma-separated list, each item in allowed (or a positive int)."""
    def parse(text):
        items = [s.strip() for s in text.split(",")]
        for s in items:
            ok = s.isdigit() and int(s) > 0 if allowed is int else s in allowed
            if not ok:
                want = "positive integers" if allowed is int else ", ".join(allowed)
                raise argparse.ArgumentTypeError(f"'{s}' in '{text}': expected {want}")
        return [int(s) for s in items] if allowed is int else items
    return parse


def positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}': expected a positive integer")
    return int(text)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="PyTorch peer of mnist_mlp: eager, CUDA graphs, torch.compile.")
    p.add_argument("--data", default="data/mnist", help="folder of the four IDX files")
    p.add_argument("--batches", type=csv_list(int), default=[256, 32], help="batch sizes (default 256,32)")
    p.add_argument("--precisions", type=csv_list(PRECISIONS), default=["fp32"],
                   help="of fp32, tf32, bf16 (default fp32)")
    p.add_argument("--configs", type=csv_list(CONFIGS), default=list(CONFIGS),
                   help="of " + ", ".join(CONFIGS) + " (default all)")
    p.add_argument("--compile-mode", default="max-autotune-no-cudagraphs",
                   help="torch.compile's mode for compile (default max-autotune-no-cudagraphs; "
                        "'default' compiles in a fraction of the time, with untuned matmuls)")
    p.add_argument("--compile-batches", type=csv_list(int), default=None,
                   help="batch sizes at which compile runs (default: every one of --batches); "
                        "each costs a max-autotune compile of about 45 s on an H100")
    p.add_argument("--compile-precisions", type=csv_list(PRECISIONS), default=None,
                   help="precisions in which compile runs (default: every one of --precisions)")
    p.add_argument("--hidden", type=positive, default=1024)
    p.add_argument("--lr", type=float, help="learning rate (default 0.05 x batch / 256, as mnist_mlp)")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--epochs", type=positive, default=10, help="epochs of epoch_graph and compile")
    p.add_argument("--timing-epochs", type=positive, default=3,
                   help="epochs of the slower eager and step_graph (at most --epochs; default 3)")
    p.add_argument("--train-size", type=positive, default=60000)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--csv", help="append one row per configuration, precision and batch size")
    p.add_argument("--epoch-csv", help="append one row per epoch")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"torch_reference.py: skipped, {e.name} is not importable")
        return 0
    if not torch.cuda.is_available():
        print("torch_reference.py: skipped, PyTorch sees no CUDA GPU")
        return 0
    why = fused_sgd_problem(torch)
    if why:
        print(f"torch_reference.py: skipped, {why}")
        return 0
    clock = Clock()
    try:
        data, orders = load_data(torch, np, args, clock)
    except OSError as e:
        sys.exit(f"torch_reference.py: {e} (make data puts MNIST into data/mnist)")
    weights = inputs.he_uniform(np, args.seed, 784, args.hidden)
    print(f"PyTorch {torch.__version__} on {data.gpu}: {data.name}, {data.x.shape[0]} training images, "
          f"lr {args.lr or '0.05 x batch / 256'}, momentum {args.momentum}, fused SGD; "
          f"{args.epochs} epochs (eager and step_graph: {min(args.timing_epochs, args.epochs)})")
    for precision in args.precisions:
        why = precision_problem(torch, precision)
        if why:
            print(f"{precision}: skipped, {why}")
            continue
        set_precision(torch, precision)
        for batch in args.batches:
            print(f"{precision}, batch {batch}:")
            results = [train(torch, args, data, weights, batch, precision, c, orders, clock) for c in args.configs]
            results = [r for r in results if r]
            gc.collect()  # the finished runs' graphs and memory pools
            torch.cuda.empty_cache()
            if results:
                write_rows(args, data, batch, results)
    print(clock.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The PyTorch peer of mnist_mlp: the same 784-H-10 MLP, initialization, data, batch order
and hyperparameters, timed per epoch in eager mode and with each step captured in a CUDA
graph. Appends CSV rows (the columns of common/report.h) and per-epoch rows.

usage: torch_reference.py [--data DIR] [--batches 256,32] [--epochs 10] [--csv FILE]
                          [--epoch-csv FILE] [--modes eager,graphs] [other flags: --help]

What is the same as the C trainers, bit for bit: the He-uniform weights (splitmix64, W1
then W2, row-major 784 x H and H x 10), zero biases, the pixel mean and std of the
training images, the Fisher-Yates shuffle stream (seed + 1, continued from epoch to
epoch), the last partial batch. What differs: PyTorch's kernels (cuBLAS inside), so the
trajectories drift apart by rounding only. An epoch's time covers the order upload, all
steps and reading the epoch's loss back, as in mnist_mlp (the shuffle itself is
precomputed here, which only favours PyTorch).
"""
import argparse
import gzip
import os
import struct
import sys
import time

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
CHAPTER = "07_mnist_mlp"


def splitmix_next(state):
    """One step of common/validate.h's rng_next: returns (new state, output)."""
    state = (state + GOLDEN) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def splitmix_uniform(np, seed, start, count):
    """rng_uniform for draws start .. start + count - 1 of the stream seeded with seed, as
    float32: the i-th state is seed + (i + 1) * golden (mod 2^64), so numpy does it at once."""
    i = np.arange(start + 1, start + count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + i * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(40)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def he_uniform(np, seed, inputs, hidden):
    """reference.h's mlp_init: W1 (inputs x hidden) then W2 (hidden x 10)."""
    n1, n2 = inputs * hidden, hidden * 10
    u = splitmix_uniform(np, seed, 0, n1 + n2)
    # the vectorized stream must equal the sequential one
    state, check = seed, []
    for _ in range(3):
        state, z = splitmix_next(state)
        check.append(np.float32(z >> 40) * np.float32(1.0 / 16777216.0))
    assert list(u[:3]) == check, "vectorized splitmix64 disagrees with the sequential one"
    b1 = np.sqrt(np.float32(6.0) / np.float32(inputs), dtype=np.float32)
    b2 = np.sqrt(np.float32(6.0) / np.float32(hidden), dtype=np.float32)
    w1 = (np.float32(2.0) * u[:n1] - np.float32(1.0)) * b1
    w2 = (np.float32(2.0) * u[n1:] - np.float32(1.0)) * b2
    return w1.reshape(inputs, hidden), w2.reshape(hidden, 10)


def shuffles(n, epochs, seed):
    """The batch orders of epochs 1..epochs: reference.h's mlp_shuffle on one stream."""
    order, state, out = list(range(n)), seed + 1, []
    for _ in range(epochs):
        for i in range(n - 1, 0, -1):
            state, z = splitmix_next(state)
            j = z % (i + 1)
            order[i], order[j] = order[j], order[i]
        out.append(list(order))
    return out


def read_idx(path, ndims):
    """An IDX file (gzip or raw) as (dims, bytes); the C reader is the one that validates."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    magic = struct.unpack(">I", raw[:4])[0]
    if magic != 0x800 | ndims:
        sys.exit(f"torch_reference.py: {path}: bad magic {magic:#010x}")
    dims = struct.unpack(">" + "I" * ndims, raw[4:4 + 4 * ndims])
    return dims, raw[4 + 4 * ndims:]


def load_split(np, folder, prefix):
    def path(kind):
        p = os.path.join(folder, f"{prefix}-{kind}")
        return p + ".gz" if os.path.exists(p + ".gz") else p
    (n, rows, cols), pix = read_idx(path("images-idx3-ubyte"), 3)
    (m,), lab = read_idx(path("labels-idx1-ubyte"), 1)
    assert n == m and rows * cols == 784
    return (np.frombuffer(pix, dtype=np.uint8).reshape(n, 784), np.frombuffer(lab, dtype=np.uint8))


def csv_append(path, header, row):
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a") as f:
        if new:
            f.write(header + "\n")
        f.write(row + "\n")


CSV_HEADER = "gpu,chapter,kernel,role,size,time_ms,value,unit,ceiling,ceiling_value,pct_of_ceiling"
EPOCH_HEADER = "gpu,impl,dataset,batch,epoch,train_loss,test_accuracy,epoch_ms"


class Run:
    """One training run: model, optimizer and the data, resident on the GPU."""

    def __init__(self, torch, np, args, data, batch):
        self.torch, self.args, self.batch = torch, args, batch
        train_x, train_y, test_x, test_y, mean, std = data
        w1, w2 = he_uniform(np, args.seed, 784, args.hidden)
        dev = torch.device("cuda")
        self.model = torch.nn.Sequential(torch.nn.Linear(784, args.hidden), torch.nn.ReLU(),
                                         torch.nn.Linear(args.hidden, 10)).to(dev)
        with torch.no_grad():
            self.model[0].weight.copy_(torch.from_numpy(np.ascontiguousarray(w1.T)))
            self.model[2].weight.copy_(torch.from_numpy(np.ascontiguousarray(w2.T)))
            self.model[0].bias.zero_()
            self.model[2].bias.zero_()
        self.lr = args.lr if args.lr else 0.05 * batch / 256
        self.opt = torch.optim.SGD(self.model.parameters(), lr=self.lr, momentum=args.momentum)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        norm = lambda x: (torch.from_numpy(x.astype(np.float32)).to(dev) / 255.0 - mean) / std
        self.x, self.y = norm(train_x), torch.from_numpy(train_y.astype(np.int64)).to(dev)
        self.test_x, self.test_y = norm(test_x), torch.from_numpy(test_y.astype(np.int64)).to(dev)
        self.n = self.x.shape[0]
        self.loss_sum = torch.zeros((), device=dev)
        self.graphs = {}

    def step(self, idx):
        """One SGD step on rows idx (a device tensor); adds batch * loss to loss_sum."""
        xb, yb = self.x.index_select(0, idx), self.y.index_select(0, idx)
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(xb), yb)
        loss.backward()
        self.opt.step()
        self.loss_sum.add_(loss.detach() * idx.shape[0])

    def capture(self, size):
        """A graph of one step on `size` rows whose indices are copied into a static tensor.
        Warm-up steps on a side stream first (PyTorch's recipe), then the parameters and
        momentum are put back, so the graph starts from the same weights as eager mode."""
        torch = self.torch
        idx = torch.arange(size, device="cuda")
        saved = [p.detach().clone() for p in self.model.parameters()]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.step(idx)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.step(idx)
        with torch.no_grad():
            for p, s in zip(self.model.parameters(), saved):
                p.copy_(s)
            for state in self.opt.state.values():
                if state.get("momentum_buffer") is not None:
                    state["momentum_buffer"].zero_()  # the captured step then computes v = g
        return graph, idx

    def epoch(self, order, graphs):
        torch, b = self.torch, self.batch
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        perm = torch.tensor(order, dtype=torch.int64).pin_memory().to("cuda", non_blocking=True)
        self.loss_sum.zero_()
        for first in range(0, self.n, b):
            idx = perm[first:first + b]
            if graphs:
                graph, static_idx = self.graphs[idx.shape[0]]
                static_idx.copy_(idx)
                graph.replay()
            else:
                self.step(idx)
        loss = self.loss_sum.item() / self.n
        return loss, (time.perf_counter() - t0) * 1e3

    def accuracy(self):
        torch = self.torch
        with torch.no_grad():
            pred = self.model(self.test_x).argmax(dim=1)
            return 100.0 * (pred == self.test_y).sum().item() / self.test_y.shape[0]


def train(torch, np, args, data, batch, mode, orders, gpu, dataset):
    run = Run(torch, np, args, data, batch)
    graphs = mode == "graphs"
    if graphs:
        sizes = {batch, run.n % batch} - {0}
        for size in sorted(sizes, reverse=True):
            run.graphs[size] = run.capture(size)
    times, acc = [], 0.0
    for e, order in enumerate(orders, start=1):
        loss, ms = run.epoch(order, graphs)
        if loss != loss or loss in (float("inf"), float("-inf")):
            sys.exit(f"torch_reference.py: training diverged at epoch {e}")
        acc = run.accuracy()
        times.append(ms)
        print(f"  torch_{mode:<7} epoch {e:3d}  train loss {loss:.4f}  test accuracy {acc:6.2f}%  "
              f"epoch {ms:9.2f} ms", flush=True)
        if args.epoch_csv:
            csv_append(args.epoch_csv, EPOCH_HEADER,
                       f"{gpu},torch_{mode},{dataset},{batch},{e},{loss:.6f},{acc:.2f},{ms:.4f}")
    rest = sorted(times[1:]) or times
    return rest[(len(rest) - 1) // 2], acc


def main():
    parser = argparse.ArgumentParser(description="PyTorch peer of mnist_mlp (eager and CUDA graphs).")
    parser.add_argument("--data", default="data/mnist", help="folder of the four IDX files")
    parser.add_argument("--batches", default="256,32", help="batch sizes, comma-separated")
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--lr", type=float, help="learning rate (default 0.05 x batch / 256, as mnist_mlp)")
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--train-size", type=int, default=60000)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--modes", default="eager,graphs")
    parser.add_argument("--csv", help="append one row per mode and batch size")
    parser.add_argument("--epoch-csv", help="append one row per epoch")
    args = parser.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"torch_reference.py: skipped, {e.name} is not importable")
        return 0
    if not torch.cuda.is_available():
        print("torch_reference.py: skipped, PyTorch sees no CUDA GPU")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32, like the C trainers
    torch.backends.cudnn.allow_tf32 = False
    train_x, train_y = load_split(np, args.data, "train")
    test_x, test_y = load_split(np, args.data, "t10k")
    train_x, train_y = train_x[:args.train_size], train_y[:args.train_size]
    scaled = train_x.astype(np.float64) / 255.0
    mean = float(scaled.mean())
    std = float(np.sqrt(max((scaled * scaled).mean() - mean * mean, 1e-12)))
    mean, std = float(np.float32(mean)), float(np.float32(std))
    data = (train_x, train_y, test_x, test_y, mean, std)
    dataset = os.path.basename(os.path.normpath(args.data))
    gpu = torch.cuda.get_device_name(0).replace(",", " ")
    print(f"PyTorch {torch.__version__} on {gpu}: {dataset}, {len(train_x)} training images, "
          f"lr {args.lr or '0.05 x batch / 256'}, momentum {args.momentum}, {args.epochs} epochs")
    orders = shuffles(len(train_x), args.epochs, args.seed)
    for batch in [int(b) for b in args.batches.split(",")]:
        results = {}
        for mode in args.modes.split(","):
            results[mode] = train(torch, np, args, data, batch, mode, orders, gpu, dataset)
            print(f"torch_{mode} batch {batch}: median epoch {results[mode][0]:.2f} ms, "
                  f"test accuracy {results[mode][1]:.2f}%")
        ceiling = results.get("graphs", next(iter(results.values())))[0]
        for mode, (ms, _) in results.items():
            role = "ceiling"
            pct = 100.0 * ceiling / ms
            row = (f"{gpu},{CHAPTER},torch_{mode},{role},{batch},{ms:.6g},{ms:.6g},ms,"
                   f"torch_graphs,{ceiling:.6g},{pct:.2f}")
            if args.csv:
                csv_append(args.csv, CSV_HEADER, row)
    return 0


if __name__ == "__main__":
    sys.exit(main())

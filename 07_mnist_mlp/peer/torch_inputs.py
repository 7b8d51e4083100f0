"""What torch_reference.py takes from the C trainers, bit for bit: the He-uniform weights
(splitmix64, W1 then W2, row-major 784 x H and H x 10), the pixel mean and std of the
training images, the Fisher-Yates shuffle stream (seed + 1, continued from epoch to
epoch), and the IDX files themselves. Plain Python and numpy: no PyTorch here.
"""
import gzip
import os
import struct
import sys

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


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
    """driver/cpu_reference.h's mlp_init: W1 (inputs x hidden) then W2 (hidden x 10)."""
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
    """The batch orders of epochs 1..epochs: driver/cpu_reference.h's mlp_shuffle on one stream."""
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
    """Images (n x 784 uint8) and labels (n uint8) of one split, NAME.gz before NAME as
    driver/idx.h takes them."""
    def path(kind):
        p = os.path.join(folder, f"{prefix}-{kind}")
        return p + ".gz" if os.path.exists(p + ".gz") else p
    (n, rows, cols), pix = read_idx(path("images-idx3-ubyte"), 3)
    (m,), lab = read_idx(path("labels-idx1-ubyte"), 1)
    assert n == m and rows * cols == 784
    return (np.frombuffer(pix, dtype=np.uint8).reshape(n, 784), np.frombuffer(lab, dtype=np.uint8))


def pixel_stats(np, images):
    """main.cu's pixel_stats: mean and std of the pixels scaled to [0, 1], in double,
    rounded to float32."""
    scaled = images.astype(np.float64) / 255.0
    mean = float(scaled.mean())
    std = float(np.sqrt(max((scaled * scaled).mean() - mean * mean, 1e-12)))
    return float(np.float32(mean)), float(np.float32(std))


def csv_append(path, header, row):
    """Appends a row, writing the header first into a new or empty file."""
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    with open(path, "a") as f:
        if new:
            f.write(header + "\n")
        f.write(row + "\n")

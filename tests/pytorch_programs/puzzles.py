"""The 21 Tensor Puzzles, solved as PyTorch code (one expression each, in our own words).

The rules of the puzzles: no loops and no library functions beyond `torch.arange`,
`torch.where`, broadcasting, indexing (slices, integer and mask tensors), arithmetic,
comparisons and `@`. Each solution may use the earlier ones. test_puzzles.py runs this
file twice, once under PyTorch and once with only its import line changed to
`import minifw as torch`, and checks every answer against a plain-Python loop.
"""

import torch

arange = torch.arange
where = torch.where


def ones(i):
    return where(arange(i) >= 0, 1, 0)


def sum(a):
    return a @ ones(a.shape[0])[:, None]


def outer(a, b):
    return a[:, None] * b[None, :]


def diag(a):
    return a[arange(a.shape[0]), arange(a.shape[0])]


def eye(j):
    return where(arange(j)[:, None] == arange(j)[None, :], 1, 0)


def triu(j):
    return where(arange(j)[:, None] <= arange(j)[None, :], 1, 0)


def cumsum(a):
    return a @ triu(a.shape[0])


def diff(a, i):
    return where(arange(i) > 0, a - a[arange(i) - 1], a)


def vstack(a, b):
    return where(arange(2)[:, None] == 0, a[None, :], b[None, :])


def roll(a, i):
    return a[(arange(i) + 1) % i]


def flip(a, i):
    return a[i - 1 - arange(i)]


def compress(g, v, i):
    slot = cumsum(where(g, 1, 0)) - 1
    return v @ where(g[:, None] & (slot[:, None] == arange(i)[None, :]), 1, 0)


def pad_to(a, i, j):
    return a @ where(arange(i)[:, None] == arange(j)[None, :], 1, 0)


def sequence_mask(values, length):
    return where(arange(values.shape[1])[None, :] < length[:, None], values, 0)


def bincount(a, j):
    return ones(a.shape[0]) @ eye(j)[a]


def scatter_add(values, link, j):
    return values @ eye(j)[link]


def flatten(a, i, j):
    return a[arange(i * j) // j, arange(i * j) % j]


def linspace(i, j, n):
    return i + (j - i) * arange(n) / (n - 1 if n > 1 else 1)


def heaviside(a, b):
    return where(a == 0, b, where(a > 0, 1, 0))


def repeat(a, d):
    return where(arange(d)[:, None] >= 0, a[None, :], 0)


def bucketize(v, boundaries):
    return where(v[:, None] >= boundaries[None, :], 1, 0) @ ones(boundaries.shape[0])

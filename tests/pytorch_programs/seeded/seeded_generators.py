# Seeded random generators: a Generator repeats itself, ignores the global seed, saves
# and restores its state, and drives random_split, samplers, init and shuffling. Only
# what does not depend on the library's random stream is printed.
import torch
from torch.utils.data import DataLoader, RandomSampler, TensorDataset

g = torch.Generator()
print("fresh generator seed", g.initial_seed())
g.manual_seed(2024)
print("seed", g.initial_seed())
first = torch.rand(2, 3, generator=g)
g.manual_seed(2024)
torch.manual_seed(7)  # the global seed does not touch g
print("repeats", int(torch.equal(first, torch.rand(2, 3, generator=g))))
print("shape", list(first.shape), "in [0, 1)", int(bool(((first >= 0) & (first < 1)).all())))

state = g.get_state()
ahead = torch.randn(5, generator=g)
g.set_state(state)
print("state restored", int(torch.equal(ahead, torch.randn(5, generator=g))))

perm = torch.randperm(10, generator=g)
print("permutation sum", perm.sum().item(), "sorted", perm.sort().values.tolist())
ints = torch.randint(3, 9, (200,), generator=g)
print("randint range", ints.min().item() >= 3, ints.max().item() < 9, ints.dtype == torch.int64)

torch.manual_seed(1234)
print("global seed", torch.initial_seed())
x = torch.ones(8, 8)
dropped = torch.nn.functional.dropout(x, p=0.5)
torch.manual_seed(1234)
print("dropout repeats", int(torch.equal(dropped, torch.nn.functional.dropout(x, p=0.5))))
print("kept values", sorted(set(dropped.flatten().tolist())))

w = torch.empty(4, 5)
torch.nn.init.uniform_(w, -0.1, 0.1, generator=torch.Generator().manual_seed(3))
w2 = torch.empty(4, 5)
torch.nn.init.uniform_(w2, -0.1, 0.1, generator=torch.Generator().manual_seed(3))
print("init repeats", int(torch.equal(w, w2)), "within bounds", int(bool(w.abs().max() <= 0.1)))

data = TensorDataset(torch.arange(12.0))


def order(seed):
    loader = DataLoader(
        data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(seed)
    )
    return [v for (batch,) in loader for v in batch.tolist()]


print(
    "shuffle repeats",
    int(order(5) == order(5)),
    "a permutation",
    sorted(order(6)) == list(range(12)),
)
sampler = RandomSampler(range(6), num_samples=15, generator=torch.Generator().manual_seed(0))
print("sampler draws", len(list(sampler)), "distinct", len(set(sampler)))

before = torch.get_num_threads()
torch.set_num_threads(1)
print("threads", torch.get_num_threads())
torch.set_num_threads(before)
print(f"shape in an f-string {torch.zeros(2, 3).shape}")

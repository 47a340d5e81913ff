# A map-style dataset split at random, then read by a DataLoader with worker processes,
# a seeded shuffle, a weighted sampler and a batch sampler. Only what the random order
# cannot change is printed: sizes, counts and sums over a whole pass.
import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    SequentialSampler,
    WeightedRandomSampler,
    get_worker_info,
    random_split,
)


class Squares(Dataset):
    """Item i: (i, i squared, the id of the worker that read it)."""

    def __len__(self):
        return 24

    def __getitem__(self, i):
        info = get_worker_info()
        worker = -1 if info is None else info.id
        return torch.tensor([float(i)]), torch.tensor(float(i * i)), worker


def seed_worker(worker_id):
    torch.manual_seed(torch.initial_seed() + worker_id)


if __name__ == "__main__":
    split_gen = torch.Generator().manual_seed(0)
    train, test = random_split(Squares(), [0.75, 0.25], generator=split_gen)
    print("split sizes", len(train), len(test))
    print("disjoint", len(set(train.indices) | set(test.indices)))

    loader = DataLoader(
        train,
        batch_size=5,
        shuffle=True,
        num_workers=2,
        worker_init_fn=seed_worker,
        generator=torch.Generator().manual_seed(1),
        persistent_workers=True,
        timeout=60,
    )
    print("batches per epoch", len(loader))
    for epoch in range(2):
        seen, total, workers = 0, 0.0, set()
        expected = sum(train[i][1].item() for i in range(len(train)))
        for x, y, worker in loader:
            seen += x.shape[0]
            total += y.sum().item()
            workers |= set(worker.tolist())
        print("epoch", epoch, "items", seen, "every square once", int(total == expected))
        print("workers that read", len(workers))
    del loader  # the last reference: its persistent workers stop

    again = DataLoader(
        train, batch_size=5, shuffle=True, generator=torch.Generator().manual_seed(1)
    )
    with_workers = DataLoader(
        train,
        batch_size=5,
        shuffle=True,
        num_workers=2,
        timeout=60,
        generator=torch.Generator().manual_seed(1),
    )
    same = all(torch.equal(a[0], b[0]) for a, b in zip(again, with_workers, strict=True))
    print("same order with and without workers", int(same))

    weights = [0.0 if i % 3 == 0 else 1.0 for i in range(24)]
    sampler = WeightedRandomSampler(weights, num_samples=30, replacement=True)
    drawn = list(sampler)
    print("weighted draws", len(drawn), "of a zero weight", sum(1 for i in drawn if i % 3 == 0))

    batches = BatchSampler(SequentialSampler(range(10)), batch_size=4, drop_last=False)
    by_batch = DataLoader(Squares(), batch_sampler=batches, num_workers=2, timeout=60)
    for x, y, _ in by_batch:
        print("batch", x.flatten().tolist(), y.tolist())

    test_loader = DataLoader(test, batch_size=None)
    all_items = sum(y.item() for _, y, _ in test_loader) + sum(y.item() for _, y, _ in train)
    print("sum of all squares", all_items)

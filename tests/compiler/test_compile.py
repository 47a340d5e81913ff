"""mf.compile: captured, fused replays agree with eager (values and gradients), or fall back."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minifw as mf
from minifw.backends import cuda_available
from minifw.compiler.capture import host_values
from minifw.compiler.compile import CompiledFunction, CompileWarning
from minifw.compiler.compile import compile as mf_compile
from minifw.core import hooks
from tests.strategies import assert_close

pytestmark = pytest.mark.extra  # given code (profiler, mf.compile): no course task

UNARY = {
    "neg": lambda v: -v,
    "exp": lambda v: v.exp(),
    "sigmoid": lambda v: v.sigmoid(),
    "relu": lambda v: v.relu(),
    "tanh": lambda v: v.tanh(),
    "abs": lambda v: v.abs(),
}
BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}


@st.composite
def broadcast_pairs(draw):
    """Two shapes that broadcast together (either one may be the smaller)."""
    sides = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    x = tuple(s if draw(st.booleans()) else 1 for s in sides)
    keep = draw(st.integers(1, len(sides)))
    y = tuple(s if draw(st.booleans()) else 1 for s in sides[-keep:])
    return x, y


chains = st.lists(
    st.one_of(
        st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY))),
        st.tuples(
            st.just("binary"), st.sampled_from(sorted(BINARY)), st.sampled_from(["x", "y", "v"])
        ),
    ),
    min_size=1,
    max_size=5,
)


def make_chain(chain):
    def f(x, y):
        v = x
        for step in chain:
            if step[0] == "unary":
                v = UNARY[step[1]](v)
            else:
                other = {"x": x, "y": y, "v": v}[step[2]]
                v = BINARY[step[1]](v, other)
        return v

    return f


def values(shape, seed, requires_grad=False):
    data = np.random.default_rng(seed).uniform(-2.0, 2.0, size=shape)
    return mf.tensor(data, requires_grad=requires_grad)


# Compiled and eager runs agree to the last bits, or nearly.
TIGHT = {"rtol": 1e-12, "atol": 1e-12}


@settings(max_examples=10)
@given(shapes=broadcast_pairs(), chain=chains, grad=st.booleans(), seed=st.integers(0, 10**6))
def test_fused_chains_match_eager(shapes, chain, grad, seed):
    f = make_chain(chain)
    compiled = mf_compile(f)
    compiled(values(shapes[0], seed, grad), values(shapes[1], seed + 1, grad))
    x, y = values(shapes[0], seed + 2, grad), values(shapes[1], seed + 3, grad)
    ex, ey = values(shapes[0], seed + 2, grad), values(shapes[1], seed + 3, grad)
    got, want = compiled(x, y), f(ex, ey)
    assert compiled.stats == {"captures": 1, "replays": 1, "eager_calls": 0, "fallbacks": 0}
    assert_close(got, want, **TIGHT)
    if grad:
        got.sum().backward()
        want.sum().backward()
        for a, b in ((x, ex), (y, ey)):
            if b.grad is None:
                assert a.grad is None
            else:
                assert_close(a.grad, b.grad, **TIGHT)
    (plan,) = compiled.plans()
    assert len(plan.program) <= len(plan.graph.steps)


def mlp_loss(x, target, w1, b1, w2, b2):
    hidden = (x @ w1 + b1).relu()
    logits = hidden @ w2 + b2
    return ((logits - target) ** 2).mean()


def test_mlp_forward_and_backward_match_eager_across_sgd_steps():
    rng = np.random.default_rng(0)
    params = [
        mf.tensor(rng.normal(size=shape) * 0.5, requires_grad=True)
        for shape in [(6, 8), (8,), (8, 3), (3,)]
    ]
    twins = [mf.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]
    compiled = mf_compile(mlp_loss)
    for step in range(3):
        x = mf.tensor(rng.normal(size=(5, 6)))
        target = mf.tensor(rng.normal(size=(5, 3)))
        got, want = compiled(x, target, *params), mlp_loss(x, target, *twins)
        assert_close(got, want, **TIGHT)
        assert got.grad_fn.name() == want.grad_fn.name() == "DivBackward"
        got.backward()
        want.backward()
        with mf.no_grad():
            for p, q in zip(params, twins, strict=True):
                assert_close(p.grad, q.grad, **TIGHT)
                p -= 0.1 * p.grad
                q -= 0.1 * q.grad
                p.grad = q.grad = None
        assert compiled.stats["replays"] == step
    (plan,) = compiled.plans()
    assert [k.name for k in plan.fused] == ["fused[add,relu]", "fused[add,sub,pow]"]


def test_a_whole_training_step_with_backward_is_captured():
    rng = np.random.default_rng(1)
    params = [
        mf.tensor(rng.normal(size=shape) * 0.5, requires_grad=True)
        for shape in [(6, 8), (8,), (8, 3), (3,)]
    ]
    twins = [mf.tensor(p.detach().numpy().copy(), requires_grad=True) for p in params]

    def forward_backward(x, target, weights):
        loss = mlp_loss(x, target, *weights)
        loss.backward()
        return loss

    step = mf_compile(lambda x, target: forward_backward(x, target, params))
    for _ in range(3):
        x, target = mf.tensor(rng.normal(size=(5, 6))), mf.tensor(rng.normal(size=(5, 3)))
        got, want = step(x, target), forward_backward(x, target, twins)
        assert_close(got, want, **TIGHT)
        with mf.no_grad():
            for p, q in zip(params, twins, strict=True):
                assert_close(p.grad, q.grad, **TIGHT)
                p -= 0.1 * p.grad
                q -= 0.1 * q.grad
                p.grad = q.grad = None
    assert step.stats == {"captures": 1, "replays": 2, "eager_calls": 0, "fallbacks": 0}
    assert any("relu_back" in line for line in step.explain().splitlines())
    for _ in range(2):  # grads already set: that call runs eagerly, and they accumulate
        step(x, target)
        forward_backward(x, target, twins)
    for p, q in zip(params, twins, strict=True):
        assert_close(p.grad, q.grad, **TIGHT)
    assert step.stats["eager_calls"] == 1 and step.stats["replays"] == 3


def test_closed_over_parameters_are_read_at_every_call():
    w = mf.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)

    @mf_compile
    def f(x):
        return (x @ w).tanh()

    x = mf.tensor([[0.1, 0.2]])
    f(x)
    with mf.no_grad():
        w.mul_(0.5)  # an optimizer's in-place update
    assert_close(f(x), (x @ w).tanh(), **TIGHT)
    w.data = mf.tensor([[-1.0, 0.0], [0.0, 1.0]])  # a new storage for the parameter
    assert_close(f(x), (x @ w).tanh(), **TIGHT)
    f(x).sum().backward()
    expected = mf.tensor(w.detach().numpy().copy(), requires_grad=True)
    (x @ expected).tanh().sum().backward()
    assert_close(w.grad, expected.grad, **TIGHT)
    assert f.stats["captures"] == 1 and f.stats["replays"] == 3


def test_new_signatures_capture_again():
    @mf_compile
    def f(x, scale):
        return (x * scale).exp().sum(dim=0)

    for shape, scale in [((4, 3), 2.0), ((6, 3), 2.0), ((4, 3), 2.0), ((4, 3), 0.5)]:
        x = values(shape, shape[0])
        assert_close(f(x, scale), (x * scale).exp().sum(dim=0), **TIGHT)
    assert f.stats["captures"] == 3 and f.stats["replays"] == 1
    x32 = values((4, 3), 4).float()
    got = f(x32, 2.0)
    assert got.dtype == mf.float32
    assert f.stats["captures"] == 4
    leaf = values((4, 3), 4, requires_grad=True)
    f(leaf, 2.0)
    assert f(leaf, 2.0).requires_grad
    with mf.no_grad():
        assert f(leaf, 2.0).grad_fn is None
    assert f.stats["captures"] == 6
    assert len(f.plans()) == 6


def test_data_dependent_control_flow_falls_back_to_eager_with_a_warning():
    @mf_compile
    def f(x):
        if x.sum().item() > 0:
            return x * 2.0
        return x * 3.0

    with pytest.warns(CompileWarning, match="reads tensor values on the host"):
        first = f(mf.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = f(-mf.ones(3))
    assert first.tolist() == [2.0, 2.0, 2.0]
    assert second.tolist() == [-3.0, -3.0, -3.0]
    assert f.stats["fallbacks"] == 1 and f.stats["eager_calls"] == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (lambda x: x * mf.rand(*x.shape), "random numbers"),
        (lambda x: mf.tensor(np.zeros((2, 3))).copy_(x) * 2.0, "writes in place"),
        (lambda x: x.to(mf.float32) * 2.0, "on the host"),
        (lambda x: print(x) or x + 1.0, "on the host"),
    ],
)
def test_functions_that_cannot_be_replayed_run_eagerly(body, reason, capsys):
    f = mf_compile(body)
    x = values((2, 3), 7)
    with pytest.warns(CompileWarning, match=reason):
        f(x)
    for seed in (8, 9):
        y = values((2, 3), seed)
        got = f(y)
        if reason != "random numbers":
            assert_close(got, body(y), **TIGHT)
    assert f.stats["fallbacks"] == 1 and f.stats["replays"] == 0


def test_results_keep_their_structure_and_constants_are_fresh():
    @mf_compile
    def f(x):
        return {"double": x * 2.0, "pair": (x, mf.zeros(2)), "n": 3}

    x = values((2,), 1)
    f(x)
    out = f(x)
    assert out["n"] == 3
    assert out["pair"][0] is x
    assert_close(out["double"], x * 2.0, **TIGHT)
    out["pair"][1].add_(5.0)
    assert f(x)["pair"][1].tolist() == [0.0, 0.0]


def test_eager_mode_and_decorator_forms():
    def f(x):
        return x.exp() + 1.0

    eager = mf_compile(f, mode="eager")
    replay = mf_compile(mode="replay")(f)
    assert isinstance(eager, CompiledFunction) and eager.__name__ == "f"
    x = values((3,), 2)
    for _ in range(2):
        assert_close(eager(x), f(x), **TIGHT)
        assert_close(replay(x), f(x), **TIGHT)
    assert eager.stats["captures"] == 0 and eager.stats["eager_calls"] == 2
    assert replay.stats == {"captures": 1, "replays": 1, "eager_calls": 0, "fallbacks": 0}
    assert replay.plans()[0].fused == []
    with pytest.raises(ValueError, match="mode"):
        mf_compile(f, mode="fast")
    assert hooks.anyone_listening[0] is False


def test_methods_compile_with_self_guarded_by_identity():
    class Scale:
        def __init__(self, factor):
            self.w = mf.tensor([factor, factor], requires_grad=True)

        @mf_compile
        def forward(self, x):
            return (x * self.w).sigmoid()

    a, b = Scale(2.0), Scale(-1.0)
    x = values((3, 2), 4)
    for _ in range(2):
        assert_close(a.forward(x), (x * a.w).sigmoid(), **TIGHT)
        assert_close(b.forward(x), (x * b.w).sigmoid(), **TIGHT)
    stats = Scale.forward.stats
    assert stats["captures"] == 2 and stats["replays"] == 2


def test_unsupported_arguments_run_eagerly_once_warned():
    f = mf_compile(lambda x, arr: x + float(arr.sum()))
    with pytest.warns(CompileWarning, match="ndarray"):
        first = f(mf.ones(2), np.ones(3))
    assert first.tolist() == [4.0, 4.0]
    assert f(mf.ones(2), np.zeros(3)).tolist() == [1.0, 1.0]


@pytest.mark.skipif(
    not cuda_available(),
    reason="cuda backend: no CUDA GPU here and NUMBA_ENABLE_CUDASIM=1 is not set",
)
def test_cuda_backend_replays_without_fusion():
    x = mf.tensor([[1.0, -2.0], [0.5, 3.0]], backend="cuda", requires_grad=True)
    f = mf_compile(lambda t: (t * 2.0).relu().sum())
    f(x)
    loss = f(x)
    loss.backward()
    assert loss.item() == pytest.approx(9.0)
    assert x.grad.cpu().tolist() == [[2.0, 0.0], [2.0, 2.0]]
    assert f.plans()[0].fused == [] and f.stats["replays"] == 1


def compare_in_place_writes(f, shape, seed):
    """Call f compiled on p and f itself on a twin q, with the same new g, three times.

    Each call must return the same values, leave p equal to q and bump p's version as
    often as q's. Returns the compiled f.
    """
    rng = np.random.default_rng(seed)
    start = rng.normal(size=shape)
    p, q = mf.tensor(start), mf.tensor(start.copy())
    compiled = mf_compile(f)
    for _ in range(3):
        g = mf.tensor(rng.normal(size=shape))
        for mine, theirs in zip(compiled(p, g), f(q, g), strict=True):
            assert_close(mine, theirs, **TIGHT)
        assert_close(p, q, **TIGHT)
        assert p._version == q._version > 0
    return compiled


def test_an_in_place_zip_replays_after_the_ops_that_read_the_old_values():
    from minifw.optim._fused import sub_scaled

    def update(p, g):
        before = (p * 3.0).exp()  # reads p before it changes
        sub_scaled(p, g, 0.5)  # grad * lr, then p - that written into p ("zip_into")
        return before, p * 2.0

    compiled = compare_in_place_writes(update, (3, 4), seed=5)
    assert compiled.stats["replays"] == 2
    (plan,) = compiled.plans()
    # the zip_into replays as one fused kernel writing p's cells, no copy into p
    assert "fused[mul,sub] over [3, 4], writes 1 (1 in place)" in plan.describe()
    assert "copy ->" not in plan.describe()


def test_leaf_gradients_kept_without_a_copy_are_replayed():
    def f(x, w):
        loss = ((x * w).exp() * 0.5).sum()
        loss.backward()  # x.grad and w.grad are the backward's own (fused) outputs
        return loss

    compiled = mf_compile(f)
    rng = np.random.default_rng(6)
    for _ in range(3):
        values = rng.normal(size=(2, 3, 4))
        ours = [mf.tensor(v, requires_grad=True) for v in values]
        eager = [mf.tensor(v, requires_grad=True) for v in values]
        assert_close(compiled(*ours), f(*eager), **TIGHT)
        for mine, theirs in zip(ours, eager, strict=True):
            assert_close(mine.grad, theirs.grad, **TIGHT)
        assert ours[0].grad._data.base is not ours[1].grad._data.base
    assert compiled.stats["replays"] == 2 and compiled.stats["eager_calls"] == 0


def sgd_twins(seed):
    """Two sets of the same MLP parameters (6-8-3), for a compiled and an eager run."""
    rng = np.random.default_rng(seed)
    shapes = [(6, 8), (8,), (8, 3), (3,)]
    start = [rng.normal(size=shape) * 0.5 for shape in shapes]
    return [[mf.tensor(v.copy(), requires_grad=True) for v in start] for _ in range(2)]


def batches(seed, count):
    rng = np.random.default_rng(seed)
    return [(mf.tensor(rng.normal(size=(5, 6))), mf.tensor(rng.normal(size=(5, 3))))
            for _ in range(count)]  # fmt: skip


def test_a_training_step_with_its_update_replays_whole():
    ours, theirs = sgd_twins(7)

    def train_step(x, target, params):
        loss = mlp_loss(x, target, *params)
        loss.backward()
        with mf.no_grad():
            for p in params:
                p -= 0.1 * p.grad
                p.grad = None
        return loss

    step = mf_compile(lambda x, target: train_step(x, target, ours))
    for x, target in batches(8, 4):
        versions = [p._version for p in ours]
        assert_close(step(x, target), train_step(x, target, theirs), **TIGHT)
        for p, q, version in zip(ours, theirs, versions, strict=True):
            assert_close(p, q, **TIGHT)
            assert p.grad is None and p._version == version + 1
    assert step.stats == {"captures": 1, "replays": 3, "eager_calls": 0, "fallbacks": 0}
    (plan,) = step.plans()
    assert plan.describe().count("(1 in place)") == 4 and "copy ->" not in plan.describe()


def test_an_optimizer_step_replays_until_its_learning_rate_changes():
    ours, theirs = sgd_twins(9)
    optimizers = [mf.optim.SGD(ours, lr=0.1), mf.optim.SGD(theirs, lr=0.1)]

    def train_step(x, target, params, optimizer):
        optimizer.zero_grad()
        loss = mlp_loss(x, target, *params)
        loss.backward()
        optimizer.step()
        return loss

    step = mf_compile(lambda x, target: train_step(x, target, ours, optimizers[0]))
    for i, (x, target) in enumerate(batches(10, 6)):
        if i == 3:  # a scheduler's step: the replay must not keep the old rate
            for optimizer in optimizers:
                optimizer.param_groups[0]["lr"] = 0.02
            with pytest.warns(CompileWarning, match="captures again: an optimizer's settings"):
                got = step(x, target)
        else:
            got = step(x, target)
        assert_close(got, train_step(x, target, theirs, optimizers[1]), **TIGHT)
        for p, q in zip(ours, theirs, strict=True):
            assert_close(p, q, **TIGHT)
            assert_close(p.grad, q.grad, **TIGHT)  # zero_grad comes first: the grads stay set
    assert step.stats == {"captures": 2, "replays": 4, "eager_calls": 0, "fallbacks": 0}


@pytest.mark.parametrize(
    "make",
    [lambda ps: mf.optim.SGD(ps, lr=0.1, momentum=0.9), lambda ps: mf.optim.RMSprop(ps)],
)
def test_optimizers_that_replace_their_state_run_eagerly(make):
    ours, theirs = sgd_twins(11)
    optimizers = [make(ours), make(theirs)]

    def train_step(x, target, params, optimizer):
        optimizer.zero_grad()
        mlp_loss(x, target, *params).backward()
        optimizer.step()

    step = mf_compile(lambda x, target: train_step(x, target, ours, optimizers[0]))
    with pytest.warns(CompileWarning, match="per-parameter state"):
        for x, target in batches(12, 3):
            step(x, target)
            train_step(x, target, theirs, optimizers[1])
    for p, q in zip(ours, theirs, strict=True):
        assert_close(p, q, **TIGHT)
    assert step.stats["fallbacks"] == 1 and step.stats["replays"] == 0


def test_writes_into_parameters_without_their_backward_run_eagerly():
    w = mf.tensor([1.0, 2.0], requires_grad=True)

    def shrink(x):
        with mf.no_grad():
            w.mul_(0.5)  # no backward in f made w's gradient: not an update step
        return x * w

    f = mf_compile(shrink)
    with pytest.warns(CompileWarning, match="writes in place"):
        f(mf.ones(2))
    assert f(mf.ones(2)).tolist() == [0.25, 0.5]
    assert f.stats["fallbacks"] == 1


def test_in_place_writes_that_cannot_be_fused_into_their_target_still_copy():
    def f(p, g):
        with mf.no_grad():
            p.sub_(p.t() * g)  # reads p transposed: p's cells are read after written
            y = p * 2.0 - g
            p.copy_(y)  # y is read again below: it stays a buffer of its own
        return y * 3.0, p + 1.0

    compiled = compare_in_place_writes(f, (3, 3), seed=13)
    (plan,) = compiled.plans()
    assert plan.describe().count("copy ->") == 2 and compiled.stats["replays"] == 2


def _classifier_step(seed: int, reduction: str, loss_fn: str) -> tuple[object, object]:
    """(model, step): an MLP classifier and its SGD step with int64 class labels."""
    mf.manual_seed(seed)
    model = mf.nn.Sequential(mf.nn.Linear(6, 8), mf.nn.ReLU(), mf.nn.Linear(8, 4))
    opt = mf.optim.SGD(model.parameters(), lr=0.1)
    functional = mf.nn.functional

    def step(x, labels):
        opt.zero_grad()
        logits = model(x)
        if loss_fn == "nll_loss":
            loss = functional.nll_loss(
                functional.log_softmax(logits, 1), labels, reduction=reduction
            )
        else:
            loss = functional.cross_entropy(logits, labels, reduction=reduction)
        loss.backward()
        opt.step()
        return loss

    return model, step


@pytest.mark.parametrize("loss_fn", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_a_classifier_step_with_integer_labels_is_captured(loss_fn, reduction):
    # cross_entropy runs the one-kernel fast path (fast_paths/fused_loss.py) eagerly and
    # in the replay alike: both losses equal the eager ones exactly.
    eager_model, eager_step = _classifier_step(3, reduction, loss_fn)
    model, step = _classifier_step(3, reduction, loss_fn)
    compiled = mf_compile(step)
    rng = np.random.default_rng(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # no fallback to eager
        for _ in range(4):
            x, labels = mf.tensor(rng.random((5, 6))), mf.tensor(rng.integers(-1, 4, 5))
            labels[labels == -1] = -100  # PyTorch's default ignore_index: skipped
            got, want = compiled(x, labels).item(), eager_step(x, labels).item()
            assert got == want
    for ours, theirs in zip(model.parameters(), eager_model.parameters(), strict=True):
        np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert compiled.stats["replays"] == 3 and compiled.stats["fallbacks"] == 0
    if loss_fn == "cross_entropy":  # one captured step each way, no composed ops
        program = compiled.explain()
        assert "fused[cross_entropy] ->" in program, program
        assert "fused[cross_entropy_backward] ->" in program, program
        assert "log" not in program and "reduce_max" not in program, program


def test_a_captured_cross_entropy_keeps_what_a_later_backward_needs():
    # Only the forward is compiled: each replay rebuilds the loss's autograd node over
    # its own buffers (the labels and the forward's stats are tensors, not host copies),
    # so a backward after the call gets this call's gradient.
    rng = np.random.default_rng(11)

    def loss_of(x, labels):
        return mf.nn.functional.cross_entropy(x, labels, reduction="sum")

    compiled = mf_compile(loss_of)
    for _ in range(3):
        logits, labels = rng.standard_normal((6, 5)), rng.integers(0, 5, 6)
        grads = []
        for run in (compiled, loss_of):
            x = mf.tensor(logits, requires_grad=True)
            loss = run(x, mf.tensor(labels))
            loss.backward()
            grads.append((loss.item(), x.grad.numpy()))
        assert grads[0][0] == grads[1][0]
        np.testing.assert_array_equal(grads[0][1], grads[1][1])
    assert compiled.stats["replays"] == 2 and compiled.stats["fallbacks"] == 0


def test_host_values_reads_the_cells_of_any_view():
    # What a replay's checks read: views with an offset, strided or transposed.
    base = mf.tensor(np.arange(12))
    for view in (base[1:], base[1::2], base[3::3], base[2:8].view(2, 3).T):
        values = host_values(view.backend, view._data)
        np.testing.assert_array_equal(values, view.numpy())
        assert not values.flags.writeable


def test_a_replay_checks_strided_labels_it_is_given():
    _, step = _classifier_step(5, "mean", "cross_entropy")
    compiled = mf_compile(step)
    x = mf.tensor(np.random.default_rng(5).random((3, 6)))
    for _ in range(2):  # a capture, then a replay, on every other label of a longer tensor
        compiled(x, mf.tensor([9, 0, 9, 1, 9, 2])[1::2])
    assert compiled.stats["replays"] == 1
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        compiled(x, mf.tensor([0, 1, 2, 7, 3, 0])[1::2])


def test_a_replay_refuses_negative_labels_and_skips_ignored_ones():
    # Labels read through a dense view with an offset; a negative label is out of
    # bounds (the check reads them as unsigned), PyTorch's ignore_index is not.
    _, step = _classifier_step(4, "mean", "cross_entropy")
    compiled = mf_compile(step)
    x = mf.tensor(np.random.default_rng(6).random((3, 6)))
    for _ in range(2):  # a capture, then a replay
        compiled(x, mf.tensor([5, 0, 1, 2])[1:])
    compiled(x, mf.tensor([5, -100, 1, 2])[1:])
    assert compiled.stats["replays"] == 2
    with pytest.raises(IndexError, match=r"Target -1 is out of bounds"):
        compiled(x, mf.tensor([5, 0, -1, 2])[1:])


def test_a_replay_checks_its_labels_as_eager_code_does():
    _, step = _classifier_step(4, "mean", "cross_entropy")
    compiled = mf_compile(step)
    x = mf.tensor(np.random.default_rng(4).random((3, 6)))
    for _ in range(2):  # a capture, then a replay
        compiled(x, mf.tensor([0, 1, 2]))
    assert compiled.stats["replays"] == 1
    with pytest.raises(IndexError, match=r"Target 4 is out of bounds \(expected 0 <= target < 4"):
        compiled(x, mf.tensor([0, 4, 2]))

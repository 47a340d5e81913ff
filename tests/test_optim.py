"""optim.SGD and optim.Adam step for step against torch.optim, and their state dicts."""

from __future__ import annotations

import numpy as np
import pytest

import minifw as mf
from minifw import nn, optim
from tests.strategies import assert_close

torch = pytest.importorskip("torch", reason="PyTorch, the oracle of these tests, is missing")
pytestmark = pytest.mark.extra  # given code: no task teaches it

CONFIGS = [
    (optim.SGD, torch.optim.SGD, {"lr": 0.1}),
    (optim.SGD, torch.optim.SGD, {"lr": 0.05, "momentum": 0.9}),
    (optim.SGD, torch.optim.SGD, {"lr": 0.05, "momentum": 0.9, "dampening": 0.3}),
    (optim.SGD, torch.optim.SGD, {"lr": 0.05, "momentum": 0.8, "nesterov": True,
                                  "weight_decay": 0.01}),
    (optim.Adam, torch.optim.Adam, {"lr": 0.01}),
    (optim.Adam, torch.optim.Adam, {"lr": 0.02, "betas": (0.8, 0.9), "eps": 1e-6,
                                    "weight_decay": 0.1}),
]  # fmt: skip


def loss_of(lib, params, step):
    """A small non-quadratic loss whose gradient changes from step to step."""
    w, b = params
    x = lib.tensor(np.random.default_rng(step).standard_normal((5, 3)))
    return ((x @ w + b).tanh() ** 2).sum() + (w * w).sum() * 0.1


@pytest.mark.parametrize("ours,theirs,options", CONFIGS)
def test_steps_match_torch(ours, theirs, options):
    start = [np.random.default_rng(9).standard_normal((3, 2)), np.array([0.1, -0.2])]
    mine = [mf.tensor(a, requires_grad=True) for a in start]
    ref = [torch.tensor(a, requires_grad=True) for a in start]
    opt_mine, opt_ref = ours(mine, **options), theirs(ref, **options)
    for step in range(6):
        opt_mine.zero_grad()
        opt_ref.zero_grad()
        loss_of(mf, mine, step).backward()
        loss_of(torch, ref, step).backward()
        opt_mine.step()
        opt_ref.step()
    for a, b in zip(mine, ref, strict=True):
        assert_close(a, b, rtol=1e-10, atol=1e-12)
        assert a.is_leaf and a.requires_grad


def test_param_groups_have_their_own_hyperparameters():
    model = nn.Linear(3, 2)
    opt = optim.SGD(
        [{"params": [model.weight]}, {"params": [model.bias], "lr": 0.5}], lr=0.1, momentum=0.9
    )
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["momentum"] == 0.9
    before = model.bias.value.tolist()
    model(mf.ones(1, 3)).sum().backward()
    opt.step()
    assert_close(model.bias.value, np.array(before) - 0.5)
    opt.param_groups[0]["lr"] = 0.0
    assert "Parameter Group 1" in repr(opt) and "lr: 0.5" in repr(opt)


def test_zero_grad_set_to_none_or_zeros_and_parameters_follow_module_to():
    model = nn.Linear(2, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    model(mf.ones(1, 2)).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert model.weight.value.grad.tolist() == [[0.0, 0.0]]
    opt.zero_grad()
    assert model.weight.value.grad is None
    model.float()
    model(mf.ones(1, 2, dtype=mf.float32)).sum().backward()
    opt.step()  # the optimizer holds Parameters, so it updates the float32 values
    assert model.weight.value.dtype is mf.float32 and model.weight.value.grad is not None


def test_invalid_arguments_raise():
    w = mf.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SGD([w], lr=-1.0)
    with pytest.raises(ValueError, match="Invalid beta"):
        optim.Adam([w], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([w * 2.0], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(TypeError, match="Tensors or Parameters"):
        optim.SGD([1.0], lr=0.1)
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([w], lr=0.1, nesterov=True)


@pytest.mark.parametrize("make", [lambda p: optim.SGD(p, lr=0.05, momentum=0.9),
                                  lambda p: optim.Adam(p, lr=0.01)])  # fmt: skip
def test_state_dict_resumes_exactly(make):
    def run(params, opt, steps):
        for step in steps:
            opt.zero_grad()
            loss_of(mf, params, step).backward()
            opt.step()

    start = [np.random.default_rng(1).standard_normal((3, 2)), np.zeros(2)]
    straight = [mf.tensor(a, requires_grad=True) for a in start]
    run(straight, make(straight), range(6))

    first = [mf.tensor(a, requires_grad=True) for a in start]
    opt = make(first)
    run(first, opt, range(3))
    saved, values = opt.state_dict(), [p.detach().numpy().copy() for p in first]
    assert sorted(saved["state"]) == [0, 1] and saved["param_groups"][0]["params"] == [0, 1]
    run(first, opt, range(100, 102))  # later steps must not change the saved copy

    def resume(load):
        params = [mf.tensor(v, requires_grad=True) for v in values]
        opt2 = make(params)
        if load:
            opt2.load_state_dict(saved)
        run(params, opt2, range(3, 6))
        return params, opt2

    resumed, opt2 = resume(load=True)
    for a, b in zip(straight, resumed, strict=True):
        assert a.tolist() == b.tolist()
    fresh, _ = resume(load=False)  # without the state (momentum, moments) the run differs
    assert fresh[0].tolist() != straight[0].tolist()
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt2.load_state_dict({"state": {}, "param_groups": []})


def two_launch_update(backend, start, grad, lr, dtype):
    """p - grad * lr as the two unfused launches round it: the reference for the fused kernel."""
    p, g = (backend.from_numpy(a.astype(dtype)) for a in (start, grad))
    scaled = backend.zip(mf.operators.MUL, g, backend.full((), lr, dtype))
    return backend.to_numpy(backend.zip(mf.operators.SUB, p, scaled))


def check_sgd_step(backend, dtype, shape):
    """One SGD step: its launches, its in-place write, and its rounding."""
    rng = np.random.default_rng(4)
    start, grad = rng.standard_normal(shape), rng.standard_normal(shape)
    lr = 0.1  # not exact in binary: g * lr rounds, in float32 too
    w = mf.tensor(start, dtype=dtype, backend=backend, requires_grad=True)
    storage, version = w.detach().numpy(), w._version
    w.grad = mf.tensor(grad, dtype=dtype, backend=backend)
    with mf.profiler.profile() as prof:
        optim.SGD([w], lr=lr).step()
    launches = [(e.name, e.kind) for e in prof.events]
    if backend.device == "cpu":
        assert launches == [("fused[mul,sub]", "fused")]
        assert np.shares_memory(w.detach().numpy(), storage)
    else:  # other devices: grad * lr, then param - that written into param
        assert launches == [("mul", "zip"), ("sub", "zip_into")]
    assert w._version == version + 1
    expected = two_launch_update(backend, start, grad, lr, dtype)
    np.testing.assert_array_equal(w.detach().numpy(), expected)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sgd_step_on_the_cpu_is_one_fused_launch_rounding_as_two(backend, dtype):
    check_sgd_step(backend, dtype, (2, 3))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sgd_step_on_a_big_parameter_runs_the_parallel_fused_kernel(dtype):
    check_sgd_step(mf.get_backend("fast"), dtype, (300, 200))


def test_sgd_step_without_the_fast_paths_folder_takes_two_launches(monkeypatch):
    # Student repositories have no minifw/fast_paths/: the update is its two launches.
    monkeypatch.setattr(optim, "_fused_update", None)
    w = mf.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w.grad = mf.tensor([0.5, -1.0, 2.0])
    with mf.profiler.profile() as prof:
        optim.SGD([w], lr=0.5).step()
    assert [(e.name, e.kind) for e in prof.events] == [("mul", "zip"), ("sub", "zip_into")]
    assert w.tolist() == [0.75, 2.5, 2.0]


def test_sgd_step_with_a_grad_sharing_the_parameters_cells_takes_two_launches():
    # Writing param while reading an overlapping grad cell by cell would read new values.
    cells = np.arange(1.0, 9.0)
    w = mf.from_numpy(cells[2:6]).requires_grad_()
    w.grad = mf.from_numpy(cells[:4])  # grad[i] is param[i - 2], written two cells earlier
    expected = cells[2:6] - 0.5 * cells[:4]
    with mf.profiler.profile() as prof:
        optim.SGD([w], lr=0.5).step()
    assert [e.kind for e in prof.events] == ["zip", "zip_into"]
    assert w.tolist() == expected.tolist()


def test_sgd_updates_a_non_contiguous_parameter_cell_by_cell():
    values = np.arange(6.0).reshape(3, 2)
    w = mf.tensor(values).T.detach().requires_grad_()  # a (2, 3) leaf with strides (1, 2)
    assert not w.is_contiguous()
    grad = np.arange(6.0).reshape(2, 3) / 10.0
    w.grad = mf.tensor(grad)
    optim.SGD([w], lr=0.5).step()
    np.testing.assert_allclose(w.detach().numpy(), values.T - 0.5 * grad, rtol=0, atol=1e-15)

"""optim.SGD and optim.Adam step for step against torch.optim, and their state dicts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minifw as mf
from minifw import nn, optim
from tests.fast_paths.switches import turned_off
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


def test_sgd_step_without_the_fast_paths_folder_takes_two_launches():
    # Student repositories have no minifw/fast_paths/: the update is its two launches.
    w = mf.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w.grad = mf.tensor([0.5, -1.0, 2.0])
    with turned_off("fused_update"), mf.profiler.profile() as prof:
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


def adam_run(backend, dtype, shape, options, steps, fused=True):
    """Parameter and moments after `steps` Adam steps on drawn gradients, and the launches."""
    rng = np.random.default_rng(5)
    w = mf.tensor(rng.standard_normal(shape), dtype=dtype, backend=backend, requires_grad=True)
    opt = (optim.AdamW if options.pop("decoupled", False) else optim.Adam)([w], **options)
    with mf.profiler.profile() as prof:
        for _ in range(steps):
            w.grad = mf.tensor(rng.standard_normal(shape), dtype=dtype, backend=backend)
            opt.step()
    state = opt.state[w]
    cells = [t.detach().numpy() for t in (w, state["exp_avg"], state["exp_avg_sq"])]
    return cells, [(e.name, e.kind) for e in prof.events]


adam_options = st.fixed_dictionaries(
    {
        "lr": st.floats(1e-4, 0.5),
        "betas": st.tuples(st.floats(0.0, 0.99), st.floats(0.0, 0.9999)),
        "eps": st.sampled_from([1e-8, 1e-3, 0.1]),
        "weight_decay": st.sampled_from([0.0, 0.05]),
        "maximize": st.booleans(),
        "decoupled": st.booleans(),
    }
)


@settings(deadline=None)
@given(options=adam_options, dtype=st.sampled_from([np.float64, np.float32]),
       big=st.booleans())  # fmt: skip
def test_adam_step_on_the_cpu_is_one_fused_launch_rounding_as_its_unfused_launches(
    options, dtype, big
):
    backend, shape = mf.get_backend("fast"), (300, 200) if big else (3, 5)
    fused, launches = adam_run(backend, dtype, shape, dict(options), steps=3)
    assert ("fused[adam]", "fused") in launches
    assert launches.count(("fused[adam]", "fused")) == 3
    with turned_off("fused_update"):  # as in a student repository: a launch per operation
        unfused, launches = adam_run(backend, dtype, shape, dict(options), steps=3)
    assert ("fused[adam]", "fused") not in launches and len(launches) >= 3 * 13
    for got, expected in zip(fused, unfused, strict=True):
        assert got.dtype == expected.dtype == dtype
        np.testing.assert_array_equal(got, expected)  # bit for bit


def test_adam_with_amsgrad_or_a_grad_sharing_the_parameters_cells_is_not_fused():
    cells = np.arange(1.0, 9.0)
    w = mf.from_numpy(cells[2:6]).requires_grad_()
    w.grad = mf.from_numpy(cells[:4])  # the fused loop would read grad cells it has written
    with mf.profiler.profile() as prof:
        optim.Adam([w], lr=0.5).step()
    assert "fused[adam]" not in [e.name for e in prof.events]
    v = mf.tensor([1.0, 2.0], requires_grad=True)
    v.grad = mf.tensor([0.5, -1.0])
    with mf.profiler.profile() as prof:
        optim.Adam([v], lr=0.5, amsgrad=True).step()
    assert "fused[adam]" not in [e.name for e in prof.events]
    # the first Adam step moves each cell by lr against its gradient's sign
    np.testing.assert_allclose(v.detach().numpy(), [0.5, 2.5], rtol=1e-6)

"""mf.save / mf.load: round trips, the documented format, atomic writes, clear errors."""

from __future__ import annotations

import io
import json
import math
import os
import zipfile

import numpy as np
import pytest

import minifw as mf
from minifw import nn, optim
from minifw.serialization import MANIFEST, SerializationError, load, save

pytestmark = pytest.mark.task4_5


def test_nested_round_trip_keeps_types_values_and_dtypes(tmp_path):
    shared = mf.tensor([[1.5, 2.0]], requires_grad=True)
    obj = {
        "tensors": [
            shared,
            mf.tensor([1, 2, 3]),
            mf.tensor(2.5, dtype=mf.float32),
            mf.zeros(0, 3),
        ],
        "again": shared,
        3: ("tuple", None, True, -7, 0.1, math.inf),
        "nan": math.nan,
        "nested": {"deep": [{"x": mf.tensor([[0.25]])}]},
    }
    path = tmp_path / "obj.mfz"
    save(obj, path)
    back = load(path)
    assert list(back) == ["tensors", "again", 3, "nan", "nested"]
    first, ints, scalar, empty = back["tensors"]
    assert first.tolist() == [[1.5, 2.0]] and first.requires_grad and first.is_leaf
    assert ints.dtype is mf.int64 and ints.tolist() == [1, 2, 3]
    assert scalar.dtype is mf.float32 and scalar.shape == () and scalar.item() == 2.5
    assert empty.shape == (0, 3)
    assert back["again"] is first  # one tensor saved twice loads as one object
    assert back[3] == ("tuple", None, True, -7, 0.1, math.inf)
    assert isinstance(back[3][4], float) and isinstance(back[3][3], int)
    assert math.isnan(back["nan"])
    assert back["nested"]["deep"][0]["x"].tolist() == [[0.25]]


def test_file_is_an_npz_with_a_json_manifest(tmp_path):
    path = tmp_path / "t.mfz"
    save({"w": mf.tensor([1.0, 2.0])}, path)
    with np.load(path, allow_pickle=False) as archive:
        manifest = json.loads(archive[MANIFEST].tobytes().decode("utf-8"))
        assert manifest["format"] == "minifw" and manifest["version"] == 1
        node = manifest["root"]["items"][0][1]
        assert node["type"] == "tensor" and node["dtype"] == "float64" and node["shape"] == [2]
        assert archive[node["key"]].tolist() == [1.0, 2.0]


def test_model_and_optimizer_round_trip_through_a_stream():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    opt = optim.Adam(model.parameters(), lr=0.01)
    model(mf.randn(5, 3)).sum().backward()
    opt.step()
    buffer = io.BytesIO()
    save({"model": model.state_dict(), "opt": opt.state_dict()}, buffer)
    buffer.seek(0)
    back = load(buffer)
    copy = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    copy.load_state_dict(back["model"])
    assert copy[2].bias.value.tolist() == model[2].bias.value.tolist()
    assert sorted(back["opt"]["state"]) == [0, 1, 2, 3]
    assert back["opt"]["param_groups"][0]["betas"] == (0.9, 0.999)
    optim.Adam(copy.parameters(), lr=0.01).load_state_dict(back["opt"])


def test_a_crash_mid_save_leaves_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.mfz"
    save({"step": 1}, path)

    def crash(file, **arrays):
        file.write(b"half a checkpoint")
        raise KeyboardInterrupt("power cut")

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        save({"step": 2}, path)
    monkeypatch.undo()
    assert load(path) == {"step": 1}
    assert os.listdir(tmp_path) == ["ckpt.mfz"]  # no temp file left behind


def test_truncated_corrupted_and_foreign_files_raise_clear_errors(tmp_path):
    good = tmp_path / "good.mfz"
    save({"w": mf.randn(50, 50)}, good)
    raw = good.read_bytes()
    cases = {
        "truncated.mfz": raw[: len(raw) // 2],
        "corrupted.mfz": raw[:100] + bytes(b ^ 0xFF for b in raw[100:400]) + raw[400:],
        "text.mfz": b"just some text, not a checkpoint\n",
        "empty.mfz": b"",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
    np.save(tmp_path / "array.npy", np.ones(3))
    np.savez(tmp_path / "plain.npz", a=np.ones(2))
    np.savez(tmp_path / "pickled.npz", **{MANIFEST: np.array([{"evil": 1}], dtype=object)})
    assert sorted(os.listdir(tmp_path)) == sorted([*cases, "good.mfz", "array.npy", "plain.npz",
                                                   "pickled.npz"])  # fmt: skip
    names = [*cases, "array.npy", "plain.npz", "pickled.npz"]
    for name in names:
        with pytest.raises(SerializationError) as info:
            load(tmp_path / name)
        assert str(tmp_path / name) in str(info.value), name
        assert isinstance(info.value, RuntimeError)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.mfz")


def test_tampered_manifest_is_rejected(tmp_path):
    path = tmp_path / "bad.npz"  # np.savez appends .npz to other names
    manifest = {
        "format": "minifw",
        "version": 1,
        "root": {
            "type": "tensor",
            "key": "t0",
            "dtype": "float64",
            "shape": [3],
            "requires_grad": False,
            "device": "cpu",
        },
    }
    blob = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    np.savez(path, t0=np.ones(2), **{MANIFEST: blob})
    with pytest.raises(SerializationError, match=r"should be float64 \[3\]"):
        load(path)
    manifest["version"] = 99
    np.savez(
        path, t0=np.ones(3), **{MANIFEST: np.frombuffer(json.dumps(manifest).encode(), np.uint8)}
    )
    with pytest.raises(SerializationError, match="version 99 is not supported"):
        load(path)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "hello")
    with pytest.raises(SerializationError, match="no manifest|not a minifw"):
        load(path)


def test_unsupported_objects_are_refused_with_their_location(tmp_path):
    with pytest.raises(TypeError, match=r"obj\['model'\]: cannot save an object of type Linear"):
        save({"model": nn.Linear(2, 2)}, tmp_path / "x.mfz")
    with pytest.raises(TypeError, match="dict key of type tuple"):
        save({(1, 2): 3}, tmp_path / "x.mfz")
    assert not (tmp_path / "x.mfz").exists()

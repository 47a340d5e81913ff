"""mf.save / mf.load: round trips, the documented format, atomic writes, clear errors."""

from __future__ import annotations

import io
import json
import math
import os
import signal
import stat
import struct
import subprocess
import sys
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

import minifw as mf
from minifw import nn, optim
from minifw.serialization import MANIFEST, SerializationError, load, save

pytestmark = pytest.mark.extra  # given code: no task teaches it


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


def _write_checkpoint(path, manifest_root, writer=np.savez, **arrays):
    """A file in the checkpoint format with a hand-written manifest root node."""
    manifest = {"format": "minifw", "version": 1, "root": manifest_root}
    blob = np.frombuffer(json.dumps(manifest).encode(), dtype=np.uint8)
    with open(path, "wb") as stream:
        writer(stream, **arrays, **{MANIFEST: blob})


def _node(key, shape, dtype="float64"):
    return {"type": "tensor", "key": key, "dtype": dtype, "shape": shape,
            "requires_grad": False, "device": "cpu"}  # fmt: skip


def test_compressed_members_are_refused_before_they_inflate(tmp_path):
    path = tmp_path / "bomb.mfz"
    cells = 8 * 2**20  # 64 MB of zeros deflate to about 64 KB
    _write_checkpoint(path, _node("t0", [cells]), np.savez_compressed, t0=np.zeros(cells))
    assert path.stat().st_size < 2**20
    tracemalloc.start()
    try:
        with pytest.raises(SerializationError, match="compressed"):
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20, f"refusing a compressed member took {peak} bytes"


def test_loading_holds_one_copy_of_each_array(tmp_path):
    path = tmp_path / "big.mfz"
    array = np.arange(8 * 2**20, dtype=np.float64)  # 64 MB
    save({"w": mf.tensor(array)}, path)
    del array
    tracemalloc.start()
    try:
        back = load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * 64 * 2**20, f"loading a 64 MB array peaked at {peak / 2**20:.0f} MB"
    assert back["w"].shape == (8 * 2**20,) and back["w"][-1].item() == 8 * 2**20 - 1
    stream = io.BytesIO(path.read_bytes())
    assert load(stream)["w"][123].item() == 123.0


def test_a_second_node_for_a_loaded_array_is_validated_too(tmp_path):
    path = tmp_path / "twice.mfz"
    root = {"type": "list", "items": [_node("t0", [4]), _node("t0", [2, 2])]}
    _write_checkpoint(path, root, t0=np.ones(4))
    with pytest.raises(SerializationError, match=r"t0 should be float64 \[2, 2\]"):
        load(path)
    root["items"][1] = _node("t0", [4], "float32")
    _write_checkpoint(path, root, t0=np.ones(4))
    with pytest.raises(SerializationError, match=r"t0 should be float32 \[4\]"):
        load(path)


def test_a_header_that_lies_about_the_size_is_refused_before_allocating(tmp_path):
    path = tmp_path / "liar.mfz"
    _write_checkpoint(path, _node("t0", [3]), t0=np.ones(3))
    raw = path.read_bytes()
    small, big = b"(3,), }" + b" " * 10, b"(99999999999,), }"  # 800 GB, same header size
    huge = raw.replace(small, big)
    assert huge != raw and len(huge) == len(raw)
    path.write_bytes(huge)
    with pytest.raises(SerializationError):
        load(path)


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_saved_files_respect_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        save({"w": mf.ones(2)}, tmp_path / "ckpt.mfz")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "ckpt.mfz").stat().st_mode) == mode


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_overwriting_a_checkpoint_keeps_its_permissions(tmp_path):
    path = tmp_path / "ckpt.mfz"
    save({"step": 1}, path)
    path.chmod(0o640)
    save({"step": 2}, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and load(path) == {"step": 2}


_STUCK_SAVE = """
import sys, time
import numpy as np
import minifw as mf
from minifw import serialization

def stuck(file, **arrays):
    file.write(b"half a checkpoint")
    file.flush()
    print("writing", flush=True)
    time.sleep(600)

np.savez = stuck
serialization.save({"w": mf.ones(3)}, sys.argv[1])
"""


@pytest.mark.skipif(os.name == "nt", reason="POSIX signals")
def test_temp_files_of_killed_saves_are_removed_by_the_next_save(tmp_path):
    path = tmp_path / "ckpt.mfz"
    save({"step": 0}, path)
    root = Path(__file__).resolve().parents[1]
    child = subprocess.Popen(
        [sys.executable, "-c", _STUCK_SAVE, str(path)], cwd=root, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "writing"
        (temp,) = [name for name in os.listdir(tmp_path) if name != "ckpt.mfz"]
        old = time.time() - 3600
        os.utime(tmp_path / temp, (old, old))
        save({"step": 1}, path)  # the child still runs: its temp file stays
        assert sorted(os.listdir(tmp_path)) == sorted(["ckpt.mfz", temp])
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()  # type: ignore[union-attr]
    save({"step": 2}, path)
    assert os.listdir(tmp_path) == ["ckpt.mfz"] and load(path) == {"step": 2}


# ---- Bytes a bool cannot hold, overlapping members, devices and streams ----------------------


@pytest.mark.parametrize("byte", [2, 255])
def test_a_bool_tensor_holding_other_bytes_than_0_and_1_is_refused(tmp_path, byte):
    path = tmp_path / "bools.mfz"
    cells = np.array([1, 0, byte, 1], dtype=np.uint8).view(np.bool_)
    _write_checkpoint(path, _node("t0", [4], "bool"), t0=cells)
    with pytest.raises(SerializationError, match=rf"bool tensor t0 holds byte {byte} at cell 2"):
        load(path)
    _write_checkpoint(path, _node("t0", [4], "bool"), t0=np.array([1, 0, 0, 1], dtype=np.bool_))
    back = load(path)
    assert back.tolist() == [True, False, False, True]
    assert (back == True).tolist() == back.tolist()  # noqa: E712 - the comparison under test


_LOCAL = "<4s5H3L2H"  # zip local file header
_CENTRAL = "<4s4B4HL2L5H2L"  # zip central directory entry
_END = "<4s4H2LH"  # end of central directory record


def _npy_header(n):
    """The 128-byte `.npy` header of a float64 array of n cells."""
    stream = io.BytesIO()
    header = {"descr": "<f8", "fortran_order": False, "shape": (n,)}
    np.lib.format.write_array_header_1_0(stream, header)
    assert len(stream.getvalue()) == 128
    return stream.getvalue()


def _overlapping_checkpoint(path, members, payload):
    """A checkpoint whose float64 members each start inside the previous one's data.

    Member k's data runs from its own header to the end of a shared payload, so the file
    holds `payload` bytes once while its members claim them `members` times.
    """
    names = [f"t{k:05d}" for k in range(members)]
    manifest = {"format": "minifw", "version": 1,
                "root": {"type": "list", "items": [_node(n, [0]) for n in names]}}  # fmt: skip
    blob = io.BytesIO()
    np.lib.format.write_array(blob, np.frombuffer(json.dumps(manifest).encode(), np.uint8))
    entries = [(f"{MANIFEST}.npy", 0, blob.getvalue())]
    body = bytearray(struct.pack(_LOCAL, b"PK\x03\x04", 20, 0, 0, 0, 0, 0, len(blob.getvalue()),
                                 len(blob.getvalue()), len(entries[0][0]), 0))  # fmt: skip
    body += entries[0][0].encode() + blob.getvalue()
    step = struct.calcsize(_LOCAL) + len("t00000.npy") + 128
    for k, name in enumerate(names):
        data_size = 128 + (members - 1 - k) * step + payload
        offset = len(body)
        body += struct.pack(_LOCAL, b"PK\x03\x04", 20, 0, 0, 0, 0, 0, data_size, data_size,
                            len(name) + 4, 0)  # fmt: skip
        body += f"{name}.npy".encode() + _npy_header((data_size - 128) // 8)
        entries.append((f"{name}.npy", offset, None))
    body += bytes(payload)
    directory = bytearray()
    for name, offset, _ in entries:
        start = offset + struct.calcsize(_LOCAL) + len(name)
        size = struct.unpack_from(_LOCAL, body, offset)[7]
        data = bytes(body[start : start + size])
        directory += struct.pack(_CENTRAL, b"PK\x01\x02", 20, 0, 20, 0, 0, 0, 0, 0,
                                 zlib.crc32(data), size, size, len(name), 0, 0, 0, 0, 0,
                                 offset) + name.encode()  # fmt: skip
    end = struct.pack(_END, b"PK\x05\x06", 0, 0, len(entries), len(entries), len(directory),
                      len(body), 0)  # fmt: skip
    path.write_bytes(bytes(body + directory + end))


def test_members_whose_bytes_overlap_are_refused_before_any_is_read(tmp_path):
    path = tmp_path / "overlap.mfz"
    members, payload = 40, 2**18
    _overlapping_checkpoint(path, members, payload)
    size = path.stat().st_size
    claimed = sum(i.file_size for i in zipfile.ZipFile(path).infolist())
    assert claimed > members / 2 * size  # the members claim the file's bytes many times over
    tracemalloc.start()
    try:
        with pytest.raises(SerializationError, match=r"t00000\.npy' and 't00001\.npy' overlap"):
            load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < size, f"refusing {size} bytes of overlapping members took {peak} bytes"


def test_a_member_past_the_end_of_the_file_is_refused(tmp_path):
    path = tmp_path / "short.mfz"
    _overlapping_checkpoint(path, 1, 64)
    raw = bytearray(path.read_bytes())
    at = raw.rindex(b"PK\x01\x02")  # the last central entry: grow its sizes past the file
    struct.pack_into("<2L", raw, at + 20, 10**6, 10**6)
    path.write_bytes(bytes(raw))
    with pytest.raises(SerializationError, match=r"t00000\.npy.*past the file's end"):
        load(path)


def test_a_checkpoint_saved_on_cuda_says_where_and_how_to_load_it(tmp_path):
    path = tmp_path / "gpu.mfz"
    node = dict(_node("t0", [2]), device="cuda")
    _write_checkpoint(path, node, t0=np.array([1.0, 2.0]))
    if mf.cuda.is_available():
        assert load(path).device.type == "cuda"
    else:
        with pytest.raises(RuntimeError, match="saved on device 'cuda'") as error:
            load(path)
        assert 'map_location="cpu"' in str(error.value)
        assert "corrupted" not in str(error.value)
    on_cpu = load(path, map_location="cpu")
    assert on_cpu.device.type == "cpu" and on_cpu.tolist() == [1.0, 2.0]
    assert load(path, map_location=mf.device("cpu")).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("where", ["tpu", "cuda:x", "mps"])
def test_an_unknown_map_location_is_named(tmp_path, where):
    path = tmp_path / "t.mfz"
    save(mf.ones(2), path)
    with pytest.raises(RuntimeError, match=rf"map_location='{where}' is not a device"):
        load(path, map_location=where)
    with pytest.raises(TypeError, match="map_location must be a device string"):
        load(path, map_location=1.5)


class _Pipe(io.RawIOBase):
    """A readable stream that cannot seek, as a pipe or a socket."""

    def __init__(self, data):
        self.data = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, buffer):
        return self.data.readinto(buffer)


def test_a_stream_that_cannot_seek_is_refused_saying_so(tmp_path):
    path = tmp_path / "t.mfz"
    save({"w": mf.ones(2)}, path)
    with pytest.raises(io.UnsupportedOperation, match="needs a seekable file"):
        load(_Pipe(path.read_bytes()))
    assert load(io.BytesIO(path.read_bytes()))["w"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("weights_only", [True, False, None])
def test_weights_only_is_accepted_as_in_pytorch(tmp_path, weights_only):
    path = tmp_path / "t.mfz"
    save({"w": mf.ones(2), "step": 3}, path)
    back = mf.load(path, weights_only=weights_only)
    assert back["step"] == 3 and back["w"].tolist() == [1.0, 1.0]

"""The GPU seam: buffers round-trip, shader templating is strict, compile errors name the shader."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from bonsai.errors import ShaderError
from bonsai.gpu import native_map, shaders
from bonsai.gpu.backend import PendingRead


def test_upload_then_read_returns_the_same_bytes(gpu):
    data = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    buf = gpu.upload(data)
    back = np.frombuffer(gpu.read(buf, data.nbytes), np.float32)
    assert np.array_equal(back.view(np.uint32), data.view(np.uint32))


def test_reads_of_any_size_and_offset_return_those_bytes_through_the_kept_readback(gpu, monkeypatch):
    import bonsai.gpu.reads as reads

    data = np.random.default_rng(2).integers(0, 256, 300_000, dtype=np.uint8)
    buf = gpu.upload(data)
    for offset, n in ((0, 1), (4, 7), (1024, 70_000), (8, 299_992), (0, 300_000)):  # 70 KB grows the buffer
        assert gpu.read(buf, n, offset) == data[offset: offset + n].tobytes()
    monkeypatch.setattr(reads, "READBACK_MAX", 64)  # larger reads take wgpu-py's own path
    assert gpu.read(buf, 1000, 12) == data[12:1012].tobytes()


def test_repeated_reads_make_no_buffer(gpu, monkeypatch):
    # wgpu-py's queue.read_buffer makes a mappable buffer per read: with host pages filling that
    # memory, each one cost the H200's driver a new block (36-46 ms a round trip; bench/NOTES.md)
    buf = gpu.upload(np.arange(64, dtype=np.uint32))
    gpu.read(buf)
    gpu.wait()
    made = []
    real = type(gpu.device)._create_buffer
    monkeypatch.setattr(type(gpu.device), "_create_buffer", lambda self, *a: made.append(a) or real(self, *a))
    for _ in range(5):
        gpu.read(buf)
        gpu.wait()
    assert made == []


def test_reading_through_wgpu_py_s_read_buffer_is_caught(gpu, monkeypatch):
    # mutation: read = queue.read_buffer (a temporary mappable buffer per read)
    monkeypatch.setattr(type(gpu), "_read_after_recorded",
                        lambda self, buf, size, offset, use: self.flush() or use(self.queue.read_buffer(buf, offset, size)))
    with pytest.raises(AssertionError):
        test_repeated_reads_make_no_buffer(gpu, monkeypatch)


def test_a_read_after_recorded_work_submits_once(gpu, monkeypatch):
    # the copy into the readback buffer rides in the encoder of the recorded work: one submit per read
    buf = gpu.buffer(64)
    gpu.copy(gpu.upload(np.arange(16, dtype=np.uint32)), 0, buf, 0, 64)  # recorded, not submitted
    submits = []
    real = type(gpu.queue).submit
    monkeypatch.setattr(type(gpu.queue), "submit", lambda self, cmds: submits.append(len(cmds)) or real(self, cmds))
    assert np.frombuffer(gpu.read(buf), np.uint32).tolist() == list(range(16))
    # the recorded work with the copy, then the empty command buffer wgpu-py submits before mapping
    # a MAP_READ buffer; copying in an encoder of its own after a flush makes that three
    assert len(submits) == 2


@pytest.mark.parametrize("readback_max", [1 << 26, 64], ids=["kept buffers", "above READBACK_MAX"])
def test_read_soon_gives_the_bytes_as_they_were_when_it_started(gpu, monkeypatch, readback_max):
    """A read started by `read_soon` sees the buffer before what is recorded after it (a write here), both
    through its own MAP_READ buffers and, past READBACK_MAX, through a plain read made at once."""
    import bonsai.gpu.reads as reads

    if not hasattr(gpu, "_soon_free"):
        pytest.skip("the native backend's read_soon")
    monkeypatch.setattr(reads, "READBACK_MAX", readback_max)
    old, new = np.arange(64, dtype=np.uint32), np.arange(64, 128, dtype=np.uint32)
    buf = gpu.upload(old)
    pending = gpu.read_soon(buf, old.nbytes)
    gpu.write(buf, new)
    assert pending.result(bytes) == old.tobytes() and gpu.read(buf, new.nbytes) == new.tobytes()
    with pytest.raises(RuntimeError, match="already taken"):
        pending.result(bytes)


def _queued_read_is_of_then(gpu) -> bool:
    """Whether a read recorded by `read_queued` gives the buffer as it was then, not after a later write."""
    old, new = np.arange(64, dtype=np.uint32), np.arange(64, 128, dtype=np.uint32)
    buf = gpu.upload(old)
    pending = gpu.read_queued(buf, old.nbytes)
    gpu.write(buf, new)
    return pending.result(bytes) == old.tobytes() and gpu.read(buf, new.nbytes) == new.tobytes()


@pytest.mark.parametrize("readback_max", [1 << 26, 64], ids=["kept buffers", "above READBACK_MAX"])
def test_read_queued_gives_the_bytes_as_they_were_when_it_was_recorded(gpu, monkeypatch, readback_max):
    import bonsai.gpu.reads as reads

    monkeypatch.setattr(reads, "READBACK_MAX", readback_max)
    assert _queued_read_is_of_then(gpu)


def test_a_queued_read_that_copies_when_asked_is_caught(gpu, monkeypatch):
    """Mutation: the copy made when the bytes are asked for (after the later write)."""
    monkeypatch.setattr(gpu, "read_queued", lambda buf, n, off=0: PendingRead(lambda use: use(memoryview(
        gpu.read(buf, n, off)))))
    assert not _queued_read_is_of_then(gpu)


def _gathered_read_is_of_then(gpu, spans: list[tuple[int, int]]) -> bool:
    """Whether `read_gathered` gives `spans` of the buffer back to back, as they were when it was recorded."""
    old, new = np.arange(64, dtype=np.uint32), np.arange(64, 128, dtype=np.uint32)
    buf = gpu.upload(old)
    pending = gpu.read_gathered(buf, spans)
    gpu.write(buf, new)
    want = b"".join(old.tobytes()[offset: offset + n] for offset, n in spans)
    return pending.result(bytes) == want and gpu.read(buf, new.nbytes) == new.tobytes()


@pytest.mark.parametrize("readback_max", [1 << 26, 64], ids=["kept buffers", "above READBACK_MAX"])
@pytest.mark.parametrize("native", [True, False], ids=["native map", "read_soon's map"])
def test_a_gathered_read_gives_its_ranges_back_to_back_as_they_were_when_it_was_recorded(gpu, monkeypatch,
                                                                                         readback_max, native):
    import bonsai.gpu.reads as reads

    monkeypatch.setattr(reads, "READBACK_MAX", readback_max)
    if not native:
        monkeypatch.setattr(native_map, "available", lambda: False)
    assert _gathered_read_is_of_then(gpu, [(4, 8), (64, 40), (104, 4), (200, 56)])
    assert _gathered_read_is_of_then(gpu, [(0, 256)])


def test_a_gathered_read_that_drops_a_range_is_caught(gpu, monkeypatch):
    """Mutation: every range copied to the start of the readback buffer (each over the one before)."""
    real = gpu._encode_copy
    monkeypatch.setattr(gpu, "_encode_copy", lambda enc, src, so, dst, do, n: real(enc, src, so, dst, 0, n))
    assert not _gathered_read_is_of_then(gpu, [(4, 8), (64, 40)])


def test_a_queued_read_maps_without_wgpu_pys_poll_thread(gpu, monkeypatch):
    """Its buffer is mapped through wgpu-native (`native_map`), never by wgpu-py's map_async, whose poll thread
    holds back the submits recorded meanwhile; several in flight map in any order of asking."""
    if not hasattr(gpu, "_soon_free"):
        pytest.skip("the native backend's read_queued")
    bufs = [gpu.upload(np.full(16, i, np.uint32)) for i in range(3)]
    pending = [gpu.read_queued(b, 64) for b in bufs]
    gpu.flush()
    rb_type = type(gpu._readback)

    def refuse(*args, **kwargs):
        raise AssertionError("wgpu-py's map_async")

    monkeypatch.setattr(rb_type, "map_async", refuse)
    monkeypatch.setattr(rb_type, "map_sync", refuse)
    got = [np.frombuffer(pending[i].result(bytes), np.uint32)[0] for i in (2, 0, 1)]
    assert got == [2, 0, 1] and len(gpu._soon_free[256]) >= 3  # every buffer back for the next reads
    assert not native_map._PENDING  # every callback ran (a pending one is kept alive until it does)


def test_write_at_offset_changes_only_that_range(gpu):
    buf = gpu.upload(np.zeros(16, np.uint32))
    gpu.write(buf, np.array([7, 8], np.uint32), offset=8)
    assert np.frombuffer(gpu.read(buf, 64), np.uint32).tolist() == [0, 0, 7, 8] + [0] * 12


def test_missing_template_constant_names_the_shader():
    with pytest.raises(ShaderError, match=r"k\.wgsl: no value for template constant\(s\) WG"):
        shaders.render("@workgroup_size({{WG}})", {}, name="k.wgsl")


def test_unused_template_constant_is_an_error():
    with pytest.raises(ShaderError, match="N not used"):
        shaders.render("fn main() {}", {"N": 3}, name="k.wgsl")


def test_template_fills_every_placeholder():
    assert shaders.render("a {{X}} b {{ Y }} {{X}}", {"X": 1, "Y": True}, name="k") == "a 1 b true 1"


def test_missing_shader_file_is_a_shader_error():
    with pytest.raises(ShaderError, match="bonsai.gpu/nope.wgsl: shader not found"):
        shaders.load_source("bonsai.gpu", "nope.wgsl")


def _package_with(tmp_path, monkeypatch, files: dict[str, str]) -> str:
    name = f"shaders_{tmp_path.name}"  # a fresh package per test: imported packages are cached
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for filename, text in files.items():
        (pkg / filename).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    shaders.load_source.cache_clear()
    return name


def test_include_lines_are_replaced_by_the_named_file(tmp_path, monkeypatch):
    pkg = _package_with(tmp_path, monkeypatch, {
        "main.wgsl": 'const A = 1;\n//#include "part.wgsl"\nfn main() {}\n',
        "part.wgsl": "// part\nconst B = {{N}};\n",
    })
    assert shaders.load_source(pkg, "main.wgsl") == "const A = 1;\n// part\nconst B = {{N}};\nfn main() {}\n"


def test_a_missing_include_names_the_including_shader(tmp_path, monkeypatch):
    pkg = _package_with(tmp_path, monkeypatch, {"main.wgsl": '//#include "gone.wgsl"\n'})
    with pytest.raises(ShaderError, match=rf"{pkg}/gone.wgsl: shader not found \(included from {pkg}/main.wgsl\)"):
        shaders.load_source(pkg, "main.wgsl")


def test_an_include_cycle_is_an_error(tmp_path, monkeypatch):
    pkg = _package_with(tmp_path, monkeypatch, {
        "a.wgsl": '//#include "b.wgsl"\n', "b.wgsl": '//#include "a.wgsl"\n',
    })
    with pytest.raises(ShaderError, match=rf"include cycle \({pkg}/a.wgsl -> {pkg}/b.wgsl -> {pkg}/a.wgsl\)"):
        shaders.load_source(pkg, "a.wgsl")


def test_an_include_path_is_relative_to_the_including_package(tmp_path, monkeypatch):
    pkg = _package_with(tmp_path, monkeypatch, {"main.wgsl": '//#include "sub/part.wgsl"\n'})
    (tmp_path / pkg / "sub").mkdir()
    (tmp_path / pkg / "sub" / "__init__.py").write_text("")
    (tmp_path / pkg / "sub" / "part.wgsl").write_text('//#include "../leaf.wgsl"\n')
    (tmp_path / pkg / "leaf.wgsl").write_text("const LEAF = 1;\n")
    assert shaders.load_source(pkg, "main.wgsl") == "const LEAF = 1;\n"


def test_a_tape_replays_its_dispatches_and_refuses_a_tape_with_a_write_inside(gpu):
    """Replaying a tape records the same work; a write while taping makes the tape unusable (its
    data would not be replayed), so `stop_tape` returns None."""
    from bonsai.ops import argmax

    kernel = gpu.kernel("bonsai.ops", "argmax.wgsl", WG=argmax.WG)
    x, out = gpu.upload(struct.pack("<4f", 1.0, 5.0, 2.0, 3.0)), gpu.buffer(8)
    prm, hist = gpu.upload(argmax.params(4, 0)), gpu.buffer(16)
    gpu.start_tape()
    gpu.dispatch(kernel, [x, out, prm, hist], 1)
    tape = gpu.stop_tape()
    assert tape is not None and len(tape) == 1
    gpu.write(out, struct.pack("<I", 99))
    before = gpu.dispatch_count
    gpu.replay(tape)
    assert struct.unpack("<I", gpu.read(out, 4))[0] == 1 and gpu.dispatch_count == before + 1
    gpu.start_tape()
    gpu.dispatch(kernel, [x, out, prm, hist], 1)
    gpu.write(x, struct.pack("<4f", 9.0, 0.0, 0.0, 0.0))
    assert gpu.stop_tape() is None

"""The GPU seam: buffers round-trip, shader templating is strict, compile errors name the shader."""

from __future__ import annotations

import numpy as np
import pytest

from bonsai.errors import ShaderError
from bonsai.gpu import shaders


def test_upload_then_read_returns_the_same_bytes(gpu):
    data = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    buf = gpu.upload(data)
    back = np.frombuffer(gpu.read(buf, data.nbytes), np.float32)
    assert np.array_equal(back.view(np.uint32), data.view(np.uint32))


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

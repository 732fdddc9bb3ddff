"""bonsai-tenant command line: hash-key, and configuration errors as one line with exit code 2."""

from __future__ import annotations

import io

import pytest
from bonsai_tenant.cli import main
from bonsai_tenant.tenants import key_digest


def test_hash_key_prints_the_digest_the_tenants_file_takes(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-secret\n"))
    assert main(["hash-key"]) == 0
    assert capsys.readouterr().out.strip() == key_digest("sk-secret")


@pytest.mark.parametrize("text, message", [
    ("[tenants.acme]\n", "tenants.acme: needs api-key-env"),
    (None, "cannot read the tenants file"),
])
def test_serve_with_a_bad_config_is_one_error_line(tmp_path, capsys, text, message):
    path = tmp_path / "tenants.toml"
    if text is not None:
        path.write_text(text)
    assert main(["serve", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bonsai-tenant: error: ") and message in err and "Traceback" not in err


def test_a_backend_factory_that_cannot_load_is_named(tmp_path, capsys):
    path = tmp_path / "tenants.toml"
    path.write_text('[tenants.acme]\napi-key-sha256 = "' + key_digest("k") + '"\n')
    assert main(["serve", "--config", str(path), "--backend-factory", "no_such_module:make"]) == 2
    assert "--backend-factory 'no_such_module:make': cannot load it" in capsys.readouterr().err

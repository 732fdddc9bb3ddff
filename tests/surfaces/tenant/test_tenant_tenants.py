"""The tenants file: keys by env var or sha256, model ownership, and errors that name the key."""

from __future__ import annotations

import pytest
from bonsai_tenant.errors import ApiError, ConfigError
from bonsai_tenant.tenants import key_digest, load_config


def write(tmp_path, text):
    path = tmp_path / "tenants.toml"
    path.write_text(text)
    return path


def test_keys_from_env_and_sha256_both_authenticate(tmp_path):
    path = write(tmp_path, f"""
[tenants.acme]
api-key-env = "ACME_KEY"
[tenants.globex]
api-key-sha256 = "{key_digest('sk-g')}"
[models.smollm2]
[models.private]
tenants = ["acme"]
""")
    config = load_config(path, environ={"ACME_KEY": "sk-a"})
    acme = config.authenticate("Bearer sk-a")
    globex = config.authenticate("bearer sk-g")
    assert (acme.name, globex.name) == ("acme", "globex")
    assert config.model_for(acme, "private").id == "private"
    with pytest.raises(ApiError) as info:
        config.model_for(globex, "private")
    assert info.value.status == 403


@pytest.mark.parametrize("header", [None, "", "Bearer", "Basic sk-a", "Bearer sk-b"])
def test_bad_authorization_headers_are_401(tmp_path, header):
    config = load_config(write(tmp_path, '[tenants.acme]\napi-key-env = "K"\n'), environ={"K": "sk-a"})
    with pytest.raises(ApiError) as info:
        config.authenticate(header)
    assert info.value.status == 401


@pytest.mark.parametrize("text, message", [
    ("", "tenants: define at least one [tenants.NAME] table"),
    ("[tenant.acme]\n", "tenant: unknown table"),
    ("[tenants.acme]\napi-key = 'x'\n", "tenants.acme.api-key: unknown key"),
    ("[tenants.acme]\n", "tenants.acme: needs api-key-env"),
    ("[tenants.acme]\napi-key-env = 'MISSING'\n", "tenants.acme.api-key-env: environment variable MISSING is not set"),
    ("[tenants.acme]\napi-key-sha256 = 'abc'\n", "tenants.acme.api-key-sha256: must be 64 lowercase hex"),
    ("[tenants.acme]\napi-key-env = 'K'\n[models.m]\ntenants = ['ghost']\n", "models.m.tenants: 'ghost' is not a tenant"),
    ("[tenants.acme]\napi-key-env = 'K'\n[models.m]\nfile = 'x'\n", "models.m.file: unknown key"),
    ("[tenants\n", "not valid TOML"),
])
def test_config_errors_name_the_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={"K": "sk"})
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)

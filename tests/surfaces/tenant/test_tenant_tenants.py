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
    config = load_config(path, environ={"ACME_KEY": "sk-a-0123456789abcdef"})
    acme = config.authenticate("Bearer sk-a-0123456789abcdef")
    globex = config.authenticate("bearer sk-g")
    assert (acme.name, globex.name) == ("acme", "globex")
    assert config.model_for(acme, "private").id == "private"
    with pytest.raises(ApiError) as info:
        config.model_for(globex, "private")
    assert info.value.status == 404


@pytest.mark.parametrize("header", [None, "", "Bearer", "Basic sk-a", "Bearer sk-b"])
def test_bad_authorization_headers_are_401(tmp_path, header):
    config = load_config(write(tmp_path, '[tenants.acme]\napi-key-env = "K"\n'), environ={"K": "sk-a-0123456789abcdef"})
    with pytest.raises(ApiError) as info:
        config.authenticate(header)
    assert info.value.status == 401


@pytest.mark.parametrize("text, message", [
    ("", "tenants: define at least one [tenants.NAME] table"),
    ("[tenant.acme]\n", "tenant: unknown table"),
    ("[tenants.acme]\napi-key = 'x'\n", "tenants.acme.api-key: unknown key"),
    ("[tenants.acme]\n", "tenants.acme: needs api-key-env"),
    ("[tenants.acme]\napi-key-env = 'MISSING'\n", "tenants.acme.api-key-env: environment variable MISSING is not set"),
    ("[tenants.acme]\napi-key-sha256 = 'abc'\n", "tenants.acme.api-key-sha256: 'abc' is not 64 lowercase hex"),
    ("[tenants.acme]\napi-key-env = 'K'\n[models.m]\ntenants = ['ghost']\n", "models.m.tenants: 'ghost' is not a tenant"),
    ("[tenants.acme]\napi-key-env = 'K'\n[models.m]\nfile = 'x'\n", "models.m.file: unknown key"),
    ("[tenants\n", "not valid TOML"),
])
def test_config_errors_name_the_file_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={"K": "sk-0123456789abcdef"})
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_the_database_is_a_sqlite_file_next_to_the_tenants_file_by_default(tmp_path):
    config = load_config(write(tmp_path, '[tenants.acme]\napi-key-env = "K"\n'), environ={"K": "sk-0123456789abcdef"})
    assert config.database.url == f"sqlite+pysqlite:///{tmp_path.resolve() / 'tenants.db'}"


@pytest.mark.parametrize("table, url", [
    ('url = "sqlite:///state/t.db"', "sqlite+pysqlite:///{dir}/state/t.db"),  # relative to the tenants file
    ('url = "postgresql://u:pw@db.internal:5432/tenants"', "postgresql+psycopg://u:pw@db.internal:5432/tenants"),
    ('url-env = "DB_URL"', "postgresql+psycopg://u@h/d"),
])
def test_database_urls_name_their_driver(tmp_path, table, url):
    config = load_config(write(tmp_path, f'[tenants.acme]\napi-key-env = "K"\n[database]\n{table}\n'),
                         environ={"K": "sk-0123456789abcdef", "DB_URL": "postgresql+psycopg://u@h/d"})
    assert config.database.url == url.format(dir=tmp_path.resolve())


def test_retention_and_quota_are_per_tenant(tmp_path):
    config = load_config(write(tmp_path, '[tenants.acme]\napi-key-env = "K"\nretention-days = 30\n'
                                         'daily-token-quota = 100000\n[tenants.globex]\napi-key-env = "G"\n'),
                         environ={"K": "sk-0123456789abcdef", "G": "sg-0123456789abcdef"})
    assert [(t.name, t.retention_days, t.daily_token_quota) for t in config.tenants] == [
        ("acme", 30, 100000), ("globex", None, None)]


@pytest.mark.parametrize("text, message", [
    ('[database]\nurl = "mysql://h/d"\n', "database.url: 'mysql' is not supported (use sqlite:///PATH or postgresql"),
    ('[database]\nurl = "not a url"\n', "database.url: not a database URL"),
    ('[database]\nurl-env = "NOPE"\n', "database.url-env: environment variable NOPE is not set or empty"),
    ('[database]\nhost = "x"\n', "database.host: unknown key"),
    ('[database]\nlock-timeout = -1\n', "database.lock-timeout: must be a number of seconds >= 0"),
    ('[tenants.acme.x]\n', "tenants.acme.x: unknown key"),
    ('[tenants.b]\napi-key-env = "K"\nretention-days = 0\n', "tenants.b.retention-days: must be a positive integer"),
    ('[tenants.b]\napi-key-env = "K"\ndaily-token-quota = "lots"\n', "tenants.b.daily-token-quota: must be a positive"),
])
def test_database_and_tenant_bound_errors_name_the_key(tmp_path, text, message):
    path = write(tmp_path, '[tenants.acme]\napi-key-env = "K"\n' + text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={"K": "sk-0123456789abcdef"})
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)

"""Both console scripts answer --help and --version."""

from click.testing import CliRunner

from bonsai.cli import main as bonsai_main
from bonsai_sync.cli import main as sync_main


def test_bonsai_help_lists_exit_codes():
    result = CliRunner().invoke(bonsai_main, ["--help"])
    assert result.exit_code == 0
    assert "Exit codes" in result.output


def test_bonsai_sync_version():
    result = CliRunner().invoke(sync_main, ["--version"])
    assert result.exit_code == 0
    assert "bonsai-sync, version 0.1.0" in result.output

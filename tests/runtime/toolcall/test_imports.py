"""bonsai.toolcall, constrained decoding included, imports no numpy (the browser surface has none)."""

from __future__ import annotations

import subprocess
import sys


def test_tools_package_imports_without_numpy():
    code = (
        "import sys, bonsai.toolcall, bonsai.toolcall.parser, bonsai.toolcall.loop, bonsai.toolcall.prompt\n"
        "bad = [m for m in ('numpy', 'gguf', 'regex', 'jinja2') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "bonsai.toolcall.TokenTrie, bonsai.toolcall.ToolCallConstraint  # the lazy names still resolve\n"
        "assert 'bonsai.toolcall.constrain' in sys.modules and 'numpy' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

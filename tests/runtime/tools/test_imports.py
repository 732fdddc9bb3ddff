"""bonsai.tools without constrained decoding imports no numpy (the browser surface has none)."""

from __future__ import annotations

import subprocess
import sys


def test_tools_package_imports_without_numpy():
    code = (
        "import sys, bonsai.tools, bonsai.tools.parser, bonsai.tools.loop, bonsai.tools.prompt\n"
        "bad = [m for m in ('numpy', 'gguf', 'regex', 'jinja2') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "bonsai.tools.TokenTrie  # the lazy names still resolve\n"
        "assert 'numpy' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

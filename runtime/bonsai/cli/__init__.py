"""The `bonsai` command line: one click group (`group.main`); each command lives in its own module here."""

from __future__ import annotations

from .doctor import doctor
from .eval import eval_cmd
from .group import main
from .info import info
from .measure import measure
from .models import models_group
from .run import chat, run
from .tools import tools_group, with_tools_option
from .verify import verify

for command in (doctor, run, with_tools_option(chat), eval_cmd, info, tools_group, verify, measure, models_group):
    main.add_command(command)

__all__ = ["main"]

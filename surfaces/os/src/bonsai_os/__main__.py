"""`python -m bonsai_os`: the bonsai-os command."""

import sys

from .cli import main

sys.exit(main())

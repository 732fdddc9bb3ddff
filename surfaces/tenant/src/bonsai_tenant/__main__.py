"""`python -m bonsai_tenant`: the bonsai-tenant command."""

import sys

from .cli import main

sys.exit(main())

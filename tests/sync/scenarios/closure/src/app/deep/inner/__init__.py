"""Inner package: a relative import two levels up."""

from ..sibling import __doc__ as SIBLING_DOC

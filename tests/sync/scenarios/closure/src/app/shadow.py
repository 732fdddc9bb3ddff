"""Never imported: the package directory shadows it."""

WHICH = "module"

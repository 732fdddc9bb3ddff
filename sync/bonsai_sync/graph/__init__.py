"""From entry modules to a surface's closure: finding modules, following imports, checking names and hints."""

// not referenced

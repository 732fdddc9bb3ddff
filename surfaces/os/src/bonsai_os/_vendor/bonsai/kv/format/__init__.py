"""KV row formats as data (`rows`), the cache modes built from them (`modes`), and the K rotation."""

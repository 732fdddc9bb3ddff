"""Writing K/V rows into the cache: the store kernel (quantise + stage), grouped-K groups, and the scatter into window slots."""

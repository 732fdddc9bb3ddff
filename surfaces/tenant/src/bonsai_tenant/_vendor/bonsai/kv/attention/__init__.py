"""Online-softmax attention over KV windows: the driver (`driver.Attention`) and its WGSL kernels."""

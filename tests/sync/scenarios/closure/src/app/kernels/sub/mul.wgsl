// mul

"""Helpers the tests share: GPU front-ends of single kernels (`ops`) and tiny GGUF models (`synthetic`)."""

"""What a surface should hold: the plan of files (rewritten where asked), and the digests that key them."""

"""Queries: a leaf test and a node bound per query kind, and the batch kernels that run the one walk with them."""

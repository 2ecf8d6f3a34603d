"""What embedcli writes, and how, so that nothing is ever left half-written.

- ``outputs``: tensors to files chosen by suffix (.npy, .npz, .pt, .safetensors, .jsonl),
  staged and atomic writes, outputs refused when they are one of the inputs.
- ``cache``: the user cache folder (parsed BPE ranks, tensors read from a hub), entries written
  atomically and checked when read.
- ``jsonstream``: JSON text in pieces, tensors row by row, NaN and infinities as null.

Imports: errors.
"""

"""What a table has learned, and what training it would cost, from tables already in hand.

- ``neighbors``: nearest tokens by cosine similarity, a chunk of rows at a time.
- ``stats``: value statistics and row norms of a table, in float64, chunk by chunk.
- ``projection``: the table on its first two principal axes, and whether it has structure.
- ``projector``: the TensorBoard Embedding Projector export.
- ``undertrained``: the undertrained indicator (Land and Bartolo 2024): every row's cosine to
  the known-unused rows with the first principal component removed, and row norms, chunk by chunk.
- ``vocabclasses``: each token's class (reference, special, not text, unreachable, ...) and the
  known-unused reference tokens, from the tokenizer.
- ``training``: the memory of one training step, counted from the sizes alone.
- ``rowcount``: the rows a pass has read, told to a plain callback (``on_rows(done, total)``).

Imports: tokenization, models, core, io, errors.
"""

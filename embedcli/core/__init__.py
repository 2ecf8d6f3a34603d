"""The input layer itself, in numbers: nothing here reads a file or knows a command.

- ``config``: ``EmbedConfig`` (one frozen dataclass) and the presets.
- ``embedding``: THE module, ``InputEmbedding`` (token table + positions), and its trace.
- ``steps``: what made each traced tensor, in words, for a config; the input scale as applied
  (rounded to the dtype), rope's formula, the positions phrase.
- ``positions``: the positional formulas (rope's angles and scalings, ALiBi's slopes).
- ``sinusoids``: the fixed sinusoidal tables, one builder per layout a family uses.
- ``shapeplan``: ``TraceStep``, and the forward pass's tensors worked out without torch
  (inspect-shapes' meta path).
- ``broadcast``: broadcasting explained axis by axis.
- ``devices``: devices and dtypes, resolved or refused with the reason.
- ``memory``: what a machine or device can still allocate; refusing what would not fit
  (``ensure_room``); byte sizes in words.

Imports: errors, io.
"""

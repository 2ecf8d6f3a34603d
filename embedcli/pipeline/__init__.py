"""The jobs that assemble the input layer from a source and run it, each ending in a plain report.

- ``sources``: where the tables come from (seeded from the flags, a preset, or ``--weights``);
  every command that needs a config or tables asks here.
- ``rowtables``: a hub model's tables read by rows (the rows a batch uses), for embed.
- ``embedrequest``: ``EmbedRequest``, embed's flags as one frozen object that refuses the
  combinations that mean nothing.
- ``embed``: the embed job: texts or ids -> padded batch -> the core module -> ``EmbedReport``.
- ``weights``: the weights job: what a checkpoint holds, and the special tokens llama.cpp
  makes of a GGUF file's tokenizer.
- ``sourceinfo``: ``SourceInfo``, what a report says of its tables' source, encoding and device.
- ``stream``: embedding at scale: every window of a file, or one record per line.
- ``reference``: ``--verify``'s independent second computation.
- ``hfreference``: ``--verify``'s third, a model folder's own transformers code up to block 0.
- ``shapesrequest``: ``ShapesRequest``, inspect-shapes' flags as one frozen object that refuses
  ``--list-presets`` beside another option and ``--optimizer`` without ``--train``.
- ``shapes``: the inspect-shapes job.
- ``projectrequest``: ``ProjectRequest``, project's flags as one frozen object: the points, the
  table, and the files it reads.
- ``undertrained``: the undertrained job: the matrix (the head, or a tied token table), the
  reference, the indicator, the classes -> ``UndertrainedReport``.
- ``positions``: the positions job: a positional table, or its similarities, as a heatmap.
- ``positionsource``: which encoding ``positions`` draws (flags, a preset, or ``--weights``), and
  the checks of its flags.
- ``positionmaps``: ``Heatmap`` (every position picture), rope's angles and similarity by
  distance, ALiBi's biases and slopes.

Imports: analysis, corpus, tokenization, models, core, io, errors.
"""

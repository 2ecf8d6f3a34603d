"""Text at any size: reading it, cutting it into windows, and counting the tokens of corpora.

- ``textinput``: arguments, ``-`` for stdin, files; strict UTF-8, bounded by free memory.
- ``windows``: the sliding-window data loader, and streaming windows over a file of any size.
- ``request``: ``CountRequest``, count's flags as one frozen object that refuses the
  combinations that mean nothing.
- ``count``: the count job, from PATHs to a stream of counts in walk order: ``selection`` (which
  files, each real file once; ``ignores`` for the .gitignore rules, ``urls`` for fsspec URLs,
  ``listing`` for what a walk yields),
  ``pieces`` (files cut into pieces and tasks, the one function every engine runs), ``stdin``
  (standard input counted as a file is), the engines ``engine_local`` (this machine's processes)
  and ``engine_dask`` (a Dask cluster), and ``report`` (what a view keeps; ``tree`` for --tree).

Imports: tokenization, models, core, io, errors.
"""

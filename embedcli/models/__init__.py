"""Where trained tables come from: checkpoint files, model folders, and the Hugging Face hub.

- ``formats``: formats told by content; tensors described from headers without reading them.
- ``checkpoint``: ``Checkpoint``, safetensors, PyTorch (``weights_only``) and .npz, one tensor
  read at a time after its size is checked.
- ``shards``: weights split over files, and safetensors read by the byte from a hub.
- ``tensorstore``: tensors read by the byte from a hub file, and the cache of row blocks.
- ``rows``: the rows of a table a lookup uses (row ``i`` of a row-major table sits at a known
  offset), read alone instead of the whole table.
- ``hub``: ``hf:ORG/NAME[@REV]``, offline first (the local cache), downloads only when allowed;
  a branch is resolved again with ``--download``; whole tables over 1 GiB only when allowed.
- ``remote``: one hub repo at one commit: its files, their sizes, byte ranges.
- ``hubhttp``: the HTTP rules: retries with backoff, the ``Content-Range`` check, errors that
  name the repo, the file and the status (never a signed URL's query string).
- ``families``: the registry, one declarative entry per model family (keyed by model_type).
- ``config``: what a model's ``config.json`` says about its input layer, read through its family.
- ``positions``: a config's rope, ALiBi and relative-bucket fields.
- ``keys``: ``TableKeys``, where a checkpoint keeps the input layer's tensors.
- ``familykeys``: where a known family keeps its input-layer tensors in a checkpoint.
- ``sources``: a checkpoint file, a folder or a hub model opened as one ``ModelSource``.
- ``tables``: which tensors are the token and positional tables, and whether they fit the flags.
- ``inventory``: what a checkpoint holds (``embedcli weights``).

Imports: families, core, io, errors.
"""

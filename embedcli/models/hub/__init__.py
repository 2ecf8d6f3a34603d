"""The Hugging Face hub, offline first: ``hf:ORG/NAME[@REVISION]``.

- ``spec``: ``HubSpec`` (the spec parsed and checked) and the hub's errors.
- ``cache``: the local Hugging Face cache: refs, snapshots, ``.no_exist`` marks, the offline miss.
- ``session``: ``HubAccess``, what one command allows (``--download``, ``--download-all``),
  where its notices go, and the commits the hub named during it; made by the command line and
  passed down (``OFFLINE`` where none is given).
- ``http``: the HTTP rules: the endpoint (a malformed HF_ENDPOINT refused), retries with
  backoff and a capped ``Retry-After``, the ``Content-Range`` check, errors that name the repo,
  the file and the status (never a signed URL's query string nor the token).
- ``remote``: one hub repo at one commit: its small files whole (their size checked first),
  byte ranges, its commit.
- ``shards``: weights split over files by an index, and safetensors read by the byte.
- ``rows``: the rows of a table a lookup uses, read alone instead of the whole table.
- ``tensorstore``: embedcli's cache of what was fetched: headers, whole tensors, row blocks.

huggingface_hub is imported only on the paths that reach the hub: downloads and range reads
(remote.py), and the ``.no_exist`` marks of a model that is not cached (cache.py).
"""

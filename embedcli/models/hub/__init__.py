"""The Hugging Face hub, offline first: ``hf:ORG/NAME[@REVISION]``.

- ``spec``: ``HubSpec`` (the spec parsed and checked), the hub's errors, and the local cache.
- ``http``: the HTTP rules: retries with backoff, the ``Content-Range`` check, errors that name
  the repo, the file and the status (never a signed URL's query string nor the token).
- ``remote``: one hub repo at one commit: its small files whole, byte ranges, its commit.
- ``shards``: weights split over files by an index, and safetensors read by the byte.
- ``rows``: the rows of a table a lookup uses, read alone instead of the whole table.
- ``tensorstore``: embedcli's cache of what was fetched: headers, whole tensors, row blocks.

huggingface_hub is imported only on the paths that reach the hub.
"""

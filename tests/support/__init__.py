"""What the tests share and check against, never tests themselves (``from support.helpers import
make_runner``; ``pyproject.toml`` puts tests/ on the path):

- helpers.py                  the repository's paths, a CLI runner, subprocesses run as a shell
                              would, the checks of an ``Error:`` line and of lazy imports
- checkpoints.py              checkpoints in every layout embedcli reads, with seeded tables
- familymodels.py             tiny random models of every registry family, saved by transformers
- ggufmodels.py               transformers' tiny models written as GGUF files, quantized or not
- ggufvocab.py                GGUF tokenizer metadata as convert_hf_to_gguf.py writes it
- ggufbytes.py                GGUF files written byte by byte, so that any field can lie
- hub/                        the stand-in hub: GPT-2's tokenizer, tiny models, the hub cache,
                              loopback sockets and ``FakeHub`` (its ``__init__`` lists them)
- contract/                   the contract every command keeps, and its fuzzer (cases, runs,
                              checks; its ``__init__`` lists them)
- golden_oracle.py            golden files' numbers, read back and recomputed (the registry and
                              shared readers; tokens, embeddings, shapes, statistics)
- golden_oracle_attention.py  the same for positions: sinusoids, rope and ALiBi
- golden_oracle_tables.py     the same for checkpoints, windows, heatmaps and devices
- renderinputs.py             the inputs the rendered views (and their oracle) are built from
- update_family_defaults.py   script: writes embedcli/families/defaults.json from transformers
- update_readme.py            script: re-runs the examples of README.md and docs/, pastes output
"""

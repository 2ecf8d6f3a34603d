"""What the tests share and check against, never tests themselves (``from support.helpers import
make_runner``; ``pyproject.toml`` puts tests/ on the path):

- helpers.py                  the repository's paths, a CLI runner, subprocesses run as a shell
                              would, the checks of an ``Error:`` line and of lazy imports
- checkpoints.py              checkpoints in every layout embedcli reads, with seeded tables
- familymodels.py             tiny random models of every registry family, saved by transformers
- familycases/                the cases it builds, one module per group of families
- familysurvey.py             script: every type of transformers' mappings built and embedded
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
- checkpointfiles.py          small checkpoint files, and each command that reads one, run on it
- positionruns.py             the positions command run on small model folders
- modelfolders.py             the tiny model folders the model tests share, transformers as oracle
- modeltokenizers.py          real models' tokenizers (Llama 3 and 4, GPT-2's tokenizer.json)
- tinytokenizers.py           tiny tokenizer.json files (byte-level, SentencePiece-style), and
                              a way to damage one
- standinrepos.py             the repos the stand-in hub's own tests are built on
- pcaoracle.py                numpy's exact SVD as project's oracle, tables with planted structure
- countruns.py                `embedcli count` run through the CLI, and tiktoken's whole-text count
- embedruns.py                `embedcli embed` run through the CLI, and a small model's flags
- windowinputs.py             the text and seeded tables the window and streaming tests feed in
- cliflags.py                 every command of the app with its options, read from the app
- update_family_defaults.py   script: writes embedcli/families/defaults.json from transformers
- update_readme.py            script: re-runs the examples of README.md and docs/, pastes output
"""

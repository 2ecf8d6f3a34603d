"""Every benchmark in one run: `python bench/run.py` (see each module's docstring for options).

- startup_bench: inspect-shapes against `import torch`, tokenize --count and count against a
  tiktoken floor script, embed against a plain torch + tiktoken script (this environment; give
  it --env DIR for each torch wheel: see bench/make_wheel_envs.sh).
- tokenize_bench: `embedcli tokenize --count` against ttok, start-up and a 20 MB file
  (needs `pip install ttok` in the same environment).
- weights_bench: peak memory of `embed --weights` with a generated 1.7 GB checkpoint.
- models_bench: bytes a sharded 15 GB model folder and a 405B-shaped hub repo give up to
  `weights` and `inspect-shapes`, and `embed --weights FOLDER` memory against its tables.
- count_bench: `embedcli count PATH` of four trees made from Python's standard library against
  a plain one-process tiktoken loop over the same files.
- stream_bench: streaming `embed --seq-len` of a 20 MB text against a plain torch loop, and
  `embed --lines` against one process a line.
- undertrained_bench: `embedcli undertrained` on the sample model and a GPT-2-shaped table
  against the whole matrix in float64 with NumPy (needs the sample extra).
"""

from __future__ import annotations

import count_bench
import models_bench  # bench/ is on sys.path: Python puts a script's folder first
import startup_bench
import stream_bench
import tokenize_bench
import undertrained_bench
import weights_bench

if __name__ == "__main__":
    startup_bench.main([])
    print()
    tokenize_bench.main([])
    print()
    weights_bench.main([])
    print()
    models_bench.main([])
    print()
    count_bench.main([])
    print()
    stream_bench.main([])
    print()
    undertrained_bench.main([])

"""The floor for counting tokens: what any tool must do, and nothing else.

Import tiktoken, load already-parsed ranks (a marshal file of {token bytes: rank}, written by
`startup_bench.py` from the hash-verified files), build the encoding from tiktoken's own
definition of it, encode, print the count. No argument parsing library, no checks, no output
formatting.

    python bench/tiktoken_floor.py ENCODING RANKS_FILE TEXT
    python bench/tiktoken_floor.py ENCODING RANKS_FILE -f FILE
"""

import marshal
import sys

import tiktoken
from tiktoken_ext import openai_public

name, ranks_file, *rest = sys.argv[1:]
with open(ranks_file, "rb") as handle:
    ranks = marshal.loads(handle.read())  # whole: marshal.load on a file reads piecemeal, slower
# tiktoken's constructor gives the pattern and special tokens; its loaders get the parsed ranks.
openai_public.load_tiktoken_bpe = openai_public.data_gym_to_mergeable_bpe_ranks = (
    lambda *args, **kwargs: ranks
)
encoding = tiktoken.Encoding(**getattr(openai_public, name)())
if rest[0] == "-f":
    with open(rest[1], encoding="utf-8") as handle:
        text = handle.read()
else:
    text = rest[0]
print(len(encoding.encode_ordinary(text)))

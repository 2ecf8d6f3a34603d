"""Counting engines: what counts the tokens of a text when only the count is wanted.

tiktoken is the reference, and the fallback for everything. ``fastokens`` (the optional extra
``embedcli[fast]``) counts an encoding only where all of these hold:

- the encoding is one of embedcli's bundled ones (hash-verified files, tiktoken's own pattern),
  and ``fastokens`` is installed at a version embedcli has proven exact for it (``PROVEN``: the
  differential tests of tests/test_engines.py, against tiktoken, on random text of the
  characters that stress pre-tokenizers, the shared corpus, Python's standard library and this
  repository, and blocks cut where ``count`` cuts them; an engine that disagrees once is not
  listed for that encoding);
- its tables are built from the same verified ranks tiktoken holds, and they agree with
  tiktoken's on a check text when built;
- ``EMBEDCLI_COUNT_ENGINE`` is not ``tiktoken`` (which turns every other engine off;
  ``fastokens`` builds its tables before the first text, whatever its length).

Building fastokens' tables costs a core 0.45-0.7 s (cl100k_base) to 1.1-2.0 s (o200k_base),
measured, so a job decides up front whether they repay it (``worth_it``: ``MIN_CHARS`` per process
or thread): ``count`` from the size of its first window of files, spread over its workers (every
worker of the job then builds them before its first text, so a job is counted by one engine),
``tokenize --count`` from the text's length, spread over its threads (the calling thread builds
them while the others count with tiktoken). Either way the count is the same: the engine never
changes a count, only how long it takes. Text with lone surrogates, and text whose special tokens
are to be counted as special ids, is always counted by tiktoken.

``used()`` says which engines counted each encoding in this process; ``describe()`` what each
encoding would be counted with, and why (``count --engine-info``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from embedcli.errors import UsageError
from embedcli.tokenization.bpe import dump_tiktoken_bpe
from embedcli.tokenization.encodings import BUNDLED_ENCODINGS, get_encoding
from embedcli.tokenization.gguf.native import NativeTokenizer
from embedcli.tokenization.hfjson import HFTokenizer
from embedcli.tokenization.kinds import MODEL_TOKENIZERS
from embedcli.tokenization.tiktokenfile import ModelTiktoken

if TYPE_CHECKING:
    import tiktoken

ENV = "EMBEDCLI_COUNT_ENGINE"
ENGINE_CHOICES = ("auto", "tiktoken", "fastokens")
# fastokens version -> the encodings it is proven exact for (tests/test_engines.py), each built
# with fastokens' own pre-tokenizer for it. Not gpt2 nor r50k_base: fastokens' general regex
# engine, which they would need, takes U+180E for whitespace (" \u180e1" splits differently).
PROVEN = {"0.3.5": ("cl100k_base",)}
# Texts where fastokens gives other ids than tiktoken (tests/test_engines.py checks each). Not
# o200k_base: its preset misses that U+017F (long s) case-folds to s in tiktoken's (?i:'s|...).
DISAGREES = {"gpt2": " \u180e1", "r50k_base": " \u180e1", "o200k_base": "a'\u017f'Llama"}
# Characters each process (or thread) of a job must have to count for the build to repay: a
# little over what tiktoken counts on one core in the time the build takes, with every core busy
# (measured on this project's 2-core machines: 0.7 s at 14 million characters a second for
# cl100k_base, 1.7-2.0 s at 17-18 million for o200k_base). Checked by bench/count_bench.py and
# bench/tokenize_bench.py: tokenize --count of 20 MB of cl100k_base text on two threads was 15%
# slower with fastokens, of 40 MB 24% faster; fastokens throughout a count of 53 MB of
# o200k_base text on two processes was 26% slower than tiktoken.
MIN_CHARS = {"cl100k_base": 11 << 20, "o200k_base": 40 << 20}
CHECK_TEXT = "embedcli's check: Hello, world! 12345 \u00e9\u4e2d\u6587 \U0001f600  \n\tdef f(x):\n"


@dataclass(frozen=True)
class EngineInfo:
    """What counts an encoding, and why (``count --engine-info``)."""

    encoding: str
    engine: str  # "fastokens 0.3.5" or "tiktoken 0.14.0"
    reason: str
    min_chars: int | None = None  # from how many characters in a process the fast engine counts


@cache
def tiktoken_label() -> str:
    import tiktoken

    return f"tiktoken {getattr(tiktoken, '__version__', '?')}"


def reference_label(enc: Any) -> str:
    """The engine that counts ``enc`` when no faster one does: tiktoken for a tiktoken
    encoding (a model's tiktoken-format file too), Hugging Face's tokenizers for a
    tokenizer.json or a byte-level GGUF tokenizer, embedcli's own port of llama.cpp for the
    other GGUF tokenizers."""
    import tiktoken

    if isinstance(enc, (tiktoken.Encoding, ModelTiktoken)):
        return tiktoken_label()
    if isinstance(enc, HFTokenizer):
        return _tokenizers_label()
    if isinstance(enc, NativeTokenizer):
        return "embedcli's port of llama.cpp's tokenizer"
    return type(enc).__name__


@cache
def _tokenizers_label() -> str:
    from importlib.metadata import version

    return f"tokenizers {version('tokenizers')}"


@cache
def _fastokens_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fastokens")
    except PackageNotFoundError:
        return None


def _bundled(enc: Any) -> bool:
    """Whether ``enc`` is (a copy of) embedcli's own bundled encoding of its name."""
    import tiktoken

    if type(enc) is not tiktoken.Encoding or enc.name not in BUNDLED_ENCODINGS:
        return False
    own = get_encoding(enc.name)
    return enc._mergeable_ranks is own._mergeable_ranks and enc._pat_str == own._pat_str


def mode() -> str:
    """``EMBEDCLI_COUNT_ENGINE``: auto (the default), tiktoken, or fastokens (from the first
    character, where it is proven exact)."""
    chosen = os.environ.get(ENV) or "auto"
    if chosen not in ENGINE_CHOICES:
        raise UsageError(f"{ENV} must be one of {', '.join(ENGINE_CHOICES)}, got {chosen!r}")
    return chosen


def min_chars(name: str) -> int:
    """Characters a process must have had to count before it builds the fast tables."""
    return 0 if mode() == "fastokens" else MIN_CHARS.get(name, 1 << 62)


def why_not(enc: Any) -> str | None:
    """Why fastokens does not count ``enc`` (None: it may)."""
    name = enc.name
    if mode() == "tiktoken":
        return f"{ENV}=tiktoken"
    if not _bundled(enc):
        return "no faster engine is proven exact for it"
    installed = _fastokens_version()
    if installed is None:
        if mode() == "fastokens":
            raise UsageError(
                f"{ENV}=fastokens, but fastokens is not installed: pip install 'embedcli[fast]'"
            )
        return "fastokens is not installed (pip install 'embedcli[fast]')"
    if name not in PROVEN.get(installed, ()):
        if name in DISAGREES:
            return f"fastokens disagrees with tiktoken on {DISAGREES[name]!r}"
        proven = ", ".join(v for v, names in PROVEN.items() if name in names)
        return f"fastokens {installed} is not proven exact for {name}" + (
            f" (proven: {proven})" if proven else ""
        )
    return None


class _Fast:
    """fastokens' tables for one encoding, built once, by the first thread that needs them."""

    def __init__(self, enc: tiktoken.Encoding) -> None:
        self.enc = enc
        self.tokenizer: Any = None
        self.failed: str | None = None
        self.lock = threading.Lock()

    def wait(self) -> Any:
        """The tables, built now on this thread if need be (None: they could not be)."""
        with self.lock:
            if self.tokenizer is None and self.failed is None:
                try:
                    self.tokenizer = build_fast(self.enc)
                except Exception as exc:  # any failure leaves tiktoken counting, and says why
                    self.failed = f"fastokens could not be built: {type(exc).__name__}: {exc}"
        return self.tokenizer


def build_fast(enc: tiktoken.Encoding) -> Any:
    """fastokens' tokenizer of a bundled encoding, from the verified ranks tiktoken holds,
    checked against tiktoken on ``CHECK_TEXT``."""
    import tempfile

    import fastokens

    data = dump_tiktoken_bpe(enc._mergeable_ranks)
    with tempfile.TemporaryDirectory(prefix="embedcli-ranks-") as folder:
        path = os.path.join(folder, f"{enc.name}.tiktoken")
        with open(path, "wb") as handle:
            handle.write(data)
        tokenizer = fastokens.Tokenizer.from_tiktoken(path, encoding=enc.name)
    expected = len(enc._mergeable_ranks) + len(enc._special_tokens)
    if tokenizer.vocab_size != expected:
        raise ValueError(f"{tokenizer.vocab_size} tokens, tiktoken has {expected}")
    if tokenizer.encode_ordinary(CHECK_TEXT).ids != enc.encode_ordinary(CHECK_TEXT):
        raise ValueError("its ids of the check text are not tiktoken's")
    return tokenizer


_LOCK = threading.Lock()
_FAST: dict[tuple[str, int], _Fast | None] = {}  # (name, id of the ranks) -> tables, or None
_USED: dict[tuple[str, str], set[str]] = {}  # by _key(encoding)


def _reset() -> None:  # a forked child builds its own (fastokens' threads do not survive a fork)
    _FAST.clear()
    _USED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset)


def _fast_key(enc: Any) -> tuple[str, int]:
    import tiktoken

    ranks = enc._mergeable_ranks if isinstance(enc, tiktoken.Encoding) else None
    return enc.name, id(ranks)


def _fast_for(enc: Any) -> _Fast | None:
    key = _fast_key(enc)
    with _LOCK:
        if key not in _FAST:
            _FAST[key] = _Fast(enc) if why_not(enc) is None else None
        return _FAST[key]


def worth_it(enc: Any, chars: int, processes: int = 1) -> bool:
    """Whether fastokens should count a job of ``chars`` characters of ``enc`` spread over
    ``processes`` (or threads): where it may (``why_not``), when each has at least
    ``MIN_CHARS`` to count, or whatever the size with EMBEDCLI_COUNT_ENGINE=fastokens."""
    if _fast_for(enc) is None:
        return False
    return chars >= min_chars(enc.name) * max(processes, 1)


def fast_counter(enc: Any, build: bool = False) -> Callable[[str], int] | None:
    """fastokens' count for ``enc``: if its tables are built, or ``build`` (then built now,
    on this thread); None where fastokens may not count ``enc``, or its tables failed."""
    # unless asked to build, only tables already begun count: a short text never pays for
    # asking whether fastokens is installed (importlib.metadata: 19 ms of start-up)
    fast = _fast_for(enc) if build else _FAST.get(_fast_key(enc))
    if fast is None:
        return None
    tokenizer = fast.tokenizer if not build else fast.wait()
    if tokenizer is None:
        return None
    return lambda text: len(tokenizer.encode_ordinary(text))


def builder(enc: Any, chars: int, threads: int = 1) -> Callable[[], object] | None:
    """For one text of ``chars`` counted on ``threads`` threads: a job that builds the fast
    tables on the thread that runs it (while the others count with tiktoken), when the text
    is long enough to repay the build on that many threads; None when it is not, when they
    are built, or when fastokens may not count ``enc``."""
    if chars < min_chars(enc.name) * max(threads, 1):
        return None  # too short to repay a build: fastokens is not even looked for
    fast = _fast_for(enc)
    if fast is None or fast.tokenizer is not None or fast.failed is not None:
        return None
    return fast.wait if worth_it(enc, chars, threads) else None


def count_ordinary(
    enc: Any, text: str, tiktoken_count: Callable[[str], int], fast: bool | None = None
) -> int:
    """The tokens of ``text`` (special-token text counted as text): fastokens where it may
    count and ``fast`` (None: if its tables are built, or EMBEDCLI_COUNT_ENGINE=fastokens),
    else ``tiktoken_count``."""
    build = fast if fast is not None else min_chars(enc.name) == 0
    fast_count = fast_counter(enc, build) if fast is not False else None
    if fast_count is not None:
        try:
            count = fast_count(text)
        except UnicodeEncodeError:  # lone surrogates: tiktoken's own handling of them
            pass
        else:
            _note(enc, fast_label())
            return count
    count = tiktoken_count(text)
    note_reference(enc)
    return count


def note_reference(enc: Any) -> None:
    """Say that the reference engine counted ``enc`` (text whose special tokens are ids)."""
    _note(enc, reference_label(enc))


def fast_label() -> str:
    return f"fastokens {_fastokens_version()}"


def _key(enc: Any) -> tuple[str, str]:
    """An encoding's name and file: a tokenizer file's name may be another's ("gpt2" for a
    folder named gpt2)."""

    return enc.name, str(enc.path) if isinstance(enc, MODEL_TOKENIZERS) else ""


def _note(enc: Any, label: str) -> None:
    used = _USED.setdefault(_key(enc), set())
    if label not in used:
        with _LOCK:
            used.add(label)


def _fastest_first(labels: set[str]) -> list[str]:
    def order(label: str) -> tuple[bool, str]:  # the reference engines last
        return label.startswith(("tiktoken ", "tokenizers ")), label

    return sorted(labels, key=order)


def used_by(enc: Any) -> list[str]:
    """The engines that counted ``enc`` in this process, fastest first."""
    return _fastest_first(_USED.get(_key(enc), set()))


def used() -> dict[str, list[str]]:
    """The engines that counted each encoding in this process, by name, fastest first."""
    named: dict[str, set[str]] = {}
    for (name, _), labels in list(_USED.items()):
        named.setdefault(name, set()).update(labels)
    return {name: _fastest_first(labels) for name, labels in named.items()}


def note_used(enc: Any, labels: list[str]) -> None:
    """Add what another process (a worker) says counted ``enc``."""
    for label in labels:
        _note(enc, label)


def describe(enc: Any) -> EngineInfo:
    """What counts ``enc``, and why; builds the fast tables (to check them) when they may
    count."""
    name = enc.name
    reason = why_not(enc)
    if reason is None:
        fast = _fast_for(enc)
        assert fast is not None
        if fast.wait() is not None:
            return EngineInfo(
                name,
                fast_label(),
                "proven exact",
                min_chars(name),
            )
        reason = fast.failed
    return EngineInfo(name, reference_label(enc), reason)

"""The proof behind ``engines.PROVEN``: fastokens' ids of a bundled encoding are tiktoken's.

Differential tests, always against tiktoken: random text of the characters that stress
pre-tokenizers, the shared corpus, Python's standard library and this repository, and blocks cut
where ``count`` cuts them. An engine that disagrees once is not used for that encoding. Then unit
tests of how engines.py chooses an engine and falls back to tiktoken.
"""

from __future__ import annotations

import os
import random
import string
import sysconfig
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from embedcli.corpus import pieces
from embedcli.corpus.selection import Found
from embedcli.errors import InputTextError
from embedcli.tokenization import engines, tiktokenfile, tokens
from embedcli.tokenization.bpe import dump_tiktoken_bpe
from embedcli.tokenization.counts import count_ids, count_ordinary
from embedcli.tokenization.encodings import BUNDLED_ENCODINGS, get_encoding

REPO = Path(__file__).resolve().parents[2]
CORPORA = REPO.parent / "shared" / "corpora"
# Every encoding some fastokens version is proven for: a new version is tested on all of them.
NAMES = [name for name in BUNDLED_ENCODINGS if any(name in v for v in engines.PROVEN.values())]
needs_fastokens = pytest.mark.skipif(
    engines._fastokens_version() is None, reason="fastokens (embedcli[fast]) is not installed"
)

WHITESPACE = [" ", "  ", "     ", "\n", "\n\n", "\r", "\r\n", "\t", " \n", "\t ", "\x0b", "\x0c"]
WHITESPACE += ["\x1c", "\x1f", "\x85", "\u1680", "\u2000", "\u2028", "\u2029", "\u205f", "\u3000"]
WHITESPACE += ["\u00a0", "\u202f", "\u200b", "\ufeff", "\u00a0 ", "\u3000 ", "\u180e", "\u2060"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", "'T", "'Ve", "'"]
CONTRACTIONS += ["\u2019s", "'sS", "'\u0301", "'\u017f", "\u017f", "'\u212a", "'\u0130"]
WORDS = ["Hello", "WORLD", "camelCase", "snake_case", "don't", "I'M", "e\u0301", "\u0300", "ß"]
WORDS += ["\U0001f44d\U0001f3fd", "\U0001f468\u200d\U0001f469\u200d\U0001f467", "\U0001f600"]
WORDS += ["\u2764\ufe0f", "\U0001f1eb\U0001f1f7", "中文字符", "漢字", "한국어", "안녕하세요"]
WORDS += ["مرحبا", "العربية", "Ωμέγα", "Привет"]
WORDS += ["हिन्दी", "नमस्ते", "ภาษาไทย", "สวัสดี", "1234567890123456789", "3.14", "1,000", "٣٤٥"]
WORDS += ["Ⅳ", "ⅻ", "½", "²", "ǅ", "ﬁ", "\ufffd", "\u00ad", "ʼ", "<|endoftext|>", "<|fim_prefix|>"]
WORDS += ["<|endofprompt|>", "<|fim_middle|>", "<|"]
PIECES = WHITESPACE + CONTRACTIONS + WORDS
CHARS = string.ascii_letters + string.digits + string.punctuation + "éüñØœ\u017f"
CHARS += "".join(c for c in WHITESPACE if len(c) == 1)
TEXTS = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(alphabet=CHARS, min_size=1, max_size=6)),
    max_size=30,
).map("".join)
EXAMPLES = 4000  # per encoding
TEXT_SUFFIXES = (".py", ".md", ".toml", ".txt", ".sh", ".json")  # this repository's text


def hostile_text(rng: random.Random, size: int) -> str:
    """About ``size`` characters of the pieces and characters above, mixed at random, with
    whitespace often (cuts go at spaces: whitespace before one is where a cut can go wrong)."""
    out: list[str] = []
    held = 0
    while held < size:
        kind = rng.random()
        if kind < 0.3:
            out.append(rng.choice(WHITESPACE))
        elif kind < 0.65:
            out.append(rng.choice(PIECES))
        else:
            out.append("".join(rng.choices(CHARS, k=rng.randint(1, 8))))
        held += len(out[-1])
    return "".join(out)


def first_difference(enc: tiktoken.Encoding, expected: list[int], got: list[int]) -> str:
    """Where two id lists part, as the text around that place (to read a failure)."""
    at = next((i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b), None)
    at = min(len(expected), len(got)) if at is None else at
    near = enc.decode_bytes(expected[max(0, at - 4) : at + 4])
    return f"ids differ at {at} of {len(expected)}, near {near!r}"


def assert_same_ids(enc: tiktoken.Encoding, fast, text: str) -> None:
    expected, got = enc.encode_ordinary(text), fast.encode_ordinary(text).ids
    assert got == expected, first_difference(enc, expected, got)


@pytest.fixture(scope="module", params=NAMES)
def pair(request, tmp_path_factory):
    """A bundled encoding and fastokens' tokenizer of it, built once per module."""
    if engines._fastokens_version() is None:
        pytest.skip("fastokens (embedcli[fast]) is not installed")
    with pytest.MonkeyPatch.context() as patch:  # no module fixture writes to the user's caches
        patch.setenv("EMBEDCLI_CACHE_DIR", str(tmp_path_factory.mktemp("engines-cache")))
        patch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("engines-tiktoken")))
        enc = get_encoding(request.param)
        return enc, engines.build_fast(enc)


@pytest.fixture(autouse=True)
def fresh_engines():
    """No test sees another's tables or engines used, nor count's encodings of an earlier
    get_encoding cache (another module may have cleared it: its copies are not _bundled);
    the process's own come back after."""
    saved = dict(engines._FAST), {name: set(labels) for name, labels in engines._USED.items()}
    held = dict(pieces._ENCODINGS)
    engines._reset()
    pieces._ENCODINGS.clear()
    yield
    engines._reset()
    engines._FAST.update(saved[0])
    engines._USED.update(saved[1])
    pieces._ENCODINGS.clear()
    pieces._ENCODINGS.update(held)


@pytest.fixture
def engaged(pair, monkeypatch):
    """The pair, with engines' fast engine counting its encoding from the first character:
    built through engines' own thread, from the module's tokenizer (build_fast's result)."""
    enc, fast = pair
    monkeypatch.setattr(engines, "MIN_CHARS", dict.fromkeys(engines.MIN_CHARS, 0))
    monkeypatch.setattr(engines, "build_fast", lambda built: fast if built is enc else None)
    info = engines.describe(enc)
    assert info.engine == engines.fast_label(), info.reason
    return enc, fast


@pytest.fixture
def no_build(monkeypatch):
    """Fail the test if anything builds fastokens' tables."""

    def refuse(enc):
        raise AssertionError(f"fastokens was built for {enc!r}")

    monkeypatch.setattr(engines, "build_fast", refuse)
    monkeypatch.setattr(engines, "MIN_CHARS", dict.fromkeys(engines.MIN_CHARS, 0))


def tiktoken_only(enc) -> dict[str, list[str]]:
    return {enc.name: [engines.reference_label(enc)]}


def used_sets() -> dict[str, set[str]]:
    """engines.used(), order aside (see test_used_fastest_first)."""
    return {name: set(labels) for name, labels in engines.used().items()}


# ---------------------------------------------------------------- differential: random text


CONTEXTS = (" {}1", "a{}b", "\n{} ", "{}{}'s", " {} {}\t", "1{}2{}")


def test_every_code_point(pair) -> None:
    """Every code point but the surrogates, in contexts where pre-tokenizers part ways
    (whitespace or not, letter or not, number or not): ids equal, a thousand at a time."""
    enc, fast = pair
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(points), 1000):
        chars = [chr(c) for c in points[start : start + 1000]]
        text = "".join(context.format(c, c) for c in chars for context in CONTEXTS)
        assert_same_ids(enc, fast, text)


@pytest.mark.parametrize("name", sorted(engines.DISAGREES))
def test_what_keeps_an_encoding_out(name, tmp_path) -> None:
    """An encoding fastokens disagrees on is not proven: its general regex engine (the one
    gpt2 and r50k_base would need) splits the text engines.DISAGREES names otherwise."""
    import fastokens

    enc = get_encoding(name)
    path = tmp_path / f"{name}.tiktoken"
    path.write_bytes(dump_tiktoken_bpe(enc._mergeable_ranks))
    if name in ("cl100k_base", "o200k_base"):  # fastokens' own preset for it
        fast = fastokens.Tokenizer.from_tiktoken(str(path), encoding=name)
    else:
        fast = fastokens.Tokenizer.from_tiktoken(
            str(path), pattern=enc._pat_str, special_tokens=dict(enc._special_tokens)
        )
    text = engines.DISAGREES[name]
    assert fast.encode_ordinary(text).ids != enc.encode_ordinary(text)
    assert all(name not in names for names in engines.PROVEN.values())
    assert "disagrees with tiktoken" in engines.describe(enc).reason


def test_random_text(engaged) -> None:
    """Hypothesis texts of the hostile alphabet: the same ids, and count_ordinary's count by
    fastokens is tiktoken's."""
    enc, fast = engaged

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None)
    @given(text=TEXTS)
    def check(text: str) -> None:
        assert_same_ids(enc, fast, text)
        assert count_ordinary(enc, text) == len(enc.encode_ordinary(text))

    check()
    assert engines.used() == {enc.name: [engines.fast_label()]}


def test_long_random_text(engaged) -> None:
    """300 seeded texts of 1-5 KB of the same pieces."""
    enc, fast = engaged
    rng = random.Random(20240611)
    for _ in range(300):
        text = hostile_text(rng, rng.randint(1000, 5000))
        assert_same_ids(enc, fast, text)
        assert count_ordinary(enc, text) == len(enc.encode_ordinary(text))
    assert engines.used() == {enc.name: [engines.fast_label()]}


# ---------------------------------------------------------------- differential: real text


def test_shared_corpus(pair) -> None:
    enc, fast = pair
    if not CORPORA.is_dir():
        pytest.skip(f"no shared corpus at {CORPORA}")
    files = sorted(path for path in CORPORA.rglob("*") if path.is_file())
    assert files, f"{CORPORA} holds no files"
    for path in files:
        assert_same_ids(enc, fast, path.read_text(encoding="utf-8", errors="replace"))


def _tree_files() -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found = [p for p in stdlib.rglob("*.py") if not {"site-packages", "dist-packages"} & {*p.parts}]
    skip = {".git", ".venv", ".hypothesis", ".pytest_cache", ".ruff_cache", "__pycache__"}
    skip |= {"build", "dist", "site", "results"}
    for folder, subfolders, names in os.walk(REPO):
        subfolders[:] = [d for d in subfolders if d not in skip and not d.endswith(".egg-info")]
        found += [Path(folder, name) for name in names if name.endswith(TEXT_SUFFIXES)]
    return sorted(p for p in found if p.is_file())


@pytest.fixture(scope="module")
def tree() -> list[tuple[Path, str]]:
    """Every .py file of the standard library and every text file of this repository."""
    return [(path, path.read_text(encoding="utf-8", errors="replace")) for path in _tree_files()]


def test_stdlib_and_repository(pair, tree) -> None:
    """Whole files, ids compared (which compares the counts too): ~2,000 files, ~34 MB."""
    enc, fast = pair
    assert len(tree) > 500, "the standard library was not found"
    differ = []
    for path, text in tree:
        if fast.encode_ordinary(text).ids != enc.encode_ordinary(text):
            differ.append(str(path))
    assert not differ, f"{len(differ)} files differ, the first: {differ[:5]}"


# ---------------------------------------------------------------- differential: blocks


@pytest.fixture(scope="module")
def cut_files(tmp_path_factory) -> dict[str, Path]:
    """Two files: "prose", ~3 MB of the corpus (or this repository's README) with hostile text
    between copies, and "hostile", ~280 KB of hostile text alone, to cut every 61 bytes."""
    corpus = CORPORA / "the-verdict.txt"
    base = corpus if corpus.is_file() else REPO / "README.md"
    prose = base.read_text(encoding="utf-8", errors="replace")
    rng = random.Random(7)
    parts: list[str] = []
    while sum(map(len, parts)) < 2_500_000:
        parts += [prose, hostile_text(rng, 20_000)]
    folder = tmp_path_factory.mktemp("blocks")
    texts = {"prose": "".join(parts), "hostile": hostile_text(rng, 200_000)}
    for name, text in texts.items():
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    return {name: folder / f"{name}.txt" for name in texts}


@pytest.mark.parametrize(("which", "block"), [("prose", 4099), ("hostile", 61)])
def test_blocks_where_count_cuts(engaged, cut_files, which, block) -> None:
    """Blocks cut by pieces.pieces_of (find_cut), counted by count_task as `count` counts
    them, and chunks cut at tokens.split_points: their sums are tiktoken's whole count."""
    enc, fast = engaged
    path = cut_files[which]
    data = path.read_bytes()
    text = data.decode("utf-8")
    whole = len(enc.encode_ordinary(text))
    blocks = pieces.pieces_of([Found(str(path), str(path), len(data))], block_bytes=block)
    assert len(blocks) > 500
    assert b"".join(data[b.start : b.end] for b in blocks) == data
    parts = [data[b.start : b.end].decode("utf-8") for b in blocks]
    assert sum(len(fast.encode_ordinary(part)) for part in parts) == whole
    results = pieces.count_task(blocks, (enc.name,))
    assert [r.error for r in results if r.error] == []
    assert sum(r.counts[0] for r in results) == whole
    assert results[-1].engines == {enc.name: [engines.fast_label()]}
    chunks = tokens.chunks(text, block)
    assert len(chunks) > 500 and "".join(chunks) == text
    assert sum(len(fast.encode_ordinary(chunk)) for chunk in chunks) == whole


# ---------------------------------------------------------------- engine choice and fallbacks


@pytest.mark.parametrize("name", NAMES)
def test_env_turns_fastokens_off(name, monkeypatch, no_build) -> None:
    enc = get_encoding(name)
    monkeypatch.setenv(engines.ENV, "tiktoken")
    assert engines.why_not(enc) == f"{engines.ENV}=tiktoken"
    text = "Hello, world! don't \u3000 12345"
    assert count_ordinary(enc, text) == len(enc.encode_ordinary(text))
    assert engines.used() == tiktoken_only(enc)
    assert engines.describe(enc).engine == engines.tiktoken_label()


@needs_fastokens
@pytest.mark.parametrize("name", NAMES)
def test_unproven_version_falls_back(name, monkeypatch, no_build) -> None:
    enc = get_encoding(name)
    monkeypatch.setattr(engines, "PROVEN", {"0.0.1": tuple(NAMES)})
    reason = engines.why_not(enc)
    assert reason is not None and f"fastokens {engines._fastokens_version()} " in reason
    assert "0.0.1" in reason
    text = "Hello, world! 'LL \U0001f44d\U0001f3fd"
    assert count_ordinary(enc, text) == len(enc.encode_ordinary(text))
    assert engines.used() == tiktoken_only(enc)


def test_failed_build_falls_back(pair, monkeypatch) -> None:
    enc, _ = pair

    def broken(built):
        raise ValueError("its ids of the check text are not tiktoken's")

    monkeypatch.setattr(engines, "build_fast", broken)
    monkeypatch.setattr(engines, "MIN_CHARS", dict.fromkeys(engines.MIN_CHARS, 0))
    info = engines.describe(enc)
    assert info.engine == engines.tiktoken_label() and "could not be built" in info.reason
    assert count_ordinary(enc, "x y z") == len(enc.encode_ordinary("x y z"))
    assert engines.used() == tiktoken_only(enc)


def test_lone_surrogate_counted_by_tiktoken(engaged) -> None:
    enc, _ = engaged
    for text in ("a\ud800b", "\udfff", "x \ud83d tail"):
        assert count_ordinary(enc, text) == len(enc.encode_ordinary(text))
    assert engines.used() == tiktoken_only(enc)
    assert count_ordinary(enc, "ab") == len(enc.encode_ordinary("ab"))
    assert used_sets() == {enc.name: {engines.fast_label(), engines.tiktoken_label()}}


def test_special_ids_counted_by_tiktoken(engaged) -> None:
    enc, _ = engaged
    text = "a<|endoftext|>b <|endofprompt|> <|fim_prefix|>c"
    assert count_ids(enc, text, allow_special=True) == len(enc.encode(text, allowed_special="all"))
    assert engines.used() == tiktoken_only(enc)  # tiktoken's, and said to be
    with pytest.raises(InputTextError, match=r"the special token <\|"):
        count_ids(enc, text)
    plain = "no special token here"
    assert count_ids(enc, plain, allow_special=True) == len(enc.encode_ordinary(plain))
    assert engines.fast_label() in engines.used()[enc.name]


def test_a_job_chooses_its_engine_up_front(pair, monkeypatch, tmp_path) -> None:
    """worth_it: MIN_CHARS per process; below it nothing is built unless the job chose
    fastokens (count_task's ``fast``), and a job that did counts every text with it."""
    enc, fast = pair
    monkeypatch.setattr(engines, "build_fast", lambda built: fast)
    monkeypatch.setattr(engines, "MIN_CHARS", {enc.name: 20})
    assert not engines.worth_it(enc, 39, processes=2) and engines.worth_it(enc, 40, processes=2)
    assert count_ordinary(enc, "0123456789") == len(enc.encode_ordinary("0123456789"))
    entry = engines._FAST[(enc.name, id(enc._mergeable_ranks))]
    assert entry is not None and entry.tokenizer is None  # not chosen: nothing built
    assert engines.used() == tiktoken_only(enc)
    path = tmp_path / "a.txt"
    path.write_text("don't count me twice, 1234 \u3000 caf\u00e9", encoding="utf-8")
    piece = pieces.Piece(0, str(path), 0, path.stat().st_size)
    (result,) = pieces.count_task([piece], (enc.name,), "skip", (True,))
    assert result.counts == (len(enc.encode_ordinary(path.read_text(encoding="utf-8"))),)
    assert entry.tokenizer is fast and result.engines[enc.name][0] == engines.fast_label()
    engines._reset()
    (result,) = pieces.count_task([piece], (enc.name,), "skip", (False,))
    assert result.engines == tiktoken_only(enc)


@pytest.mark.parametrize("name", NAMES)
def test_model_tokenizer_never_given_to_fastokens(name, tmp_path, no_build) -> None:
    """A model's tiktoken file holding a bundled encoding's ranks, under its name (Qwen's
    pattern and NFC): neither it nor its tiktoken.Encoding is counted by fastokens."""
    bundled = get_encoding(name)
    path = tmp_path / f"{name}.tiktoken"
    path.write_bytes(dump_tiktoken_bpe(bundled._mergeable_ranks))
    model = tiktokenfile.load_tiktoken_file(path, name, family="qwen")
    text = "cafe\u0301 don't 1234567"
    for enc in (model, model.encoding):
        assert enc.name == name and engines.why_not(enc) is not None
        assert count_ordinary(enc, text) == len(enc.encode_ordinary(text))
        assert engines.describe(enc).engine == engines.tiktoken_label()
    assert count_ordinary(model, "e\u0301") != len(bundled.encode_ordinary("e\u0301"))
    assert engines.used() == tiktoken_only(model)


def test_used_fastest_first(engaged) -> None:
    """used() (and count --json's "engines") lists the fastest engine first."""
    enc, _ = engaged
    count_ordinary(enc, "a\ud800b")  # tiktoken's
    count_ordinary(enc, "ab")  # fastokens'
    assert engines.used() == {enc.name: [engines.fast_label(), engines.tiktoken_label()]}

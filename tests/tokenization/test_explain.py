"""tokenize --explain's replay (embedcli.tokenization.explain) against the real encoders."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.helpers import expect_error, make_runner, unsure_unicode
from support.tinytokenizers import byte_level_json, edited

from embedcli.cli import app
from embedcli.errors import InputTextError
from embedcli.tokenization.encodings import get_encoding
from embedcli.tokenization.explain import (
    MAX_CHUNK_BYTES,
    SHOWN_PARTS,
    SHOWN_STEPS,
    explain,
    merge_steps,
)

runner = make_runner()

ENCODINGS = ("gpt2", "cl100k_base", "o200k_base")
# Text that exercises the split patterns: letters of several scripts, digits, contractions,
# punctuation, every kind of whitespace, emoji (4-byte UTF-8), and combining marks.
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("ab zZ09'sllveT.,!?-_\n\t\r \u3000\u00a0\u2028\x0b\x85")),
        st.sampled_from(["é", "ß", "中", "文", "😀", "🇫", "🇷", "\u0301", "ﬁ", "Ω", "ǅ"]),
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
    ),
    max_size=60,
)


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=120, deadline=None)
@given(text=TEXT)
@example(text="Hello, unbelievable world!! 12345")
@example(text="   \n\n  x  ")
@example(text="aaaaaaaaaaaaaaaa")  # equal ranks: the leftmost pair merges first
# An odd run of one letter that is no token: merging the rightmost of equal pairs first would
# give other tokens ("bb" "b" against "b" "bb"), in each of the three encodings.
@example(text="bbbbb ccc eeeee")
@example(text="<|fim_suffix|>")  # a special token's text, not allowed: refused as encode does
def test_the_chunks_replay_the_encoder(name: str, text: str) -> None:
    enc = get_encoding(name)
    if any(special in text for special in enc.special_tokens_set):
        # as encode does: a special token's text is refused unless it is allowed
        with pytest.raises(InputTextError, match="pass --allow-special"):
            explain(enc, text, limit=10**9)
        return
    if unsure_unicode(text):
        with pytest.raises(InputTextError, match="cannot be sure how tiktoken's splitter"):
            explain(enc, text, limit=10**9)
        return
    explained = explain(enc, text, limit=10**9)
    assert [i for c in explained.chunks for i in c.ids] == enc.encode_ordinary(text)
    assert explained.ids == enc.encode_ordinary(text)
    assert "".join(c.text for c in explained.chunks) == text  # the chunks tile the text
    assert explained.total_chunks == len(explained.chunks)
    for chunk in explained.chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        if not chunk.special:  # each merge joins two parts into one
            assert len(chunk.parts) - chunk.total_steps == len(
                chunk.steps[-1].parts if chunk.steps else chunk.parts
            )
            assert [s.step for s in chunk.steps] == list(range(1, chunk.total_steps + 1))


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=40, deadline=None)
@given(text=TEXT, special=st.sampled_from(["<|endoftext|>", "<|fim_prefix|>", "<|endofprompt|>"]))
def test_allowed_special_tokens_are_chunks_of_their_own(name: str, text: str, special: str) -> None:
    enc = get_encoding(name)
    if special not in enc.special_tokens_set:
        special = "<|endoftext|>"
    full = text[: len(text) // 2] + special + text[len(text) // 2 :]
    if unsure_unicode(full):
        return  # refused (test_a_character_of_another_unicode_version_is_refused)
    explained = explain(enc, full, allow_special=True, limit=10**9)
    assert [i for c in explained.chunks for i in c.ids] == enc.encode(full, allowed_special="all")
    assert any(c.special and c.text == special for c in explained.chunks)


def test_a_long_text_shows_its_first_chunks_and_counts_the_rest() -> None:
    enc = get_encoding("gpt2")
    text = "The verdict was read aloud. " * 1000
    explained = explain(enc, text, limit=5)
    assert len(explained.chunks) == 5
    assert explained.total_chunks == len(enc.encode_ordinary(text))  # one token a chunk here
    assert explained.ids == enc.encode_ordinary(text)


def test_merges_are_the_lowest_ranked_pair_each_time() -> None:
    """' unbelievable' in gpt2, by hand: each step merges the adjacent pair whose joined bytes
    have the lowest rank among all adjacent pairs at that moment."""
    ranks = get_encoding("gpt2")._mergeable_ranks
    parts = [bytes([b]) for b in b" unbelievable"]
    for step in merge_steps(ranks, b" unbelievable")[1]:
        candidates = {
            i: ranks[parts[i] + parts[i + 1]]
            for i in range(len(parts) - 1)
            if parts[i] + parts[i + 1] in ranks
        }
        lowest = min(candidates.values())
        assert (step.rank, step.at) == (
            lowest,
            min(i for i, r in candidates.items() if r == lowest),
        )
        parts[step.at : step.at + 2] = [parts[step.at] + parts[step.at + 1]]
    assert parts == [b" unbelievable"]


LETTERS = "ab aae  \u00e9\u4e2d1"  # runs of letters that merge, and multi-byte characters


def _scan_every_pair(ranks: dict[bytes, int], piece: bytes) -> tuple[list[bytes], list[tuple]]:
    """The reference: scan every adjacent pair at every step (n^2), keep every step."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    steps = []
    while len(parts) > 1:
        pairs = enumerate(itertools.pairwise(parts))
        found = [(ranks[a + b], i) for i, (a, b) in pairs if a + b in ranks]
        if not found:
            break
        rank, i = min(found)
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
        steps.append((rank, i, parts[i].hex(), [p.hex() for p in parts]))
    return parts, steps


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=300, deadline=None)
@given(
    piece=st.one_of(
        st.binary(max_size=80),
        st.text(alphabet=st.sampled_from(list(LETTERS)), max_size=300).map(str.encode),
    )
)
@example(piece=b"cid a ag")  # a dead part's stale pair once merged again
def test_the_heap_merges_as_a_scan_of_every_pair(name: str, piece: bytes) -> None:
    """merge_steps' heap takes the pairs a full scan takes, in order: the steps it keeps are the
    scan's (the first ones, while their parts fit, and the last), and the final parts agree."""
    ranks = get_encoding(name)._mergeable_ranks
    final, kept, total = merge_steps(ranks, piece)
    reference, steps = _scan_every_pair(ranks, piece)
    assert final == reference and total == len(steps)
    for step in kept:
        assert (step.rank, step.at, step.merged, step.parts) == steps[step.step - 1]
    assert len(kept) <= SHOWN_STEPS + 1
    assert sum(len(step.parts) for step in kept[:-1]) <= SHOWN_PARTS
    if steps:
        assert kept[-1].step == total
        if len(steps) <= SHOWN_STEPS and len(piece) * len(steps) <= SHOWN_PARTS:
            assert len(kept) == total  # a short chunk shows every merge


def test_a_long_chunk_keeps_its_first_merges_and_its_last() -> None:
    """A run of one letter as long as a chunk may be: every merge is taken (the ids are the
    encoder's), the parts of only a few are kept, in memory and on screen."""
    enc = get_encoding("cl100k_base")
    text = "a" * MAX_CHUNK_BYTES
    (chunk,) = explain(enc, text).chunks
    assert chunk.ids == enc.encode_ordinary(text)
    assert chunk.total_steps == MAX_CHUNK_BYTES - len(chunk.ids)
    assert 1 < len(chunk.steps) < 10 and chunk.steps[-1].step == chunk.total_steps
    result = runner.invoke(app, ["tokenize", "-e", "cl100k_base", "--explain", "--", text])
    assert result.exit_code == 0, result.output
    hidden = chunk.total_steps - len(chunk.steps)
    assert f"({hidden:,} merges not shown)" in result.stdout
    assert len(result.stdout) < 200_000


@pytest.mark.parametrize("name", ["gpt2", "o200k_base"])
def test_a_chunk_over_the_limit_is_refused(name: str) -> None:
    text = "x " + "q" * (MAX_CHUNK_BYTES + 1)
    result = runner.invoke(app, ["tokenize", "-e", name, "--explain", "--", text])
    expect_error(result, f"chunk 1 (characters 1-{len(text):,}) is {MAX_CHUNK_BYTES + 2:,} bytes")
    assert f"up to {MAX_CHUNK_BYTES:,} bytes" in result.stderr


# ---------------------------------------------------------------- through the CLI


def test_explain_json_through_the_cli() -> None:
    text = "Hello, unbelievable world!! 12345"
    result = runner.invoke(app, ["tokenize", text, "--explain", "--json", "-e", "cl100k_base"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    enc = get_encoding("cl100k_base")
    assert data["ids"] == enc.encode(text)
    assert [i for c in data["chunks"] for i in c["ids"]] == enc.encode(text)
    assert data["pattern"] == enc._pat_str
    for chunk in data["chunks"]:
        parts = chunk["steps"][-1]["parts"] if chunk["steps"] else chunk["parts"]
        assert len(parts) == len(chunk["ids"]) or chunk["whole"]


@pytest.mark.parametrize("encoding", ["gpt2", "o200k_base"])
def test_explain_json_parts_are_the_exact_bytes(encoding: str) -> None:
    # A literal "␣" and a space, and an emoji cut into bytes: parts are hex, never display text.
    text = "a ␣b 😀"
    result = runner.invoke(app, ["tokenize", text, "--explain", "--json", "-e", encoding])
    assert result.exit_code == 0, result.output
    enc = get_encoding(encoding)
    for chunk in json.loads(result.stdout)["chunks"]:
        whole = chunk["text"].encode()
        assert b"".join(bytes.fromhex(p) for p in chunk["parts"]) == whole
        assert [len(bytes.fromhex(p)) for p in chunk["parts"]] == [1] * len(whole)
        for step in chunk["steps"]:
            assert b"".join(bytes.fromhex(p) for p in step["parts"]) == whole
            assert step["merged"] == step["parts"][step["at"]]
        if not chunk["whole"]:
            last = chunk["steps"][-1]["parts"] if chunk["steps"] else chunk["parts"]
            assert [enc.decode_single_token_bytes(i) for i in chunk["ids"]] == [
                bytes.fromhex(p) for p in last
            ]


def test_explain_table_names_each_merge_and_the_rest() -> None:
    text = " unbelievable" * 30
    result = runner.invoke(app, ["tokenize", text, "--explain"])
    assert result.exit_code == 0, result.output
    assert "␣unbelievable" in result.stdout
    assert "24,479" in result.stdout  # the last merge's rank, gpt2
    assert "showing the first 20 of 30 chunks" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["hi", "--explain", "--count"], "cannot be combined"),
        (["hi", "--explain", "-e", "gpt2", "-e", "o200k_base"], "works with one encoding"),
        (["--ids", "15496,11", "--explain"], "--ids are ids already: pass TEXT"),
        (["naïve", "--offsets", "-e", "gpt2", "-e", "o200k_base"], "has no offsets column"),
        (["hi", "--offsets", "--encode"], "--offsets belongs to the token table"),
        (["<|endoftext|>", "--explain"], "special token"),
    ],
)
def test_explain_and_offsets_usage(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["tokenize", *args])
    expect_error(result, message, code=1 if message == "special token" else 2)


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=60, deadline=None)
@given(text=TEXT.filter(bool))
def test_offsets_are_decode_with_offsets(name: str, text: str) -> None:
    """Each whole token's [start, end) is where tiktoken's decode_with_offsets puts it, and
    covers exactly its own text; a token that splits a character is null."""
    result = runner.invoke(app, ["tokenize", "-e", name, "--offsets", "--json", "--", text])
    enc = get_encoding(name)
    if any(special in text for special in enc.special_tokens_set):
        expect_error(result, "pass --allow-special")  # refused, as encode refuses it
        return
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    ids = enc.encode_ordinary(text)
    decoded, starts = enc.decode_with_offsets(ids)
    assert decoded == text
    for i, (offset, token) in enumerate(zip(data["offsets"], data["tokens"], strict=True)):
        piece = bytes.fromhex(token["bytes"])
        try:
            whole = piece.decode("utf-8")
        except UnicodeDecodeError:
            whole = None
        if offset is None:
            assert whole is None
        else:
            assert offset[0] == starts[i]
            assert text[offset[0] : offset[1]] == whole


def _unsure_here() -> list[str]:
    """Characters the regex module knows and this Python's unicodedata does not (a newer
    Unicode in one of them): here, Unicode 17's U+A7CE among them."""
    import unicodedata

    import regex

    unsure = []
    for point in range(0x80, 0x30000, 7):
        char = chr(point)
        if unicodedata.category(char) == "Cn" and regex.match(r"\P{Cn}", char):
            unsure.append(char)
    return unsure


@pytest.mark.parametrize("name", ENCODINGS)
def test_a_character_of_another_unicode_version_is_refused(name: str) -> None:
    """The replay cuts with regex's tables, tiktoken with its own: where regex and Python's
    unicodedata disagree (or neither knows a code point), --explain says so. U+A7CE (Unicode
    17, a letter to regex 2025+ and not to tiktoken 0.14) once gave wrong chunks, exit 0."""
    import unicodedata

    import regex

    unsure = _unsure_here()
    for char in unsure[:3]:
        result = runner.invoke(app, ["tokenize", "-e", name, "--explain", "--", f"{char}!"])
        expect_error(result, f"cannot be sure how tiktoken's splitter classes U+{ord(char):04X}")
    # unassigned in both tables (U+0378 in every version so far), and known to both: replayed
    text = "caf\u00e9 \u4e2d\u0378"
    result = runner.invoke(app, ["tokenize", "-e", name, "--explain", "--", text])
    assert result.exit_code == 0, result.output
    if unicodedata.unidata_version < "17" and regex.__version__ >= "2025.9":  # Unicode 17
        result = runner.invoke(app, ["tokenize", "-e", name, "--explain", "--", "\ua7ce!"])
        expect_error(result, "classes U+A7CE: the regex module")  # the case found


def test_characters_both_tables_know_split_as_tiktoken_does() -> None:
    """Every code point the two tables class alike (unassigned in both too): tiktoken's splitter
    (cl100k_base: "X's" keeps "'s" whole only after a letter, digit or space) agrees with
    regex's, so the chunks shown are tiktoken's."""
    import unicodedata

    import regex

    enc = get_encoding("cl100k_base")
    (suffix,) = enc.encode_ordinary("'s")
    word = regex.compile(r"[\p{L}\p{N}\s]")
    differ = []
    for point in range(0x80, 0x110000):
        char = chr(point)
        if unicodedata.category(char) == "Cs" or unsure_unicode(char):
            continue  # a lone surrogate, or refused by --explain (above)
        if (enc.encode_ordinary(char + "'s")[-1] == suffix) != bool(word.match(char)):
            differ.append(f"U+{point:04X}")
    assert not differ, differ[:10]


@pytest.mark.parametrize("columns", ["20", "21", "30"])
def test_a_narrow_terminal_still_shows_the_parts(columns: str) -> None:
    """At 20-21 columns the parts column got no width (every row blank, exit 0), at 24 ids were
    cut: under 40 columns the table is drawn at 40."""
    result = runner.invoke(app, ["tokenize", "unbelievable", "--explain"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    ids = get_encoding("gpt2").encode("unbelievable")
    flat = "".join(result.stdout.split())
    assert "".join(map(str, ids)) in flat.replace("│", "")
    assert max(map(len, result.stdout.splitlines())) <= 40


def _no_pre_tokenizer(spec: dict) -> None:
    spec["pre_tokenizer"] = None  # the decoder alone says byte-level


def _whitespace_pre_tokenizer(spec: dict) -> None:
    spec["pre_tokenizer"] = {"type": "Whitespace"}  # pieces never written as byte-level symbols


def _compatibility_normalizer(spec: dict) -> None:
    spec["normalizer"] = {"type": "NFKC"}  # "ﬁ" is cut as "fi": the chunks would be misplaced


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_no_pre_tokenizer, "model has no pre-tokenizer, so its chunks cannot be shown"),
        (_whitespace_pre_tokenizer, "has a pre-tokenizer without a ByteLevel step"),
        (_compatibility_normalizer, "model's normalizer changes this text before it is cut"),
    ],
)
def test_a_tokenizer_json_the_replay_cannot_cut_is_refused(tmp_path, edit, message: str) -> None:
    """Once a traceback (an AttributeError on a null pre-tokenizer); now one Error line."""
    path = edited(byte_level_json(tmp_path / "model"), edit)
    result = runner.invoke(app, ["tokenize", "-e", str(path.parent), "--explain", "hello ﬁ"])
    expect_error(result, message)


def test_a_byte_level_tokenizer_json_is_replayed(tmp_path) -> None:
    path = byte_level_json(tmp_path / "model")
    result = runner.invoke(app, ["tokenize", "-e", str(path), "--explain", "--json", "hello world"])
    assert result.exit_code == 0, result.output
    chunks = json.loads(result.stdout)["chunks"]
    shown = [(c["text"], c["ids"]) for c in chunks]
    assert shown == [("hello", [258, 111]), (" world", [261, 108, 100])]


def test_the_tokens_a_post_processor_adds_are_named_not_dropped(tmp_path) -> None:
    """A tokenizer.json whose post-processor puts <|endoftext|> before every text (as Llama 3's
    puts <|begin_of_text|>): --explain said "2 tokens" and gave ids [h, i] while tokenize gave
    three, with nothing saying a token was left out. The added ids are named now, in the view
    and in --json, and --no-add-special leaves them out as tokenize does."""
    from tokenizers import Tokenizer, processors

    path = byte_level_json(tmp_path / "model")
    tokenizer = Tokenizer.from_file(str(path))
    eot = tokenizer.token_to_id("<|endoftext|>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", eot)]
    )
    tokenizer.save(str(path))
    full = json.loads(runner.invoke(app, ["tokenize", "-e", str(path), "--json", "hi"]).stdout)
    assert full["tokens"][0]["id"] == eot
    shown = runner.invoke(app, ["tokenize", "-e", str(path), "--explain", "--json", "hi"])
    explained = json.loads(shown.stdout)
    assert explained["added_before"] == [eot] and explained["added_after"] == []
    assert [eot, *explained["ids"]] == [t["id"] for t in full["tokens"]]
    view = runner.invoke(
        app, ["tokenize", "-e", str(path), "--explain", "hi"], env={"COLUMNS": "200"}
    )
    assert f"the tokenizer adds 1 token before the text (id {eot})" in view.stdout
    bare = runner.invoke(
        app, ["tokenize", "-e", str(path), "--explain", "--json", "--no-add-special", "hi"]
    )
    assert json.loads(bare.stdout)["added_before"] == []

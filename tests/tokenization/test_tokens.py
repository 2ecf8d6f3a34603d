"""Chunked, multi-threaded encoding gives exactly the ids of one pass; pieces, decoding, cutting."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from embedcli.errors import InputTextError, TokenIdError
from embedcli.tokenization.encodings import BUNDLED_ENCODINGS, get_encoding
from embedcli.tokenization.idtext import parse_ids
from embedcli.tokenization.tokens import (
    Parallel,
    chunks,
    count_tokens,
    decode_ids,
    encode_text,
    segments_of,
    split_points,
    tokenize_report,
    whole_characters,
)

# Pieces that stress the pre-tokenizers at a cut: whitespace runs of every kind, contractions,
# digits, punctuation followed by newlines, CJK, emoji (split across tokens), combining marks.
ADVERSARIAL = [
    " ",
    "  ",
    "   ",
    "\n",
    "\r\n",
    "\t",
    " \n",
    "\n\n",
    "a",
    "Z",
    "word",
    "Hello",
    "'s",
    "'t",
    "'re",
    "'LL",
    "don't",
    "1",
    "23",
    "4567",
    ".",
    ",",
    "!",
    "...",
    "/",
    ".\n",
    "日",
    "本語",
    "テキスト",
    "😀",
    "👩‍👩‍👧",
    "é",
    "e\u0301",
    "\u00a0",
    "\u3000",
    "Привет",
    "مرحبا",
    "(",
    ")",
    "#",
]

adversarial_text = st.lists(st.sampled_from(ADVERSARIAL), max_size=60).map("".join)
# Whitespace that str.isspace() and the encodings' \s see, but a plain space test does not.
UNUSUAL_SPACES = ("\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029", "\u3000", "\u00a0",
                  "\u2009", "\r\n", " \x0b ", " \u3000 ")  # fmt: skip
# Free text with those spaces mixed in, as well as the fixed pieces.
mixed_text = (
    st.lists(
        st.one_of(
            st.sampled_from(ADVERSARIAL),
            st.sampled_from(UNUSUAL_SPACES),
            st.text(st.characters(exclude_categories=("Cs",)), max_size=6),
        ),
        max_size=40,
    )
    .map("".join)
    .filter(lambda text: "<|" not in text)
)  # special tokens: tested on their own


def exact(enc, text: str, allow_special: bool = False) -> list[int]:
    return enc.encode(text, allowed_special="all") if allow_special else enc.encode_ordinary(text)


@pytest.mark.parametrize("name", BUNDLED_ENCODINGS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=adversarial_text, chunk_chars=st.integers(1, 12))
def test_chunked_encoding_equals_one_pass(name: str, text: str, chunk_chars: int) -> None:
    enc = get_encoding(name)
    parallel = Parallel(workers=2, chunk_chars=chunk_chars, min_chars=0)
    assert encode_text(enc, text, parallel=parallel) == exact(enc, text)
    assert count_tokens(enc, text, parallel=parallel) == len(exact(enc, text))


@pytest.mark.parametrize("name", BUNDLED_ENCODINGS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mixed_text, chunk_chars=st.integers(1, 12))
def test_chunked_encoding_equals_one_pass_with_unusual_whitespace(
    name: str, text: str, chunk_chars: int
) -> None:
    enc = get_encoding(name)
    parallel = Parallel(workers=2, chunk_chars=chunk_chars, min_chars=0)
    assert encode_text(enc, text, parallel=parallel) == exact(enc, text)
    assert count_tokens(enc, text, parallel=parallel) == len(exact(enc, text))


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
@settings(max_examples=60, deadline=None)
@given(
    text=st.lists(st.sampled_from([*ADVERSARIAL, "<|endoftext|>"]), max_size=40).map("".join),
    chunk_chars=st.integers(1, 6),
)
def test_chunked_encoding_with_special_tokens(name: str, text: str, chunk_chars: int) -> None:
    enc = get_encoding(name)
    got = encode_text(
        enc,
        text,
        allow_special=True,
        parallel=Parallel(workers=2, chunk_chars=chunk_chars, min_chars=0),
    )
    assert got == exact(enc, text, allow_special=True)


@pytest.mark.parametrize("name", BUNDLED_ENCODINGS)
@pytest.mark.parametrize(
    "text",
    [
        "a  b",
        "x \n y",
        "don't  's",
        "日本語 テキスト",
        "😀 😀😀 😀",
        "a\r\n\r\n b",
        "   lead",
        "trail   ",
        "end.\n next",
        "1 22 333 4444",
        "tab\t tab",
        "x\u3000 y",
        "word" * 50,
    ],
)
def test_known_hard_cuts(name: str, text: str) -> None:
    enc = get_encoding(name)
    for chunk_chars in (1, 2, 3, 5):
        assert encode_text(
            enc, text, parallel=Parallel(workers=2, chunk_chars=chunk_chars, min_chars=0)
        ) == exact(enc, text)


@given(text=adversarial_text, chunk_chars=st.integers(1, 10))
def test_chunks_join_back_and_cut_only_before_a_space(text: str, chunk_chars: int) -> None:
    assert "".join(chunks(text, chunk_chars)) == text
    for point in split_points(text, chunk_chars):
        assert text[point] == " " and not text[point - 1].isspace()


def test_large_text_is_cut_into_many_chunks() -> None:
    text = "The quick brown fox. " * 20_000
    assert len(chunks(text, 1 << 12)) > 50
    enc = get_encoding("gpt2")
    assert count_tokens(
        enc, text, parallel=Parallel(chunk_chars=1 << 12, min_chars=1 << 12)
    ) == len(enc.encode_ordinary(text))


def test_text_without_cut_points_stays_whole() -> None:
    assert chunks("日本語" * 100, 5) == ["日本語" * 100]


def test_special_token_check_applies_to_every_chunk() -> None:
    enc = get_encoding("gpt2")
    text = "a " * 100 + "<|endoftext|>" + " b" * 100
    with pytest.raises(InputTextError, match="--allow-special"):
        count_tokens(enc, text, parallel=Parallel(workers=2, chunk_chars=3, min_chars=0))


def test_the_first_special_token_in_the_text_is_named() -> None:
    enc = get_encoding("cl100k_base")
    text = "a " * 500 + "<|endoftext|>" + " b" * 500 + "<|fim_prefix|>" + " c" * 500
    for _ in range(3):  # whichever thread meets which chunk first
        with pytest.raises(InputTextError, match=r"<\|endoftext\|>"):
            count_tokens(enc, text, parallel=Parallel(workers=3, chunk_chars=10, min_chars=0))


def test_helper_threads_encode_with_their_own_copy() -> None:
    """Threads sharing one tiktoken encoding contend inside it (issue 24): each helper has its
    own, the same ids."""
    from embedcli.tokenization import threads

    enc = get_encoding("o200k_base")
    text = "The quick brown fox. " * 2_000
    parallel = Parallel(workers=3, chunk_chars=1 << 10, min_chars=0)
    assert count_tokens(enc, text, parallel=parallel) == len(enc.encode_ordinary(text))
    assert encode_text(enc, text, parallel=parallel) == enc.encode_ordinary(text)
    copies = [helper.copies.get(enc) for helper in threads._helpers[:2]]
    assert len({id(c._core_bpe) for c in copies} | {id(enc._core_bpe)}) == 3


def test_segments_keep_split_characters_whole() -> None:
    enc = get_encoding("gpt2")
    ids = enc.encode("a 😀 日本")
    pieces = [enc.decode_single_token_bytes(i) for i in ids]
    segments = segments_of(pieces)
    assert [s.text for s in segments] == ["a", "␣😀", "␣日", "本"]
    assert segments[0].first == segments[0].last == 0
    assert segments[1].last > segments[1].first  # the emoji spans several tokens
    assert segments[-1].last == len(ids) - 1


def test_segments_of_a_cut_off_character() -> None:
    segments = segments_of([b"a", b"\xf0\x9f"])
    assert [s.text for s in segments] == ["a", "<0xF0 0x9F>"]


def test_report_pieces_and_limit() -> None:
    enc = get_encoding("gpt2")
    text = "Hello, world!"
    report = tokenize_report(enc, text, enc.encode(text), limit=2)
    assert report.count == 4 and report.characters == 13 and report.n_vocab == 50257
    assert [(t.index, t.id, t.piece, t.bytes) for t in report.tokens] == [
        (0, 15496, "Hello", "48656c6c6f"),
        (1, 11, ",", "2c"),
    ]
    assert tokenize_report(enc, text, count=7).tokens is None


@pytest.mark.parametrize(
    ("text", "ids"),
    [("15496 11 995 0", [15496, 11, 995, 0]), ("15496,11, 995\n0", [15496, 11, 995, 0]), ("", [])],
)
def test_parse_ids(text: str, ids: list[int]) -> None:
    assert parse_ids(text) == ids


def test_parse_ids_names_the_bad_word() -> None:
    with pytest.raises(TokenIdError, match="'x12' is not a token id"):
        parse_ids("1 x12 3")


@pytest.mark.parametrize(
    ("name", "bad"),
    [("gpt2", 50257), ("gpt2", -1), ("cl100k_base", 100261), ("o200k_base", 10**12)],
)
def test_decode_names_the_id_it_lacks(name: str, bad: int) -> None:
    with pytest.raises(TokenIdError, match=f"token id {bad} is not in {name}"):
        decode_ids(get_encoding(name), [0, bad])


def test_truncate_never_ends_inside_a_character() -> None:
    enc = get_encoding("gpt2")
    text = "Hi 😀 there"
    ids = enc.encode(text)
    cuts = [whole_characters(enc, ids[:n]) for n in range(len(ids) + 1)]
    assert cuts[-1] == (len(ids), text)
    for n, (count, cut) in enumerate(cuts):
        assert text.startswith(cut)
        assert "\ufffd" not in cut
        assert count <= n and enc.decode(ids[:count]) == cut  # the count is of the text's tokens


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["tokenize", "--decode", "١٢", "٣"], "'١٢' is not a token id"),  # other scripts' digits
        (["tokenize", "--decode", "1_000 2"], "'1_000' is not a token id"),  # int() reads 1000
        (["tokenize", "--ids", "+5", "--decode"], "'+5' is not a token id"),
        (["embed", "--ids", "1,,2"], "an item between separators is empty"),  # not [1, 2]
        (["embed", "--ids", "1,"], "an item between separators is empty"),
    ],
)
def test_one_id_parser_refuses_what_int_would_accept(args: list[str], said: str) -> None:
    """Issue 24: ASCII digits separated by a comma and/or whitespace, anything else named."""
    from support.helpers import make_runner

    from embedcli.cli import app

    result = make_runner().invoke(app, args)
    assert result.exit_code in (1, 2), result.output
    assert said in result.stderr and result.stderr.count("\n") == 1

"""`embedcli tokenize` through the real CLI: every option, every input source, every error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.helpers import assert_cli_leaves_unimported, expect_error, make_runner, run_script

from embedcli.cli import app
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()


def tokenize(*args: str, input: bytes | str | None = None, env: dict | None = None):
    return runner.invoke(app, ["tokenize", *args], input=input, env=env)


def ok(*args: str, input: bytes | str | None = None) -> str:
    result = tokenize(*args, input=input)
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    return result.stdout


# Published ids: the issue, OpenAI's cookbook, and the LLMs-from-scratch book.
PUBLISHED = [
    ("gpt2", "Hello, world!", "15496 11 995 0"),
    ("r50k_base", "antidisestablishmentarianism", "415 29207 44390 3699 1042"),
    ("cl100k_base", "tiktoken is great!", "83 1609 5963 374 2294 0"),
    ("o200k_base", "tiktoken is great!", "83 8251 2488 382 2212 0"),
]


@pytest.mark.parametrize(("name", "text", "ids"), PUBLISHED)
def test_published_ids(name: str, text: str, ids: str) -> None:
    assert ok(text, "-e", name, "--encode") == ids + "\n"
    assert ok(text, "-e", name, "--count") == f"{len(ids.split())}\n"


def test_book_example_needs_allow_special() -> None:
    text = "Hello, do you like tea? <|endoftext|> In the sunlit terraces of someunknownPlace."
    expect_error(
        tokenize(text, "--encode"),
        "the text contains the special token <|endoftext|>; pass --allow-special",
    )
    assert ok(text, "--encode", "--allow-special").split()[6:10] == ["30", "220", "50256", "554"]


def test_default_view_golden(golden) -> None:
    golden("tokenize_default.txt", ok("Hello, world! 😀 don't\n\ttab"))


def test_default_view_names_encoding_and_shows_bytes_of_split_characters() -> None:
    out = ok("a 😀", "-e", "gpt2")
    assert out.startswith("gpt2 · 3 tokens · 3 characters · vocabulary 50,257")
    assert "<0x20 0xF0 0x9F 0x98>" in out and "<0x80>" in out
    assert "\ufffd" not in out
    assert "a│␣😀" in out  # the emoji's tokens are one segment of the text line


def test_coloured_view(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = ok("Hello, world! 😀")
    assert "\x1b[" in out  # styled
    assert "│␣world" not in out  # no separators: colours tell the pieces apart
    assert "␣😀" in out  # one segment for the emoji's two tokens
    assert out.count("\x1b[30;") >= 5  # black on a background colour, for each of the 5 segments


def test_json_contract() -> None:
    data = json.loads(ok("Hello 😀", "--json"))
    assert data == {
        "encoding": "gpt2",
        "n_vocab": 50257,
        "count": 3,
        "tokens": [
            {"index": 0, "id": 15496, "piece": "Hello", "bytes": "48656c6c6f"},
            {"index": 1, "id": 30325, "piece": None, "bytes": "20f09f98"},
            {"index": 2, "id": 222, "piece": None, "bytes": "80"},
        ],
    }


def test_several_encodings_side_by_side() -> None:
    out = ok("tiktoken is great!", "-e", "gpt2", "-e", "o200k_base", "-m", "gpt-4")
    for name in ("gpt2", "o200k_base", "cl100k_base"):
        assert f"{name} · 6 tokens" in out
    assert "Token counts" in out and "vs gpt2" in out
    data = json.loads(ok("tiktoken is great!", "-e", "gpt2", "-e", "o200k_base", "--json"))
    assert [e["encoding"] for e in data["encodings"]] == ["gpt2", "o200k_base"]
    assert [t["id"] for t in data["encodings"][1]["tokens"]] == [83, 8251, 2488, 382, 2212, 0]


def test_several_encodings_count() -> None:
    assert (
        ok("2 + 2 = 4", "-e", "gpt2", "-e", "cl100k_base", "--count") == "gpt2\t5\ncl100k_base\t7\n"
    )
    data = json.loads(ok("2 + 2 = 4", "-e", "gpt2", "-e", "cl100k_base", "--count", "--json"))
    assert data == {
        "encodings": [
            {"encoding": "gpt2", "n_vocab": 50257, "count": 5},
            {"encoding": "cl100k_base", "n_vocab": 100277, "count": 7},
        ]
    }


def test_repeated_encoding_is_listed_once() -> None:
    assert ok("hi", "-e", "gpt2", "-m", "gpt2", "--count") == "1\n"


def test_model_flag() -> None:
    assert ok("tiktoken is great!", "-m", "gpt-4o", "--encode") == "83 8251 2488 382 2212 0\n"


def test_count_json() -> None:
    assert json.loads(ok("Hello, world!", "--count", "--json")) == {
        "encoding": "gpt2",
        "n_vocab": 50257,
        "count": 4,
    }


def test_ids_json_and_truncate_json() -> None:
    assert json.loads(ok("Hello, world!", "--encode", "--json"))["ids"] == [15496, 11, 995, 0]
    data = json.loads(ok("Hello, world!", "--truncate", "2", "--json"))
    assert data == {
        "encoding": "gpt2",
        "n_vocab": 50257,
        "count": 2,
        "text": "Hello,",
        "limit": 2,
        "partial": False,
    }


@pytest.mark.parametrize(
    ("text", "limit", "count", "kept"),
    [
        ("a😀b", 2, 1, "a"),  # 😀 is two tokens in gpt2: the cut after its first is moved back
        ("a😀b", 3, 3, "a😀"),
        ("😀", 1, 0, ""),
    ],
)
def test_truncate_count_and_text_describe_one_cut(text, limit, count, kept) -> None:
    """The count is of the tokens whose text is shown: re-encoding the text gives them back,
    and a cut inside a character is said (in the JSON and on stderr)."""
    result = runner.invoke(app, ["tokenize", text, "--truncate", str(limit), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["count"], data["text"], data["limit"]) == (count, kept, limit)
    assert data["partial"] is (count < limit)
    assert len(get_encoding("gpt2").encode(data["text"])) == data["count"]
    if data["partial"]:
        assert result.stderr.startswith(f"Warning: token {limit} ends inside a character")
    else:
        assert result.stderr == ""


# ---------------------------------------------------------------- inputs


def test_arguments_are_joined_with_single_spaces() -> None:
    assert ok("Hello,", "world!", "--encode") == "15496 11 995 0\n"


def test_stdin_dash_none_and_file(tmp_path: Path) -> None:
    text = "Hello, world!\n"
    ids = "15496 11 995 0 198\n"
    assert ok("-", "--encode", input=text) == ids
    assert ok("--encode", input=text) == ids
    path = tmp_path / "notes.txt"
    path.write_text(text, encoding="utf-8")
    assert ok("-f", str(path), "--encode") == ids
    assert ok("--file", str(path), "--count") == "5\n"


def test_empty_text_has_no_tokens() -> None:
    assert ok("--count", input="") == "0\n"
    assert json.loads(ok("--json", input=""))["tokens"] == []


# ---------------------------------------------------------------- decode, truncate, round trip


def test_decode() -> None:
    assert ok("15496", "11", "995", "0", "--decode") == "Hello, world!"
    assert ok("--decode", input="15496,11,995,0\n") == "Hello, world!"
    assert json.loads(ok("15496 11", "--decode", "--json")) == {
        "encoding": "gpt2",
        "n_vocab": 50257,
        "count": 2,
        "ids": [15496, 11],
        "text": "Hello,",
        "partial": False,
    }
    assert ok("[15496, 11]", "--decode") == "Hello,"  # a Python list pastes as it is


def test_ids_are_input() -> None:
    """--ids means ids as input, as everywhere: the table of those tokens, or any mode."""
    table = ok("--ids", "15496,11,995")
    assert "Hello" in table and "␣world" in table and "15496" in table
    assert ok("--ids", "15496,11", "--decode") == "Hello,"
    assert ok("--ids", "15496", "--ids", "11", "--count") == "2\n"
    assert ok("--ids", "15496 11 995", "--encode") == "15496 11 995\n"
    assert ok("--ids", "15496,11,995", "--truncate", "2") == "Hello,"
    data = json.loads(ok("--ids", "15496,11", "--json"))
    assert [t["piece"] for t in data["tokens"]] == ["Hello", ","]


def test_decode_of_half_a_character_warns() -> None:
    result = tokenize("30325", "--decode")  # ' ' plus the first 3 bytes of an emoji
    assert result.exit_code == 0
    assert result.stdout == " \ufffd"
    assert result.stderr.startswith("Warning: these ids start or end inside a character")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["1", "x", "--decode"], "'x' is not a token id"),
        (["1", "50257", "--decode"], "token id 50257 is not in gpt2 (its ids run from 0 to 50256)"),
        (
            ["100261", "--decode", "-e", "cl100k_base"],
            "token id 100261 is not in cl100k_base (no token has that id, though ids on both "
            "sides of it do)",
        ),
    ],
)
def test_decode_errors(args: list[str], message: str) -> None:
    expect_error(tokenize(*args), message)


def test_decode_negative_id_from_stdin() -> None:
    expect_error(tokenize("--decode", input="15496 -1"), "'-1' is negative: token ids start at 0")


def test_truncate() -> None:
    assert ok("Hello, world!", "--truncate", "2") == "Hello,"
    assert ok("Hello, world!", "--truncate", "99") == "Hello, world!"
    assert ok("Hello, world!", "--truncate", "0") == ""
    half = tokenize("Hi 😀", "--truncate", "2")  # never half an emoji, and said
    assert (half.exit_code, half.stdout) == (0, "Hi")
    assert half.stderr.startswith("Warning: token 2 ends inside a character")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(st.characters(exclude_categories=("Cs",)), max_size=60),
    name=st.sampled_from(["gpt2", "cl100k_base", "o200k_base"]),
)
def test_round_trip_ids_then_decode(text: str, name: str) -> None:
    if any(special in text for special in get_encoding(name).special_tokens_set):
        return
    ids = tokenize("-", "-e", name, "--encode", input=text.encode())
    assert ids.exit_code == 0, ids.output
    back = tokenize("-", "-e", name, "--decode", input=ids.stdout)
    assert back.exit_code == 0, back.output
    assert back.stdout_bytes == text.encode()


def test_round_trip_through_the_console_script(tmp_path: Path) -> None:
    text = "Zürich 東京 🙂\r\n\ttabs  and   spaces "
    ids = run_script(
        ["embedcli", "tokenize", "-", "--encode", "-e", "o200k_base"], tmp_path, input=text
    )
    assert ids.returncode == 0, ids.stderr
    back = run_script(
        ["embedcli", "tokenize", "--decode", "-e", "o200k_base"],
        tmp_path,
        input=ids.stdout.encode(),
        text=False,
    )
    assert back.returncode == 0, back.stderr
    assert back.stdout == text.encode()


# ---------------------------------------------------------------- large input, table cap


def test_large_file_count_equals_one_pass(tmp_path: Path) -> None:
    # Over a megabyte of adversarial text, so the count runs in parallel chunks.
    unit = "don't  stop\r\n\r\n日本語 テキスト 😀😀 1234 end.\n next\t tab   \u3000x "
    text = unit * (1_200_000 // len(unit))
    path = tmp_path / "big.txt"
    path.write_text(text, encoding="utf-8", newline="")
    for name in ("gpt2", "cl100k_base", "o200k_base"):
        expected = len(get_encoding(name).encode_ordinary(text))
        assert ok("-f", str(path), "-e", name, "--count") == f"{expected}\n"


def test_table_is_capped_for_long_texts() -> None:
    from embedcli.render import TOKEN_TABLE_LIMIT

    out = ok("word " * (TOKEN_TABLE_LIMIT + 10))
    assert f"showing the first {TOKEN_TABLE_LIMIT} of {TOKEN_TABLE_LIMIT + 11} tokens" in out
    data = json.loads(ok("word " * (TOKEN_TABLE_LIMIT + 10), "--json"))
    assert len(data["tokens"]) == data["count"] == TOKEN_TABLE_LIMIT + 11


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["hi", "--count", "--encode"], "--count and --encode cannot be combined"),
        (["hi", "--decode", "--truncate", "3"], "--decode and --truncate cannot be combined"),
        (["hi", "--encode", "-e", "gpt2", "-e", "o200k_base"], "--encode works with one encoding"),
        (["hi", "-f", "x.txt"], "pass TEXT or --file, not both"),
        (["hi", "--ids", "15496"], "pass only one of TEXT, --file and --ids"),
        (["--ids", "15496,x"], "'15496,x': 'x' is not a token id"),
        (["hi", "-e", "nope"], "unknown encoding 'nope'"),
        (["hi", "-e", "o200k_bas"], "did you mean 'o200k_base'"),
        (["hi", "-m", "nope"], "unknown model 'nope'"),
        (["hi", "--ids"], "requires an argument"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    expect_error(tokenize(*args), message, code=2)


def test_negative_truncate_is_a_usage_error() -> None:
    result = tokenize("hi", "--truncate", "-1")
    assert result.exit_code == 2


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (
            ["-f", "/nonexistent/notes.txt"],
            None,
            "cannot read /nonexistent/notes.txt: no such file or folder",
        ),
        (["-"], b"caf\xe9", "standard input is not valid UTF-8 (byte 0xE9 at offset 3)"),
        (["--ids", "15496,99999"], None, "token id 99999 is not in gpt2"),
        (["a<|endoftext|>"], None, "special token <|endoftext|>; pass --allow-special"),
    ],
)
def test_input_errors(args: list[str], stdin: bytes | None, message: str) -> None:
    expect_error(tokenize(*args, input=stdin), message)


def test_non_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("café".encode("latin-1"))
    expect_error(tokenize("-f", str(path)), f"{path} is not valid UTF-8 (byte 0xE9 at offset 3)")


# ---------------------------------------------------------------- start-up


@pytest.mark.parametrize(
    "args",
    [
        ["tokenize", "Hello", "--count"],
        ["tokenize", "Hello"],
        ["tokenize", "Hello", "--json"],
        ["tokenize", "15496", "--decode"],
        ["tokenize", "Hi", "-e", "gpt2", "-e", "o200k_base"],
    ],
)
def test_tokenize_never_imports_torch(args: list[str]) -> None:
    assert_cli_leaves_unimported(args)


def test_count_imports_neither_torch_nor_rich() -> None:
    assert_cli_leaves_unimported(["tokenize", "Hello", "--count"], ("torch", "rich.table"))

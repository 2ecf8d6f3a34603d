"""Mistral's tekken.json (embedcli.tokenization.tekken) held to mistral-common's Tekkenizer: the
real files mistral-common ships (Mistral NeMo's tekken_240718.json, Pixtral's tekken_240911.json)
with the ids its own tests publish, files written here from GPT-2's ranks in every version
(special tokens listed, filled, or left to the v3 defaults; a vocabulary cut by
default_vocab_size), the special-token policy, the command line, and every refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import assert_cli_leaves_unimported, expect_error, make_runner
from support.modeltokenizers import module_env as module_env  # a fixture: pytest finds it here
from support.spmodels import corpus_text, hostile_texts, tekken_file

from embedcli.cli import app
from embedcli.errors import EncodingError
from embedcli.tokenization import kinds, modeltok
from embedcli.tokenization.common import GPT2_PATTERN
from embedcli.tokenization.encodings import get_encoding
from embedcli.tokenization.tekken import DEPRECATED_SPECIAL_TOKENS, TekkenTokenizer

tekken_module = pytest.importorskip(
    "mistral_common.tokens.tokenizers.tekken", reason="mistral-common (the test extra) is absent"
)
Tekkenizer = tekken_module.Tekkenizer
KEEP = tekken_module.SpecialTokenPolicy.KEEP
DATA = Path(tekken_module.__file__).parents[2] / "data"
NEMO = DATA / "tekken_240718.json"
runner = make_runner()
CORPUS = corpus_text() or ""


def _texts() -> list[str]:
    paragraphs = [p for p in CORPUS.split("\n\n") if p.strip()][:40]
    return [*hostile_texts(), *paragraphs, CORPUS]


def _agree(ours: TekkenTokenizer, theirs, text: str) -> None:
    ids = ours.encode_ordinary(text)
    assert ids == theirs.encode(text, False, False), text[:80]
    assert ours.decode(ids) == theirs.decode(ids, special_token_policy=KEEP)


def _gpt2_ranks(count: int) -> dict[bytes, int]:
    """GPT-2's first ``count`` tokens, renumbered the way tekken wants: the 256 bytes first
    (their ranks take part in no merge, so the pieces are GPT-2's own)."""
    ranks = get_encoding("gpt2")._mergeable_ranks
    singles = [bytes([b]) for b in range(256)]
    merged = [t for t, _ in sorted(ranks.items(), key=lambda kv: kv[1]) if len(t) > 1]
    return {t: i for i, t in enumerate([*singles, *merged[: count - 256]])}


@pytest.fixture(scope="module")
def nemo(module_env: None):
    if not NEMO.is_file():
        pytest.skip(f"{NEMO} is absent")
    return modeltok.load_model_tokenizer(NEMO), Tekkenizer.from_file(NEMO)


@pytest.fixture(scope="module")
def built(module_env: None, tmp_path_factory) -> dict[str, tuple[TekkenTokenizer, object]]:
    """Files written here: v3 without a special-token list, v7 with a few (fillers after),
    v11 with a vocabulary cut to default_vocab_size."""
    out = tmp_path_factory.mktemp("tekken")
    ranks = _gpt2_ranks(3000)
    files = {
        "v3": tekken_file(out / "v3" / "tekken.json", ranks, GPT2_PATTERN, specials=None,
                          version="v3"),
        "v7": tekken_file(out / "v7" / "tekken.json", ranks, GPT2_PATTERN,
                          specials=["<unk>", "<s>", "</s>", "[INST]", "[/INST]"], num_special=40),
        "v11": tekken_file(out / "v11" / "tekken.json", ranks, GPT2_PATTERN,
                           specials=["<unk>", "<s>", "</s>", "<pad>"], num_special=10,
                           vocab_size=2010, version="v11"),
    }  # fmt: skip
    return {
        k: (modeltok.load_model_tokenizer(p), Tekkenizer.from_file(p)) for k, p in files.items()
    }


# ---------------------------------------------------------------- mistral-common's ids


def test_nemo_gives_mistral_commons_ids(nemo) -> None:
    ours, theirs = nemo
    assert isinstance(ours, TekkenTokenizer) and isinstance(ours, kinds.MODEL_TOKENIZERS)
    assert kinds.tiktoken_behind(ours) is ours.encoding  # runs.py and --explain see tiktoken
    assert (ours.n_vocab, ours.prefix, ours.suffix, ours.eot_token) == (131_072, (1,), (), 11)
    assert ours.cut_safe is False  # its pattern is not one test_cut_safety.py proves
    for text in _texts():
        _agree(ours, theirs, text)
    # mistral-common's tests/test_tokenize_v3.py: "<s>[INST]a[/INST]b</s>[INST]c[/INST]d</s>"
    text = "[INST]a[/INST]b</s>[INST]c[/INST]d</s>"
    assert [*ours.prefix, *ours.encode(text, allowed_special="all")] == [
        1, 3, 1097, 4, 1098, 2, 3, 1099, 4, 1100, 2,
    ]  # fmt: skip
    assert ours.encode_ordinary("[INST]") == theirs.encode("[INST]", False, False)  # as text
    assert ours.decode_single_token_bytes(3) == b"[INST]"  # SpecialTokenPolicy.KEEP
    assert ours.decode_single_token_bytes(999) == b"<SPECIAL_999>"


def test_pixtral_file(module_env: None) -> None:
    path = DATA / "tekken_240911.json"
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    ours, theirs = modeltok.load_model_tokenizer(path), Tekkenizer.from_file(path)
    for text in hostile_texts():
        _agree(ours, theirs, text)


@pytest.mark.parametrize("version", ["v3", "v7", "v11"])
def test_built_files(built, version: str) -> None:
    ours, theirs = built[version]
    for text in _texts():
        _agree(ours, theirs, text)
    assert ours.n_vocab == theirs.n_words
    names = [theirs.id_to_piece(i) for i in range(theirs.num_special_tokens)]
    assert sorted(ours.special_tokens_set) == sorted(names)
    assert all(ours.encode_single_token(t) == i for i, t in enumerate(names))
    if version == "v3":
        assert names == list(DEPRECATED_SPECIAL_TOKENS) + [
            f"<SPECIAL_{i}>" for i in range(20, 100)
        ]  # fmt: skip
        assert ours.eot_token == 11  # <pad>
    if version == "v7":
        assert ours.eot_token == 2 and ours.prefix == (1,)  # no <pad>: </s>
    if version == "v11":  # cut: ranks past default_vocab_size - specials are not tokens
        assert ours.n_vocab == 2010 and max(ours.encode_ordinary(CORPUS or "hello")) < 2010


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["v3", "v7", "v11"]),
    st.lists(
        st.sampled_from(
            [*"ab Z\t\n\r\u3000é😀中\u0301\u200d'sd!?", "  ", "[INST]", "</s>", "\ud800"]
        ),
        max_size=40,
    ).map("".join),
)
def test_random_text(built, version: str, text: str) -> None:
    ours, theirs = built[version]
    _agree(ours, theirs, text)
    ids = ours.encode_ordinary(text)
    plain = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert ours.decode_bytes(ids) == plain.encode("utf-8")  # the tokens spell the text


def test_special_token_policy(built) -> None:
    ours, _ = built["v7"]
    text = "hi [INST] there</s>"
    with pytest.raises(ValueError, match="disallowed special token '\\[INST\\]'"):
        ours.encode(text)
    assert ours.encode(text, allowed_special={"[INST]"}, disallowed_special=()) == [
        *ours.encode_ordinary("hi "), 3, *ours.encode_ordinary(" there</s>")
    ]  # fmt: skip
    assert ours.encode(text, disallowed_special=()) == ours.encode_ordinary(text)


# ---------------------------------------------------------------- the command line


def test_folder_and_command_line(built, tmp_path: Path) -> None:
    ours, theirs = built["v7"]
    folder = ours.path.parent
    assert modeltok.find_tokenizer_file(folder) == ours.path
    text = "Hello, wörld! 😀 [INST] x"
    refused = runner.invoke(app, ["tokenize", "-e", str(folder), text])
    expect_error(refused, "the text contains the special token [INST]; pass --allow-special")
    done = runner.invoke(
        app, ["tokenize", "-e", str(folder), text, "--special-as-text", "--encode"]
    )
    assert done.exit_code == 0, done.output
    assert [int(i) for i in done.stdout.split()] == [1, *theirs.encode(text, False, False)]
    ids = ",".join(done.stdout.split()[1:])
    back = runner.invoke(app, ["tokenize", "-e", str(ours.path), "--ids", ids, "--decode"])
    assert back.exit_code == 0, back.output
    assert back.stdout.rstrip("\n") == text
    shown = runner.invoke(app, ["tokenize", "-e", str(folder), "naïve", "--offsets", "--json"])
    assert shown.exit_code == 0, shown.output
    offsets = json.loads(shown.stdout)["offsets"]
    assert offsets[0] is None and offsets[-1][1] == len("naïve")
    (tmp_path / "in.txt").write_text(text)
    counted = runner.invoke(app, ["count", "-e", str(folder), str(tmp_path / "in.txt"), "--json"])
    assert counted.exit_code == 0, counted.output
    tokens = json.loads(counted.stdout)["files"][0]["tokens"]
    assert list(tokens.values()) == [len(theirs.encode(text, False, False))]
    assert_cli_leaves_unimported(["tokenize", "-e", str(folder), "hi"], ("torch", "mistral_common"))


# ---------------------------------------------------------------- refusals


def _model(**changes: object) -> dict:
    ranks = [{"rank": b, "token_bytes": __import__("base64").b64encode(bytes([b])).decode(),
              "token_str": None} for b in range(256)]  # fmt: skip
    config = {"pattern": r"\s+|\S+", "default_vocab_size": 266, "default_num_special_tokens": 10,
              "version": "v7"}  # fmt: skip
    model = {"config": config, "vocab": ranks, "special_tokens": [
        {"rank": 0, "token_str": "<unk>", "is_control": True}]}  # fmt: skip
    for key, value in changes.items():
        if key in config:
            config[key] = value
        else:
            model[key] = value
    return model


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"version": "latest"}, "config.version is 'latest'"),
        ({"pattern": "("}, "tiktoken cannot compile its pattern"),
        ({"default_vocab_size": 300}, "fewer than the 290 it uses"),
        ({"default_num_special_tokens": -1}, "config.default_num_special_tokens is -1"),
        ({"special_tokens": None, "version": "v13"}, "must list its special_tokens"),
        ({"special_tokens": [{"rank": 1, "token_str": "<s>"}]}, "special token 0 is not"),
        ({"special_tokens": [{"rank": i, "token_str": f"<{i}>"} for i in range(11)]},
         "11 special tokens, more than its 10"),
        ({"vocab": [{"rank": 0, "token_bytes": "QUI=", "token_str": None}]}, "fewer than the 256"),
        # a hostile trial's: tiktoken's core panics on an empty match (a Rust backtrace), and a
        # million fillers took 4.8 GB for an 18 KB file
        ({"pattern": "a*"}, "its config.pattern can match the empty string"),
        ({"pattern": "|x"}, "its config.pattern can match the empty string"),
        ({"pattern": "(?=x)"}, "its config.pattern can match the empty string"),
        ({"default_num_special_tokens": 10**6, "default_vocab_size": 10**6 + 256},
         "config.default_num_special_tokens is 1,000,000, past the 32,768 embedcli reads"),
    ],
)  # fmt: skip
def test_refusals(tmp_path: Path, changes: dict, said: str) -> None:
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(_model(**changes)))
    expect_error(runner.invoke(app, ["tokenize", "hi", "-e", str(path)]), said)


def test_damaged_vocabularies(tmp_path: Path) -> None:
    path = tmp_path / "my_tekken.json"
    model = _model(default_vocab_size=267)
    model["vocab"].append({"rank": 256, "token_bytes": "QQ==", "token_str": "A"})
    path.write_text(json.dumps(model))
    assert "tokens 65 and 256 have the same bytes" in str(_refusal(path))
    model["vocab"][256] = {"rank": 256, "token_bytes": "!!", "token_str": None}
    path.write_text(json.dumps(model))
    assert "vocab[256]'s token_bytes is not base64" in str(_refusal(path))
    model["vocab"][5]["token_bytes"] = "QQ=="
    path.write_text(json.dumps(model))
    assert "token 5 should be the single byte 5" in str(_refusal(path))
    path.write_text("{not json")
    assert "it is not JSON" in str(_refusal(path))
    path.write_text(json.dumps(_model()))
    with pytest.raises(EncodingError, match=r"applies only to tiktoken-format files; .* a tekken"):
        modeltok.load_model_tokenizer(path, family="llama3")


def _refusal(path: Path) -> EncodingError:
    with pytest.raises(EncodingError) as caught:
        modeltok.load_model_tokenizer(path)
    assert "\n" not in str(caught.value)
    return caught.value

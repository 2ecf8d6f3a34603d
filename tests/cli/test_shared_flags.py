"""The shared flags mean one thing everywhere: one table of flags, driven through every command
that has them (README: "Flags that mean the same everywhere")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from support.cliflags import OPTIONS, TEXT
from support.helpers import expect_error, make_runner

from embedcli.cli import app
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()


GPT2_IDS = get_encoding("gpt2").encode(TEXT)
O200K_IDS = get_encoding("o200k_base").encode(TEXT)


def run(*args: str, input: str | None = None) -> str:
    result = runner.invoke(app, list(args), input=input)
    assert result.exit_code == 0, result.output
    return result.stdout


def run_json(*args: str, input: str | None = None) -> dict:
    return json.loads(run(*args, "--json", input=input))


# Commands that tokenize text, and so take -e/-m; those that read text, and so take -f.
TOKENIZING = ("embed", "tokenize", "windows", "neighbors", "stats")
READING = ("embed", "tokenize", "windows", "neighbors")


@pytest.mark.parametrize("command", TOKENIZING)
def test_every_tokenizing_command_has_encoding_and_model(command: str) -> None:
    assert {"--encoding", "--model"} <= set(OPTIONS[command])
    assert {"-e", "-m"} <= {o for p in OPTIONS[command].values() for o in p.opts}


@pytest.mark.parametrize("command", READING)
def test_every_reading_command_has_file(command: str) -> None:
    assert "-f" in OPTIONS[command]["--file"].opts


def test_one_name_per_concept() -> None:
    """T is -t/--seq-len and B is -b/--batch-size everywhere; the old names are hidden."""
    for command in ("embed", "windows", "inspect-shapes"):
        assert OPTIONS[command]["--seq-len"].opts == ["-t", "--seq-len"]
        assert OPTIONS[command]["--batch-size"].opts == ["-b", "--batch-size"]
    assert OPTIONS["embed"]["--window"].hidden and OPTIONS["windows"]["--max-length"].hidden
    every = {name for options in OPTIONS.values() for name in options}
    assert "--max-length" not in OPTIONS["inspect-shapes"] and "--window" not in every - {
        n for n, p in OPTIONS["embed"].items() if p.hidden
    }


def test_a_shared_option_is_declared_once() -> None:
    """Same long name -> same short names, type and help, except where a command says why."""
    differ = {
        # embed's -b is a speed knob (the output is the same); -t there switches on streaming.
        ("embed", "--batch-size"),
        ("embed", "--seq-len"),
        # inspect-shapes defaults to the meta device; positions draws a smaller picture.
        ("inspect-shapes", "--device"),
        ("positions", "--d-model"),
        ("positions", "--context-length"),
        ("positions", "--positional"),
        # without --preset, positions draws from its flags: no gpt2 default there
        ("positions", "--preset"),
        # tokenize and count compare encodings: -e and -m repeat.
        ("tokenize", "--encoding"),
        ("tokenize", "--model"),
        ("count", "--encoding"),
        ("count", "--model"),
        # count's --jsonl streams one record per file, as windows' streams one per window.
        ("count", "--jsonl"),
        # windows' --stride is a data-loader option (Tables panel), embed's a streaming one.
        ("windows", "--stride"),
        # The similarity of what each command shows: tokens, or positions.
        ("positions", "--similarity"),
        # embed makes a batch of repeated --ids; tokenize, neighbors and project join them.
        ("tokenize", "--ids"),
        ("neighbors", "--ids"),
        ("project", "--ids"),
        # --top N lists the first N of a ranking: count's files by tokens, undertrained's
        # tokens by the indicator.
        ("undertrained", "--top"),
    }
    seen: dict[str, tuple[str, object, str | None, list[str]]] = {}
    for command, options in OPTIONS.items():
        for name, param in options.items():
            if (command, name) in differ or param.hidden or name in ("--help", "--json"):
                continue
            here = (command, type(param.type).__name__, param.help, sorted(param.opts))
            first = seen.setdefault(name, here)
            assert here[1:] == first[1:], f"{name}: {command} differs from {first[0]}"


# ---------------------------------------------------------------- --truncate N


def test_truncate_cuts_to_n_tokens_everywhere() -> None:
    assert run("tokenize", TEXT, "--truncate", "2") == "Hello,"
    data = run_json("embed", TEXT, "-d", "4", "--device", "cpu", "--truncate", "2")
    assert data["input_ids"] == [GPT2_IDS[:2]]


@pytest.mark.parametrize("command", ["embed", "tokenize"])
def test_a_number_after_truncate_never_becomes_a_text(command: str) -> None:
    args = [command, "Hello", "--truncate", "12"]
    if command == "embed":
        data = run_json(*args, "-d", "4", "--device", "cpu")
        assert data["input_ids"] == [[15496]]  # one sequence, not "Hello" and "12"
    else:
        assert run(*args) == "Hello"


# ---------------------------------------------------------------- --ids is input


def test_ids_are_input_everywhere() -> None:
    ids = ",".join(map(str, GPT2_IDS[:3]))
    assert run_json("tokenize", "--ids", ids)["tokens"][1]["id"] == GPT2_IDS[1]
    assert run_json("embed", "--ids", ids, "-d", "4", "--device", "cpu")["input_ids"] == [
        GPT2_IDS[:3]
    ]
    data = run_json("neighbors", "--ids", ids, "-d", "8", "-k", "2", "--device", "cpu")
    assert [t["id"] for t in data["tokens"]] == GPT2_IDS[:3]


@pytest.mark.parametrize("command", ["embed", "tokenize", "neighbors"])
def test_ids_and_text_together_is_a_usage_error(command: str) -> None:
    expect_error(runner.invoke(app, [command, "hi", "--ids", "1"]), "pass only one of", code=2)


# ---------------------------------------------------------------- -e / -m / -f


def _ids_seen(command: str, *args: str, input: str | None = None) -> list[int]:
    """The token ids a command worked on, from its JSON."""
    if command == "tokenize":
        return [t["id"] for t in run_json(command, *args, input=input)["tokens"]]
    if command == "embed":
        return run_json(command, *args, "-d", "4", "--device", "cpu", input=input)["input_ids"][0]
    if command == "neighbors":
        data = run_json(command, *args, "-d", "8", "-k", "1", "--device", "cpu", input=input)
        return [t["id"] for t in data["tokens"]]
    data = run_json(command, *args, "-t", "4", "-b", "1", "--limit", "1000", input=input)
    return [*data["batches"][0]["inputs"][0], *[b["inputs"][0][-1] for b in data["batches"][1:]]]


@pytest.mark.parametrize("command", ["embed", "tokenize", "neighbors"])
@pytest.mark.parametrize(("flag", "value"), [("-e", "o200k_base"), ("-m", "gpt-4o")])
def test_encoding_and_model_choose_the_tokenizer(command: str, flag: str, value: str) -> None:
    assert _ids_seen(command, TEXT) == GPT2_IDS
    assert _ids_seen(command, TEXT, flag, value) == O200K_IDS


def test_windows_and_stats_follow_the_encoding() -> None:
    data = run_json("windows", TEXT, "-e", "o200k_base", "-t", "4", "-b", "1")
    assert data["encoding"] == "o200k_base" and data["num_tokens"] == len(O200K_IDS)
    assert (
        run_json("windows", TEXT, "-m", "gpt-4o", "-t", "4", "-b", "1")["encoding"] == "o200k_base"
    )
    rows = run_json("stats", "-m", "gpt-4o", "-d", "4")["tables"][0]["shape"][0]
    assert rows == get_encoding("o200k_base").n_vocab


@pytest.mark.parametrize("command", READING)
def test_file_equals_text_equals_stdin(command: str, tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text(TEXT, encoding="utf-8")
    from_text = _ids_seen(command, TEXT)
    assert _ids_seen(command, "-f", str(path)) == from_text
    assert _ids_seen(command, input=TEXT) == from_text


# ---------------------------------------------------------------- -t / -b / -d


def test_seq_len_is_t_everywhere(tmp_path: Path) -> None:
    shapes = run_json("inspect-shapes", "-t", "3", "-b", "2")
    assert shapes["tensors"][0]["shape"] == [2, 3]
    windows = run_json("windows", TEXT, "-t", "3", "-b", "2")
    assert {len(x) for x in windows["batches"][0]["inputs"]} == {3}
    assert windows["batch_size"] == 2 and windows["seq_len"] == 3
    out = tmp_path / "e.npy"
    run("embed", "-t", "3", "-b", "2", "-d", "4", "-o", str(out), "--device", "cpu", input=TEXT)
    assert np.load(out).shape == (len(GPT2_IDS) // 3, 3, 4)


def test_one_default_batch_size() -> None:
    from embedcli.core.config import DEFAULT_BATCH_SIZE

    assert run_json("inspect-shapes")["tensors"][0]["shape"][0] == DEFAULT_BATCH_SIZE
    assert run_json("windows", TEXT * 3, "-t", "2")["batch_size"] == DEFAULT_BATCH_SIZE


@pytest.mark.parametrize(
    "args",
    [
        ["embed", "hi", "--device", "cpu"],
        ["inspect-shapes"],
        ["neighbors", "hi", "-k", "1", "--device", "cpu"],
        ["stats"],
        ["positions"],
    ],
)
def test_d_model_is_the_width_everywhere(args: list[str]) -> None:
    data = run_json(*args, "-d", "6")
    found = json.dumps(data)
    if args[0] == "embed":
        assert data["config"]["d_model"] == 6
    elif args[0] == "inspect-shapes":
        assert data["tensors"][1]["shape"][-1] == 6
    elif args[0] == "stats":
        assert data["tables"][0]["shape"][1] == 6
    elif args[0] == "positions":
        assert data["shape"][1] == 6
    else:
        assert "neighbors" in found


# ---------------------------------------------------------------- usage errors are exit 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["embed", "hi", "--device", "cdua"], "did you mean 'cuda'"),
        (["inspect-shapes", "--device", "cdua"], "did you mean 'cuda'"),
        (["neighbors", "hi", "--device", "cdua"], "did you mean 'cuda'"),
        (["embed", "hi", "--dtype", "float8"], "is not one of: float32, float16, bfloat16"),
        (["inspect-shapes", "--dtype", "float8"], "is not one of: float32, float16, bfloat16"),
        (["embed", "hi", "--positional", "sinus"], "did you mean 'sinusoidal'"),
        (["inspect-shapes", "--positional", "sinus"], "did you mean 'sinusoidal'"),
        (["positions", "--positional", "sinus"], "did you mean 'sinusoidal'"),
        (["embed", "--lines", "--pool", "maen"], "did you mean 'mean'"),
        (["inspect-shapes", "--preset", "gtp2"], "did you mean 'gpt2'"),
        (["tokenize", "hi", "-e", "gtp2"], "did you mean 'gpt2'"),
        (["windows", "hi", "-e", "gtp2"], "did you mean 'gpt2'"),
        (["neighbors", "hi", "-e", "gtp2"], "did you mean 'gpt2'"),
        (["stats", "-e", "gtp2"], "did you mean 'gpt2'"),
        (["embed", "hi", "-e", "gtp2"], "did you mean 'gpt2'"),
        (["embed", "hi", "-d", "0"], "0 is not in the range x>=1"),
        (["inspect-shapes", "-d", "0"], "0 is not in the range x>=1"),
        (["stats", "-d", "0"], "0 is not in the range x>=1"),
        (["positions", "-d", "0"], "0 is not in the range x>=1"),
        (["windows", "hi", "-t", "0"], "0 is not in the range x>=1"),
        (["inspect-shapes", "-b", "0"], "0 is not in the range x>=1"),
        (["embed", "hi", "--show", "0"], "0 is not in the range x>=1"),
    ],
)
def test_usage_errors_exit_2_everywhere(args: list[str], message: str) -> None:
    expect_error(runner.invoke(app, args), message, code=2)


def test_ids_take_ascii_digits_only() -> None:
    expect_error(runner.invoke(app, ["embed", "--ids", "١٢"]), "'١٢' is not a token id", code=2)

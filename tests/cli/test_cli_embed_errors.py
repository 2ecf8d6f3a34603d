"""`embedcli embed`'s refusals: each one error line with its exit code (2 for a usage error),
memory refused before it is allocated and the part that needs most named, a CUDA the torch build
lacks, an encoding that is not bundled."""

from __future__ import annotations

import pytest
import torch
from support.embedruns import SMALL, embed
from support.helpers import expect_error, make_runner

from embedcli.cli import app
from embedcli.tokenization import encodings

runner = make_runner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-d", "100000000000"], "need "),
        (
            ["--vocab-size", "1000000000", "-d", "100000"],
            "lower --d-model, --vocab-size or --context-length",
        ),
    ],
)
def test_errors_are_one_line(args: list[str], message: str) -> None:
    result = embed("hi", *args)
    expect_error(result, message)
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-e", "nope"], "unknown encoding 'nope'"),
        (["-m", "nope"], "unknown model 'nope'"),
        (["--device", "tpu"], "'tpu' is not a device"),
        (["-e", "gpt2", "-m", "gpt-4o"], "--model gpt-4o uses encoding o200k_base"),
        (["--truncate", "0"], "--truncate 0 leaves nothing to embed"),
        (["--token-key", "wte"], "--token-key and --position-key name tables in --weights"),
        (["--device", "meta"], "the meta device holds shapes but no values"),
        (["--device", "cdua"], "did you mean 'cuda'?"),
        (["--device", "mps:1"], "only cuda takes an index"),
        (["--dtype", "int8"], "'int8' is not one of: float32, float16, bfloat16"),
        (["--dtype", "float8"], "did you mean 'float32'"),
        (["--positional", "learnd"], "did you mean 'learned'?"),
        (["-d", "0"], "0 is not in the range x>=1"),
        (["--vocab-size", "0"], "0 is not in the range x>=1"),
        (["--context-length", "-5"], "-5 is not in the range x>=1"),
        (["--seed", "-1"], "-1 is not in the range"),
        (["--show", "0"], "0 is not in the range x>=1"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    expect_error(embed("hi", *args), message, code=2)


def test_unavailable_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.version, "cuda", None)
    result = embed("hi", "-d", "4", "--device", "cuda")
    expect_error(
        result,
        f"CUDA was requested, but this torch build ({torch.__version__}) has no CUDA; "
        "try --device cpu",
    )


def test_memory_estimate_refuses_before_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    from embedcli.pipeline import embed as pipeline

    monkeypatch.setattr(pipeline, "host_available_memory", lambda: 1_000_000)
    result = embed("hi", "-d", "768", "--device", "cpu")
    expect_error(
        result,
        "the float32 tables (50,257 + 1,024 rows × d 768) and the position buffers (1,024 "
        "positions) need 150.2 MiB (150.3 MiB in all), but only 976.6 KiB is available on this "
        "machine; lower --d-model",
    )
    # where the largest part is all of it, as printed, the sum is not said twice
    hundred_million = embed("hi", "-d", "100000000", "--device", "cpu")
    expect_error(hundred_million, "need 18.7 TiB, but only 976.6 KiB is available on this machine")


@pytest.mark.parametrize("positional", ["sinusoidal", "none", "rope"])
def test_a_huge_context_costs_only_the_positions_read(positional: str) -> None:
    """The position buffers (arange as int64 ids, a sinusoidal table) hold at most BUFFER_ROWS
    positions, and longer batches compute theirs: a context of 2**40 with no learned table
    embeds "hi" at once (a learned table of that size is refused: it would be allocated)."""
    result = embed("hi", "-d", "2", "--context-length", str(2**40), "--positional", positional)
    assert result.exit_code == 0, result.output
    assert "context 1,099,511,627,776" in result.stdout
    learned = embed("hi", "-d", "2", "--context-length", str(2**40), "--device", "cpu")
    expect_error(learned, "the float32 tables (50,257 + 1,099,511,627,776 rows")


def test_memory_refusal_names_what_is_too_big(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """The check counts everything the command holds and blames the part that needs most."""
    from embedcli.pipeline import embed as pipeline

    monkeypatch.setattr(pipeline, "host_available_memory", lambda: 50_000_000)
    long_text = " ".join(["word"] * 3000)
    expect_error(
        embed(long_text, "-d", "8", "--context-length", "4096", "--device", "cpu", "--similarity"),
        "what the report keeps (1 × 3,000 positions) need",
    )
    result = runner.invoke(
        app,
        ["embed", "-t", "4", "-b", str(10**9), "-d", "8", "-o", str(tmp_path / "o.npy")],
        input=long_text,
    )
    expect_error(result, "the activations (1,000,000,000 × 4 tokens × d 8, three tensors)")
    assert "lower -b/--batch-size" in result.stderr and list(tmp_path.iterdir()) == []


def test_invalid_positional_is_a_usage_error() -> None:
    result = embed("hi", "--positional", "rotary")
    assert result.exit_code == 2
    assert "rotary" in result.stderr


def test_offline_unbundled_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    import tiktoken

    encodings.get_encoding.cache_clear()
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    expect_error(embed("hi", "-e", "p50k_base", *SMALL), "encoding 'p50k_base' is not bundled")
    encodings.get_encoding.cache_clear()


def test_seed_range_is_checked() -> None:
    expect_error(embed("hi", *SMALL, "--seed", str(2**64)), "is not in the range", code=2)

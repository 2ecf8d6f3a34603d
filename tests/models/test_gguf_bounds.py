"""GGUF files that lie, written here byte by byte: truncated files, lying tensor offsets, absurd
sizes, unknown GGML types, metadata of the wrong type, each one ``Error:`` line from every
command that reads weights, with memory in proportion to the file (never to what it claims).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from support.ggufbytes import (
    F32,
    STR,
    U32,
    U64,
    D,
    V,
    arch_metadata,
    floats,
    gguf_file,
    good_metadata,
    kv,
    s,
    strings,
    swap,
    tensor,
    with_metadata,
    with_tensors,
)
from support.helpers import expect_error, make_runner

from embedcli.cli import app

pytest.importorskip("gguf")

runner = make_runner()
COMMANDS = {
    "weights": ["weights", "{}"],
    "embed": ["embed", "--ids", "1,2", "--weights", "{}", "--device", "cpu"],
    "inspect-shapes": ["inspect-shapes", "--weights", "{}"],
    "stats": ["stats", "--weights", "{}"],
    "neighbors": ["neighbors", "--ids", "1", "--weights", "{}", "-k", "2"],
    "positions": ["positions", "--weights", "{}"],
}


def invoke(command: str, path: Path):
    return runner.invoke(app, [arg.format(path) for arg in COMMANDS[command]])


def test_the_good_file_works(tmp_path: Path) -> None:
    """The baseline every hostile case departs from is read by every command."""
    path = gguf_file(tmp_path / "good.gguf")
    for command in COMMANDS:
        result = invoke(command, path)
        if command == "positions":
            continue  # rope without pictures of a table: its refusal or picture is not the point
        assert result.exit_code == 0, (command, result.output)


HOSTILE = {  # builder, what the one error line says
    "not GGUF at all (but named .gguf)": (
        lambda p: (p.write_bytes(b"GGUX" + b"\0" * 60), p)[1],
        "cannot tell the format",
    ),
    "version 1": (lambda p: gguf_file(p, version=1), "GGUF version 1"),
    "big-endian": (lambda p: gguf_file(p, version=3 << 24), "big-endian GGUF"),
    "truncated in the metadata": (lambda p: gguf_file(p, cut=400), "it is truncated, or its"),
    "truncated in the data": (lambda p: gguf_file(p, cut=-100), "runs past the end of the"),
    "lying tensor offset": (
        with_tensors(tensor("token_embd.weight", (D, V), 0, 1 << 40)),
        "runs past the end of the file",
    ),
    "misaligned tensor offset": (
        with_tensors(tensor("token_embd.weight", (D, V), 0, 4)),
        "not on the file's alignment",
    ),
    "absurd shape": (
        with_tensors(tensor("token_embd.weight", (1 << 40, 1 << 40), 0, 0)),
        "absurd shape",
    ),
    "huge but finite shape": (
        with_tensors(tensor("token_embd.weight", (D, 1 << 40), 0, 0)),
        "runs past the end of the file",
    ),
    "five dimensions": (
        with_tensors(tensor("token_embd.weight", (D, V, 1, 1, 1), 0, 0)),
        "has 5 dimensions",
    ),
    "unknown GGML type": (
        with_tensors(tensor("token_embd.weight", (D, V), 99, 0)),
        "GGML type 99",
    ),
    "rows not whole blocks": (
        with_tensors(tensor("token_embd.weight", (D + 1, V), 8, 0)),
        "not a whole number of Q8_0 blocks",
    ),
    "overlapping tensors": (
        lambda p: gguf_file(
            p,
            tensors=[
                tensor("token_embd.weight", (D, V), 0, 0),
                tensor("output.weight", (D, V // 2), 0, 32),
            ],
        ),
        "overlap",
    ),
    "two tensors of one name": (
        lambda p: gguf_file(
            p,
            tensors=[tensor("token_embd.weight", (D, V), 0, 0)] * 2,
            data=b"\0" * (2 * V * D * 4),
        ),
        "two tensors named",
    ),
    "absurd metadata count": (lambda p: gguf_file(p, kv_count=1 << 60), "more than the file"),
    "absurd string array": (
        swap("tokenizer.ggml.tokens", strings("tokenizer.ggml.tokens", ["a"], 1 << 50)),
        "claims 1,125,899,906,842,624 strings",
    ),
    "absurd string length": (
        swap("general.architecture", s("general.architecture") + struct.pack("<IQ", STR, 1 << 50)),
        "claims 1,125,899,906,842,624 bytes",
    ),
    "unknown value type": (
        with_metadata(x=s("x") + struct.pack("<I", 77) + b"\0" * 8),
        "unknown GGUF value type 77",
    ),
    "a key twice": (
        with_metadata(x=kv("llama.block_count", U32, 2)),
        "holds the metadata key 'llama.block_count' twice",
    ),
    "a key that is not UTF-8": (
        with_metadata(x=s(b"\xff\xfe") + struct.pack("<II", U32, 1)),
        "is not UTF-8 text",
    ),
    "bad alignment": (
        with_metadata(x=kv("general.alignment", U32, 3)),
        "general.alignment must be a uint32 power of two",
    ),
    "context length of the wrong type": (
        swap("llama.context_length", kv("llama.context_length", STR, "4096")),
        "llama.context_length must be an integer, it is string",
    ),
    "no embedding length": (
        swap("llama.embedding_length", b""),
        "has no llama.embedding_length",
    ),
    "unknown architecture": (
        swap("general.architecture", kv("general.architecture", STR, "mamba9")),
        "a 'mamba9' model (general.architecture), an architecture embedcli does not map",
    ),
    "architecture of the wrong type": (
        swap("general.architecture", kv("general.architecture", U32, 7)),
        "general.architecture must be a string, it is uint32",
    ),
    "no token table": (
        with_tensors(tensor("blk.0.attn_q.weight", (D, V), 0, 0)),
        "has no token_embd.weight",
    ),
    "a rope base of 0 (not read as absent)": (
        with_metadata(x=kv("llama.rope.freq_base", F32, 0.0)),
        "llama.rope.freq_base must be a number above 1, got 0.0",
    ),
    "a sliding-window rope base of 0": (
        lambda p: gguf_file(p, arch_metadata("gemma3", kv("gemma3.rope.freq_base_swa", F32, 0.0))),
        "gemma3.rope.freq_base_swa must be a number above 1, got 0.0",
    ),
    "an odd rope dimension count": (
        with_metadata(x=kv("llama.rope.dimension_count", U32, 7)),
        "llama.rope.dimension_count is 7, an odd number (a head has 8 dimensions)",
    ),
    "an odd head width": (
        with_metadata(x=kv("llama.attention.key_length", U32, 7)),
        "a head has 7 dimensions (llama.attention.key_length), an odd number",
    ),
    "a context length past llama.cpp's uint32": (
        swap("llama.context_length", kv("llama.context_length", U64, 1 << 62)),
        "llama.context_length is 4,611,686,018,427,387,904, more than llama.cpp can read",
    ),
    "width disagreeing with the metadata": (
        swap("llama.embedding_length", kv("llama.embedding_length", U32, 2 * D)),
        "gives llama.embedding_length 64, but its weights have 32 columns",
    ),
}  # fmt: skip
# header-level damage is found by every command; config-level by those that read a config
WEIGHTS_ONLY_OK = {"width disagreeing with the metadata"}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_gguf_files_are_one_error_line(tmp_path: Path, case: str) -> None:
    build, message = HOSTILE[case]
    path = build(tmp_path / "model.gguf")
    for command in COMMANDS:
        if command == "weights" and case in WEIGHTS_ONLY_OK:
            continue
        result = invoke(command, path)
        expect_error(result, message)


def run_bounded(*args: str, limit: int = 1536 << 20) -> subprocess.CompletedProcess:
    """``embedcli ARGS`` in a subprocess whose address space is capped at ``limit`` bytes: a
    command that allocates in proportion to what a header claims dies of it."""
    script = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))\n"
        "from embedcli.cli import main\n"
        f"sys.argv = ['embedcli', *{list(args)!r}]\n"
        "main()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )


def test_a_lying_file_costs_memory_in_proportion_to_its_size(tmp_path: Path) -> None:
    """A header declaring a trillion-row table and a million-string vocabulary over a few KB:
    refused before anything of that size is allocated (RLIMIT_AS would kill the run)."""
    path = gguf_file(
        tmp_path / "lie.gguf", tensors=[tensor("token_embd.weight", (D, 1 << 40), 0, 0)]
    )
    result = run_bounded("weights", str(path), limit=1 << 32)
    assert result.returncode == 1, result.stderr
    assert "runs past the end of the file" in result.stderr and "Traceback" not in result.stderr


def test_a_block_count_past_llama_cpps_bound_costs_nothing(tmp_path: Path) -> None:
    """gemma3.block_count 2**30 is refused by its bound (llama.cpp's LLAMA_MAX_LAYERS, 512),
    before any per-layer list is made, in memory that does not grow; 512 blocks are read, the
    first sliding (every sixth is full) at llama.cpp's default local base."""
    window = kv("gemma3.attention.sliding_window", U32, 512)
    metadata = arch_metadata("gemma3", kv("gemma3.rope.freq_base", F32, 1e6), window,
                             blocks=1 << 30)  # fmt: skip
    path = gguf_file(tmp_path / "model.gguf", metadata)
    result = run_bounded("positions", "--weights", str(path), "--json")
    assert result.returncode == 1 and "llama.cpp loads at most 512 blocks" in result.stderr
    metadata = arch_metadata("gemma3", kv("gemma3.rope.freq_base", F32, 1e6), window, blocks=512)
    result = run_bounded("positions", "--weights", str(gguf_file(path, metadata)), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["theta"] == 10000.0  # block 0 slides: llama.cpp's default local base
    assert report["rope_bases"] == {"full_attention": 1e6, "sliding_attention": 10000.0}


def spm_file(path: Path, pieces: list[str]) -> Path:
    """A GGUF file whose tokenizer is SentencePiece-style: <unk> <s> </s>, the byte tokens,
    then ``pieces`` scored -1, -2, ... (the first merges first)."""
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256)), *pieces]
    scores = [0.0] * 259 + [-1.0 - i for i in range(len(pieces))]
    metadata = good_metadata(**{
        "tokenizer.ggml.model": kv("tokenizer.ggml.model", STR, "llama"),
        "tokenizer.ggml.pre": b"",
        "tokenizer.ggml.merges": b"",
        "tokenizer.ggml.tokens": strings("tokenizer.ggml.tokens", tokens),
        "tokenizer.ggml.scores": floats("tokenizer.ggml.scores", scores),
    })  # fmt: skip
    return gguf_file(path, metadata)


def test_nested_sentencepiece_tokens_cost_no_merges_table(tmp_path: Path) -> None:
    """Nested tokens ("a", "aa", ..., "a" * n) would make n²/2 merges spelling n³/6 characters
    as ranks (n = 1,200: 2 GB); merged by score as llama.cpp merges them, they need no table,
    so even 1,200 of them are read, and "aaaaa" is one token."""
    few = spm_file(tmp_path / "few.gguf", ["▁", *("a" * k for k in range(1, 9))])
    result = runner.invoke(app, ["tokenize", "aaaaa", "-e", str(few), "--json"])
    assert result.exit_code == 0, result.output
    ids = [token["id"] for token in json.loads(result.stdout)["tokens"]]
    assert ids[-2:] == [259, 259 + 5]  # ▁, then aaaaa
    many = spm_file(tmp_path / "model.gguf", ["▁", *("a" * k for k in range(1, 1201))])
    result = runner.invoke(app, ["tokenize", "a" * 1000, "-e", str(many), "--json"])
    assert result.exit_code == 0, result.output
    ids = [token["id"] for token in json.loads(result.stdout)["tokens"]]
    assert ids[-2:] == [259, 259 + 1000]


QUANTIZED = {"Q8_0": (8, 34), "Q4_1": (3, 20)}  # GGML type, bytes of a block of 32 values


def quantized_table(kind: str, bad_row: int, at: int, bits: int) -> bytes:
    """A token table of V rows of one block each, every scale 1/16 and minimum 0, but for the
    float16 ``bits`` at byte ``at`` of row ``bad_row``'s block."""
    size = QUANTIZED[kind][1]
    rows = []
    for row in range(V):
        block = bytearray(struct.pack("<HH", 0x2C00, 0)[: 4 if kind == "Q4_1" else 2])
        block += bytes((row + i) % 100 for i in range(size - len(block)))
        if row == bad_row:
            block[at : at + 2] = struct.pack("<H", bits)
        rows.append(bytes(block))
    return b"".join(rows)


@pytest.mark.parametrize(
    ("kind", "at", "bits", "said"),
    [
        ("Q8_0", 0, 0x7E00, "scale of nan"),
        ("Q8_0", 0, 0x7C00, "scale of inf"),
        ("Q8_0", 0, 0xFC00, "scale of -inf"),
        ("Q4_1", 2, 0x7E00, "minimum of nan"),
    ],
)
def test_a_block_scale_that_is_not_finite_is_refused(
    tmp_path: Path, kind: str, at: int, bits: int, said: str
) -> None:
    """A row dequantized from a NaN or infinite scale is never shown, nor bounded by
    "quantization error ≤ 0" (max() drops a NaN): every command that reads it refuses it,
    and the rows around it are read, with a finite bound in text and JSON alike."""
    records = [tensor("token_embd.weight", (D, V), QUANTIZED[kind][0], 0)]
    data = quantized_table(kind, 5, at, bits)
    path = gguf_file(tmp_path / "model.gguf", tensors=records, data=data)
    message = f"token_embd.weight row 5 has a {kind} block {said}: the file is damaged"
    for command in (["embed", "--ids", "1,5"], ["stats"], ["neighbors", "--ids", "1", "-k", "2"]):
        expect_error(runner.invoke(app, [*command, "--weights", str(path)]), message)
    args = ["embed", "--ids", "1,2", "--weights", str(path), "--device", "cpu"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    bound = json.loads(result.stdout)["config"]["table_type"]["max_error"]
    assert 1 / 32 <= bound < 1 / 16  # half a step of 1/16, and the scale's own rounding
    result = runner.invoke(app, args)
    assert result.exit_code == 0 and f"quantization error ≤ {bound:.3g}" in result.stdout


def test_gguf_errors_name_the_file_as_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a safetensors file's errors do: the path as given, absolute or relative, never
    its base name alone (the metadata read as a config went by its base name)."""
    gguf_file(tmp_path / "model.gguf", good_metadata(x=kv("llama.rope.scaling.factor", F32, -2.0)))
    monkeypatch.chdir(tmp_path.parent)
    given = f"{tmp_path.name}/model.gguf"
    for command in COMMANDS:
        expect_error(
            invoke(command, Path(given)), f"{given}: llama.rope.scaling.factor must be at least 1"
        )

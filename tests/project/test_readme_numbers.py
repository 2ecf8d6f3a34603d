"""The numbers the examples of the README and the manual (docs/*.md) print, read back and checked
against computations made here (tests/project/test_readme.py checks that each example still
prints what its page shows; this checks that what it shows is right)."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
import torch
from support import golden_oracle as oracle
from support import golden_oracle_tables as tables
from test_readme import EXAMPLES

from embedcli import get_encoding


def output_of(command: str) -> str:
    """What the README or a page of the manual shows under `command`: the same, wherever shown."""
    found = [(e.file, e.expected) for e in EXAMPLES if e.command == command]
    assert found, f"neither the README nor the manual shows `{command}` any more"
    outputs = {expected for _, expected in found}
    assert len(outputs) == 1, f"`{command}` shows different output in {[f for f, _ in found]}"
    return outputs.pop()


def output_starting(prefix: str) -> str:
    """The output of the one command shown that starts with `prefix`."""
    commands = {e.command for e in EXAMPLES if e.command.startswith(prefix)}
    assert len(commands) == 1, commands
    return output_of(commands.pop())


def output_containing(part: str) -> str:
    """The output of the one command shown that contains `part`."""
    commands = {e.command for e in EXAMPLES if part in e.command}
    assert len(commands) == 1, commands
    return output_of(commands.pop())


def test_the_embed_table() -> None:
    text = output_of('embedcli embed "Hello, world!" "Hi" -d 8 --context-length 16 --device cpu '
                     "--show 3")  # fmt: skip
    oracle.CHECKERS["embed_batch"]("embed_batch", text)


def test_the_token_table() -> None:
    oracle.CHECKERS["tokenize"](
        "tokenize", output_of('embedcli tokenize "Hello, world! 😀 don\'t"')
    )


def test_the_encodings_compared() -> None:
    sample = "tiktoken is great! 東京"
    text = output_of(f'embedcli tokenize "{sample}" -e gpt2 -e cl100k_base -e o200k_base')
    oracle.compare_counts(text, sample)


def test_the_shapes_and_presets() -> None:
    oracle.CHECKERS["inspect_book_ch2"]("inspect_book_ch2", output_of(
        "embedcli inspect-shapes --preset book-ch2"))  # fmt: skip
    oracle.CHECKERS["presets"]("presets", output_of("embedcli inspect-shapes --list-presets"))


@pytest.mark.parametrize("command", ["embedcli broadcast 8,4,256 4,256",
                                     'embedcli broadcast "(8,4,256)" "(3,256)"'])  # fmt: skip
def test_broadcasting(command: str) -> None:
    text = output_of(command)
    if "Error" in text:  # (8,4,256) with (3,256): the examples show the refusal
        assert "axis -2 has sizes 4 and 3" in text
        with pytest.raises(ValueError):
            np.broadcast_shapes((8, 4, 256), (3, 256))
        return
    oracle.CHECKERS["broadcast"]("broadcast", text)


def readme_checkpoint() -> tuple[np.ndarray, np.ndarray]:
    """ckpt.pt as the python line of docs/checkpoints.md makes it."""
    torch.manual_seed(0)
    token = torch.randn(50257, 16)
    position = torch.randn(64, 16)
    return token.double().numpy(), position.double().numpy()


def test_the_checkpoint_tables() -> None:
    token, position = readme_checkpoint()
    tables.check_neighbors(output_of('embedcli neighbors " king" --weights ckpt.pt -k 4'), token)
    rows = tables.stats_cells(output_of("embedcli stats --weights ckpt.pt"))
    for column, table in enumerate((token, position)):
        values = table.ravel()
        assert abs(oracle.number(rows["mean"][column]) - values.mean()) <= 6e-5
        assert abs(oracle.number(rows["std"][column]) - values.std(ddof=1)) <= 6e-5
        norms = np.linalg.norm(table, axis=1)
        assert abs(oracle.number(rows["row norm p50"][column]) - np.median(norms)) <= 6e-4


def test_the_positional_pictures() -> None:
    text = output_of("embedcli positions --context-length 16 -d 64")
    tables.check_position_map(text, oracle.sinusoids(16, 64), False)
    text = output_of(
        "embedcli positions --positional learned --similarity --context-length 12 -d 64"
    )
    _, position = oracle.recipe(50257, 64, 12, 123)
    tables.check_position_map(text, tables.cosine(position), True)


def test_the_projection_of_a_stretched_table() -> None:
    shown = output_starting('embedcli project " the" --first-ids 5')
    structure, ratio, shares = re.match(r"(\w+) ([\d.]+) \[([\d., ]+)\]", shown).groups()
    torch.manual_seed(0)
    table = torch.randn(50257, 16)
    table[:, 0] *= 6
    table[:, 1] *= 3
    values = table.double().numpy()
    variances = np.linalg.eigvalsh(np.cov(values, rowvar=False))[::-1]  # exact, by numpy
    total = variances.sum()
    assert [float(s) for s in shares.split(",")] == [round(v / total, 3) for v in variances[:2]]
    edge = total / 16 * (1 + (16 / (50257 - 1)) ** 0.5) ** 2  # Marchenko–Pastur
    assert float(ratio) == round(variances[0] / edge, 1) and structure == "structured"


def sample(name: str) -> str:
    from test_readme import REPO

    return (REPO / "samples" / name).read_text(encoding="utf-8")


def test_token_counts_of_the_samples() -> None:
    gpt2, o200k = get_encoding("gpt2"), get_encoding("o200k_base")
    light = sample("lighthouse.txt")
    assert output_of("embedcli tokenize -f samples/lighthouse.txt --count -e gpt2 -e o200k_base") \
        == f"gpt2\t{len(gpt2.encode(light))}\no200k_base\t{len(o200k.encode(light))}"  # fmt: skip
    assert output_of('embedcli tokenize "Hello, world!" --encode').split() == [
        str(i) for i in gpt2.encode("Hello, world!")]  # fmt: skip
    rows = oracle.table_lines(
        output_of("embedcli count samples --include '*.txt' -e gpt2 -m gpt-4o")
    )
    for row in rows:
        text = sample(row[0].removeprefix("samples/"))
        assert oracle.number(row[1]) == len(text.encode("utf-8"))
        assert oracle.number(row[2]) == len(gpt2.encode(text, disallowed_special=()))
        assert oracle.number(row[3]) == len(o200k.encode(text, disallowed_special=()))
    total = sum(oracle.number(r[2]) for r in rows)
    for row in rows:
        assert oracle.number(row[4].rstrip("%")) == round(100 * oracle.number(row[2]) / total, 1)


def test_the_windows_of_the_lighthouse() -> None:
    ids = get_encoding("gpt2").encode(sample("lighthouse.txt"))
    text = output_of("embedcli windows -f samples/lighthouse.txt -t 4 --stride 1 -b 2")
    numbers = [
        [int(v) for v in r[2:]] for r in oracle.table_lines(text) if r[2:] and r[2].isdigit()
    ]
    for k in range(0, len(numbers), 2):  # x then y, a window a row
        start = k // 2
        assert numbers[k] == ids[start : start + 4] and numbers[k + 1] == ids[start + 1 : start + 5]
    windows = len(ids) - 4  # stride 1: every start whose target fits
    assert f"{len(ids)} tokens" in text and f"{windows} windows with a full target" in text
    assert f"in {windows // 2} batches" in text
    summary = output_of(
        "embedcli windows -f samples/lighthouse.txt -t 8 -b 4 --json | python3 -c 'import json, "
        'sys; r = json.load(sys.stdin); print(r["num_windows"], r["num_batches"], '
        'r["dropped_windows"], r["dropped_tokens"], r["batches"][0]["inputs"][0])\''
    )
    full = (len(ids) - 1) // 8  # stride 8: starts 0, 8, ... whose 9 tokens fit
    batches = full // 4
    used_to = (batches * 4 - 1) * 8 + 9
    assert summary == f"{full} {batches} {full - batches * 4} {len(ids) - used_to} {ids[:8]}"


def test_training_memory_and_the_gpt3_tables() -> None:
    training = output_containing("--preset book-ch2 --train --json")
    vocab, d, context, batch, length = 50257, 256, 4, 8, 4  # book-ch2, as docs/shapes.md says
    params = vocab * d + context * d
    activations = batch * length * 8 + (2 * batch * length * d + length * d) * 2  # mixed: bf16
    mixed = {
        "parameters": params * 2,  # bf16 weights
        "gradients": params * 2,
        "master weights": params * 4,  # fp32
        "optimizer state": params * 8 + 2 * 4,  # AdamW's two fp32 moments, a step count a table
        "activations (input layer)": activations,
    }
    assert training.split("} {")[0] + "}" == str(mixed)
    gpt3 = output_containing("--preset gpt3 --json")
    tables = 50257 * 12288 + 2048 * 12288
    whole = oracle.gpt2_parameters(50257, 12288, 2048, 96)
    assert gpt3 == f"[8, 4, 12288] {tables} {tables * 2} {round(tables / whole, 4)}"


def test_tokens_as_json_the_explained_merges_and_the_offsets() -> None:
    import json

    gpt2 = get_encoding("gpt2")
    data = json.loads(output_of('embedcli tokenize "Hi 😀" --json'))
    ids = gpt2.encode("Hi 😀")
    assert [t["id"] for t in data["tokens"]] == ids and data["count"] == len(ids)
    assert [t["bytes"] for t in data["tokens"]] == [gpt2.decode_single_token_bytes(i).hex()
                                                    for i in ids]  # fmt: skip
    assert data["n_vocab"] == gpt2.n_vocab
    # --explain: each step joins the adjacent pair of lowest rank in gpt2's own table
    ranks = gpt2._mergeable_ranks
    table = output_of('embedcli tokenize " unbelievable" --explain')
    rows = [r for r in oracle.table_lines(table) if r[0] == "bytes" or r[0].isdigit()]
    before = [p.replace("␣", " ").encode() for p in rows[0][2].split()]
    for row in rows[1:]:
        pairs = [(ranks[a + b], k) for k, (a, b) in enumerate(itertools.pairwise(before))
                 if a + b in ranks]  # fmt: skip
        rank, at = min(pairs)
        before[at : at + 2] = [before[at] + before[at + 1]]
        assert int(oracle.number(row[1])) == rank
        assert [p.replace("␣", " ").encode() for p in row[2].split()] == before
    assert before == [b" unbelievable"]

    # --offsets: tiktoken's decode_with_offsets, null where a token splits a character
    text = "naïve 😀"
    shown = output_starting(f'embedcli tokenize "{text}" --offsets')
    ids = gpt2.encode(text)
    _, starts = gpt2.decode_with_offsets(ids)
    expected = []
    for i, token in enumerate(ids):
        try:
            expected.append(
                [starts[i], starts[i] + len(gpt2.decode_single_token_bytes(token).decode())]
            )
        except UnicodeDecodeError:
            expected.append(None)
    assert shown == str(expected)


def test_the_checkpoint_listing() -> None:
    text = output_of("embedcli weights ckpt.pt")
    shapes = {r[0]: oracle.shape(r[1]) for r in oracle.table_lines(text) if len(r) == 4}
    assert shapes == {"transformer.wte.weight": (50257, 16), "transformer.wpe.weight": (64, 16),
                      "lm_head.weight": (50257, 16)}  # fmt: skip
    tied_once = 50257 * 16 + 64 * 16  # the head is the token table itself (same storage)
    assert oracle.number(re.search(r"([\d,]+) parameters", text).group(1)) == tied_once

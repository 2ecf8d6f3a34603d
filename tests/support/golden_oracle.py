"""The numbers in every golden file, read back out of the rendered text and checked against a
computation made here, without the code that rendered them: so a golden file regenerated over
a bug fails (a golden file alone catches change, not error).

``check(name, text)`` runs the checker registered for the golden file ``name``; every file in
tests/golden/ must have one (tests/render/test_golden_oracle.py holds that). The checkers of
checkpoints, windows, positional heatmaps and devices are in golden_oracle_tables.py, those of
rope and ALiBi in golden_oracle_attention.py; both register here as they are imported.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import torch

RAMP = " .:-=+*#%@"  # the plain heatmap ramp, low to high
VISIBLE = {" ": "␣", "\t": "⇥", "\r": "␍", "\n": "↵"}
CHECKERS: dict[str, Callable[[str, str], None]] = {}


def check(name: str, text: str) -> None:
    """Check the numbers of golden file ``name`` (its rendered ``text``)."""
    stem = re.sub(r"(_80|_120)?\.txt$", "", name)
    assert stem in CHECKERS, f"golden file {name} has no independent check of its numbers"
    CHECKERS[stem](stem, text)


def checker(*stems: str) -> Callable[[Callable[[str, str], None]], Callable[[str, str], None]]:
    def register(function: Callable[[str, str], None]) -> Callable[[str, str], None]:
        for stem in stems:
            CHECKERS[stem] = function
        return function

    return register


# ---------------------------------------------------------------- reading the text


def cells(line: str) -> list[str]:
    """A table line's cells, stripped ("│ a │ b │" -> ["a", "b"])."""
    return [c.strip() for c in line.strip().strip("│").split("│")]


def table_lines(text: str) -> list[list[str]]:
    return [cells(line) for line in text.splitlines() if line.startswith("│")]


def number(text: str) -> float:
    return float(text.replace(",", "").replace("+", ""))


def shape(text: str) -> tuple[int, ...]:
    inner = text.strip().strip("()")
    return tuple(int(n) for n in inner.split(",") if n)


def header(text: str) -> dict[str, str]:
    """'vocab 50,257 · d 8 · context 16 · learned positions · seed 123' -> fields."""
    found = {}
    head = " ".join(text.splitlines()[:3])
    for key, pattern in (
        ("vocab", r"vocab ([\d,]+)"),
        ("d", r"\bd ([\d,]+)"),
        ("context", r"context ([\d,]+)"),
        ("seed", r"seed (\d+)"),
        ("positional", r"(learned|sinusoidal|rope|none) positions"),
        ("batch", r"batch ([\d,]+)"),
        ("seq", r"seq-len ([\d,]+)"),
    ):
        match = re.search(pattern, head)
        if match:
            found[key] = match.group(1).replace(",", "")
    return found


def binary_size(n: float) -> str:
    """Bytes as embedcli shows them: B, then KiB, MiB, GiB, TiB with one decimal."""
    if n < 1024:
        return f"{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        n /= 1024
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}"
    raise AssertionError


def shown(piece: bytes) -> str:
    """A token's bytes as the tables show them: text with visible whitespace, else <0x..>."""
    try:
        text = piece.decode("utf-8")
    except UnicodeDecodeError:
        return "<" + " ".join(f"0x{b:02X}" for b in piece) + ">"
    return "".join(VISIBLE.get(c, c) for c in text)


def gpt2():
    from embedcli.tokenization.encodings import get_encoding

    return get_encoding("gpt2")


def recipe(vocab: int, d: int, context: int, seed: int, learned: bool = True):
    """torch.manual_seed, then nn.Embedding for tokens, then for positions: the recipe."""
    torch.manual_seed(seed)
    token = torch.nn.Embedding(vocab, d).weight.detach().double().numpy()
    position = torch.nn.Embedding(context, d).weight.detach().double().numpy() if learned else None
    return token, position


def sinusoids(length: int, d: int) -> np.ndarray:
    table = np.zeros((length, d))
    for p in range(length):
        for i in range(0, d, 2):
            table[p, i] = math.sin(p / 10000 ** (i / d))
            table[p, i + 1] = math.cos(p / 10000 ** (i / d))
    return table


def heatmap_blocks(text: str) -> list[tuple[list[str], tuple[float, float]]]:
    """Each picture: (its lines of cells, labels first; (low, high) from its scale line)."""
    lines = text.splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if not line.startswith("rows: "):
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("scale: "))
        low, high = (float(v) for v in re.findall(r"[+-]\d+\.\d+", lines[end])[:2])
        grid = lines[i + 1 : end]
        while grid and not re.match(r"^\s*\S", grid[0]):
            grid.pop(0)
        blocks.append((grid, (low, high)))
    return blocks


def ramp_of(value: float, low: float, high: float) -> str:
    t = (value - low) / ((high - low) or 1.0)
    return RAMP[min(len(RAMP) - 1, int(max(0.0, t) * len(RAMP)))]


def assert_ramp(drawn: str, values: list[float], low: float, high: float, cell: int) -> None:
    """The drawn cells against the values, allowing one ramp step where a value sits on a step's
    edge after the scale's rounding to two decimals."""
    assert len(drawn.rstrip()) <= len(values) * cell
    for k, value in enumerate(values):
        got = drawn[k * cell : (k + 1) * cell].ljust(cell)[0]
        want = ramp_of(value, low, high)
        near = {ramp_of(value, low + e, high + f) for e in (-0.005, 0.005) for f in (-0.005, 0.005)}
        assert got == want or got in near, (k, got, want, value)


# ---------------------------------------------------------------- embed


def embed_vectors(text: str, token: np.ndarray, position: np.ndarray | None, family: str) -> int:
    """Every token / + pos / = input row against the tables; the number of rows checked."""
    enc = gpt2()
    dims: list[int] = []
    pos = token_id = None
    checked = 0
    for line in text.splitlines():
        if line.startswith("┃") and "[" in line:
            dims = [int(d) for d in re.findall(r"\[(\d+)\]", line)]
            continue
        if not line.startswith("│") or not dims:
            continue
        row = cells(line)
        if len(row) == 3 + len(dims) and row[0].isdigit():  # no tensor column: nothing added
            row = [*row[:3], "= input", *row[3:]]
        if len(row) < 4 + len(dims) or row[3] not in ("token", "+ pos", "= input"):
            continue
        if row[0]:
            pos, token_id = int(row[0]), int(row[1])
            assert row[2] in (shown(enc.decode_single_token_bytes(token_id)), "(pad)"), row
        values = [number(v) for v in row[4 : 4 + len(dims)]]
        base = token[token_id, dims]
        added = (
            position[pos, dims]
            if family == "learned"
            else sinusoids(pos + 1, token.shape[1])[pos, dims]
            if family == "sinusoidal"
            else np.zeros(len(dims))
        )
        expected = {"token": base, "+ pos": added, "= input": base + added}[row[3]]
        assert np.allclose(values, expected, atol=6e-5), (row, expected)
        checked += 1
    return checked


def embed_shapes(text: str, d: int) -> None:
    found = {row[0]: shape(row[1]) for row in table_lines(text) if row and row[1].startswith("(")}
    batch, length = found["input_ids"]
    assert found["token_embeddings"] == (batch, length, d)
    assert found["input_embeddings"] == (batch, length, d)
    if "position_embeddings" in found:
        assert found["position_embeddings"] == (length, d)
    if "rope_angles" in found:
        assert found["rope_angles"][0] == length


def similarity_maps(text: str, token: np.ndarray, position: np.ndarray) -> None:
    """Each token-by-token cosine map against the sums recomputed from the ids shown."""
    ids_by_sequence: list[list[int]] = []
    for line in text.splitlines():
        if re.match(r"^Sequence \d+:|^Tokens and vectors", line):
            ids_by_sequence.append([])
        row = cells(line) if line.startswith("│") else []
        if ids_by_sequence and len(row) > 3 and row[0] and row[3] == "token":
            ids_by_sequence[-1].append(int(row[1]))
    for index, (grid, shown) in enumerate(heatmap_blocks(text)):
        ids = ids_by_sequence[index]
        vectors = token[ids] + position[: len(ids)]
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        similarity = unit @ unit.T
        off = similarity[~np.eye(len(ids), dtype=bool)]  # the scale: the off-diagonal range
        low, high = float(off.min()), float(off.max())
        assert abs(shown[0] - low) <= 0.005 and abs(shown[1] - high) <= 0.005
        # labels are the index and the piece, padded to one width, then a space
        start = max(re.match(r"\s*\d+ \S+", line).end() for line in grid) + 1
        for k, line in enumerate(grid):
            assert_ramp(line[start:], list(similarity[k]), low, high, 3)


@checker("embed_batch", "embed_long", "embed_similarity", "embed_rope", "embed_hello_batch")
def _embed(stem: str, text: str) -> None:
    fields = header(text)
    vocab, d, context = int(fields["vocab"]), int(fields["d"]), int(fields["context"])
    family = fields["positional"]
    token, position = recipe(vocab, d, context, int(fields["seed"]), family == "learned")
    embed_shapes(text, d)
    assert embed_vectors(text, token, position, family) >= 4
    if stem == "embed_similarity":
        similarity_maps(text, token, position)
    if stem == "embed_rope":
        for row in table_lines(text):
            if len(row) == 4 and row[0].isdigit():  # pos, pair 0..2: pos × 10000^(-2i/d)
                angles = [int(row[0]) * 10000 ** (-2 * i / d) for i in range(3)]
                assert np.allclose([number(v) for v in row[1:]], angles, atol=6e-5)


# ---------------------------------------------------------------- tokenize


@checker("tokenize", "tokenize_default")
def _tokenize(stem: str, text: str) -> None:
    enc = gpt2()
    rows = [r for r in table_lines(text) if len(r) == 4 and r[0].isdigit()]
    data = b"".join(bytes.fromhex(r[3].replace(" ", "")) for r in rows)
    assert [int(r[1]) for r in rows] == enc.encode(data.decode("utf-8"))
    for r in rows:
        assert r[2] == shown(enc.decode_single_token_bytes(int(r[1])))
    count, chars = re.search(r"(\d+) tokens · (\d+) characters", text).groups()
    assert (int(count), int(chars)) == (len(rows), len(data.decode("utf-8")))


@checker("compare")
def _compare(stem: str, text: str) -> None:
    compare_counts(text, "Hello, world! 😀 don't\n\ttab [/x]")  # tests/render/test_render.py's text


def compare_counts(text: str, sample: str) -> None:
    """The token counts table of several encodings against tiktoken's counts of ``sample``."""
    from embedcli.tokenization.encodings import get_encoding

    counts = {}
    for row in table_lines(text):
        if len(row) == 5 and row[0] in ("gpt2", "cl100k_base", "o200k_base"):
            enc = get_encoding(row[0])
            tokens = len(enc.encode(sample))
            counts[row[0]] = tokens
            assert number(row[1]) == enc.n_vocab and number(row[2]) == tokens
            assert number(row[3]) == round(len(sample) / tokens, 2)
            assert number(row[4].rstrip("×")) == round(tokens / counts["gpt2"], 2)
    assert len(counts) == 3


# ---------------------------------------------------------------- shapes and parameters


def tensors_table(text: str, batch: int, length: int, d: int) -> None:
    sizes = {"int64": 8, "float32": 4, "float16": 2, "bfloat16": 2}
    expected = {"input_ids": (batch, length), "token_embeddings": (batch, length, d),
                "position_ids": (length,), "position_embeddings": (length, d),
                "input_embeddings": (batch, length, d)}  # fmt: skip
    seen = 0
    for row in table_lines(text):
        if len(row) == 6 and row[0] in expected:
            assert shape(row[1]) == expected[row[0]], row
            numel = math.prod(expected[row[0]])
            assert number(row[4]) == numel and row[5] == binary_size(numel * sizes[row[2]])
            seen += 1
    assert seen >= 4


def parameters_table(text: str, vocab: int, d: int, context: int, learned: bool) -> None:
    rows = {r[0]: r for r in table_lines(text) if len(r) == 5}
    token = vocab * d
    assert shape(rows["token_embeddings"][1]) == (vocab, d)
    assert number(rows["token_embeddings"][2]) == token
    total = token + (context * d if learned else 0)
    if learned:
        assert number(rows["position_embeddings"][2]) == context * d
    assert number(rows["total"][2]) == total
    assert rows["total"][3] == binary_size(4 * total) and rows["total"][4] == binary_size(2 * total)


def gpt2_parameters(vocab: int, d: int, context: int, layers: int) -> int:
    """GPT-2's count: tables, then per block 12 d² + 13 d (attention, MLP, two LayerNorms),
    then the final LayerNorm; the head is tied."""
    return vocab * d + context * d + layers * (12 * d * d + 13 * d) + 2 * d


@checker("shapes_gpt2", "shapes_gpt3", "shapes_sinusoidal", "inspect_book_ch2")
def _shapes(stem: str, text: str) -> None:
    fields = header(text)
    vocab, d, context = int(fields["vocab"]), int(fields["d"]), int(fields["context"])
    batch, length = int(fields["batch"]), int(fields["seq"])
    learned = fields["positional"] == "learned"
    tensors_table(text, batch, length, d)
    parameters_table(text, vocab, d, context, learned)
    result = re.search(r"result: \(([\d,]+)\)", text).group(1)
    assert tuple(int(n) for n in result.split(",")) == (batch, length, d)
    if "concatenate" in text:
        rows = {r[0]: r for r in table_lines(text) if r[0] in ("add", "concatenate")}
        assert number(rows["add"][3]) == d * d + d
        assert number(rows["concatenate"][3]) == 2 * d * d + d
    share = re.search(r"embeddings are ([\d.]+)% of the whole \S+ model's ([\d,]+)", text)
    if share:
        layers = {"shapes_gpt2": 12, "shapes_sinusoidal": 12, "shapes_gpt3": 96}[stem]
        whole = gpt2_parameters(vocab, d, context, layers)
        if not learned:  # sinusoids: the same model without its positional table
            whole -= context * d
        assert number(share.group(2)) == whole
        tables = vocab * d + (context * d if learned else 0)
        assert number(share.group(1)) == round(100 * tables / whole, 2)


PUBLISHED = {  # parameters as the models' own papers and cards count them
    "gpt2": 124_439_808, "gpt2-medium": 354_823_168, "gpt2-large": 774_030_080,
    "gpt2-xl": 1_557_611_200,
}  # fmt: skip
LAYERS = {"gpt2": 12, "gpt2-medium": 24, "gpt2-large": 36, "gpt2-xl": 48, "gpt3": 96}


def short(n: int) -> str:
    """A count in three significant digits with its unit, as the hub writes it (8.03B)."""
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            value = n / size
            return f"{value:.{2 if value < 10 else 1 if value < 100 else 0}f}{unit}"
    return str(n)


def same_figure(shown: str, published: str) -> bool:
    """``shown`` (8.03B) read at the precision ``published`` gives: its significant digits
    (110M has two: a trailing zero of a whole number is not one)."""
    if shown[-1] != published[-1]:
        return False
    digits = published[:-1].replace(".", "").lstrip("0")
    if "." not in published:
        digits = digits.rstrip("0")
    value = float(shown[:-1])
    exponent = math.floor(math.log10(value))
    return round(value, len(digits) - 1 - exponent) == float(published[:-1])


def published_presets() -> dict[str, dict]:
    """The registry's published configs: each model's config.json and the count its hub page
    shows."""
    from dataclasses import asdict

    from embedcli.families.registry import presets

    return {e.name: {k: v for k, v in asdict(e).items() if v is not None} for e in presets()}


# The presets whose hub page counts something the model does not hold: (embedcli's count,
# the hub's), each difference stated in the preset's published_note.
NOTED = {
    "falcon-40b": ("41.3B", "41.8B"),  # the tied head counted twice: 0.53B
    "deepseek-v3": ("671B", "685B"),  # the multi-token-prediction module: about 14B
    "llama-4-scout": ("108B", "109B"),  # the vision tower and its projector
    "gemma-3n-e4b": ("6.84B", "8B"),  # the vision and audio towers (the model card's raw count)
}


@checker("presets")
def _presets(stem: str, text: str) -> None:
    """GPT-2's counts from the formula; a real family's sizes from its config.json, and its
    count as its hub page shows it, or as NOTED where the page counts more than the model."""
    real = published_presets()
    flat = re.sub(r"\n {4,}", " ", text)  # a preset's continuation lines, onto its own
    checked = set()
    pattern = (
        r"^  (\S+)\s+(?:([\d.]+[KMBT]) params.*?(?:· | ))?"  # a line break drops the ·
        r"vocab ([\d,]+)(?: · | )d ([\d,]+)(?: · | )context ([\d,]+|no limit)"
    )
    for match in re.finditer(pattern, flat, re.M):
        name, count, vocab, d, context = match.groups()
        vocab, d = int(number(vocab)), int(number(d))
        if name in LAYERS:
            whole = gpt2_parameters(vocab, d, int(number(context)), LAYERS[name])
            assert count == short(PUBLISHED.get(name, whole)) == short(whole), name
        elif name in real:
            config = real[name]["config"]
            config = config.get("text_config", config)
            width = config.get("hidden_size", config.get("n_embed", config.get("d_model")))
            assert (vocab, d) == (config["vocab_size"], width), name
            if "published_note" in real[name]:  # each note's difference, as the note states it
                assert (count, real[name]["published"]) == NOTED[name], name
            else:
                shown = real[name]["published"]
                if "," in shown:  # an exact count, as its paper gives it
                    shown = short(int(number(shown)))
                assert same_figure(count, shown), (name, count, shown)
        checked.add(name)
    assert {*LAYERS, *real} <= checked, sorted({*LAYERS, *real} - checked)


# ---------------------------------------------------------------- broadcast


@checker("broadcast")
def _broadcast(stem: str, text: str) -> None:
    heads = " ".join(line for line in text.splitlines() if line.startswith("┃"))
    result = shape(re.search(r"result: \(([\d,]+)\)", text).group(0)[8:])
    inputs = [shape(s) for s in re.findall(r"(\([\d,]*\))\s*(?:┃|→)", heads)]
    assert inputs, heads
    assert result == tuple(np.broadcast_shapes(*inputs[:3]))
    for row in table_lines(text):
        if row and re.fullmatch(r"-\d+", row[0]):
            sizes = [int(v.split()[0]) for v in row[1:-2]]
            assert int(row[-2]) == max(sizes)  # the broadcast size: the one that is not 1


# The checkers of the other views register themselves as they are imported.
import support.golden_oracle_attention  # noqa: E402
import support.golden_oracle_tables  # noqa: E402, F401

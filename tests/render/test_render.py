"""Every view, built from real reports of the core and rendered plain at 80 and 120 columns:
golden files, plus what must hold at any width (nothing wider than the terminal, no trailing
spaces, no word or number split across lines)."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from rich.console import Console, RenderableType
from support.renderinputs import WINDOW_TEXT, checkpoint

from embedcli.analysis.neighbors import neighbors_report
from embedcli.analysis.stats import table_stats
from embedcli.core.broadcast import explain
from embedcli.core.config import EmbedConfig, Overrides
from embedcli.core.devices import DeviceInfo
from embedcli.corpus.windows import batches, plan_windows
from embedcli.models.inventory import inspect_weights
from embedcli.models.presets import get_preset, preset_config, preset_names
from embedcli.pipeline.embed import run_embed
from embedcli.pipeline.positions import position_table, positions_heatmap, positions_report
from embedcli.pipeline.positionsource import PositionsRequest
from embedcli.pipeline.shapes import run_inspect
from embedcli.pipeline.sources import source_tables
from embedcli.render import (
    StreamProgress,
    broadcast_view,
    compare_view,
    devices_table,
    embed_tables,
    heatmap_view,
    neighbors_view,
    plural,
    positions_view,
    presets_table,
    shapes_tables,
    stats_view,
    strip_trailing,
    tokenize_view,
    weights_view,
    windows_view,
)
from embedcli.render.common import WIDE, fits, fits_by_words, words
from embedcli.render.embed import token_label
from embedcli.tokenization.encodings import encode, get_encoding
from embedcli.tokenization.tokens import tokenize_report

WIDTHS = (80, 120)
LONG_TEXT = (
    "Embeddings turn token ids into vectors. A GPT-style model looks up one row of its token "
    "table for each id, then adds the row of its positional table for each position, so the "
    "same word at two places gets two different input vectors. The first layer of attention "
    "reads those sums. Nothing else happens before the transformer blocks begin their work, "
    "and nothing here is trained: the tables are seeded."
)


def render(view: Callable[..., RenderableType], *args: object, width: int, **kwargs) -> str:
    """Plain text at ``width`` columns, as the CLI writes it when piped."""
    console = Console(
        file=io.StringIO(), width=width, color_system=None, no_color=True, highlight=False
    )
    console.print(view(*args, width=width, plain=True, **kwargs))
    return strip_trailing(console.file.getvalue())


# ---------------------------------------------------------------- reports, from the core


LLAMA3_SMALL = (("rope_type", "llama3"), ("factor", 4.0), ("low_freq_factor", 1.0),
                ("high_freq_factor", 4.0), ("original_max_position_embeddings", 64.0))  # fmt: skip


def seeded_tables(d_model: int = 16) -> tuple[torch.Tensor, torch.Tensor | None, str]:
    return source_tables(EmbedConfig(d_model=d_model, context_length=32, seed=123))


def views(tmp_path: Path) -> dict[str, tuple[Callable[..., RenderableType], tuple, dict]]:
    """name -> (view, data args, keyword args): one entry per golden file pair."""
    enc = get_encoding("gpt2")
    small = EmbedConfig(d_model=8, context_length=16)
    text = "Hello, world! 😀 don't\n\ttab [/x]"
    tokenized = {  # the first 8 tokens of each: the note on the others shows
        name: tokenize_report(get_encoding(name), text, encode(get_encoding(name), text), limit=8)
        for name in ("gpt2", "cl100k_base", "o200k_base")
    }
    every_token = tokenize_report(enc, text, encode(enc, text), limit=500)
    presets = {name: preset_config(name, Overrides()) for name in ("gpt2", "gpt3")}
    token, _, source = seeded_tables()
    ids = encode(enc, "The cat sat on the mat")
    path = checkpoint(tmp_path)
    trained, _, trained_source = source_tables(small, path)
    window_ids = encode(enc, WINDOW_TEXT)
    plan = plan_windows(len(window_ids), 3, None, 3, False)
    sinusoids, where, _ = position_table("sinusoidal", 64, 128, 123)
    learned, learned_where, _ = position_table("learned", 48, 32, 123)
    # rope with llama3 scaling over an original context of 64, so that its three bands show
    rope = PositionsRequest(positional="rope", d_model=64, rope_scaling=LLAMA3_SMALL)
    devices = [
        DeviceInfo("cpu", True, "x86_64, 16 cores", None, None),
        DeviceInfo("cuda:0", True, "NVIDIA H200", 150_000_000_000, 149_000_000_000),
        DeviceInfo(
            "mps", False, "only on Apple silicon Macs with a Metal build of torch", None, None
        ),
    ]

    def embed(**kwargs) -> object:
        return run_embed(kwargs.pop("config", small), "gpt2", device="cpu", **kwargs).report

    return {
        "embed_batch": (embed_tables, (embed(texts=["Hello, world!", "Hi"]),), {"show": 4}),
        "embed_long": (
            embed_tables,
            (
                embed(
                    config=EmbedConfig(d_model=8, context_length=80),
                    texts=[LONG_TEXT],
                    truncate=72,
                    similarity=True,
                ),
            ),
            {"show": 4},
        ),
        "embed_similarity": (
            embed_tables,
            (embed(texts=["the cat sat on the mat, the cat", "a dog"], similarity=True),),
            {"show": 2},
        ),
        "embed_rope": (
            embed_tables,
            (
                embed(
                    config=EmbedConfig(d_model=8, context_length=16, positional="rope"),
                    texts=["Hello, world!"],
                ),
            ),
            {"show": 3},
        ),
        "tokenize": (tokenize_view, (every_token,), {}),
        "compare": (compare_view, (list(tokenized.values()),), {}),
        "shapes_gpt2": (shapes_tables, (inspect(*presets["gpt2"]),), {}),
        "shapes_gpt3": (shapes_tables, (inspect(*presets["gpt3"]),), {}),
        "shapes_sinusoidal": (
            shapes_tables,
            (inspect(*preset_config("gpt2", Overrides(positional="sinusoidal"))),),
            {},
        ),
        "presets": (presets_table, ([get_preset(n) for n in preset_names()],), {}),
        "broadcast": (broadcast_view, (explain((8, 1, 6, 1), (7, 1, 5), ()),), {}),
        "weights": (weights_view, (replace(inspect_weights(path), path="model.safetensors"),), {}),
        "neighbors_seeded": (
            neighbors_view,
            (source, neighbors_report(enc, ids, token, 5)),
            {"seeded": True},
        ),
        "neighbors_trained": (
            neighbors_view,
            (trained_source, neighbors_report(enc, ids[:3], trained, 3)),
            {"seeded": False},
        ),
        "stats": (
            stats_view,
            (
                source,
                [
                    table_stats("token_embeddings", token),
                    table_stats("position_embeddings", seeded_tables()[1]),
                ],
                True,
            ),
            {},
        ),
        "windows": (windows_view, (enc, plan, batches(window_ids, plan, 1)), {}),
        "positions": (heatmap_view, (positions_heatmap(sinusoids, where, False),), {}),
        "positions_similarity": (
            heatmap_view,
            (positions_heatmap(sinusoids, where, True),),
            {},
        ),
        "positions_learned_similarity": (
            heatmap_view,
            (positions_heatmap(learned, learned_where, True),),
            {},
        ),
        "positions_rope": (positions_view, (positions_report(rope),), {}),
        "positions_rope_similarity": (
            positions_view,
            (positions_report(PositionsRequest("rope", 40, 32, similarity=True)),),
            {},
        ),
        "positions_alibi": (
            positions_view,
            (positions_report(PositionsRequest("alibi", 24, heads=12)),),
            {},
        ),
        "positions_alibi_head": (
            positions_view,
            (positions_report(PositionsRequest("alibi", 20, head=2)),),
            {},
        ),
        "devices": (devices_table, (devices, "2.5.1", "12.4", "cuda:0"), {}),
    }


def inspect(preset, config):
    return run_inspect(
        config, preset, batch_size=preset.batch_size, seq_len=preset.seq_len, device="meta"
    )


@pytest.fixture(scope="module")
def all_views(tmp_path_factory: pytest.TempPathFactory):
    return views(tmp_path_factory.mktemp("render"))


VIEW_NAMES = [
    "embed_batch",
    "embed_long",
    "embed_similarity",
    "embed_rope",
    "tokenize",
    "compare",
    "shapes_gpt2",
    "shapes_gpt3",
    "shapes_sinusoidal",
    "presets",
    "broadcast",
    "weights",
    "neighbors_seeded",
    "neighbors_trained",
    "stats",
    "windows",
    "positions",
    "positions_similarity",
    "positions_learned_similarity",
    "positions_rope",
    "positions_rope_similarity",
    "positions_alibi",
    "positions_alibi_head",
    "devices",
]


def test_every_view_is_tested(all_views) -> None:
    assert sorted(all_views) == sorted(VIEW_NAMES)


# ---------------------------------------------------------------- golden files and invariants


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", VIEW_NAMES)
def test_golden(all_views, golden, name: str, width: int) -> None:
    view, args, kwargs = all_views[name]
    golden(f"{name}_{width}.txt", render(view, *args, width=width, **kwargs))


@pytest.mark.parametrize("plain", (True, False))
@pytest.mark.parametrize("width", (60, *WIDTHS))
@pytest.mark.parametrize("name", VIEW_NAMES)
def test_fits_the_terminal(all_views, name: str, width: int, plain: bool) -> None:
    """No line wider than the terminal, no trailing spaces, and every word whole: the words
    are those of the same view rendered where nothing needs to wrap."""
    view, args, kwargs = all_views[name]
    built = view(*args, width=width, plain=plain, **kwargs)
    text = plain_text(built, width)
    for line in text.splitlines():
        assert len(line) <= width, line
        assert line.rstrip() == line, repr(line)
    if width >= 80:
        assert sorted(words(text)) == sorted(words(plain_text(built, WIDE))), name


def plain_text(renderable: RenderableType, width: int) -> str:
    console = Console(
        file=io.StringIO(), width=width, color_system=None, no_color=True, highlight=False
    )
    console.print(renderable)
    return strip_trailing(console.file.getvalue())


WHOLE = {
    "embed_batch": [
        "token_embedding(input_ids)",
        "position_embedding(position_ids)",
        "seed 123",
        "vocab 50,257",
        "position_embeddings",
    ],
    "embed_long": ["truncation dropped", "--max-positions N", "showing 64 of 72 positions"],
    "shapes_gpt2": ["position_embeddings", "vocab 50,257", "context 1,024", "seq-len 4"],
    "shapes_gpt3": ["position_embeddings", "d 12,288", "context 2,048"],
    "weights": ["transformer.h.0.attn.c_attn.weight", "[/x]", "output head: tied (equal values)"],
    "windows": ["seq-len 3", "--keep-last keeps them"],
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(WHOLE))
def test_known_strings_stay_whole(all_views, name: str, width: int) -> None:
    view, args, kwargs = all_views[name]
    lines = render(view, *args, width=width, **kwargs).splitlines()
    for expected in WHOLE[name]:
        assert any(expected in line for line in lines), (expected, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_neighbor_and_score_share_a_line(all_views, width: int) -> None:
    view, (source, rows), kwargs = all_views["neighbors_seeded"]
    text = render(view, source, rows, width=width, **kwargs)
    for row in rows:
        for n in row.neighbors:
            assert any(f"{n.display} {n.score:.3f}" in line for line in text.splitlines())
    assert "untrained" in text


def test_embed_notes_come_last(all_views) -> None:
    view, args, kwargs = all_views["embed_long"]
    text = render(view, *args, width=100, **kwargs)
    assert text.rstrip().endswith("--json has them all")
    assert "64 of 72 rows shown, evenly sampled" in text
    assert "truncation dropped 12 tokens" in text
    view, args, kwargs = all_views["embed_batch"]
    text = render(view, *args, width=100, **kwargs)
    assert text.count("Hello") == 1  # the piece is listed once, with its vectors


def test_max_positions_caps_the_tables(all_views) -> None:
    view, (report,), _ = all_views["embed_long"]
    text = render(view, report, width=100, max_positions=5)
    assert "showing 5 of 72 positions" in text
    assert "│   5 │" not in text and "│   4 │" in text


def test_combine_names_no_model(all_views) -> None:
    view, args, _ = all_views["shapes_gpt3"]
    assert "GPT-2" not in render(view, *args, width=100).split("Add or concatenate")[1]


def test_windows_counts(all_views) -> None:
    view, (enc, plan, shown), _ = all_views["windows"]
    text = render(view, enc, plan, shown, width=100)
    assert plan.dropped_windows > 0
    assert f"{plural(plan.num_windows, 'window')}" in text
    assert f"{plural(plan.num_batches, 'batch', 'batches')}" in text
    assert f"leaves out the last {plural(plan.dropped_windows, 'window')}" in text
    assert "max-length" not in text


def test_similarity_rows_are_labelled(all_views) -> None:
    view, (report,), kwargs = all_views["embed_similarity"]
    for plain in (True, False):
        built = view(report, width=80, plain=plain, **kwargs)
        text = plain_text(built, 80)
        for b, seq in enumerate(report.tokens):
            for t in seq:
                label = token_label(t, len(seq))
                assert any(line.startswith(label) for line in text.splitlines()), (b, label)


def test_heatmap_samples_columns(all_views) -> None:
    view, (heatmap,), _ = all_views["positions"]
    text = render(view, heatmap, width=80)
    assert "of 128 columns shown, evenly sampled" in text
    assert "averaged" not in text


def test_plural() -> None:
    assert [plural(n, "token") for n in (0, 1, 2, 1234)] == [
        "0 tokens",
        "1 token",
        "2 tokens",
        "1,234 tokens",
    ]
    assert plural(1, "batch", "batches") == "1 batch"
    assert plural(3, "batch", "batches") == "3 batches"


# ---------------------------------------------------------------- the progress bar


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("width", (40, 60, 80, 120))
def test_progress_bar_fits(width: int) -> None:
    clock = FakeClock()
    progress = StreamProgress(1000, Console(file=io.StringIO(), width=width), clock=clock)
    clock.now += 50  # building the tables: not counted
    progress.advance(100)
    clock.now += 2.0
    progress.advance(320)
    progress.update(1234, 3)
    line = progress.line(width).plain
    assert len(line) <= width
    assert "━" in line and "42%" in line and "0:00:03 left" in line
    if width >= 80:
        assert "0:00:02 elapsed" in line and "1,234 tokens" in line


def test_progress_bar_renders_live() -> None:
    file = io.StringIO()
    console = Console(file=file, width=80, force_terminal=True, color_system=None)
    with StreamProgress(None, console) as progress:
        progress.advance(10)
        progress.update(1, 1)
        line = progress.line(80).plain
    assert "1 token" in line and "1 window" in line and "elapsed" in line
    assert "%" not in line  # stdin: the size is unknown


def test_render_does_not_import_torch() -> None:
    from support.helpers import assert_python_ok

    assert_python_ok(
        "import sys\nimport embedcli.render\nassert 'torch' not in sys.modules, 'torch imported'\n"
    )


@pytest.mark.parametrize("name", VIEW_NAMES)
def test_measuring_a_layout_decides_as_rendering_it_does(all_views, name: str) -> None:
    """fits() answers from rich's measurement where it can; rendering at the width and
    comparing words is the definition it must agree with, at every width, for every view and
    each of its parts."""
    view, args, kwargs = all_views[name]
    built = view(*args, width=WIDE, **kwargs)
    parts = [built, *getattr(built, "renderables", [])]
    for part in parts:
        for width in range(20, 200, 13):
            assert fits(part, width) == fits_by_words(part, width), (name, width, part)

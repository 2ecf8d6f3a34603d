"""Every registry family against transformers itself: a tiny random model of each, saved by
``save_pretrained``, and what its first block really reads (a forward pre-hook), set beside
``embedcli embed --weights FOLDER --ids ...``. Exact: the same bits, in float32 and in the
checkpoint's own dtype. Also: the position family, rope's frequencies against the model's rotary
module, the parameter count, the tokenizer's ids, and the refusal of an unknown model_type.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from filelock import FileLock  # transformers' own dependency
from support.familymodels import (
    CASES,
    VOCAB,
    Case,
    build,
    config_of,
    first_block_input,
    load,
    rotary_inverse_frequencies,
)
from support.helpers import make_runner

from embedcli.cli import app

runner = make_runner()


def invoke(args: list[str]):
    return runner.invoke(app, args)


IDS = [[5, 17, 200, 42, 9, VOCAB - 1, 77]]
# cases whose folder --verify cannot load into transformers' class as it names the keys (keys
# renamed on load, parameters computed at init): --verify says so and checks the files alone;
# the pre-hook here still holds each of them to the bit
VERIFY_WITHOUT_MODEL = frozenset({
    "audioflamingo3", "bailing_hybrid", "dory", "emu3", "ergo", "exaone", "fuyu", "gemma3",
    "glmasr", "got_ocr2", "granite_speech", "granite_speech_plus", "inkling2_loop_text",
    "inkling2_text", "jina_embeddings_v3", "marian", "marian-bf16", "marian-unscaled",
    "marian-unshared", "mllama", "musicflamingo", "nemo_speechlm", "nemotron_h", "nomic_bert",
    "param2moe", "qwen2_audio", "sarvam_moe", "ultrabert", "ultrabert-global-first",
    "vibevoice_asr", "voxtral"
})  # fmt: skip
BY_NAME = {case.name: case for case in CASES}


@pytest.fixture(scope="session")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> the saved tiny model, built on first use and kept for the session: once for all
    xdist workers (in their shared base folder, under a lock), not once per worker."""
    shared = os.environ.get("PYTEST_XDIST_WORKER") is not None
    root = tmp_path_factory.getbasetemp().parent if shared else tmp_path_factory.getbasetemp()
    root = root / "family-models"
    root.mkdir(exist_ok=True)

    class Lazy(dict):
        def __missing__(self, name: str) -> Path:
            folder = root / name
            with FileLock(str(root / f"{name}.lock")):
                if not (folder / "config.json").is_file():
                    partial = root / f"{name}.partial"
                    shutil.rmtree(partial, ignore_errors=True)
                    build(BY_NAME[name], partial)
                    partial.rename(folder)
            self[name] = folder
            return folder

    return Lazy()


def _embed(folder: Path, tmp_path: Path, *args: str) -> tuple[dict, torch.Tensor]:
    out = tmp_path / "out.pt"
    result = invoke(["embed", "--weights", str(folder), *args, "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), torch.load(out)


def _ids_arg(ids: list[list[int]]) -> list[str]:
    return [arg for row in ids for arg in ("--ids", ",".join(map(str, row)))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_first_block_input_is_exact(case: Case, folders: dict[str, Path], tmp_path: Path) -> None:
    folder = folders[case.name]
    model = load(folder, case)
    expected = first_block_input(model, IDS)
    report, got = _embed(folder, tmp_path, *_ids_arg(IDS), "--verify")
    assert report["verify"]["ok"] and report["verify"]["max_abs_diff"] == 0.0
    if case.name not in VERIFY_WITHOUT_MODEL:  # --verify ran transformers' own class too
        assert "run up to its first block" in report["verify"]["reference"]
    assert report["config"]["positional"] == case.positional
    assert report["config"]["dtype"] == case.dtype  # the checkpoint's dtype by default
    _steps_are_the_familys(case, report, folder)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    assert torch.equal(got, expected), (got - expected).abs().max()
    if case.dtype != "float32":  # and the float32 computation equals transformers' in float32
        model32 = load(folder, case, torch.float32)
        report, got = _embed(folder, tmp_path, *_ids_arg(IDS), "--dtype", "float32")
        assert torch.equal(got, first_block_input(model32, IDS))


def _steps_are_the_familys(case: Case, report: dict, folder: Path) -> None:
    """The steps the trace shows are the ones the registry (and the manual's table, made from
    it) says the family takes: one description of them."""
    from embedcli.core.steps import STEP_LABELS
    from embedcli.families.registry import family_of

    family = family_of(case.model_type)
    assert family is not None
    if family.composes:  # EncoderDecoderModel: its encoder's family's steps
        family = family_of(config_of(folder)[family.composes]["model_type"])
    traced = tuple(s["name"] for s in report["steps"] if s["name"] in STEP_LABELS)
    # steps a model of the family may leave out: a scale behind a switch that is off, and
    # OPT's projection where the token table is as wide as d_model (all but opt-350m)
    optional = {"scaled_embeddings"} if family.scale_when else set()
    optional |= {"projected_embeddings"} if family.project_in else set()
    assert traced == tuple(n for n in family.steps if n in traced or n not in optional)


@pytest.mark.parametrize("name", ["opt", "biogpt", "roberta", "bert", "gpt2", "llama"])
def test_padded_batches_are_exact(name: str, folders: dict[str, Path], tmp_path: Path) -> None:
    """Two sequences of different lengths: positions counted over the mask (OPT, BioGPT) or
    over the ids that are not padding (RoBERTa) give the pads' rows as the model does."""
    case = BY_NAME[name]
    folder = folders[name]
    pad = 1
    ids = [[5, 17, 200, 42, 9], [8, 33, pad, pad, pad]]
    mask = [[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]
    report, got = _embed(folder, tmp_path, "--ids", "5,17,200,42,9", "--ids", "8,33",
                         "--pad-id", str(pad))  # fmt: skip
    assert report["input_ids"] == ids and report["attention_mask"] == mask
    expected = first_block_input(load(folder, case), ids, mask)
    assert torch.equal(got, expected), (got - expected).abs().max()


@pytest.mark.parametrize("name", ["fsmt", "m2m-100"])
def test_fairseq_sinusoids_hold_max_position_embeddings_tokens(
    name: str, folders: dict[str, Path], tmp_path: Path
) -> None:
    """Sinusoids numbered from padding_idx + 1 are computed for any row: the context is
    max_position_embeddings itself (no table's rows spent on padding_idx), exact there."""
    case, folder = BY_NAME[name], folders[name]
    ids = [[(5 + 7 * i) % VOCAB for i in range(config_of(folder)["max_position_embeddings"])]]
    ids[0] = [i if i != 1 else 2 for i in ids[0]]  # no pad id among them
    report, got = _embed(folder, tmp_path, *_ids_arg(ids))
    assert report["config"]["context_length"] == len(ids[0])
    assert torch.equal(got, first_block_input(load(folder, case), ids))


@pytest.mark.parametrize("name", ["roberta", "longformer"])
def test_a_model_that_reads_its_pads_is_padded_with_its_own_id(
    name: str, folders: dict[str, Path], tmp_path: Path
) -> None:
    """Without --pad-id, a family whose positions (or window) read the pad id is padded with
    the model's own (RoBERTa's padding_idx, Longformer's pad_token_id), as its tokenizer
    pads: the pads read row padding_idx, as the step says."""
    case, folder = BY_NAME[name], folders[name]
    report, got = _embed(folder, tmp_path, "--ids", "5,17,200,42,9", "--ids", "8,33")
    ids, mask = report["input_ids"], report["attention_mask"]
    assert ids[1][2:5] == [1, 1, 1] and mask[1][2:] == [0] * (len(mask[1]) - 2)
    assert torch.equal(got, first_block_input(load(folder, case), ids, mask))


@pytest.mark.parametrize("case", [c for c in CASES if c.positional == "rope"], ids=lambda c: c.name)
def test_rope_frequencies_are_the_models(
    case: Case, folders: dict[str, Path], tmp_path: Path
) -> None:
    """Angles at position 1 are the inverse frequencies of the model's rotary module for the
    first block (its layer type where there are several); every base is reported."""
    folder = folders[case.name]
    model = load(folder, case)
    frequencies = rotary_inverse_frequencies(model)
    report, _ = _embed(folder, tmp_path, *_ids_arg(IDS))
    angles = torch.tensor(report["rope_angles"])  # (T, r/2)
    if not frequencies:  # GPT-J, CodeGen, RoFormer: a fixed table of sines, then cosines
        tensors = {**dict(model.named_buffers()), **dict(model.named_parameters())}
        sincos = next(  # a buffer in GPT-J and CodeGen, a frozen parameter in RoFormer
            t
            for n, t in tensors.items()
            if n.endswith(("embed_positions", "embed_positions.weight"))
        )
        half = sincos.shape[1] // 2
        rows = sincos[: angles.shape[0]].float()
        assert torch.allclose(rows[:, :half], angles.sin(), atol=1e-6)
        assert torch.allclose(rows[:, half:], angles.cos(), atol=1e-6)
        return
    layer_types = getattr(model.config.get_text_config(), "layer_types", None)
    first = layer_types[0] if layer_types else None
    wanted = [f for name, f in frequencies.items() if first is None or first in name] or list(
        frequencies.values()
    )
    assert torch.allclose(angles[1], wanted[0], rtol=1e-6, atol=0), (angles[1], wanted[0])
    if len(frequencies) > 1:
        bases = report["config"]["model"]["rope_bases"]
        assert len(bases) == len(frequencies)


@pytest.mark.parametrize("name", ["bloom", "mpt", "falcon-alibi"])
def test_alibi_slopes_are_the_models(name: str, folders: dict[str, Path], tmp_path: Path) -> None:
    import transformers.models.bloom.modeling_bloom as bloom
    import transformers.models.mpt.modeling_mpt as mpt

    folder = folders[name]
    config = json.loads((folder / "config.json").read_text())
    report, _ = _embed(folder, tmp_path, *_ids_arg(IDS))
    slopes = torch.tensor(report["config"]["model"]["alibi_slopes"])
    heads = config.get("n_head", config.get("n_heads", config.get("num_attention_heads")))
    if name == "mpt":
        alibi = mpt.build_mpt_alibi_tensor(heads, 2)  # (H, 1, 2): slope x (position - 1)
        expected = alibi.reshape(heads, 2)[:, 0] * -1.0
    else:
        expected = bloom._get_alibi_slopes(heads, torch.device("cpu"))
    assert torch.allclose(slopes.float(), expected.float(), rtol=1e-6)
    assert report["config"]["context_length"] is None or name == "mpt"


def test_t5_reports_its_buckets(folders: dict[str, Path], tmp_path: Path) -> None:
    report, _ = _embed(folders["t5"], tmp_path, *_ids_arg(IDS))
    relative = report["config"]["model"]["relative_attention"]
    assert relative == {"num_buckets": 32, "max_distance": 128}
    assert report["config"]["context_length"] is None


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_parameter_counts_are_the_models(name: str, folders: dict[str, Path]) -> None:
    case = BY_NAME[name]
    model = load(folders[name], case)
    result = invoke(["inspect-shapes", "--weights", str(folders[name]), "--json"])
    assert result.exit_code == 0, result.output
    parameters = json.loads(result.stdout)["parameters"]
    # A checkpoint also stores persistent buffers (DeepSeek-V3's expert-score bias, Apertus's
    # activation constants): embedcli counts every stored element, tied tables once.
    state = model.state_dict()
    buffers = {name for name, _ in model.named_buffers() if name in state}
    stored = sum(state[name].numel() for name in buffers)
    # and not the fixed tables a model leaves out of its checkpoint (Marian's sinusoids are
    # nn.Embedding weights that save_pretrained skips): what is counted is what is stored
    skipped = getattr(model, "_keys_to_ignore_on_save", None) or []
    unsaved = sum(
        p.numel() for n, p in model.named_parameters() if any(re.search(k, n) for k in skipped)
    )
    assert parameters["model_parameters"] == model.num_parameters() + stored - unsaved
    table = model.get_input_embeddings().weight
    assert parameters["token_embeddings"] == table.numel()


@pytest.mark.parametrize("name", [c.name for c in CASES if c.dtype == "float32"])
def test_tokenizer_ids_are_autotokenizers(
    name: str, folders: dict[str, Path], tmp_path: Path
) -> None:
    from transformers import AutoTokenizer

    folder = folders[name]
    text = "Hello, world! The quick brown fox."
    expected = AutoTokenizer.from_pretrained(folder, local_files_only=True)(text)["input_ids"]
    result = invoke(["embed", "--weights", str(folder), text, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # without the pads of a window (Longformer's)
    ids, mask = report["input_ids"][0], report["attention_mask"][0]
    assert [i for i, kept in zip(ids, mask, strict=True) if kept] == expected


def test_ids_need_no_tokenizer_files(folders: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "bare"
    shutil.copytree(folders["bert"], folder)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).unlink(missing_ok=True)
    _, got = _embed(folder, tmp_path, *_ids_arg(IDS))
    expected = first_block_input(load(folders["bert"], BY_NAME["bert"]), IDS)
    assert torch.equal(got, expected)


@pytest.mark.parametrize("model_type", ["mystery", None])
def test_an_unknown_model_type_is_refused_not_guessed(
    model_type: str | None, folders: dict[str, Path], tmp_path: Path
) -> None:
    """A GPT-2 checkpoint (transformer.wte, transformer.wpe: a known layout by key names) whose
    config names a family embedcli does not know is refused, not read as GPT-2."""
    folder = tmp_path / "unknown"
    shutil.copytree(folders["gpt2"], folder)
    config = json.loads((folder / "config.json").read_text())
    if model_type is None:
        del config["model_type"]
    else:
        config["model_type"] = model_type
    (folder / "config.json").write_text(json.dumps(config))
    for command in (["embed", "--weights", str(folder), "--ids", "1,2"],
                    ["inspect-shapes", "--weights", str(folder)]):  # fmt: skip
        result = invoke(command)
        assert result.exit_code == 1, result.output
        assert "will not guess its input layer from key names" in result.stderr
        assert "families" in result.stderr and "Traceback" not in result.output


def test_every_registry_family_has_a_case() -> None:
    from support.familycases import LEFT_OUT

    from embedcli.families.registry import FAMILIES

    covered = {case.model_type for case in CASES}
    # a type left out with why: a family registered to be refused whole, or a wrapper that
    # transformers cannot build here (Gemma 3n's vision tower needs timm; its text model is built)
    refused = {t for f in FAMILIES for t in f.model_types if t in LEFT_OUT}
    # read from GGUF files only (remote code): tests/models/test_gguf_conversions.py holds them
    refused |= {t for f in FAMILIES if f.gguf_only for t in f.model_types}
    missing = [t for f in FAMILIES for t in f.model_types if t not in covered | refused]
    assert not missing, f"model types without a tiny model: {missing}"


def test_the_manual_holds_the_registrys_table() -> None:
    from embedcli.families.registry import FAMILIES, compatibility_table

    page = (Path(__file__).parents[2] / "docs" / "families.md").read_text()
    assert compatibility_table() in page, "docs/families.md: paste compatibility_table() at its end"
    for family in FAMILIES:
        assert f"| {family.name} |" in page
    types = sum(len(f.model_types) for f in FAMILIES)
    assert f"{len(FAMILIES)} families ({types} `model_type` values)" in page.replace("\n", " ")
    root = Path(__file__).parents[2]
    assert f"input layer of {len(FAMILIES)} model families" in (root / "README.md").read_text()
    assert f"the {len(FAMILIES)} families" in (root / "docs" / "index.md").read_text()


def test_native_tokenizer_files_are_refused_with_the_file_to_use(tmp_path: Path) -> None:
    """SentencePiece's tokenizer.model.v1 and Mistral's tekken.json: one line naming
    tokenizer.json instead (mistral-common's files need a library embedcli does not use)."""
    spm = tmp_path / "tokenizer.model.v1"
    spm.write_bytes(b"\x0a\x05hello\x15\x00\x00\x00")
    tekken = tmp_path / "tekken_240718.json"
    tekken.write_text(json.dumps({"config": {"pattern": "x"}, "vocab": [], "special_tokens": []}))
    for path, said in ((spm, "SentencePiece"), (tekken, "tekken")):
        result = invoke(["tokenize", "hi", "-e", str(path)])
        assert result.exit_code == 1, result.output
        assert said in result.stderr and "tokenizer.json" in result.stderr
        assert result.stderr.count("\n") == 1


@pytest.mark.parametrize("name", ["bert", "opt-projected", "bloom"])
def test_streaming_and_shapes_run_the_same_steps(
    name: str, folders: dict[str, Path], tmp_path: Path
) -> None:
    """--lines, --seq-len windows and inspect-shapes go through the family's steps too."""
    folder = folders[name]
    text = "Hello, world! The quick brown fox."
    batch = json.loads(invoke(["embed", "--weights", str(folder), text, "--json"]).stdout)
    (tmp_path / "one.txt").write_text(text + "\n")
    lines = invoke(["embed", "--weights", str(folder), "--lines", "-f", str(tmp_path / "one.txt")])
    assert lines.exit_code == 0, lines.output
    record = json.loads(lines.stdout.splitlines()[0])
    assert record["input_embeddings"] == batch["input_embeddings"][0]
    length = len(batch["input_ids"][0])
    out = tmp_path / "windows.npy"
    streamed = invoke(["embed", "--weights", str(folder), "-f", str(tmp_path / "one.txt"),
                       "-t", str(length), "-o", str(out), "--no-add-special"])  # fmt: skip
    assert streamed.exit_code == 0, streamed.output
    shapes = invoke(["inspect-shapes", "--weights", str(folder), "--device", "cpu", "--json"])
    assert shapes.exit_code == 0, shapes.output
    planned = invoke(["inspect-shapes", "--weights", str(folder), "--json"])
    names = [t["name"] for t in json.loads(shapes.stdout)["tensors"]]
    assert names == [t["name"] for t in json.loads(planned.stdout)["tensors"]]
    assert names == [s["name"] for s in batch["steps"]]


def test_the_defaults_are_transformers_own() -> None:
    """families/defaults.json is what transformers' config classes give today."""
    from support import update_family_defaults

    stored = (Path(__file__).parents[2] / "embedcli/families/defaults.json").read_text()
    assert update_family_defaults.render() == stored, "run tests/support/update_family_defaults.py"


@pytest.mark.parametrize(
    ("name", "dropped"),
    [
        ("phi", "rope_parameters"),  # partial_rotary_factor 0.5, not the whole head
        ("gpt_neox", "rope_parameters"),
        ("bert", "layer_norm_eps"),  # 1e-12, not torch's 1e-5
        ("bart", "scale_embedding"),  # False: no sqrt(d)
        ("bloom", "layer_norm_epsilon"),
        ("gemma3_text", "layer_types"),  # the first block is a sliding one
        ("granite", "embedding_multiplier"),  # 1.0
    ],
)
def test_a_field_left_out_is_read_as_transformers_reads_it(
    name: str, dropped: str, folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = tmp_path / name
    shutil.copytree(folders[name], folder)
    config = json.loads((folder / "config.json").read_text())
    del config[dropped]
    (folder / "config.json").write_text(json.dumps(config))
    case = BY_NAME[name]
    model = load(folder, case)
    report, got = _embed(folder, tmp_path, *_ids_arg(IDS), "--verify")
    assert torch.equal(got, first_block_input(model, IDS))
    if case.positional == "rope":
        frequencies = rotary_inverse_frequencies(model)
        first = (getattr(model.config, "layer_types", None) or [""])[0]
        wanted = [f for n, f in frequencies.items() if first in n] or list(frequencies.values())
        assert torch.allclose(torch.tensor(report["rope_angles"])[1], wanted[0], rtol=1e-6)

"""GGUF files against transformers itself: tiny random models of the llama, qwen2, gemma and gpt2
architectures, saved by transformers, written as GGUF (tests/support/ggufmodels.py) with their token
table in F32, F16, BF16, Q8_0 and Q6_K, then read by ``embedcli embed --weights FILE.gguf``.

- Unquantized: the first block's input equals transformers' (a forward pre-hook), bit for bit,
  from the table's values, in float32 whatever the table's type, as llama.cpp computes.
- Quantized: every value is within the bound its quantization implies, against the original
  floats; that bound comes from the test's own knowledge of the scales
  (tests/support/ggufmodels.py), never from a dequantizer. embedcli's reported bound holds every
  error seen, and is no looser than the test's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("gguf")

from support.familymodels import Case, build, first_block_input, load
from support.ggufmodels import tokenizer_fields, write_gguf
from support.helpers import make_runner

from embedcli.cli import app
from embedcli.models.gguf.file import GGUFFile

runner = make_runner()
IDS = [[5, 17, 200, 42, 9, 383, 77]]
CASES = {
    "llama": Case(
        "llama",
        "llama",
        {
            "tie_word_embeddings": False,
            "rope_parameters": {"rope_type": "default", "rope_theta": 5e5},
        },
    ),
    "qwen2": Case("qwen2", "qwen2", {"tie_word_embeddings": True}),
    "gemma": Case("gemma", "gemma"),
    "gpt2": Case("gpt2", "gpt2", positional="learned"),
    "qwen3": Case("qwen3", "qwen3"),
    "gemma2": Case("gemma2", "gemma2"),
    "gemma3": Case("gemma3", "gemma3_text"),
    "phi3": Case("phi3", "phi3", {"tie_word_embeddings": False}),
}
# wide enough for K-quants' 256-value super-blocks
WIDE = {
    name: Case(case.name, case.model_type, {**case.fields, "hidden_size": 256, "n_embd": 256,
                                            "head_dim": 64}, positional=case.positional)
    for name, case in CASES.items()
}  # fmt: skip


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gguf-models")
    built: dict[str, Path] = {}

    class Lazy(dict):
        def __missing__(self, name: str) -> Path:
            case = WIDE[name[5:]] if name.startswith("wide-") else CASES[name]
            built[name] = build(case, root / name)
            self[name] = built[name]
            return built[name]

    return Lazy()


def _ids(ids: list[list[int]]) -> list[str]:
    return [arg for row in ids for arg in ("--ids", ",".join(map(str, row)))]


def _embed(path: Path, tmp_path: Path, *args: str) -> tuple[dict, torch.Tensor]:
    out = tmp_path / "out.pt"
    result = runner.invoke(app, ["embed", "--weights", str(path), *args, "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), torch.load(out)


@pytest.mark.parametrize("kind", ["F32", "F16", "BF16"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_unquantized_files_are_exact(
    name: str, kind: str, folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = folders[name]
    written = write_gguf(folder, tmp_path / f"{name}-{kind}.gguf", kind)
    dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[kind]
    # its token table rounded to the file's type (the writer keeps the rest float32), then run
    # in float32, as llama.cpp runs any table
    model = load(folder, CASES[name], torch.float32)
    table = model.get_input_embeddings().weight
    with torch.no_grad():
        table.copy_(table.to(dtype).float())
    expected = first_block_input(model, IDS)
    report, got = _embed(written.path, tmp_path, *_ids(IDS))
    assert report["config"]["dtype"] == "float32"
    assert report["config"]["table_type"]["ggml_type"] == kind
    assert report["config"]["table_type"]["max_error"] is None
    assert report["config"]["table_type"]["lookup_dtype"] == "float32"  # widened, as llama.cpp
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert torch.equal(got, expected), (got.float() - expected.float()).abs().max()


@pytest.mark.parametrize(("name", "kind"), [("llama", "Q8_0"), ("gemma", "Q8_0"), ("qwen2", "Q4_0"),
                                            ("qwen2", "Q6_K"), ("gpt2", "Q6_K"),
                                            ("llama", "Q6_K"), ("gemma", "Q6_K")])  # fmt: skip
def test_quantized_tables_are_within_their_bound(
    name: str, kind: str, folders: dict[str, Path], tmp_path: Path
) -> None:
    folder = folders[f"wide-{name}"] if kind.endswith("_K") else folders[name]
    written = write_gguf(folder, tmp_path / f"{name}-{kind}.gguf", kind)
    report, got = _embed(written.path, tmp_path, *_ids(IDS))
    stored = report["config"]["table_type"]
    assert stored["ggml_type"] == kind and stored["lookup_dtype"] == "float32"
    model = load(folder, CASES[name], torch.float32)
    exact = first_block_input(model, IDS)  # the unquantized model's first-block input
    rows = torch.tensor(IDS[0])
    scale = float(model.config.hidden_size) ** 0.5 if name.startswith("gemma") else 1.0
    bound = torch.from_numpy(written.bound[rows.numpy()]) * scale  # (T, d)
    error = (got[0].double() - exact[0].double()).abs()
    assert (error <= bound + 1e-6).all(), float((error - bound).max())
    assert float(error.max()) > 0  # quantization did change the values
    said = stored["max_error"] * scale
    assert float(error.max()) <= said + 1e-6  # embedcli's bound holds what was seen
    # and is no looser than the scales imply: embedcli knows the stored float16 scales only,
    # so it must allow for their worst rounding, where the test knows the exact scale
    assert said <= float(bound.max()) * (1.13 if kind in ("Q8_0", "Q4_0") else 1 + 1e-6) + 1e-9


def test_the_reader_agrees_with_gguf_readers_offsets(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    from gguf import GGUFReader

    written = write_gguf(folders["gpt2"], tmp_path / "gpt2.gguf", "Q8_0")
    ours = GGUFFile(written.path)
    theirs = GGUFReader(written.path)
    assert [(t.name, t.start, t.nbytes) for t in ours.tensors] == [
        (t.name, t.data_offset, t.n_bytes) for t in theirs.tensors
    ]
    for key, field in theirs.fields.items():
        if key.startswith("GGUF."):
            continue
        value = ours.metadata[key].plain()
        expected = field.contents()
        if isinstance(expected, float):
            assert value == pytest.approx(expected)
        else:
            assert value == expected, key


def test_config_comes_through_the_family(folders: dict[str, Path], tmp_path: Path) -> None:
    written = write_gguf(folders["gemma"], tmp_path / "gemma.gguf")
    result = runner.invoke(app, ["inspect-shapes", "--weights", str(written.path), "--json"])
    assert result.exit_code == 0, result.output
    config = json.loads(result.stdout)["config"]
    assert config["positional"] == "rope" and config["d_model"] == 64


def test_weights_lists_ggml_types_and_bytes(folders: dict[str, Path], tmp_path: Path) -> None:
    written = write_gguf(folders["llama"], tmp_path / "llama.gguf", "Q8_0")
    result = runner.invoke(app, ["weights", str(written.path), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    by_name = {t["name"]: t for t in report["tensors"]}
    token = by_name["token_embd.weight"]
    assert token["ggml_type"] == "Q8_0" and token["shape"] == [384, 64]
    assert token["bytes"] == 384 * 64 // 32 * 34  # a Q8_0 block: 32 values in 34 bytes
    assert by_name["output.weight"]["ggml_type"] == "F32"
    assert report["head_tied"] == "not tied (GGUF)"
    assert report["gguf"]["architecture"] == "llama"
    assert report["gguf"]["metadata"]["llama.rope.freq_base"] == 500000.0
    assert report["gguf"]["tokenizer"]["model"] == "gpt2"
    table = runner.invoke(app, ["weights", str(written.path)], terminal_width=120)
    assert table.exit_code == 0 and "Q8_0" in table.stdout and "architecture: llama" in table.stdout


def test_weights_lists_every_key_the_file_holds(folders: dict[str, Path], tmp_path: Path) -> None:
    """Every key of the architecture (the feed-forward width, the norm's epsilon, the value
    width...) and of the tokenizer, float32 values as their own shortest decimal."""
    written = write_gguf(folders["llama"], tmp_path / "llama.gguf", "Q8_0",
                         **{"llama.attention.sliding_window": 4096})  # fmt: skip
    report = json.loads(runner.invoke(app, ["weights", str(written.path), "--json"]).stdout)
    metadata, tokenizer = report["gguf"]["metadata"], report["gguf"]["tokenizer"]
    assert metadata["llama.feed_forward_length"] == 96
    assert metadata["llama.attention.value_length"] == 16
    assert metadata["llama.attention.layer_norm_rms_epsilon"] == 1e-06  # stored as float32
    assert metadata["llama.attention.sliding_window"] == 4096
    assert (
        tokenizer["tokens"]
        == tokenizer["token_type"]
        == len(tokenizer_fields(folders["llama"])["tokenizer.ggml.tokens"])
    )
    assert tokenizer["add_bos_token"] is False and tokenizer["pre"] == "gpt-2"
    table = runner.invoke(app, ["weights", str(written.path)], terminal_width=120).stdout
    assert "llama.feed_forward_length: 96" in table and "llama.attention.sliding_window" in table


def test_inspect_shapes_gives_the_bytes_the_file_holds(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    """A Q8_0 token table's bytes in the file, beside its float32 and 16-bit sizes."""
    written = write_gguf(folders["llama"], tmp_path / "llama.gguf", "Q8_0")
    result = runner.invoke(app, ["inspect-shapes", "--weights", str(written.path), "--json"])
    assert result.exit_code == 0, result.output
    stored = json.loads(result.stdout)["parameters"]["stored"]
    assert stored == {"token_embeddings": {"type": "Q8_0", "bytes": 384 * 64 // 32 * 34}}
    for width in (80, 100):  # a narrow terminal drops the 16-bit column, not the file's
        table = runner.invoke(
            app, ["inspect-shapes", "--weights", str(written.path)], terminal_width=width
        ).stdout
        assert "in the file" in table and "25.5 KiB Q8_0" in table, width


@pytest.mark.parametrize("command", ["stats", "neighbors", "project"])
def test_quantized_tables_serve_every_table_command(
    command: str, folders: dict[str, Path], tmp_path: Path
) -> None:
    """stats, neighbors and project read a quantized table a chunk at a time, and give what
    they give for the same table dequantized and saved as safetensors."""
    from safetensors.torch import save_file

    from embedcli.models.gguf.checkpoint import GGUFCheckpoint

    written = write_gguf(folders["llama"], tmp_path / "llama.gguf", "Q8_0")
    dense = GGUFCheckpoint(written.path).load("token_embd.weight")
    plain = tmp_path / "plain.safetensors"
    save_file({"token_embedding.weight": dense.contiguous()}, plain)
    extra = {
        "stats": [],
        "neighbors": ["--ids", "5,17", "-k", "3"],
        "project": ["--first-ids", "5"],
    }
    args = [command, *extra[command], "--json"]
    got = runner.invoke(app, [*args, "--weights", str(written.path), "-e", str(written.path)])
    assert got.exit_code == 0, got.output
    want = runner.invoke(app, [*args, "--weights", str(plain), "-e", str(written.path)])
    assert want.exit_code == 0, want.output
    ours, theirs = json.loads(got.stdout), json.loads(want.stdout)
    for report in (ours, theirs):
        report.pop("source", None)
    if command == "stats":
        for a, b in zip(ours["tables"], theirs["tables"], strict=True):
            for key in ("mean", "std", "min", "max", "within_one_std"):
                assert a[key] == pytest.approx(b[key], rel=1e-9, abs=1e-12)
    elif command == "project":  # exact axes from the covariance: NumPy's SVD as the oracle
        assert ours["method"].startswith("eigenvectors of the covariance")
        values = dense.double().numpy()
        centred = values - values.mean(axis=0)
        _, singular, vt = np.linalg.svd(centred, full_matrices=False)
        axes = vt[:2].T
        axes *= np.sign(axes[np.abs(axes).argmax(axis=0), [0, 1]])
        variance = singular[:2] ** 2 / (len(values) - 1)
        assert ours["explained_variance"] == pytest.approx(list(variance), rel=1e-9)
        for point in ours["points"]:
            x, y = centred[point["id"]] @ axes
            assert (point["x"], point["y"]) == pytest.approx((x, y), abs=1e-9)
    else:
        assert json.dumps(ours, sort_keys=True) == json.dumps(theirs, sort_keys=True)


def test_the_row_lookup_reads_rows_not_the_table(folders: dict[str, Path], tmp_path: Path) -> None:
    from embedcli.models.gguf.checkpoint import GGUFCheckpoint

    written = write_gguf(folders["llama"], tmp_path / "llama.gguf", "Q8_0")
    checkpoint = GGUFCheckpoint(written.path)
    whole = checkpoint.load("token_embd.weight")
    picked = checkpoint.load_rows("token_embd.weight", [383, 0, 7, 7])
    assert torch.equal(picked, whole[[383, 0, 7, 7]])
    assert np.abs(whole.numpy() - written.table).max() <= written.bound.max()


def _ollama_store(root: Path, gguf: Path, name: str = "tiny", tag: str = "latest") -> Path:
    """A fake Ollama store: a manifest naming the GGUF file as a blob, as `ollama pull` writes."""
    import hashlib
    import shutil

    digest = hashlib.sha256(gguf.read_bytes()).hexdigest()
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    shutil.copy(gguf, root / "blobs" / f"sha256-{digest}")
    manifest = root / "manifests" / "registry.ollama.ai" / "library" / name / tag
    manifest.parent.mkdir(parents=True, exist_ok=True)
    layers = [
        {"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "0" * 64},
        {
            "mediaType": "application/vnd.ollama.image.model",
            "digest": f"sha256:{digest}",
            "size": gguf.stat().st_size,
        },
    ]
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}))
    return root / "blobs" / f"sha256-{digest}"


def test_ollama_models_resolve_by_name_and_tag(
    folders: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.helpers import expect_error

    store = tmp_path / "ollama"
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    f32 = write_gguf(folders["llama"], tmp_path / "f32.gguf", "F32")
    q8 = write_gguf(folders["llama"], tmp_path / "q8.gguf", "Q8_0")
    _ollama_store(store, f32.path)
    blob = _ollama_store(store, q8.path, tag="q8")
    for spec, kind in (("ollama:tiny", "F32"), ("ollama:tiny:latest", "F32"),
                       ("ollama:library/tiny:q8", "Q8_0")):  # fmt: skip
        result = runner.invoke(app, ["weights", spec, "--json"])
        assert result.exit_code == 0, result.output
        tensors = {t["name"]: t for t in json.loads(result.stdout)["tensors"]}
        assert tensors["token_embd.weight"]["ggml_type"] == kind
    report, got = _embed(Path("ollama:tiny:q8"), tmp_path, *_ids(IDS))
    _, direct = _embed(q8.path, tmp_path, *_ids(IDS))
    assert torch.equal(got, direct) and report["config"]["weights"] == "ollama:tiny:q8"
    expect_error(runner.invoke(app, ["weights", "ollama:tiny:q4"]), "its tags here: latest, q8")
    expect_error(runner.invoke(app, ["weights", "ollama:absent"]), "`ollama pull absent`")
    expect_error(runner.invoke(app, ["weights", "ollama:../x"]), "is not an Ollama model name")
    blob.write_bytes(blob.read_bytes()[:-10])
    expect_error(
        runner.invoke(app, ["weights", "ollama:tiny:q8"]), "is not the one the manifest names"
    )
    blob.unlink()
    expect_error(runner.invoke(app, ["weights", "ollama:tiny:q8"]), "an interrupted pull?")


HOSTILE_TEXT = (
    "Hello, world! It's   the\tquick\r\nbrown 🦊🏽 fox 👩‍👩‍👧 e\u0301\u0302 日本語 \x0b\x85\u2028"
    "\u3000\u00a0 'LL 123456 <|endoftext|> naïve"
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_files_tokenizer_gives_its_tokenizer_jsons_ids(
    name: str, folders: dict[str, Path], tmp_path: Path
) -> None:
    from tokenizers import Tokenizer

    folder = folders[name]
    written = write_gguf(folder, tmp_path / f"{name}.gguf", "Q8_0")
    reference = Tokenizer.from_file(str(folder / "tokenizer.json"))
    for text in (HOSTILE_TEXT, HOSTILE_TEXT[::-1], " " + HOSTILE_TEXT * 3):
        args = ["tokenize", text, "-e", str(written.path), "--allow-special", "--json"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        ids = [t["id"] for t in json.loads(result.stdout)["tokens"]]
        assert ids == reference.encode(text, add_special_tokens=False).ids

"""Every GGUF architecture embedcli reads, the way it is used: a tiny transformers model of each
(tests/support/ggufcases.py), converted by llama.cpp's own converter (convert_hf_to_gguf.py, as
the llama-cpp-python sdist ships it), then read by ``embedcli embed --weights model.gguf``.

- Against transformers: the first block's input (a forward pre-hook on the model the file was
  converted from) equals embedcli's, to the bit, from the float32 file.
- Against llama.cpp itself: the tensor llama.cpp's graph hands its first block (read with its
  eval callback) equals embedcli's: to the bit, or within the bound named in the case where
  llama.cpp's float32 code sums a norm in another order; from the float32 file, and from the
  16-bit and Q8_0 files (llama.cpp's rows come out in float32 whatever the table's type, and so
  do embedcli's).
- The config embedcli reads from the file's metadata (rope, scale, norm epsilon, positions, the
  first block's layer kind) equals the one it reads from the model's own folder, except where
  the case names how llama.cpp's code reads it otherwise.

The converter and llama.cpp's runtime are not the project's: where they are absent the tests
skip, saying what brings them (.ci/fetch-llama-cpp, ../shared/wheels).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("sentencepiece")

from filelock import FileLock
from support.familymodels import first_block_input
from support.ggufcases import BY_ARCH, GGUFCase, build
from support.helpers import make_runner
from support.llamacpp import tools, workers

from embedcli.cli import app

runner = make_runner()
IDS = [5, 17, 200, 42, 9, 183, 77]
TYPES = ("f32", "f16", "q8_0")


def _root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    shared = os.environ.get("PYTEST_XDIST_WORKER") is not None
    base = tmp_path_factory.getbasetemp().parent if shared else tmp_path_factory.getbasetemp()
    root = base / "gguf-conversions"
    root.mkdir(exist_ok=True)
    return root


def _converted(case: GGUFCase, root: Path, kind: str) -> Path:
    """The case's folder (built once for all xdist workers), converted to ``kind``."""
    if tools.converter() is None:
        pytest.skip(tools.CONVERTER_MISSING)
    if case.transformers4 and tools.transformers4() is None:
        pytest.skip(tools.TRANSFORMERS4_MISSING)
    folder = root / case.arch
    with FileLock(str(root / f"{case.arch}.lock")):
        if not (folder / "first_block.pt").is_file():
            partial = root / f"{case.arch}.partial"
            shutil.rmtree(partial, ignore_errors=True)
            model, _ = build(case, partial)
            oracle = case.expected or (lambda _, ids: first_block_input(model, [ids]))
            torch.save(oracle(partial, IDS), partial / "first_block.pt")
            partial.rename(folder)
        path = folder / f"model-{kind}.gguf"
        if not path.is_file():
            job = {"folder": str(folder), "out": str(path), "outtype": kind}
            reply = workers.converter(case.transformers4).ask(job)
            assert reply["ok"], f"llama.cpp's converter failed on {case.arch}: {reply['error']}"
    return path


def _llama_cpp(case: GGUFCase, path: Path) -> np.ndarray:
    """What llama.cpp's first block reads for IDS, from its own graph."""
    if not tools.runtime():
        pytest.skip(tools.RUNTIME_MISSING)
    if case.oracle:
        pytest.skip(f"llama.cpp cannot run {case.arch}: {case.oracle}")
    out = path.with_suffix(".llama.npz")
    if not out.is_file():
        job = {"gguf": str(path), "ids": IDS, "names": [case.llama_tensor], "out": str(out)}
        job |= {"encode": case.encode, "embeddings": case.encode}
        reply = workers.runtime().ask(job)
        assert reply["ok"] and case.llama_tensor in reply["found"], reply
    return np.load(out)[case.llama_tensor]


_EMBEDDED: dict[Path, tuple[dict, torch.Tensor]] = {}


def _embed(path: Path) -> tuple[dict, torch.Tensor]:
    """embedcli's report (--json) and first-block input (-o) for IDS, once per file and
    worker (the tests below read the same run)."""
    if path not in _EMBEDDED:
        out = path.with_suffix(f".{os.getpid()}.pt")
        ids = ",".join(map(str, IDS))
        args = ["embed", "--weights", str(path), "--ids", ids, "-o", str(out), "--json"]
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        _EMBEDDED[path] = json.loads(result.stdout), torch.load(out)
    return _EMBEDDED[path]


def _is_llama_cpps(case: GGUFCase, path: Path, got: torch.Tensor) -> None:
    want = torch.from_numpy(_llama_cpp(case, path))
    got = got.squeeze()
    assert got.dtype == torch.float32 and got.shape == want.shape, (got.shape, want.shape)
    if case.tolerance:
        scale = want.abs().max()
        assert (got - want).abs().max() <= case.tolerance * scale, (got - want).abs().max()
    else:
        assert torch.equal(got, want), (got - want).abs().max()


@pytest.fixture(scope="session")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _root(tmp_path_factory)


@pytest.mark.parametrize("arch", sorted(BY_ARCH))
def test_float32_file_is_the_first_block_input(arch: str, root: Path) -> None:
    """The transformers model's own (or, for remote code, the hub files'), to the bit; and the
    metadata reads as the model folder's config.json, but where the case names otherwise."""
    case = BY_ARCH[arch]
    path = _converted(case, root, "f32")
    expected = torch.load(path.parent / "first_block.pt")
    report, got = _embed(path)
    assert got.dtype == torch.float32 and got.shape == expected.shape
    assert torch.equal(got, expected.float()), (got - expected).abs().max()
    if case.expected is None:  # a transformers class runs the model: its folder's reading
        folder = runner.invoke(app, ["embed", "--weights", str(path.parent), "--ids",
                                     ",".join(map(str, IDS)), "--json"])  # fmt: skip
        assert folder.exit_code == 0, folder.output
        _same_config(case, report, json.loads(folder.stdout))


@pytest.mark.parametrize("arch", sorted(BY_ARCH))
def test_float32_file_is_llama_cpps_first_block_input(arch: str, root: Path) -> None:
    case = BY_ARCH[arch]
    path = _converted(case, root, "f32")
    _is_llama_cpps(case, path, _embed(path)[1])


# one architecture for each computation before block 0: a plain lookup, a scale (√d, a
# multiplier, MiniCPM's), learned positions, token types, a LayerNorm, Gemma 3n's AltUp stack
TYPED = ("llama", "gemma", "granite", "minicpm", "gpt2", "bert", "bloom", "gemma3n", "t5")


@pytest.mark.parametrize("kind", TYPES[1:])
@pytest.mark.parametrize("arch", TYPED)
def test_16_bit_and_q8_0_files_are_llama_cpps_first_block_input(
    arch: str, kind: str, root: Path
) -> None:
    """llama.cpp reads a 16-bit or Q8_0 table's rows as float32 and computes in float32; so
    does embedcli, to the same bits."""
    case = BY_ARCH[arch]
    path = _converted(case, root, kind)
    report, got = _embed(path)
    assert report["config"]["table_type"]["ggml_type"] == kind.upper()
    assert report["config"]["dtype"] == "float32"
    _is_llama_cpps(case, path, got)


_COMPARED = ("rope_angles", "rope_attention_factor", "rope_sequence_length")
_CONFIG = ("positional", "rope_theta", "rope_dim", "context_length", "embed_scale", "norm_eps")
_MODEL = ("positional", "rope_theta", "rope_scaling", "rope_bases", "rope_layer_type",
          "sliding_window", "alibi_slopes", "relative", "rope_free_layers",
          "rope_not_in_first_block", "embed_scale", "block_input")  # fmt: skip


def _same_config(case: GGUFCase, ours: dict, theirs: dict) -> None:
    """The file's metadata reads as the model's own config.json, but where the case names how
    llama.cpp's code reads it otherwise."""
    for key in _COMPARED:
        if key not in case.differs:
            _same(ours.get(key), theirs.get(key), key)
    for key in _CONFIG:
        if key not in case.differs:
            _same(ours["config"].get(key), theirs["config"].get(key), key)
    for key in _MODEL:
        if key not in case.differs:
            _same(ours["config"]["model"].get(key), theirs["config"]["model"].get(key), key)


@pytest.mark.parametrize("arch", sorted(a for a, c in BY_ARCH.items() if c.expected is not None))
def test_remote_code_models_are_read_from_their_gguf_files_only(arch: str, root: Path) -> None:
    """MiniCPM and InternLM2 (remote code): the file's metadata read as llama.cpp reads it
    (the scale, rope's base); their hub folder refused, no transformers class holding a
    reading of it to account."""
    case = BY_ARCH[arch]
    path = _converted(case, root, "f32")
    folder = runner.invoke(app, ["embed", "--weights", str(path.parent), "--ids", "5"])
    assert folder.exit_code == 1 and "reads from GGUF files only" in folder.stderr
    result = runner.invoke(app, ["embed", "--weights", str(path), "--ids", "5,17", "--json"])
    assert result.exit_code == 0, result.output
    model = json.loads(result.stdout)["config"]["model"]
    hub = json.loads((path.parent / "config.json").read_text())
    assert model.get("embed_scale", 1.0) == hub.get("scale_emb", 1.0)
    assert model["rope_theta"] == hub["rope_parameters"]["rope_theta"]


def _same(mine: object, its: object, key: str) -> None:
    """Equal; numbers to float32's precision (a GGUF file stores its floats in float32)."""
    if isinstance(its, float | list) and its and not isinstance(its, str):
        try:
            close = np.allclose(np.asarray(mine, dtype=float), np.asarray(its, dtype=float),
                                rtol=1e-6, atol=0)  # fmt: skip
        except (TypeError, ValueError):
            close = mine == its
        assert close, (key, mine, its)
    else:
        assert mine == its, (key, mine, its)


@pytest.mark.parametrize("version", [6, 7])
def test_rwkv_is_its_rows_layer_normed(version: int, tmp_path: Path) -> None:
    """RWKV 6 and 7 (remote code; the converter writes them from RWKV's own checkpoints, not
    from a transformers model): llama.cpp's rwkv6.cpp and rwkv7.cpp put a LayerNorm
    (token_embd_norm, the file's epsilon) between the lookup and block 0. The file holds the
    input layer's tensors only, written with the gguf package as the converter names them."""
    import gguf

    torch.manual_seed(version)
    table = torch.randn(64, 32)
    weight, bias = torch.randn(32) * 0.1 + 1, torch.randn(32) * 0.1
    arch = f"rwkv{version}"
    path = tmp_path / f"{arch}.gguf"
    writer = gguf.GGUFWriter(path, arch)
    for key, value in (("context_length", 1048576), ("embedding_length", 32), ("block_count", 1)):
        writer.add_uint32(f"{arch}.{key}", value)
    writer.add_float32(f"{arch}.attention.layer_norm_epsilon", 1e-5)
    writer.add_tokenizer_model("rwkv")
    writer.add_token_list([f"t{i}" for i in range(64)])
    for name, tensor in (("token_embd.weight", table), ("token_embd_norm.weight", weight),
                         ("token_embd_norm.bias", bias)):  # fmt: skip
        writer.add_tensor(name, tensor.numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    ids = torch.tensor(IDS[:5]) % 64
    eps = float(np.float32(1e-5))
    want = torch.nn.functional.layer_norm(table[ids], (32,), weight, bias, eps).unsqueeze(0)
    out = tmp_path / "out.pt"
    args = ["embed", "--weights", str(path), "--ids", ",".join(map(str, ids.tolist()))]
    result = runner.invoke(app, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert torch.equal(torch.load(out), want)


def test_the_manual_lists_every_architecture() -> None:
    from embedcli.families.registry import gguf_table

    page = (Path(__file__).parents[2] / "docs" / "gguf.md").read_text()
    assert gguf_table() in page, "docs/gguf.md: paste gguf_table() into its Architectures"


def test_every_architecture_is_converted_here() -> None:
    """The cases cover every architecture the registry maps, but those the converter cannot
    write from a transformers model (named in GGUF_WRITTEN_OTHERWISE)."""
    from support.ggufcases import GGUF_WRITTEN_OTHERWISE

    from embedcli.families.registry import gguf_architectures

    assert set(gguf_architectures()) == set(BY_ARCH) | set(GGUF_WRITTEN_OTHERWISE)
    assert not set(BY_ARCH) & set(GGUF_WRITTEN_OTHERWISE)


_TEMPLATE = "{{- range .Messages }}<|{{ .Role }}|>\n{{ .Content }}<|end|>\n{{ end }}<|assistant|>\n"


def _ollama_store(store: Path, models: dict[str, Path]) -> None:
    """An Ollama store holding each file as ollama:NAME, its manifest as `ollama pull` writes
    one: the model layer, a template, params, a license, and the config blob."""
    blobs = store / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)

    def blob(data: bytes | Path, media: str) -> dict:
        import hashlib

        raw = data.read_bytes() if isinstance(data, Path) else data
        digest = hashlib.sha256(raw).hexdigest()
        path = blobs / f"sha256-{digest}"
        if not path.exists():
            if isinstance(data, Path):
                os.link(data, path)
            else:
                path.write_bytes(raw)
        return {"mediaType": media, "digest": f"sha256:{digest}", "size": len(raw)}

    for name, gguf in models.items():
        kind = "application/vnd.ollama.image."
        config = {"model_format": "gguf", "model_family": name, "file_type": "F32"}
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
            "config": blob(
                json.dumps(config).encode(), "application/vnd.docker.container.image.v1+json"
            ),
            "layers": [
                blob(gguf, kind + "model"),
                blob(_TEMPLATE.encode(), kind + "template"),
                blob(b'{"stop": ["<|end|>"], "temperature": 0.7}', kind + "params"),
                blob(b"Apache License 2.0\n", kind + "license"),
            ],
        }
        path = store / "manifests" / "registry.ollama.ai" / "library" / name / "latest"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(manifest))


def test_every_architecture_is_read_through_ollama(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ollama:NAME is its GGUF blob read as the file is, for every architecture; weights lists
    the manifest's layers, its config, its params and its chat template."""
    models = {arch: _converted(case, root, "f32") for arch, case in BY_ARCH.items()}
    store = tmp_path / "ollama"
    _ollama_store(store, models)
    monkeypatch.setenv("OLLAMA_MODELS", str(store))
    for arch, path in models.items():
        through = runner.invoke(app, ["weights", f"ollama:{arch}", "--json"])
        assert through.exit_code == 0, through.output
        direct = json.loads(runner.invoke(app, ["weights", str(path), "--json"]).stdout)
        report = json.loads(through.stdout)
        assert report["model"] == direct["model"] and report["gguf"] == direct["gguf"], arch
        ollama = report["ollama"]
        assert [layer["kind"] for layer in ollama["layers"]] == ["model", "template", "params",
                                                                "license"]  # fmt: skip
        assert all(layer["here"] for layer in ollama["layers"])
        assert ollama["template"] == _TEMPLATE and ollama["params"]["stop"] == ["<|end|>"]
        assert ollama["config"] == {
            "model_format": "gguf",
            "model_family": arch,
            "file_type": "F32",
        }
    report, got = _embed(models["llama"])
    out = tmp_path / "out.pt"
    result = runner.invoke(app, ["embed", "--weights", "ollama:llama", "--ids",
                                 ",".join(map(str, IDS)), "-o", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert torch.equal(torch.load(out), got)
    view = runner.invoke(app, ["weights", "ollama:gemma3"], terminal_width=100).stdout
    assert "Chat template" in view and "<|{{ .Role }}|>" in view
    assert "layers: model" in view and "template 83 B" in view, view

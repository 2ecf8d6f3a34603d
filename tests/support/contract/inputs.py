"""The input files every case finds in its folder: texts, tiny checkpoints, model folders, GGUF
files, the families' folders, and a hub cache."""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path

# ---------------------------------------------------------------- the input files

TEXT = "Hello, world! The quick brown fox jumps over the lazy dog.\n"
TEXT_FILES: dict[str, bytes] = {
    "in.txt": TEXT.encode(),
    "lines.txt": b"Hello, world!\nThe cat sat on the mat.\nA third line\n",
    "special.txt": b"first line\na <|endoftext|> b\nlast\n",
    "long.txt": ("The keeper of the lighthouse counted ships. " * 40).encode(),
    "ids.txt": b"15496 11 995 0\n",
    "crlf.txt": b"Hello\r\nworld\r\n",
    "bom.txt": b"\xef\xbb\xbfHello, world!\n",
    "bad-utf8.txt": b"Hello \xff\xfe world\n",
    "empty.txt": b"",
    "notes.npy": b"these are notes, not an array\n",  # a text whose name says .npy
}
STDIN_FILES = ("", "in.txt", "lines.txt", "special.txt", "ids.txt", "crlf.txt", "bom.txt",
               "bad-utf8.txt", "empty.txt")  # fmt: skip


@functools.lru_cache(maxsize=1)
def _checkpoints() -> dict[str, bytes]:
    """A tiny GPT-2-shaped checkpoint (50257 x 8 tokens, 32 x 8 positions) in three formats,
    and two broken ones."""
    import numpy as np
    import torch
    from safetensors.torch import save

    generator = torch.Generator().manual_seed(0)
    wte = torch.randn(50257, 8, generator=generator)
    wpe = torch.randn(32, 8, generator=generator)
    tables = {"transformer.wte.weight": wte, "transformer.wpe.weight": wpe}
    pt, npz = io.BytesIO(), io.BytesIO()
    torch.save({"model": {**tables, "lm_head.weight": wte}, "iter_num": 1}, pt)
    np.savez(npz, **{key: value.numpy() for key, value in tables.items()})
    safetensors = save(tables)
    return {
        "tiny.safetensors": safetensors,
        "tiny.pt": pt.getvalue(),
        "tiny.npz": npz.getvalue(),
        "trunc.safetensors": safetensors[:100],
        "bad.safetensors": b"this is not a checkpoint\n",
    }


def make_fixtures(folder: Path) -> Path:
    """Write every input file a case may name into ``folder`` (and an empty folder, adir/), and
    three model folders: GPT-2-style with its tokenizer.json, Llama-style (rope theta 500000,
    no tokenizer), and one whose config.json is damaged."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in {**TEXT_FILES, **_checkpoints()}.items():
        (folder / name).write_bytes(data)
    (folder / "adir").mkdir(exist_ok=True)
    _model_folders(folder)
    return folder


def _model_folders(folder: Path) -> None:
    from support.hub import gpt2_tokenizer_json

    checkpoint = _checkpoints()["tiny.safetensors"]
    gpt2 = folder / "model-gpt2"
    gpt2.mkdir(exist_ok=True)
    (gpt2 / "model.safetensors").write_bytes(checkpoint)
    config = {"model_type": "gpt2", "vocab_size": 50257, "n_embd": 8, "n_positions": 32}
    (gpt2 / "config.json").write_text(json.dumps(config))
    gpt2_tokenizer_json(gpt2)
    llama = folder / "model-llama"
    llama.mkdir(exist_ok=True)
    import torch
    from safetensors.torch import save_file

    table = torch.randn(50257, 8, generator=torch.Generator().manual_seed(1))
    save_file({"model.embed_tokens.weight": table}, str(llama / "model.safetensors"))
    config = {"model_type": "llama", "vocab_size": 50257, "hidden_size": 8, "rope_theta": 5e5,
              "num_attention_heads": 2, "max_position_embeddings": 64}  # fmt: skip
    (llama / "config.json").write_text(json.dumps(config))
    broken = folder / "model-broken"
    broken.mkdir(exist_ok=True)
    (broken / "model.safetensors").write_bytes(checkpoint)
    (broken / "config.json").write_text('{"n_embd": "wide"')
    _family_folders(folder)
    _gguf_files(folder)
    _sentencepiece_and_tekken(folder)


def _sentencepiece_and_tekken(folder: Path) -> None:
    """tiny.model (a SentencePiece BPE model with byte fallback, trained here) and model-spm/
    (it, as Llama's tokenizer.model, with a tokenizer_config.json); tekken.json (GPT-2's first
    600 tokens, v7 specials). Hostile: trunc.model, cut inside its pieces; model-tekken-spm/,
    holding a tekken.json and a tokenizer.model (refused); empty-pattern/tekken.json, whose
    pattern matches the empty string."""
    from embedcli.tokenization.common import GPT2_PATTERN
    from embedcli.tokenization.encodings import get_encoding
    from support import spmodels

    model = spmodels.train(folder / "spm-train", "bpe", spmodels.FALLBACK_TEXT)
    (folder / "tiny.model").write_bytes(model.read_bytes())
    (folder / "trunc.model").write_bytes(model.read_bytes()[:300])
    config = {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True}
    spmodels.folder(folder / "model-spm", model, config)
    gpt2 = get_encoding("gpt2")._mergeable_ranks
    merged = [t for t, _ in sorted(gpt2.items(), key=lambda kv: kv[1]) if len(t) > 1][:344]
    ranks = {t: i for i, t in enumerate([*(bytes([b]) for b in range(256)), *merged])}
    specials = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]"]
    spmodels.tekken_file(folder / "tekken.json", ranks, GPT2_PATTERN, specials=specials,
                         num_special=20)  # fmt: skip
    both = folder / "model-tekken-spm"
    spmodels.folder(both, model)
    (both / "tekken.json").write_bytes((folder / "tekken.json").read_bytes())
    spmodels.tekken_file(folder / "empty-pattern" / "tekken.json", ranks, "a*",
                         specials=specials, num_special=20)  # fmt: skip


def _gguf_files(folder: Path) -> None:
    """tiny.gguf: samples/make-gguf.py's (a llama GGUF, a tokenizer of 453 tokens, a Q8_0
    token table); trunc.gguf, cut inside its vocabulary; lying.gguf, cut inside its table."""
    import contextlib
    import io
    import runpy

    path = folder / "tiny.gguf"
    sample = Path(__file__).resolve().parents[3] / "samples" / "make-gguf.py"
    with contextlib.redirect_stdout(io.StringIO()):
        runpy.run_path(str(sample), run_name="sample")["main"](path)
    data = path.read_bytes()
    table = 453 * 64 // 32 * 34  # Q8_0: 34 bytes a block of 32
    (folder / "trunc.gguf").write_bytes(data[:2000])  # cut inside the vocabulary
    (folder / "lying.gguf").write_bytes(data[: len(data) - table + 1000])  # and in the table
    _ollama_store(folder / "ollama", path)


def _ollama_store(store: Path, gguf: Path) -> None:
    """ollama:tiny and ollama:hostile, both tiny.gguf as their model layer."""
    import hashlib

    blobs = store / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)

    def layer(kind: str, data: bytes, keep: bool = True) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        if keep:
            (blobs / f"sha256-{digest}").write_bytes(data)
        media = f"application/vnd.ollama.image.{kind}"
        return {"mediaType": media, "digest": f"sha256:{digest}", "size": len(data)}

    model = layer("model", gguf.read_bytes())
    good = [layer("template", b"{{ .System }}\n{{ .Prompt }}"), layer("params", b'{"stop": []}')]
    hostile = [layer("template", b"[bold]\x1b[2J\x00\xff{{ .Prompt }}" * 4000),
               layer("params", b"{oops"), layer("license", b"gone", keep=False)]  # fmt: skip
    for name, layers in (("tiny", good), ("hostile", hostile)):
        path = store / "manifests" / "registry.ollama.ai" / "library" / name / "latest"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"schemaVersion": 2, "layers": [model, *layers]}))


def _family_folders(folder: Path) -> None:
    """Model folders of the registry's other families (no tokenizer: --ids, or a refusal):
    BERT (token types, LayerNorm), OPT (offset 2), BLOOM (alibi, LayerNorm), T5 (relative),
    Mamba (none), Gemma 3 (two rope bases), Granite (a multiplier); an unknown model_type with
    GPT-2's keys, and a BERT folder without its LayerNorm."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(2)
    vocab, d = 50257, 8

    def table(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    norm = {"weight": table(d), "bias": table(d)}
    folders: dict[str, tuple[dict, dict]] = {
        "model-bert": ({"model_type": "bert", "hidden_size": d, "max_position_embeddings": 16,
                        "num_attention_heads": 2, "type_vocab_size": 2, "vocab_size": vocab}, {
            "bert.embeddings.word_embeddings.weight": table(vocab, d),
            "bert.embeddings.position_embeddings.weight": table(16, d),
            "bert.embeddings.token_type_embeddings.weight": table(2, d),
            **{f"bert.embeddings.LayerNorm.{k}": v for k, v in norm.items()}}),
        "model-opt": ({"model_type": "opt", "hidden_size": d, "word_embed_proj_dim": d,
                       "max_position_embeddings": 16, "num_attention_heads": 2,
                       "vocab_size": vocab}, {
            "model.decoder.embed_tokens.weight": table(vocab, d),
            "model.decoder.embed_positions.weight": table(18, d)}),
        "model-bloom": ({"model_type": "bloom", "hidden_size": d, "n_head": 2,
                         "vocab_size": vocab}, {
            "transformer.word_embeddings.weight": table(vocab, d),
            **{f"transformer.word_embeddings_layernorm.{k}": v for k, v in norm.items()}}),
        "model-t5": ({"model_type": "t5", "d_model": d, "num_heads": 2, "vocab_size": vocab},
                     {"shared.weight": table(vocab, d)}),
        "model-mamba": ({"model_type": "mamba", "hidden_size": d, "vocab_size": vocab},
                        {"backbone.embeddings.weight": table(vocab, d)}),
        "model-gemma3": ({"model_type": "gemma3_text", "hidden_size": d, "head_dim": 4,
                          "num_attention_heads": 2, "vocab_size": vocab, "dtype": "bfloat16",
                          "max_position_embeddings": 64,
                          "layer_types": ["sliding_attention", "full_attention"],
                          "rope_parameters": {
                              "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                              "full_attention": {"rope_type": "default", "rope_theta": 1e6}}},
                         {"model.embed_tokens.weight": table(vocab, d).bfloat16()}),
        "model-granite": ({"model_type": "granite", "hidden_size": d, "num_attention_heads": 2,
                           "vocab_size": vocab, "embedding_multiplier": 12.0,
                           "max_position_embeddings": 64},
                          {"model.embed_tokens.weight": table(vocab, d)}),
        "model-unknown": ({"model_type": "mystery", "n_embd": d, "vocab_size": vocab}, {
            "transformer.wte.weight": table(vocab, d), "transformer.wpe.weight": table(16, d)}),
        "model-bert-missing-norm": ({"model_type": "bert", "hidden_size": d,
                                     "vocab_size": vocab, "max_position_embeddings": 16}, {
            "bert.embeddings.word_embeddings.weight": table(vocab, d),
            "bert.embeddings.position_embeddings.weight": table(16, d),
            "bert.embeddings.token_type_embeddings.weight": table(2, d)}),
    }  # fmt: skip
    for name, (config, tensors) in folders.items():
        (folder / name).mkdir(exist_ok=True)
        save_file(tensors, str(folder / name / "model.safetensors"))
        (folder / name / "config.json").write_text(json.dumps(config))


def make_hub_cache(fixtures: Path, cache: Path) -> Path:
    """The GPT-2-style model folder as hf:org/tiny in a Hugging Face cache."""
    from support.hub import place_in_hf_cache

    place_in_hf_cache(fixtures / "model-gpt2", cache, "org/tiny")
    return cache

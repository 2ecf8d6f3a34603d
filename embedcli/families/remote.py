"""Families transformers has no class for (their model code is remote, trust_remote_code), read
from GGUF files only, as llama.cpp's code for them computes the input of the first block:

- MiniCPM (minicpm.cpp): the lookup times embedding_scale in float32, 12 where the file has none
  (the value llama.cpp's code assumes for older files);
- InternLM2 (internlm2.cpp): the lookup; rope inside attention;
- RWKV 6 and 7 (rwkv6.cpp, rwkv7.cpp): the lookup, then a LayerNorm (token_embd_norm); no
  positions.

A config.json naming one of them is refused: no transformers class holds a reading of it to
account.
"""

from __future__ import annotations

from embedcli.families.ggufarch import GGUFArch, Key
from embedcli.families.registry import Family, register

_REMOTE = (
    "its model code is remote (trust_remote_code), so no transformers class holds embedcli's "
    "reading of its config.json to account; llama.cpp's code is the reference for its GGUF files"
)


def _gguf_family(name: str, model_type: str, arch: GGUFArch, **more: object) -> Family:
    return Family(
        name=name,
        model_types=(model_type,),
        architectures=(),
        token=("token_embd.weight",),
        prefixes=("",),
        head="output.weight",
        gguf=(arch,),
        gguf_only=_REMOTE,
        **more,  # type: ignore[arg-type]
    )


def _rwkv(version: int) -> Family:
    return _gguf_family(
        f"RWKV-{version}",
        f"rwkv{version}",
        GGUFArch(name=f"rwkv{version}", eps="layer_norm_epsilon"),
        positional="none",
        context=(),
        norm="token_embd_norm",
        norm_eps=("layer_norm_epsilon",),
    )


register(
    _gguf_family(
        "MiniCPM",
        "minicpm",
        GGUFArch(
            name="minicpm",
            keys=(Key("scale_emb", "embedding_scale", 12.0, zero=1.0),),
            rope_freqs=True,
        ),
        scale="scale_emb",
    ),
    _gguf_family("InternLM2", "internlm2", GGUFArch(name="internlm2")),
    _rwkv(6),
    _rwkv(7),
)

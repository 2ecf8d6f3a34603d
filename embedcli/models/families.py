"""The model families embedcli knows: one declarative entry each, keyed by ``model_type``.

An entry says what a family computes before its first block, as its ``transformers`` classes do:
where the token table lives (in the base model, and behind the LM-head class's prefix), the
position family (a learned table and its offset, sinusoids, rope, ALiBi, T5's relative buckets,
or none), the input scale and the dtype it is applied in, what runs between the lookup and the
first block (OPT's projection, BERT's token types, a LayerNorm), the config field that bounds
the context, and the tied head. ``models/config.py`` reads a ``config.json`` through its entry;
a ``model_type`` with no entry is refused, never guessed from key names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LIST_URL = "https://embedcli.github.io/embedcli/families/"


@dataclass(frozen=True)
class Family:
    """What one model family does before its first block (keys relative to the base model)."""

    name: str  # as people call it
    model_types: tuple[str, ...]
    architectures: tuple[str, ...]  # the transformers classes: base model, then LM head
    token: tuple[str, ...] = ("embed_tokens.weight",)  # candidates, first found wins
    prefixes: tuple[str, ...] = ("model",)  # where the LM-head class keeps the base model
    positional: str = "rope"  # learned, sinusoidal, rope, alibi, relative, none
    position: str | None = None  # the learned table
    offset: int = 0  # rows before position 0 (OPT: 2); RoBERTa's comes from padding_idx
    position_ids: str = "arange"  # arange, mask (OPT), padding (RoBERTa)
    sinusoid: str = "interleaved"
    scale: str | None = None  # "sqrt_d", or a config field holding the multiplier
    scale_when: str | None = None  # a config flag that switches the sqrt_d scale on
    scale_rounding: str = "float"  # "dtype": rounded to the tables' dtype first (Gemma)
    token_type: str | None = None
    norm: str | None = None  # a LayerNorm's key prefix (weight and bias)
    norm_eps: tuple[str, ...] = ("layer_norm_eps",)  # (): torch's default, 1e-5 (BART's)
    project_in: str | None = None
    context: tuple[str, ...] = ("max_position_embeddings",)  # () : no limit
    rope_dim: str = "head"  # head (x partial factor), rotary_dim (GPT-J), qk_rope (MLA)
    alibi: str | None = None  # slopes: "press" (BLOOM, Falcon) or "mpt"
    alibi_flag: str | None = None  # a config flag that turns rope into ALiBi (Falcon's "alibi")
    head: str | None = "lm_head.weight"
    requires: dict[str, object] = field(default_factory=dict)  # fields that must hold these
    # an encoder-decoder's stacks, in the order they run: the first one the checkpoint has
    # holds the input layer (its positions and norm); the token table may be shared above them
    stacks: tuple[str, ...] = ()

    @property
    def steps(self) -> tuple[str, ...]:
        """The operations before the first block, in order, for the compatibility table."""
        found = ["lookup"]
        if self.scale:
            factor = "× √d" if self.scale == "sqrt_d" else f"× {self.scale}"
            found.append(f"{factor} (if {self.scale_when})" if self.scale_when else factor)
        if self.project_in:
            found.append("project_in")
        if self.token_type:
            found.append("+ token type 0")
        if self.positional in ("learned", "sinusoidal"):
            found.append(
                f"+ {self.positional}" + (f" (offset {self.offset})" if self.offset else "")
            )
        if self.position_ids == "padding":
            found.append("(positions from padding_idx + 1)")
        if self.norm:
            found.append("LayerNorm")
        return tuple(found)


def _rope(name: str, *types: str, arch: str, **more: object) -> Family:
    """A Llama-shaped family: ``model.embed_tokens``, rope, nothing else before block 0."""
    return Family(name, types, (f"{arch}Model", f"{arch}ForCausalLM"), **more)  # type: ignore[arg-type]


_SQRT = {"scale": "sqrt_d", "scale_rounding": "dtype"}  # Gemma's normalizer buffer
_MULTIPLIER = {"scale": "embedding_multiplier"}  # Granite's, a Python float

FAMILIES: tuple[Family, ...] = (
    # ---- learned positional tables
    Family(
        "GPT-2",
        ("gpt2",),
        ("GPT2Model", "GPT2LMHeadModel"),
        ("wte.weight",),
        ("transformer",),
        "learned",
        "wpe.weight",
        context=("n_positions", "max_position_embeddings"),
    ),
    Family(
        "GPT-Neo",
        ("gpt_neo",),
        ("GPTNeoModel", "GPTNeoForCausalLM"),
        ("wte.weight",),
        ("transformer",),
        "learned",
        "wpe.weight",
    ),
    Family(
        "GPT-BigCode (StarCoder 1, SantaCoder)",
        ("gpt_bigcode",),
        ("GPTBigCodeModel", "GPTBigCodeForCausalLM"),
        ("wte.weight",),
        ("transformer",),
        "learned",
        "wpe.weight",
        context=("n_positions", "max_position_embeddings"),
    ),
    Family(
        "GPT-1 (openai-gpt)",
        ("openai-gpt",),
        ("OpenAIGPTModel", "OpenAIGPTLMHeadModel"),
        ("tokens_embed.weight",),
        ("transformer",),
        "learned",
        "positions_embed.weight",
        context=("n_positions",),
    ),
    Family(
        "OPT",
        ("opt",),
        ("OPTModel", "OPTForCausalLM"),
        ("decoder.embed_tokens.weight",),
        ("model",),
        "learned",
        "decoder.embed_positions.weight",
        offset=2,
        position_ids="mask",
        project_in="decoder.project_in.weight",
    ),
    Family(
        "BioGPT",
        ("biogpt",),
        ("BioGptModel", "BioGptForCausalLM"),
        ("embed_tokens.weight",),
        ("biogpt",),
        "learned",
        "embed_positions.weight",
        offset=2,
        scale="sqrt_d",
        scale_when="scale_embedding",
        head="output_projection.weight",
    ),
    Family(
        "XGLM",
        ("xglm",),
        ("XGLMModel", "XGLMForCausalLM"),
        ("embed_tokens.weight",),
        ("model",),
        "sinusoidal",
        offset=2,
        sinusoid="halves",
        scale="sqrt_d",
        scale_when="scale_embedding",
    ),
    Family(
        "BART (mBART, PLBart)",
        ("bart", "mbart", "plbart"),
        ("BartModel", "BartForConditionalGeneration", "BartForCausalLM"),
        ("embed_tokens.weight", "shared.weight"),
        ("model",),
        "learned",
        "embed_positions.weight",
        offset=2,
        scale="sqrt_d",
        scale_when="scale_embedding",
        norm="layernorm_embedding",
        norm_eps=(),
        stacks=("encoder", "decoder"),  # the encoder's, where there is one: it runs first
    ),
    Family(
        "BERT",
        ("bert",),
        ("BertModel", "BertLMHeadModel"),
        ("embeddings.word_embeddings.weight",),
        ("bert",),
        "learned",
        "embeddings.position_embeddings.weight",
        token_type="embeddings.token_type_embeddings.weight",
        norm="embeddings.LayerNorm",
        head="cls.predictions.decoder.weight",
        requires={"position_embedding_type": "absolute"},
    ),
    Family(
        "RoBERTa (XLM-R, CamemBERT, Data2Vec-text)",
        ("roberta", "xlm-roberta", "camembert", "data2vec-text"),
        ("RobertaModel", "RobertaForCausalLM"),
        ("embeddings.word_embeddings.weight",),
        ("roberta", "data2vec_text"),
        "learned",
        "embeddings.position_embeddings.weight",
        position_ids="padding",
        token_type="embeddings.token_type_embeddings.weight",
        norm="embeddings.LayerNorm",
        head="lm_head.decoder.weight",
        requires={"position_embedding_type": "absolute"},
    ),
    # ---- ALiBi, relative buckets, no positions
    Family(
        "BLOOM",
        ("bloom",),
        ("BloomModel", "BloomForCausalLM"),
        ("word_embeddings.weight",),
        ("transformer",),
        "alibi",
        norm="word_embeddings_layernorm",
        norm_eps=("layer_norm_epsilon",),
        context=(),
        alibi="press",
    ),
    Family(
        "MPT",
        ("mpt",),
        ("MptModel", "MptForCausalLM"),
        ("wte.weight",),
        ("transformer",),
        "alibi",
        context=("max_seq_len",),
        alibi="mpt",
    ),
    Family(
        "Falcon",
        ("falcon",),
        ("FalconModel", "FalconForCausalLM"),
        ("word_embeddings.weight",),
        ("transformer",),
        "rope",
        alibi="press",
        alibi_flag="alibi",  # alibi: true turns rope off
    ),
    Family(
        "T5 (encoder)",
        ("t5", "mt5"),
        ("T5EncoderModel", "T5ForConditionalGeneration"),
        ("shared.weight", "encoder.embed_tokens.weight"),
        ("",),
        "relative",
        context=(),
    ),
    Family(
        "Mamba",
        ("mamba", "mamba2", "falcon_mamba"),
        ("MambaModel", "MambaForCausalLM"),
        ("embeddings.weight", "embedding.weight"),
        ("backbone",),
        "none",
        context=(),
    ),
    Family(
        "RWKV",
        ("rwkv",),
        ("RwkvModel", "RwkvForCausalLM"),
        ("embeddings.weight",),
        ("rwkv",),
        "none",
        context=(),
        head="head.weight",
    ),
    # ---- rotary positions
    Family(
        "GPT-NeoX (Pythia)",
        ("gpt_neox",),
        ("GPTNeoXModel", "GPTNeoXForCausalLM"),
        ("embed_in.weight",),
        ("gpt_neox",),
        head="embed_out.weight",
    ),
    Family(
        "GPT-J",
        ("gptj",),
        ("GPTJModel", "GPTJForCausalLM"),
        ("wte.weight",),
        ("transformer",),
        context=("n_positions",),
        rope_dim="rotary_dim",
    ),
    Family(
        "CodeGen",
        ("codegen",),
        ("CodeGenModel", "CodeGenForCausalLM"),
        ("wte.weight",),
        ("transformer",),
        context=("n_positions", "n_ctx"),
        rope_dim="rotary_dim",
    ),
    _rope("Llama", "llama", arch="Llama"),
    _rope("Mistral", "mistral", arch="Mistral"),
    _rope("Ministral", "ministral", arch="Ministral"),
    _rope("Mixtral", "mixtral", arch="Mixtral"),
    _rope("Qwen2", "qwen2", arch="Qwen2"),
    _rope("Qwen2-MoE", "qwen2_moe", arch="Qwen2Moe"),
    _rope("Qwen3", "qwen3", arch="Qwen3"),
    _rope("Qwen3-MoE", "qwen3_moe", arch="Qwen3Moe"),
    _rope("Gemma", "gemma", arch="Gemma", **_SQRT),
    _rope("Gemma 2", "gemma2", arch="Gemma2", **_SQRT),
    _rope(
        "Gemma 3",
        "gemma3_text",
        "gemma3",
        arch="Gemma3",
        prefixes=("model", "model.language_model", "language_model.model"),
        **_SQRT,
    ),
    _rope("Phi", "phi", arch="Phi"),
    _rope("Phi-3", "phi3", arch="Phi3"),
    _rope("Phi-MoE", "phimoe", arch="PhiMoE"),
    _rope("StableLM", "stablelm", arch="StableLm"),
    _rope("OLMo", "olmo", arch="Olmo"),
    _rope("OLMo 2", "olmo2", arch="Olmo2"),
    _rope("OLMo 3", "olmo3", arch="Olmo3"),
    _rope("OLMoE", "olmoe", arch="Olmoe"),
    _rope("StarCoder2", "starcoder2", arch="Starcoder2"),
    _rope("Cohere (Command R)", "cohere", arch="Cohere"),
    _rope("Cohere 2", "cohere2", arch="Cohere2"),
    _rope("Nemotron", "nemotron", arch="Nemotron"),
    _rope("Persimmon", "persimmon", arch="Persimmon"),
    _rope("Granite", "granite", arch="Granite", **_MULTIPLIER),
    _rope("GraniteMoE", "granitemoe", arch="GraniteMoe", **_MULTIPLIER),
    _rope("GraniteMoE (shared)", "granitemoeshared", arch="GraniteMoeShared", **_MULTIPLIER),
    _rope(
        "MiniCPM3",
        "minicpm3",
        arch="MiniCPM3",
        scale="scale_emb",
        scale_rounding="dtype",
        rope_dim="qk_rope",
    ),
    _rope("DeepSeek-V2", "deepseek_v2", arch="DeepseekV2", rope_dim="qk_rope"),
    _rope("DeepSeek-V3", "deepseek_v3", arch="DeepseekV3", rope_dim="qk_rope"),
    _rope("GLM", "glm", arch="Glm"),
    _rope("GLM-4", "glm4", arch="Glm4"),
    _rope("Helium", "helium", arch="Helium"),
    _rope("EXAONE 4", "exaone4", arch="Exaone4"),
    _rope("ERNIE 4.5", "ernie4_5", arch="Ernie4_5"),
    _rope("ERNIE 4.5 MoE", "ernie4_5_moe", arch="Ernie4_5_Moe"),
    _rope("Arcee", "arcee", arch="Arcee"),
    _rope("Apertus", "apertus", arch="Apertus"),
    _rope("BitNet", "bitnet", arch="BitNet"),
    _rope("SmolLM3", "smollm3", arch="SmolLM3"),
    _rope("Seed-OSS", "seed_oss", arch="SeedOss"),
    _rope("DiffLlama", "diffllama", arch="DiffLlama"),
    _rope("Hunyuan (dense)", "hunyuan_v1_dense", arch="HunYuanDenseV1"),
    _rope("Hunyuan (MoE)", "hunyuan_v1_moe", arch="HunYuanMoEV1"),
    _rope("InternLM3", "internlm3", arch="InternLM3"),
    _rope("CWM", "cwm", arch="Cwm"),
    # ---- more Llama-shaped families of transformers' causal-LM mapping, each tested the same way
    _rope("AFMoE", "afmoe", arch="Afmoe"),
    _rope("Apertus 1.5", "apertus1p5_text", arch="Apertus1p5Text"),
    _rope("Aria (text)", "aria_text", arch="AriaText"),
    _rope("A.X K1", "axk1", arch="AXK1"),
    _rope("Doge", "doge", arch="Doge"),
    _rope("FlexOlmo", "flex_olmo", arch="FlexOlmo"),
    _rope("Flint", "flint", arch="Flint"),
    _rope("Hunyuan V3", "hy_v3", arch="HYV3"),
    _rope("Jais 2", "jais2", arch="Jais2"),
    _rope("LongCat-Flash", "longcat_flash", arch="LongcatFlash"),
    _rope("GLM-4 MoE", "glm4_moe", arch="Glm4Moe"),
    _rope("VaultGemma", "vaultgemma", arch="VaultGemma", **_SQRT),
)

BY_MODEL_TYPE: dict[str, Family] = {t: f for f in FAMILIES for t in f.model_types}


def family_of(model_type: str | None) -> Family | None:
    """The entry for a ``model_type``, or None when embedcli does not know it."""
    return BY_MODEL_TYPE.get(model_type or "")


def compatibility_table() -> str:
    """The Markdown table of every family (the manual's families page holds it verbatim)."""
    lines = [
        "| Family | model_type | Positions | Before the first block | Context field |",
        "| --- | --- | --- | --- | --- |",
    ]
    for family in FAMILIES:
        types = ", ".join(f"`{t}`" for t in family.model_types)
        positions = family.positional
        if family.alibi_flag:
            positions = f"rope, or alibi with `{family.alibi_flag}: true`"
        context = ", ".join(f"`{c}`" for c in family.context) or "none (no limit)"
        steps = " → ".join(family.steps)
        lines.append(f"| {family.name} | {types} | {positions} | {steps} | {context} |")
    return "\n".join(lines) + "\n"

"""llama.cpp's BPE pre-tokenizers, by ``tokenizer.ggml.pre`` name, as data: every name
``llama_vocab::impl::load`` (``src/llama-vocab.cpp``) maps to a pre-tokenizer type, with the
flags the name sets, and each type's regexes (:mod:`embedcli.tokenization.gguf.preregex`, which
says how llama.cpp's regex engine differs from Oniguruma's and how each is written to split the
same).

llama.cpp runs a type's regexes in sequence, each splitting the pieces left by the one before
and keeping the unmatched gaps as pieces: in ``tokenizers`` that is a Sequence of
``Split(behavior="Isolated")`` (``MergedWithPrevious`` for AFMoE's digit splitter, whose first
group of digits joins the text before it) followed by ``ByteLevel(use_regex=False)``.

Three types do not byte-encode their pieces (``byte_encode`` off: Gemma 4's, Sarvam's and the
whitespace one): their vocabularies are raw UTF-8 with ``<0xXX>`` byte tokens, Gemma 4's and
Sarvam's with ``▁`` for a space (llama.cpp escapes spaces first), and Gemma 4's BPE session
takes a run of newlines that is a token as that token. They run in
:mod:`embedcli.tokenization.gguf.rawbpe`, a port of that session (which also refuses the texts
llama.cpp aborts on under the whitespace one, where spaces stay unescaped).

No ``tokenizer.ggml.pre``, or an empty one, is llama.cpp's "default". A name llama.cpp does not
map is refused (llama.cpp refuses it too). :data:`REFUSED` holds the names llama.cpp maps that
embedcli does not read, each with its reason; it is empty: every name is read, with ids equal
to llama.cpp's (tests/tokenization/test_gguf_pre_tokenizers.py checks all 91 names).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from embedcli.tokenization.common import GPT2_PATTERN, LLAMA3_PATTERN, QWEN_PATTERN
from embedcli.tokenization.gguf import preregex as rx

# The regexes as they run (llama.cpp's Unicode tables: rx.as_llama_tables).
GPT2 = rx.as_llama_tables(rx.GPT2)
LLAMA3 = rx.as_llama_tables(rx.LLAMA3)
QWEN2 = rx.as_llama_tables(rx.QWEN2)


@dataclass(frozen=True)
class PreTokenizer:
    """One llama.cpp pre-tokenizer type: its regexes, and the flags its name sets."""

    kind: str  # llama.cpp's LLAMA_VOCAB_PRE_TYPE_..., lower-case
    regexes: tuple[str, ...]  # Oniguruma's, with llama.cpp's Unicode tables
    joined: tuple[str, ...] = ()  # regexes whose match joins the gap just before it
    byte_encode: bool = True  # pieces in GPT-2's byte alphabet; False: raw UTF-8 (rawbpe)
    escape_spaces: bool = False  # " " becomes "▁" before splitting (llama_escape_whitespace)
    newline_tokens: bool = False  # a piece of newlines only that is a token is that token
    bos_always: bool = False  # add_bos even where the file says false (Gemma 4)
    ignore_merges: bool = False  # a piece already in the vocabulary is one token
    add_bos: bool = False  # llama.cpp's default when tokenizer.ggml.add_bos_token is absent
    has_bos: bool = True  # False where the name clears the default bos id (chatglm)


def _types(
    regexes: tuple[str, ...], *kinds: str, joined: tuple[str, ...] = (), **flags: bool
) -> dict[str, PreTokenizer]:
    tables = rx.as_llama_tables
    regexes, joined = tuple(map(tables, regexes)), tuple(map(tables, joined))
    return {kind: PreTokenizer(kind, regexes, joined, **flags) for kind in kinds}


_RAW = {"byte_encode": False, "escape_spaces": True}
_TYPES = {
    **_types((r"[\p{P}\$\+<=>\^~\|]+", rx.GPT2, r"\p{N}+", "[0-9][0-9][0-9]"), "default"),
    **_types((rx.LLAMA3,), "llama3", "dbrx", "smaug", "chatglm4"),
    **_types((rx.JAIS2,), "jais2"),
    **_types(rx.DEEPSEEK_LLM, "deepseek_llm"),
    **_types(rx.DEEPSEEK_V3, "deepseek3_llm", "hunyuan_dense", "joyai_llm", "hy_v4"),
    **_types(rx.SPARK2_5, "spark2_5"),
    **_types(rx.YOUTU, "youtu"),
    **_types(rx.DEEPSEEK_CODER, "deepseek_coder"),
    **_types((r"[\p{P}\$\+<=>\^~\|`]+", rx.GPT2, "[0-9][0-9][0-9]"), "falcon"),
    **_types(
        (r"\p{N}", rx.GPT2),
        *("starcoder", "refact", "command_r", "smollm", "codeshell", "exaone", "minerva"),
        "mellum2",
    ),
    **_types((rx.GPT2,), "gpt2", "mpt", "olmo", "jais", "trillion", "granite_docling"),
    **_types((rx.QWEN2,), "qwen2", "stablelm2", "hunyuan", "solar_open", "grok_2"),
    **_types((rx.QWEN35,), "qwen35"),
    **_types((rx.PORO,), "poro", "bloom", "gpt3_finnish"),
    **_types((rx.PORO, r"\p{N}"), "viking"),
    **_types((rx.TEKKEN,), "tekken"),
    **_types(rx.CHAMELEON, "chameleon"),
    **_types((rx.GPT4O,), "gpt4o", "minimax_m2"),
    **_types((rx.GRANITE_EMB_MULTI,), "granite_emb_multi"),
    **_types((rx.AFMOE_DIGITS, rx.TINY_AYA_WORDS), "tiny_aya", joined=(rx.AFMOE_DIGITS,)),
    **_types((rx.KIMI_K2,), "kimi_k2"),
    **_types(rx.SUPERBPE, "superbpe"),
    **_types((rx.BAILINGMOE,), "bailingmoe"),
    **_types((rx.SEED_CODER,), "seed_coder"),
    **_types((rx.UFAKZEKA,), "ufakzeka"),
    **_types(rx.AFMOE, "afmoe", joined=(rx.AFMOE_DIGITS,)),
    **_types((rx.NEWLINE_RUNS, rx.QWEN2), "laguna"),
    **_types((rx.EXAONE_MOE,), "exaone_moe"),
    **_types((r"\p{N}{1,3}", rx.MINICPM5), "minicpm5"),
    **_types((rx.NEWLINE_RUNS,), "gemma4", newline_tokens=True, bos_always=True, **_RAW),
    **_types((rx.NEWLINE_RUNS,), "sarvam_moe", **_RAW),
    **_types((rx.NOT_SPACE,), "whitespace", byte_encode=False),
}


def _names(kind: str, names: str, **flags: bool) -> dict[str, PreTokenizer]:
    return dict.fromkeys(names.split(), replace(_TYPES[kind], **flags))


# tokenizer.ggml.pre -> type and flags, as llama_vocab::impl::load maps them (its order).
# Names that set only clean_spaces (detokenizing) or add_sep (not added by a BPE session) are
# listed with their type alone.
_NAMES = {
    **_names("default", "default"),
    **_names("minicpm5", "minicpm5", ignore_merges=True),
    **_names(
        "llama3",
        "llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2 jina-v5-nano",
        ignore_merges=True,
        add_bos=True,
    ),
    **_names("deepseek_llm", "deepseek-llm"),
    **_names("deepseek_coder", "deepseek-coder"),
    **_names("deepseek3_llm", "deepseek-v3"),
    **_names("spark2_5", "spark2_5"),
    **_names("youtu", "youtu", ignore_merges=True),
    **_names("falcon", "falcon"),
    **_names("mpt", "mpt"),
    **_names("starcoder", "starcoder"),
    **_names("gpt2", "gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0"),
    **_names("gpt2", "mellum modern-bert jina-v1-en jina-v2-code roberta-bpe exaone4"),
    **_names("jais2", "jais-2"),
    **_names("gemma4", "gemma4 granite-embed-multi-311m"),
    **_names("sarvam_moe", "sarvam-moe"),
    **_names("whitespace", "whitespace"),
    **_names("refact", "refact"),
    **_names("command_r", "command-r"),
    **_names("qwen2", "qwen2 deepseek-r1-qwen kormo f2llmv2 megrez"),
    **_names("qwen35", "qwen35"),
    **_names("stablelm2", "stablelm2"),
    **_names("olmo", "olmo"),
    **_names("dbrx", "dbrx"),
    **_names("smaug", "smaug-bpe"),
    **_names("poro", "poro-chat"),
    **_names("chatglm4", "chatglm-bpe", has_bos=False),
    **_names("chatglm4", "glm4 glm5", has_bos=False, ignore_merges=True),
    **_names("viking", "viking"),
    **_names("jais", "jais"),
    **_names("tekken", "tekken", ignore_merges=True, add_bos=True),
    **_names("smollm", "smollm"),
    **_names("codeshell", "codeshell"),
    **_names("bloom", "bloom"),
    **_names("gpt3_finnish", "gpt3-finnish"),
    **_names("exaone", "exaone"),
    **_names("exaone_moe", "exaone-moe"),
    **_names("chameleon", "chameleon", add_bos=True),
    **_names("minerva", "minerva-7b"),
    **_names("gpt4o", "gpt-4o llama4 kanana2 talkie"),
    **_names("granite_emb_multi", "granite-embed-multi-97m", ignore_merges=True),
    **_names("tiny_aya", "tiny_aya cohere2moe"),
    **_names("superbpe", "superbpe"),
    **_names("trillion", "trillion"),
    **_names("granite_docling", "granite-docling"),
    **_names("bailingmoe", "bailingmoe bailingmoe2 llada-moe"),
    **_names("seed_coder", "seed-coder"),
    **_names("hunyuan", "hunyuan"),
    **_names("hunyuan_dense", "hunyuan-dense"),
    **_names("hy_v4", "hy_v4"),
    **_names("joyai_llm", "joyai-llm"),
    **_names("kimi_k2", "kimi-k2"),
    **_names("ufakzeka", "ufakzeka"),
    **_names("grok_2", "grok-2"),
    **_names("afmoe", "afmoe"),
    **_names("laguna", "laguna"),
    **_names("minimax_m2", "minimax-m2"),
    **_names("solar_open", "solar-open"),
    **_names("mellum2", "mellum2"),
}

# Names llama.cpp maps whose pre-tokenizer embedcli does not emulate exactly -> why.
REFUSED: dict[str, str] = {}

KNOWN_PRE_NAMES = tuple(sorted(_NAMES))

# Single-regex types whose regex is cut-safe by the argument of modeltok's docstring (a space
# only ever opens a match) -> the tokenizer.json pattern of common.CUT_SAFE_PATTERNS it splits
# as, but for how contractions are cased (and Unicode 16.0's characters).
CUT_SAFE_REGEXES = {LLAMA3: LLAMA3_PATTERN, QWEN2: QWEN_PATTERN, GPT2: GPT2_PATTERN}


def pre_tokenizer(name: str) -> PreTokenizer | None:
    """The pre-tokenizer llama.cpp uses for a ``tokenizer.ggml.pre`` name (an empty one is
    llama.cpp's "default"), or None."""
    return _NAMES.get(name or "default")


def refusal(name: str) -> str:
    """What follows "the tokenizer's pre-tokenizer" in the refusal of a name that
    :func:`pre_tokenizer` does not give: the name, and why."""
    if name in REFUSED:
        return f"{name!r} is one embedcli does not read: {REFUSED[name]}"
    return (
        f"{name!r} is not one embedcli knows, nor llama.cpp (which refuses the file too; it "
        f"knows {len(_NAMES) + len(REFUSED)} names)"
    )

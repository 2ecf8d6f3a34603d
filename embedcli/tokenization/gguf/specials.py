"""The special tokens llama.cpp makes of a GGUF file's tokenizer, as ``llama_vocab::load`` makes
them: bos, eos, unk, sep and pad from the file's keys, else the tokenizer model's defaults; the
end-of-turn (EOT) and end-of-message (EOM) tokens from ``tokenizer.ggml.eot_token_id`` and
``eom_token_id``, else found by their text (``<end_of_turn>``, ``<|eot_id|>``, ``<|im_end|>``,
...); and the end-of-generation set (EOG), every token a generation stops at.

EOG holds the tokens of llama.cpp's EOG texts, the FIM pad, repo and file-separator tokens
(their keys, else their texts), and eos, EOT and EOM; less ``<|end|>`` where ``<|return|>`` and
``<|call|>`` (or ``<|calls|>`` and ``<|flush|>``) are there too, and less ``</s>`` beside
``<|tool_response>`` or ``<|plamo:eos|>``.

Where the file names no EOT (or FIM) token and several tokens carry one of its texts, llama.cpp
takes the first its hash map of texts gives, an order no file states: that token is not named
here (``undetermined`` lists the ones it picks among), never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from embedcli.tokenization.gguf.tokenizer import _Vocab

# llama.cpp's texts for each token it finds by text (llama-vocab.cpp, 0.3.36)
_EOT = (
    "<|eot_id|> <|im_end|> <|end|> <end_of_turn> <|endoftext|> <|end_of_text|> <EOT> _<EOT> "
    "[EOT] <｜end▁of▁sentence｜> <end_of_utterance>"
)
_BY_TEXT = {
    "eot": _EOT.split(),
    "eom": ["<|eom_id|>"],
    "fim_pad": ["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
    "fim_rep": ["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"],
    "fim_sep": ["<|file_sep|>"],
}
_EOG = frozenset(
    (
        f"{_EOT} <|return|> <|call|> <|flush|> <|calls|> </s> <|eom_id|> [EOS] <eos> <turn|> "
        "<|tool_response> [e~["
    ).split()
)


@dataclass(frozen=True)
class SpecialTokens:
    """llama.cpp's special tokens of one vocabulary (None: it has none); ``texts`` gives the
    text of each id named here."""

    bos: int | None
    eos: int | None
    unk: int | None
    sep: int | None
    pad: int | None
    eot: int | None  # end of turn: the file's, else the one token with an EOT text
    eom: int | None  # end of message (<|eom_id|>, Llama 3.1's tool calls)
    eog: list[int]  # end of generation, ascending
    add_bos: bool
    add_eos: bool
    add_space_prefix: bool  # a space put before the text (SentencePiece and Unigram read it)
    undetermined: dict[str, list[int]] = field(default_factory=dict)  # which -> the candidates
    texts: dict[int, str] = field(default_factory=dict)


def _found(vocab: _Vocab, which: str) -> tuple[int | None, list[int]]:
    """(the id, []) of a token the file names or one text finds; (None, the candidates) where
    several texts are there and llama.cpp's hash map picks."""
    named = vocab.meta.get(f"{which}_token_id", int)
    if named is not None:
        if not 0 <= named < len(vocab.tokens):  # llama.cpp warns and finds it by text
            raise vocab.meta.fail(
                f"tokenizer.ggml.{which}_token_id is {named}, outside the vocabulary of "
                f"{len(vocab.tokens):,} tokens"
            )
        return named, []
    candidates = sorted(vocab.ids[t] for t in _BY_TEXT[which] if t in vocab.ids)
    if len(candidates) == 1:
        return candidates[0], []
    return None, candidates


def _eog(vocab: _Vocab, found: dict[str, int | None]) -> set[int]:
    eog = {i for text, i in vocab.ids.items() if text in _EOG}
    eog |= {found[w] for w in ("fim_pad", "fim_rep", "fim_sep", "eot", "eom")}  # type: ignore[misc]
    eog.add(vocab.special["eos"])  # type: ignore[arg-type]
    eog.discard(None)  # type: ignore[arg-type]
    texts = {vocab.tokens[i] for i in eog}
    if "<|end|>" in texts and ({"<|return|>", "<|call|>"} <= texts or
                               {"<|calls|>", "<|flush|>"} <= texts):  # fmt: skip
        eog.discard(vocab.ids["<|end|>"])
    if "</s>" in texts and texts & {"<|tool_response>", "<|plamo:eos|>"}:
        eog.discard(vocab.ids["</s>"])
    return eog


def special_tokens(vocab: _Vocab) -> SpecialTokens:
    """The special tokens llama.cpp makes of a checked vocabulary."""
    found: dict[str, int | None] = {}
    undetermined: dict[str, list[int]] = {}
    for which in _BY_TEXT:
        found[which], candidates = _found(vocab, which)
        if candidates:
            undetermined[which] = candidates
    eog = sorted(_eog(vocab, found))
    special = vocab.special
    named = (special["bos"], special["eos"], special["unk"], special["sep"], special["padding"])
    default_prefix = vocab.model == "llama"  # llama.cpp's SentencePiece default
    ids = [*named, found["eot"], found["eom"], *eog, *(i for c in undetermined.values() for i in c)]
    return SpecialTokens(
        *named, found["eot"], found["eom"], eog, vocab.add_bos, vocab.add_eos,
        bool(vocab.meta.get("add_space_prefix", bool, default_prefix)), undetermined,
        {i: vocab.tokens[i] for i in sorted({i for i in ids if i is not None})},
    )  # fmt: skip


def gguf_special_tokens(metadata: Mapping[str, Any], label: str) -> SpecialTokens:
    """The special tokens llama.cpp makes of a GGUF file's tokenizer metadata (the
    ``tokenizer.*`` keys as plain values); a tokenizer llama.cpp would not load is refused."""
    return special_tokens(_Vocab(metadata, label))

"""llama.cpp's SentencePiece-style tokenizer (``tokenizer.ggml.model`` "llama"), ported from
``llm_tokenizer_spm_session`` in ``src/llama-vocab.cpp``.

Each text fragment (what the special-token partition leaves, :mod:`.native`) gets a space in
front where it starts the text or follows a special token and ``tokenizer.ggml.add_space_prefix``
is on (its default), then every space becomes ``▁`` (``llama_escape_whitespace``). The fragment
starts as one symbol per character; the adjacent pair whose joined text is a token of the
highest score is merged (ties: the leftmost pair), again and again, over the whole fragment;
a symbol left that is not a token is spelled in ``<0xXX>`` byte tokens. Any token takes part,
whatever its type, as in llama.cpp (``text_to_token`` knows them all).

This is the algorithm itself, not ranks made from it: it needs no merges table, so a 262,144-token
vocabulary loads as fast as its strings can be read, and a vocabulary whose scores are all one
value (which ``convert_hf_to_gguf.py`` writes for a model with only a tokenizer.json) merges
left to right exactly as llama.cpp does.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from pathlib import Path

from embedcli.tokenization.gguf.native import NativeTokenizer, Vocab, refuse_without_bytes

SPACE = "\u2581"
PHI3_KEEP = ("<unk>", "<s>", "<|endoftext|>")  # Phi-3's special tokens that keep their spaces


class SentencePieceGGUF(NativeTokenizer):
    """A "llama" GGUF vocabulary: SentencePiece-style merges by score, with byte fallback."""

    family = "sentencepiece"

    def __init__(self, vocab: Vocab, *, name: str, path: Path, model_name: str = "") -> None:
        refuse_without_bytes(vocab, "SentencePiece")
        super().__init__(vocab, name=name, path=path)
        self.scores: list[float] = vocab.scores
        self.add_space_prefix = bool(vocab.meta.get("add_space_prefix", bool, True))
        self._drops_first_space = self.add_space_prefix
        self._byte_ids = tuple(self.ids[f"<0x{b:02X}>"] for b in range(256))
        lowered = model_name.lower()
        if "phi-3" in lowered or "phi3" in lowered:  # llama.cpp's per-model attributes
            missing = [t for t in ("</s>", *PHI3_KEEP) if t not in self.ids]
            if missing:
                raise vocab.meta.fail(
                    f"it is named {model_name!r}, so llama.cpp strips spaces beside Phi-3's "
                    f"special tokens and needs {missing[0]!r}, which the vocabulary lacks "
                    "(llama.cpp refuses the file)"
                )
            kept = {self.ids[t] for t in PHI3_KEEP}
            self.rstrip = frozenset({*self._matched, self.ids["</s>"]} - kept)

    def _encode_fragment(self, text: str, after_special: bool) -> list[int]:
        if self.add_space_prefix and after_special:
            text = " " + text
        return self.merge(text.replace(" ", SPACE))

    def merge(self, text: str) -> list[int]:
        """llm_tokenizer_spm_session::tokenize on an escaped fragment. Symbol ``i`` starts at
        character ``i`` and holds ``size[i]`` characters (0 once merged into its left)."""
        n = len(text)
        if n == 0:
            return []
        ids, scores = self.ids, self.scores
        size = [1] * n
        nxt = [*range(1, n), -1]
        prv = list(range(-1, n - 1))
        heap = []
        for i in range(n - 1):
            token = ids.get(text[i : i + 2])
            if token is not None:
                heap.append((-scores[token], i, i + 1, 2))
        heapify(heap)
        while heap:
            _, left, right, joined = heappop(heap)
            if size[left] == 0 or size[right] == 0 or size[left] + size[right] != joined:
                continue  # stale: one side has merged since
            size[left] = joined
            size[right] = 0
            after = nxt[left] = nxt[right]
            if after >= 0:
                prv[after] = left
            before = prv[left]
            if before >= 0:
                token = ids.get(text[before : left + joined])
                if token is not None:
                    heappush(heap, (-scores[token], before, left, size[before] + joined))
            if after >= 0:
                end = after + size[after]
                token = ids.get(text[left:end])
                if token is not None:
                    heappush(heap, (-scores[token], left, after, end - left))
        out: list[int] = []
        i = 0
        while i >= 0:
            piece = text[i : i + size[i]]
            token = ids.get(piece)
            if token is not None:
                out.append(token)
            else:
                out.extend(self._byte_ids[b] for b in piece.encode("utf-8"))
            i = nxt[i]
        return out

"""llama.cpp's BPE session on raw UTF-8 pieces, for the pre-tokenizers that do not byte-encode
(``byte_encode`` off in ``llm_tokenizer_bpe``: Gemma 4's, Sarvam's and the whitespace one),
ported from ``llm_tokenizer_bpe_session::tokenize`` in ``src/llama-vocab.cpp``.

Each text fragment (what the special-token partition leaves, :mod:`.native`):

1. has every space replaced by ``▁`` where the type escapes spaces (Gemma 4's and Sarvam's:
   ``llama_escape_whitespace``, which replaces U+0020 alone);
2. is split by the type's regexes in turn, each keeping the gaps between its matches as pieces
   (Gemma 4's and Sarvam's: runs of newlines and runs of the rest; the whitespace one's: runs
   of non-whitespace and the whitespace between them). These regexes are plain classes, which
   Python's ``re`` reads as llama.cpp's engines do;
3. each piece is one symbol per character, unless it is a token and llama.cpp takes it whole:
   the name sets ``ignore_merges``, or (Gemma 4) the piece is newlines only. The adjacent pair
   of lowest merge rank (ties: the leftmost pair) is merged, again and again; a merge need not
   join into a token, as in llama.cpp;
4. a symbol that is not a token is spelled in ``<0xXX>`` byte tokens, and a byte without one is
   dropped, as llama.cpp drops it.

Where spaces are not escaped (the whitespace pre-tokenizer), a piece of whitespace holding a
space and another character makes llama.cpp abort (``find_bpe_rank`` asserts that no symbol
holds a space): such a text is refused here, saying so, as there are no ids to match.

Merges are ranked in file order, a repeated pair at its first place (llama.cpp's
``bpe_ranks.emplace``). ``tokenizers`` cannot run this: its ``ignore_merges`` would look up
every piece, not newline runs alone.
"""

from __future__ import annotations

import re
from heapq import heapify, heappop, heappush
from pathlib import Path

from embedcli.errors import EncodingError
from embedcli.tokenization.gguf import unicodetables as ucd
from embedcli.tokenization.gguf.native import NativeTokenizer, Vocab
from embedcli.tokenization.gguf.pre import PreTokenizer

SPACE = "\u2581"


class RawBPE(NativeTokenizer):
    """A byte-level ("gpt2") GGUF vocabulary whose pre-tokenizer leaves pieces in raw UTF-8."""

    def __init__(self, vocab: Vocab, pre: PreTokenizer, *, name: str, path: Path) -> None:
        super().__init__(vocab, name=name, path=path)
        self.pre = pre
        self._splits = tuple(re.compile(r) for r in pre.regexes)
        merges = vocab.meta.strings("merges", required=True)
        ranks: dict[tuple[str, str], int] = {}
        for rank, merge in enumerate(merges or ()):
            cut = merge.find(" ", 1)
            if cut > 0:
                ranks.setdefault((merge[:cut], merge[cut + 1 :]), rank)
        self._ranks = ranks
        self._byte_ids = tuple(self.ids.get(f"<0x{b:02X}>") for b in range(256))

    def _encode_fragment(self, text: str, after_special: bool) -> list[int]:
        if self.pre.escape_spaces:
            text = text.replace(" ", SPACE)
        pieces = [text]
        for split in self._splits:
            pieces = [p for piece in pieces for p in _split_keeping_gaps(split, piece)]
        out: list[int] = []
        for piece in pieces:
            out.extend(self._piece_ids(piece))
        return out

    def _piece_ids(self, piece: str) -> list[int]:
        whole = self.ids.get(piece)
        if whole is not None and (
            self.pre.ignore_merges or (self.pre.newline_tokens and not piece.strip("\n"))
        ):
            return [whole]
        if len(piece) > 1 and " " in piece:  # an unescaped space, in a whitespace run
            raise EncodingError(
                f"{self.path}: llama.cpp cannot tokenize this text under the "
                f"{self.pre.kind!r} pre-tokenizer: its BPE session aborts (GGML_ASSERT in "
                "find_bpe_rank) on a run of whitespace with a space in it, such as two "
                "spaces; llama.cpp's converter writes this pre-tokenizer only beside "
                "tokenizer.ggml.model 'whitespace', which drops whitespace"
            )
        out: list[int] = []
        for symbol in self.merge(piece):
            token = self.ids.get(symbol)
            if token is not None:
                out.append(token)
            else:
                spelled = (self._byte_ids[b] for b in symbol.encode("utf-8"))
                out.extend(t for t in spelled if t is not None)
        return out

    def merge(self, text: str) -> list[str]:
        """The symbols BPE leaves of one piece. Symbol ``i`` starts at character ``i`` and
        holds ``size[i]`` characters (0 once merged into the one before it)."""
        n = len(text)
        if n < 2:
            return [text] if text else []
        ranks = self._ranks
        size = [1] * n
        prv = list(range(-1, n - 1))
        heap = []
        for i in range(n - 1):
            rank = ranks.get((text[i], text[i + 1]))
            if rank is not None:
                heap.append((rank, i, 1, 1))
        heapify(heap)

        def push(left: int) -> None:
            right = left + size[left] if left >= 0 else n
            if right >= n:
                return
            pair = (text[left:right], text[right : right + size[right]])
            rank = ranks.get(pair)
            if rank is not None:
                heappush(heap, (rank, left, size[left], size[right]))

        while heap:
            _, left, left_size, right_size = heappop(heap)
            right = left + left_size
            if size[left] != left_size or right >= n or size[right] != right_size:
                continue  # stale: one side has merged since
            size[left] = left_size + right_size
            size[right] = 0
            after = left + size[left]
            if after < n:
                prv[after] = left
            push(prv[left])
            push(left)
        out = []
        i = 0
        while i < n:
            out.append(text[i : i + size[i]])
            i += size[i]
        return out

    def _normal_bytes(self, text: str) -> bytes:
        return super()._normal_bytes(text) if self.pre.escape_spaces else text.encode("utf-8")


class WhitespaceBPE(RawBPE):
    """``tokenizer.ggml.model`` "whitespace" (``llm_tokenizer_whitespace_session``): each
    fragment is cut at every whitespace character, which is dropped (llama.cpp's whitespace
    flag: the 25 code points of :data:`~embedcli.tokenization.gguf.unicodetables.WHITESPACE`),
    each run between lowercased (llama.cpp's simple lowercase) where
    ``tokenizer.ggml.normalizer.lowercase`` says so (the whitespace pre-tokenizer turns it off
    unless the file sets it), and each run is then encoded as :class:`RawBPE` encodes a
    fragment. The dropped whitespace is gone from the ids: ``--decode`` cannot give it back."""

    def __init__(self, vocab: Vocab, pre: PreTokenizer, *, name: str, path: Path) -> None:
        super().__init__(vocab, pre, name=name, path=path)
        self.lowercase = bool(vocab.meta.get("normalizer.lowercase", bool, False))

    def _encode_fragment(self, text: str, after_special: bool) -> list[int]:
        out: list[int] = []
        segment: list[str] = []
        for char in [*text, " "]:  # a space last flushes the final run
            cpt = ord(char)
            if cpt in ucd.WHITESPACE:
                if segment:
                    out.extend(super()._encode_fragment("".join(segment), after_special))
                    segment.clear()
            else:
                segment.append(chr(ucd.lowercase(cpt)) if self.lowercase else char)
        return out


def _split_keeping_gaps(split: re.Pattern[str], text: str) -> list[str]:
    pieces, at = [], 0
    for match in split.finditer(text):
        if match.start() > at:
            pieces.append(text[at : match.start()])
        if match.end() > match.start():
            pieces.append(match.group())
        at = match.end()
    if at < len(text):
        pieces.append(text[at:])
    return pieces

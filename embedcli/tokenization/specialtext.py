"""How text that spells a special token (``<|endoftext|>``, ``<start_of_turn>``, ...) is
encoded: one value for the two flags that choose it, with one meaning in every command.

- ``REFUSE`` (the default of ``tokenize``, ``embed``, ``windows``): an error naming the token
  and both ways out. A special token in the input is more often a pasted prompt template than
  a wish for its id, and either reading would be a silent guess.
- ``ALLOW`` (``--allow-special``): encoded as the special id (tiktoken's
  ``allowed_special="all"``, llama.cpp's ``parse_special``).
- ``TEXT`` (``--special-as-text``): encoded as ordinary text, as llama.cpp does by default
  (``parse_special=false``) and tiktoken with ``disallowed_special=()``. ``count`` always
  counts this way: one file in a corpus that mentions ``<|endoftext|>`` must not stop the count.

``Specials`` is falsy except for ``ALLOW``, so code that asks "special ids?" with ``if
allow_special:`` reads a ``Specials`` as it read the old bool (False: REFUSE, True: ALLOW).
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

from embedcli.errors import InputTextError, UsageError

if TYPE_CHECKING:
    import tiktoken


class Specials(Enum):
    REFUSE = "refuse"
    ALLOW = "allow"
    TEXT = "text"

    def __bool__(self) -> bool:
        return self is Specials.ALLOW


def specials_of(allow_special: bool, special_as_text: bool) -> Specials:
    """The value of --allow-special and --special-as-text (which contradict each other)."""
    if allow_special and special_as_text:
        raise UsageError(
            "--allow-special and --special-as-text contradict each other: pass one (special "
            "ids, or plain text)"
        )
    if allow_special:
        return Specials.ALLOW
    return Specials.TEXT if special_as_text else Specials.REFUSE


def refuse_specials(enc: tiktoken.Encoding, text: str, how: bool | Specials) -> None:
    """The refusal of REFUSE (and of False): the first special token the text spells."""
    if how or how is Specials.TEXT:
        return
    hits = [(text.find(t), -len(t), t) for t in enc.special_tokens_set if t and t in text]
    if hits:  # the leftmost, and the longest of those starting there
        token = min(hits)[2]
        raise InputTextError(
            f"the text contains the special token {token}; pass --allow-special to encode "
            f"it as its special id ({enc.encode_single_token(token)}), or "
            "--special-as-text to encode it as plain text"
        )

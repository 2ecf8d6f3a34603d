"""What the window and streaming tests feed embedcli: ``STORY``, a text with a special token
between its documents, and ``seeded``, the token and position tables embedcli draws with its
default seed (123), as torch's own nn.Embedding draws them."""

from __future__ import annotations

import torch
from torch import nn

STORY = (
    "The keeper of the lighthouse counted ships the way other people count sheep. One, a "
    "trawler; two, a ferry; three, a yacht. <|endoftext|> By midnight the sea was empty, and "
    "the lamp kept turning for an audience of gulls. She wrote every ship in a ledger."
)


def seeded(vocab: int, d: int, context: int) -> tuple[nn.Embedding, nn.Embedding]:
    torch.manual_seed(123)
    return nn.Embedding(vocab, d), nn.Embedding(context, d)

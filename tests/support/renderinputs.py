"""The inputs the rendered views are built from, which the golden oracle reads back too: the text
cut into windows and a tiny GPT-2 checkpoint."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import save_file

WINDOW_TEXT = (
    "In the beginning the Universe was created. This has made a lot of people very angry and "
    "been widely regarded as a bad move."
)


def checkpoint(tmp_path: Path) -> Path:
    """A tiny GPT-2 layout: the gpt2 vocabulary, d 8, 16 positions, a tied head, and a tensor
    whose name looks like rich markup."""
    generator = torch.Generator().manual_seed(0)
    token = torch.randn(50257, 8, generator=generator)
    state = {
        "transformer.wte.weight": token,
        "transformer.wpe.weight": torch.randn(16, 8, generator=generator),
        "transformer.h.0.attn.c_attn.weight": torch.randn(8, 24, generator=generator),
        "lm_head.weight": token.clone(),
        "[/x]": torch.ones(2),
    }
    path = tmp_path / "model.safetensors"
    save_file(state, str(path))
    return path

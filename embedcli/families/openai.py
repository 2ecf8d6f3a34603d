"""OpenAI's open-weight decoders (gpt-oss): Llama's input layer, yarn rope by default."""

from __future__ import annotations

from embedcli.families.registry import register, rope_family

register(
    rope_family("gpt-oss", "gpt_oss", arch="GptOss"),
)

"""Text input read in blocks: endless input (/dev/zero, a stream without a place to cut) is refused
before memory runs out, with one error line, and arbitrary bytes streamed in blocks of any size
give the decoding of the whole, or the one error a bad byte causes, at its real offset."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.helpers import expect_error, make_runner

from embedcli.cli import app
from embedcli.corpus import textinput, windows
from embedcli.errors import InputTextError
from embedcli.tokenization.encodings import get_encoding

runner = make_runner()


def test_endless_input_is_refused_before_memory_runs_out() -> None:
    class Endless(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            buffer[:] = b"a" * len(buffer)
            return len(buffer)

    with pytest.raises(InputTextError, match="larger than 5,000,000 bytes"):
        textinput.read_bounded(io.BufferedReader(Endless()), "/dev/zero", limit=5_000_000)


def test_tokenize_of_dev_zero_is_one_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textinput, "text_limit", lambda: 10_000_000)
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    expect_error(runner.invoke(app, ["tokenize", "-f", "/dev/zero", "--count"]), "larger than")


def test_stream_without_a_place_to_cut_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(windows, "MAX_UNCUT_CHARS", 1000)
    blocks = windows.token_blocks(
        io.BytesIO(b"x" * 5000), get_encoding("gpt2"), allow_special=False, source="t",
        read_bytes=256,
    )  # fmt: skip
    with pytest.raises(InputTextError, match="a run of more than 1,000 characters with no space"):
        list(blocks)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    data=st.binary(max_size=40),
    read=st.integers(1, 9),
    name=st.sampled_from(["gpt2", "o200k_base"]),
)
def test_streaming_arbitrary_bytes(data: bytes, read: int, name: str) -> None:
    """Ids equal one pass over the decoded text, or the error names the byte and offset that
    bytes.decode reports, whatever the reads' sizes."""
    enc = get_encoding(name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        expected = f"byte 0x{data[exc.start]:02X} at offset {exc.start}"
        with pytest.raises(InputTextError, match=expected):
            list(
                windows.token_blocks(
                    io.BytesIO(data), enc, allow_special=True, source="s", read_bytes=read
                )
            )
        return
    blocks = windows.token_blocks(
        io.BytesIO(data), enc, allow_special=True, source="s", read_bytes=read
    )
    assert [t for block in blocks for t in block] == enc.encode(text, allowed_special="all")

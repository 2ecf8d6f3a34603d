"""Helpers shared by the CLI tests."""

from __future__ import annotations


def expect_error(result, message: str, code: int = 1) -> None:
    """One ``Error:`` line on stderr with ``message`` in it, nothing on stdout, no traceback,
    and exit ``code`` (1 for bad input or data, 2 for bad usage)."""
    assert result.exit_code == code, (result.exit_code, result.output)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1, result.stderr
    assert message in errors[0], result.stderr
    assert "Traceback" not in result.output


def unsure_unicode(text: str) -> bool:
    """Whether regex and Python's unicodedata class a character of ``text`` differently: text
    that tokenize --explain refuses (it cuts chunks with regex's tables, tiktoken with its own)."""
    import unicodedata

    import regex

    return any(not regex.match(rf"\p{{gc={unicodedata.category(c)}}}", c) for c in text)

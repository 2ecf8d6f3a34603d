"""MkDocs hooks for embedcli's manual (mkdocs.yml names this file).

The pages are written for GitHub, which reads `\\|` in a table cell as a pipe even inside a code
span (a bare `|` would end the cell there). Python-Markdown keeps the backslash inside code
spans, so the built site drops it from table cells.
"""

from __future__ import annotations

import re
from typing import Any

_CELL = re.compile(r"(<td[^>]*>)(.*?)(</td>)", re.S)


def on_page_content(html: str, **kwargs: Any) -> str:
    """Table cells as GitHub shows them: `\\|` is a pipe."""
    return _CELL.sub(lambda m: m.group(1) + m.group(2).replace("\\|", "|") + m.group(3), html)

"""Write embedcli/tokenization/gguf/unicodetables.py: the parts of llama.cpp's Unicode tables
(``src/unicode-data.cpp``, which ``scripts/gen-unicode-data.py`` made from Unicode 15.1) that its
WordPiece session reads, packed: each code point's category class (control, mark, punctuation,
symbol, other), the whitespace set, the simple lowercase map and the first code point of each
NFD. They are llama.cpp's own, not Python's ``unicodedata``, whose version follows Python's
(3.10 has Unicode 13.0, 3.14 has 16.0) and whose ``str.lower`` is the full mapping.

    python tests/support/update_gguf_unicode.py PATH/TO/llama.cpp/src/unicode-data.cpp

tests/tokenization/test_gguf_wpm_ugm_rwkv.py checks what the tables make of each code point of
planes 0 and 1 (and of the others where Unicode 15.1 added some, a sample elsewhere) against
llama.cpp itself.
"""

from __future__ import annotations

import base64
import re
import sys
import textwrap
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET = REPO / "embedcli" / "tokenization" / "gguf" / "unicodetables.py"
# llama.cpp's category flags (unicode.h) -> the classes WordPiece reads
CLASSES = {0x80: 1, 0x10: 2, 0x20: 3, 0x40: 4}  # control, mark, punctuation, symbol


def _block(source: str, name: str) -> str:
    start = source.index("=", source.index(name))
    return source[source.index("{", start) + 1 : source.index("};", start)]


def _numbers(block: str, width: int) -> list[tuple[int, ...]]:
    pattern = r"\{" + r",\s*".join(["0x([0-9A-Fa-f]+)"] * width) + r"\}"
    return [tuple(int(x, 16) for x in m) for m in re.findall(pattern, block)]


def read_tables(source: str) -> dict[str, list]:
    """The tables of unicode-data.cpp's text, as the generated module holds them."""
    flags = _numbers(_block(source, "unicode_ranges_flags"), 2)
    classes: list[tuple[int, int]] = []
    for start, flag in flags[:-1]:
        kind = CLASSES.get(flag & 0xFF, 0)
        if not classes or classes[-1][1] != kind:
            classes.append((start, kind))
    block = _block(source, "unicode_set_whitespace")
    whitespace = [int(x, 16) for x in re.findall(r"0x([0-9A-Fa-f]+)", block)]
    lower = _numbers(_block(source, "unicode_map_lowercase"), 2)
    nfd = [r for r in _numbers(_block(source, "unicode_ranges_nfd"), 3) if r != (0, 0, 0)]
    return {"classes": classes, "whitespace": sorted(whitespace), "lower": lower, "nfd": nfd}


def _varints(numbers: list[int]) -> bytes:
    out = bytearray()
    for n in numbers:
        n = n << 1 if n >= 0 else (-n << 1) | 1  # zigzag: signed deltas in few bytes
        while n >= 0x80:
            out.append(n & 0x7F | 0x80)
            n >>= 7
        out.append(n)
    return bytes(out)


def _deltas(rows: list[tuple[int, ...]], key: int = 0) -> list[int]:
    """Each row's first number as the step from the row before, the others from its own first."""
    out, before = [], 0
    for row in rows:
        out.append(row[key] - before)
        out.extend(x - row[key] for x in row[1:])
        before = row[key]
    return out


def _packed(numbers: list[int]) -> str:
    text = base64.b85encode(zlib.compress(_varints(numbers), 9)).decode("ascii")
    lines = [text[i : i + 88] for i in range(0, len(text), 88)]
    return "(\n" + "".join(f'    "{line}"\n' for line in lines) + ")"


def module_text(tables: dict[str, list]) -> str:
    starts = [s for s, _ in tables["classes"]]
    kinds = [k for _, k in tables["classes"]]
    class_numbers = [b - a for a, b in zip([0, *starts], starts, strict=False)] + kinds
    whitespace = textwrap.fill(
        ", ".join(f"0x{c:04X}" for c in tables["whitespace"]) + ",",
        88,
        initial_indent="    ",
        subsequent_indent="    ",
    )
    return f'''"""llama.cpp's Unicode tables, as its WordPiece reads them (generated: do not edit).

Written by tests/support/update_gguf_unicode.py from llama.cpp's ``src/unicode-data.cpp``
(Unicode 15.1), packed (zlib, then base 85, of zigzag varints): each code point's category class
(:data:`CONTROL` for Cc Cf Co Cs, :data:`MARK` for M, :data:`PUNCTUATION` for P,
:data:`SYMBOL` for S; an unassigned one is none of them), the White_Space set, the simple
lowercase map (one code point for one: U+0130 lowercases to ``i``) and the first code point of
each character's NFD (which is all llama.cpp keeps of it: ``é`` is ``e``, ``한`` is ``ᄒ``).
Python's ``unicodedata`` is not used: its version is Python's (3.10 has Unicode 13.0, 3.14 has
16.0), and ``str.lower`` is the full mapping.
"""

from __future__ import annotations

import base64
import zlib
from bisect import bisect_right
from functools import cache

OTHER, CONTROL, MARK, PUNCTUATION, SYMBOL = 0, 1, 2, 3, 4
WHITESPACE = frozenset((
{whitespace}
))  # fmt: skip

_CLASSES = {_packed(class_numbers)}
_LOWER = {_packed(_deltas(tables["lower"]))}
_NFD = {_packed(_deltas(tables["nfd"]))}


def _numbers(packed: str) -> list[int]:
    data = zlib.decompress(base64.b85decode(packed))
    out, n, shift = [], 0, 0
    for byte in data:
        n |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            out.append(-(n >> 1) if n & 1 else n >> 1)
            n = shift = 0
    return out


@cache
def _tables() -> tuple[list[int], list[int], dict[int, int], list[int], list[int], list[int]]:
    numbers = _numbers(_CLASSES)
    half = len(numbers) // 2
    starts, at = [], 0
    for step in numbers[:half]:
        at += step
        starts.append(at)
    pairs = _numbers(_LOWER)
    lower, at = {{}}, 0
    for i in range(0, len(pairs), 2):
        at += pairs[i]
        lower[at] = at + pairs[i + 1]
    rows = _numbers(_NFD)
    firsts, lasts, nfds, at = [], [], [], 0
    for i in range(0, len(rows), 3):
        at += rows[i]
        firsts.append(at)
        lasts.append(at + rows[i + 1])
        nfds.append(at + rows[i + 2])
    return starts, numbers[half:], lower, firsts, lasts, nfds


def category(cpt: int) -> int:
    """The class of a code point's general category, as llama.cpp's flags have it."""
    starts, kinds = _tables()[:2]
    return kinds[bisect_right(starts, cpt) - 1]


def lowercase(cpt: int) -> int:
    """llama.cpp's ``unicode_tolower``: the simple lowercase mapping, else the code point."""
    return _tables()[2].get(cpt, cpt)


def nfd_first(cpt: int) -> int:
    """llama.cpp's ``unicode_cpts_normalize_nfd`` of one code point: its NFD's first."""
    firsts, lasts, nfds = _tables()[3:]
    i = bisect_right(firsts, cpt) - 1
    return nfds[i] if i >= 0 and cpt <= lasts[i] else cpt
'''


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    tables = read_tables(Path(argv[1]).read_text(encoding="utf-8"))
    TARGET.write_text(module_text(tables), encoding="utf-8")
    print(f"wrote {TARGET} ({len(tables['classes'])} class ranges, {len(tables['lower'])} "
          f"lowercase pairs, {len(tables['nfd'])} NFD ranges)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))

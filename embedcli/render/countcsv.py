"""``count --csv``: one row a file (path, bytes, a column per encoding, skipped), as text to
write as each file is counted. No rich here."""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterable, Iterator, Sequence

from embedcli.corpus.report import FileCount
from embedcli.corpus.selection import Skipped


def count_csv(items: Iterable[FileCount | Skipped], names: Sequence[str]) -> Iterator[str]:
    """The header, then a row (its line end included) per file or skip, as each comes."""
    # The first file is asked for before the header is given: a path that is not there, or an
    # encoding that cannot be loaded, fails before anything reaches stdout.
    items = iter(items)
    first = next(items, None)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["path", "bytes", *names, "skipped"])
    yield _taken(buffer)  # the header even when nothing is counted
    # csv quotes a field holding its line terminator ("\n") but not a lone "\r", which CSV
    # readers take as a line end too: a row with one is written with every field quoted.
    quoted = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)
    for item in itertools.chain(() if first is None else (first,), items):
        if isinstance(item, FileCount):
            row = [item.path, item.bytes, *(item.tokens[n] for n in names), ""]
        else:
            row = [item.path, "", *("" for _ in names), item.reason]
        (quoted if "\r" in item.path else writer).writerow(row)
        yield _taken(buffer)


def _taken(buffer: io.StringIO) -> str:
    """What ``buffer`` holds, leaving it empty."""
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text

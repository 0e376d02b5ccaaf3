"""Plain-text tables for the terminal: the first column left-aligned, the others right-aligned (numbers)."""

from __future__ import annotations

from collections.abc import Sequence


def aligned_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The header, a rule of dashes, then the rows, columns padded to their widest cell."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        )

    return [line(header), line(["-" * w for w in widths]), *(line(row) for row in rows)]

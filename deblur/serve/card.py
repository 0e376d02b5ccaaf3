"""What the server says about the model it runs (`GET /v1/model`, and the page's header).

The figures come from where they are kept, not from a copy: the "Figures" table of a `MODEL_CARD.md` beside the
model (the shipped model has one), else the last validation line of a training run's `metrics.jsonl`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from deblur.ways import DEFAULT_METHOD, way_of


def model_info(
    path: Path, description: str, precision: str, *, method: str = DEFAULT_METHOD, show_path: bool = False
) -> dict[str, Any]:
    """What the page and `/v1/model` show: `description` names the model (no folders: every visitor sees it),
    `method` how the server deblurs (`deblur.ways.METHODS`); with `show_path`, the model file's absolute path too.
    The precision is None where the way runs no model (it had said float32 of a model that never ran)."""
    folder = path.parent
    info = {
        "description": description,
        "file": path.name,
        "precision": precision if way_of(method).model_channels else None,
        "method": method,
        "architecture": _architecture(folder / "config.yaml"),
        "card": _card_table(folder / "MODEL_CARD.md") or _training_table(folder / "metrics.jsonl"),
    }
    if show_path:
        info["path"] = str(path.resolve())
    return info


def _architecture(config: Path) -> dict[str, Any] | None:
    try:
        return dict(yaml.safe_load(config.read_text())["model"])
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError):
        return None


def _card_table(card: Path) -> dict[str, Any] | None:
    """The first table of the card's "## Figures" section: its heading, columns and rows."""
    try:
        text = card.read_text()
    except OSError:
        return None
    for section in text.split("\n## ")[1:]:
        heading, _, body = section.partition("\n")
        if not heading.startswith("Figures"):
            continue
        rows = [_cells(line) for line in _first_table(body)]
        rows = [row for row in rows if not all(set(cell) <= set("-: ") for cell in row)]  # the rule under the head
        if len(rows) >= 2:
            return {"title": heading.strip(), "source": card.name, "columns": rows[0], "rows": rows[1:]}
    return None


def _first_table(body: str) -> list[str]:
    """The `|` lines of the first table in `body`: a section can hold several, each with its own columns."""
    lines: list[str] = []
    for line in body.splitlines():
        if line.startswith("|"):
            lines.append(line)
        elif lines:
            break
    return lines


def _training_table(metrics: Path) -> dict[str, Any] | None:
    try:
        lines = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        last = lines[-1]
        row = [str(last["epoch"]), f"{last['val_psnr_blurry']:.2f}", f"{last['val_psnr']:.2f}"]
        row.append(f"{last['val_psnr'] - last['val_psnr_blurry']:+.2f} dB")
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None
    columns = ["epoch", "blurry PSNR, dB", "model PSNR, dB", "gain"]
    return {"title": "validation during training (crops)", "source": metrics.name, "columns": columns, "rows": [row]}


def _cells(line: str) -> list[str]:
    return [cell.strip().replace("`", "") for cell in line.strip().strip("|").split("|")]

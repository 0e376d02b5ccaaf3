"""What a stopped `deblur evaluate --out FILE` had scored, so that the same command goes on from there.

Each pair's result is appended, as one JSON line, to a hidden file beside FILE as soon as it is scored; the first
line says what the scores depend on (the model file and how it runs, the data, the split, the baselines, --align).
A run with the same first line takes the pairs it finds there, unless a pair's files changed since; any other run
starts over. The file goes when FILE is written.

    .FILE.parts.jsonl   {"format": 1, "deblurrer": ..., "data": ..., ...}
                        {"name": ..., "files": [[bytes, modified_ns], ...], "result": {...}}
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from deblur.data.pairs import Pair
from deblur.data.writer import kernel_file
from deblur.evaluation.report import ImageResult
from deblur.files import atomic_write_text, file_stamp, full_disk_named

PARTS_FORMAT = 1


def parts_file(out: Path) -> Path:
    return out.with_name(f".{out.name}.parts.jsonl")


class ScoredSoFar:
    """The results an earlier run with the same `settings` scored, and where this run's go."""

    def __init__(self, out: Path, settings: dict) -> None:
        self.out, self.path = out, parts_file(out)
        self.settings = json.loads(json.dumps({"format": PARTS_FORMAT, **settings}))  # as it reads back
        self.results: dict[str, tuple[list, ImageResult]] = {}
        lines = self._lines()
        if lines and lines[0] == self.settings:
            for line in lines[1:]:
                if isinstance(line, dict) and {"name", "files", "result"} <= line.keys():
                    self.results[line["name"]] = (line["files"], ImageResult(**line["result"]))
        else:  # none, or another model, data or setting's
            atomic_write_text(self.path, json.dumps(self.settings) + "\n")

    def _lines(self) -> list:
        try:
            text = self.path.read_text()
        except OSError:
            return []
        lines = []
        for line in text.splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:  # the last line of a run killed while writing it
                break
        return lines

    def get(self, pair: Pair) -> ImageResult | None:
        """The pair's result from before, if its files are as they were then."""
        files, result = self.results.get(pair.name, (None, None))
        return result if files == _stamp(pair) else None

    def add(self, pair: Pair, result: ImageResult) -> None:
        stamp = _stamp(pair)
        self.results[pair.name] = (stamp, result)
        line = json.dumps({"name": pair.name, "files": stamp, "result": asdict(result)})
        with full_disk_named(self.out, self.path), self.path.open("a") as file:  # said with no file name
            file.write(line + "\n")
            file.flush()
            os.fsync(file.fileno())

    def finished(self) -> None:
        self.path.unlink(missing_ok=True)


def _stamp(pair: Pair) -> list:
    """What tells that a pair's files are the ones scored before: each one's size and modification time."""
    kernel = kernel_file(pair.blurry)
    files = (pair.blurry, pair.sharp, pair.deconvolved, kernel if kernel.is_file() else None)
    return [file_stamp(path) for path in files if path is not None]

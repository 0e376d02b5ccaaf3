"""The network alone: the photo in, the model's result out."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from deblur.ways.base import ModelRun


@dataclass(frozen=True)
class Network:
    name: str = "network"
    model_channels: int | None = 3
    clips: str = "network"
    clips_note: str = ""
    summary: str = ""
    estimates: int | None = None  # it estimates no camera shake

    def deblur(self, image: np.ndarray, model: ModelRun | None) -> np.ndarray:
        return model(image)

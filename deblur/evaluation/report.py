"""What `deblur evaluate` measures: per image and method, and the whole report. A leaf module: the scoring and
the table both read these types."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from deblur.shake.tries import ESTIMATES
from deblur.ways import DEFAULT_METHOD


@dataclass
class ImageResult:
    name: str
    width: int
    height: int
    psnr: dict[str, float]  # method -> dB: "model", "blurry", then the baselines
    ssim: dict[str, float]
    kernel: bool  # the pair carries its true kernel
    seconds: dict[str, float]  # method -> seconds to restore this image
    # with --align (`deblur.evaluation.align`): the same at each method's best sub-pixel shift, and that shift
    aligned_psnr: dict[str, float] = field(default_factory=dict)
    aligned_ssim: dict[str, float] = field(default_factory=dict)
    shift: dict[str, tuple[float, float]] = field(default_factory=dict)


@dataclass
class EvaluationReport:
    model: str
    data: str
    split: str
    precision: str = "float32"  # what the model ran in
    ensemble: int = 1  # mirrored/turned copies averaged per image (deblur.inference.ENSEMBLES)
    method: str = DEFAULT_METHOD  # what the "model" column ran: a way of `deblur.ways`
    estimates: int = ESTIMATES  # camera-shake estimates tried per image (`deblur.shake.tries`)
    images: list[ImageResult] = field(default_factory=list)

    def methods(self) -> list[str]:
        """Methods in table order: those every image has, then those only some have."""
        order: list[str] = []
        for image in self.images:
            order += [m for m in image.psnr if m not in order]
        return order

    def mean(self, metric: str) -> dict[str, float]:
        """Mean over the images that have each method (`metric`: psnr, ssim, aligned_psnr or aligned_ssim)."""
        means = {}
        for method in self.methods():
            values = [getattr(image, metric)[method] for image in self.images if method in getattr(image, metric)]
            if values:
                means[method] = float(np.mean(values))
        return means

    @property
    def aligned(self) -> bool:
        return any(image.aligned_psnr for image in self.images)

    def to_json(self) -> dict:
        return {
            "model": self.model,
            "data": self.data,
            "split": self.split,
            "precision": self.precision,
            "ensemble": self.ensemble,
            "method": self.method,
            "estimates": self.estimates,
            "methods": self.methods(),
            "mean": {
                "psnr": self.mean("psnr"),
                "ssim": self.mean("ssim"),
                **(
                    {"aligned_psnr": self.mean("aligned_psnr"), "aligned_ssim": self.mean("aligned_ssim")}
                    if self.aligned
                    else {}
                ),
                "images": len(self.images),
            },
            "images": [asdict(image) for image in self.images],
        }

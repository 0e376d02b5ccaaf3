"""What one request may ask of the server: read by the server and by `deblur serve`'s options (no TensorFlow)."""

from __future__ import annotations

from dataclasses import dataclass

from deblur.errors import SettingError, is_positive_number, is_whole_number


@dataclass(frozen=True)
class Limits:
    """What one request may ask of the server."""

    max_bytes: int = 64 * 2**20  # an upload larger than this is refused (413) before it is read
    # Refused from the header, before decoding (a decompression bomb). Lower than predict's 200 million: a server
    # takes photos from anyone who can reach it, and 50 megapixels keep the process under about 6 GB.
    max_pixels: int = 50_000_000
    waiting: int = 8  # requests that may wait behind the one being deblurred; beyond them, 503 at once
    # Video jobs (POST /v1/jobs): one at a time. 1 GB is about 10 minutes of 1080p from a phone; 10 minutes of
    # video is hours on a CPU.
    max_video_bytes: int = 1024 * 2**20
    max_video_seconds: float = 600.0

    def __post_init__(self) -> None:
        # from Python (the command's options are bounded): NaN had let anything through, -1 refused every request,
        # a string ended on a TypeError inside a request
        least = {"max_bytes": 1, "max_pixels": 1, "waiting": 0, "max_video_bytes": 1}
        wrong = [
            f"{name} must be a whole number, at least {floor}; got {getattr(self, name)!r}"
            for name, floor in least.items()
            if not (is_whole_number(getattr(self, name)) and getattr(self, name) >= floor)
        ]
        if not is_positive_number(self.max_video_seconds):
            wrong.append(f"max_video_seconds must be a finite number above 0; got {self.max_video_seconds!r}")
        if wrong:
            raise SettingError("the server's limits: " + "; ".join(wrong), settings=("limits",))


def given_limits(limits: Limits | None) -> Limits:
    """`limits`, or the defaults for None; anything else is refused, naming the class to give (a dict had ended on
    "'dict' object has no attribute 'waiting'", in `serve` once the model had loaded)."""
    if limits is None:
        return Limits()
    if not isinstance(limits, Limits):
        raise SettingError(
            f"limits must be a deblur.serve.limits.Limits, not {type(limits).__name__}: Limits(**values)",
            settings=("limits",),
        )
    return limits

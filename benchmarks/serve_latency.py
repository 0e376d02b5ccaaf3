"""What the HTTP API adds to a deblur: a 1280x720 photo through `POST /v1/deblur`, one client, against `deblur
predict`'s own time for the same photo, in the same run.

1. `deblur predict`'s code (`predict_files`: PNG file in, PNG file out) on --photos copies of the photo, in this
   process: seconds per photo after the first (the first pays the graph tracing).
2. `deblur serve` in its own process with the same model and precision; one untimed request, then --requests
   requests one after another from one client: the latency of each (upload, decode, deblur, encode, download).
Prints the median and 95th percentile of both, and the API's overhead over predict.

    python benchmarks/serve_latency.py [--model pretrained|F] [--photo F] [--photos 6] [--requests 12]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from deblur.hardware import cpu_name
from deblur.inference import open_deblurrer
from deblur.paths import choose_model
from deblur.predict import plan_inputs, predict_files
from deblur.serve.loadtest import multipart, request, running_server
from deblur.settings import WriteSettings
from deblur.timings.photos import PhotoTimes, write_photos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, help="pretrained (default), latest, or a model.keras")
    parser.add_argument("--photo", type=Path, default=None, help="default: skimage's astronaut at 1280x720")
    parser.add_argument("--photos", type=int, default=6, help="copies timed through predict's code")
    parser.add_argument("--requests", type=int, default=12, help="requests timed through the API")
    args = parser.parse_args()
    if args.photos < 2 or args.requests < 1:
        parser.error("--photos must be at least 2 (the first is untimed) and --requests at least 1")
    print(f"CPU: {cpu_name()}")
    chosen = choose_model(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.photo:
            photos = [folder / f"photo{i}{args.photo.suffix}" for i in range(args.photos)]
            for path in photos:
                path.write_bytes(args.photo.read_bytes())
        else:
            photos = write_photos(folder / "in", 720, 1280, args.photos)
        # opened as the server opens it (runtime and method its defaults): TensorFlow here had been set against the
        # server's OpenVINO
        deblurrer, _ = open_deblurrer(chosen, precision="auto", log=lambda _: None)
        print(f"model: {chosen.description}, in {deblurrer.settings}")
        times = PhotoTimes()
        write = WriteSettings(str(folder / "out"))
        predict_files(plan_inputs(photos, write), deblurrer, write, progress=times)
        predicted = times.seconds()[1:]
        del deblurrer

        body, kind = multipart(photos[0].name, photos[0].read_bytes())
        with running_server("--model", str(chosen.path), "--precision", "auto") as server:
            latencies = []
            for index in range(args.requests + 1):
                started = time.perf_counter()
                status, _, _ = request(server.host, server.port, "POST", "/v1/deblur", body, {"Content-Type": kind})
                if status != 200:
                    raise SystemExit(f"the API answered {status}")
                if index:  # the first request is untimed, as predict's first photo
                    latencies.append(time.perf_counter() - started)

    for label, seconds in (("deblur predict, per photo", predicted), ("POST /v1/deblur, per request", latencies)):
        print(
            f"{label}: median {np.median(seconds):.3f} s, p95 {np.percentile(seconds, 95):.3f} s ({len(seconds)} timed)"
        )
    overhead = np.median(latencies) / np.median(predicted) - 1
    print(f"the API's overhead over predict (medians): {overhead:+.1%}")


if __name__ == "__main__":
    main()

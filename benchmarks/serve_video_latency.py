"""Photo latency in `deblur serve` while a video job runs, against the same photos with the server idle, in one
run (the model shipped with deblur, a 1280x720 photo and a 1280x720 clip made from real photographs).

    python benchmarks/serve_video_latency.py [--photos 3] [--frames 40]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tempfile
import time
from pathlib import Path

from PIL import Image
from skimage import data as skimage_data

from deblur.hardware import cpu_name
from deblur.serve.loadtest import multipart, request, running_server
from deblur.timings.photos import panned_frames, write_clip


def photo_seconds(server, body: bytes, kind: str) -> float:
    started = time.perf_counter()
    status, _, _ = request(server.host, server.port, "POST", "/v1/deblur", body, {"Content-Type": kind})
    assert status == 200, status
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--photos", type=int, default=3)
    parser.add_argument("--frames", type=int, default=40)
    args = parser.parse_args()
    print(f"CPU: {cpu_name()}")
    photo = Image.fromarray(skimage_data.coffee()).resize((1280, 720))
    buffer = io.BytesIO()
    photo.save(buffer, "PNG")
    body, kind = multipart("coffee.png", buffer.getvalue())
    with tempfile.TemporaryDirectory() as tmp, running_server() as server:
        clip = Path(tmp) / "clip.mp4"
        write_clip(clip, panned_frames(skimage_data.astronaut(), 720, 1280, args.frames))
        photo_seconds(server, body, kind)  # the first traces the graph for this size
        idle = [photo_seconds(server, body, kind) for _ in range(args.photos)]
        data = clip.read_bytes()
        status, headers, answer = request(
            server.host, server.port, "POST", "/v1/jobs", data, {"Content-Type": "video/mp4"}
        )
        assert status == 202, answer
        job = json.loads(answer)
        time.sleep(5)  # the job is under way
        busy = [photo_seconds(server, body, kind) for _ in range(args.photos)]
        _, _, state = request(server.host, server.port, "GET", f"/v1/jobs/{job['id']}")
        state = json.loads(state)
        request(server.host, server.port, "DELETE", f"/v1/jobs/{job['id']}")
    idle_s, busy_s = statistics.median(idle), statistics.median(busy)
    print(
        f"1280x720 photo, median of {args.photos}: idle {idle_s:.2f} s, during a 1280x720 video job {busy_s:.2f} s "
        f"({busy_s / idle_s:.2f}x); the job was {state['state']} at frame {state['frames_done']} of "
        f"{state['frames_total']} when measured"
    )


if __name__ == "__main__":
    main()

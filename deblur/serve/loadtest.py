"""A loopback client and load driver for `deblur serve`: start the server in its own process, send requests,
mix good photos, bad files and aborted uploads from many clients, and check every answer. The load test
(`tests/test_serve_load.py`) and the benchmarks (`benchmarks/serve_load.py`, `benchmarks/serve_latency.py`) use
it; only ever against this machine's own addresses.
"""

from __future__ import annotations

import contextlib
import http.client
import io
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data as skimage_data

ANSWERS = {200, 400, 413, 415, 503}


# === The server in its own process ===


@dataclass
class Server:
    process: subprocess.Popen
    host: str
    port: int
    output: list[str] = field(default_factory=list)  # what it printed, read by a thread as it goes

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def rss_mb(self) -> float:
        """The server process's resident memory, from /proc (Linux)."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")


@contextlib.contextmanager
def running_server(*options: str, timeout: float = 180, env: dict[str, str] | None = None) -> Iterator[Server]:
    """`deblur serve --port 0 OPTIONS` in a subprocess, once it answers /healthz; stopped with SIGTERM after."""
    command = [sys.executable, "-m", "deblur", "serve", "--port", "0", *options]
    environment = {**os.environ, "PYTHONUNBUFFERED": "1", "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment, bufsize=1
    )
    output: list[str] = []
    address: list[tuple[str, int]] = []

    def read() -> None:
        for line in process.stdout:
            output.append(line)
            if line.startswith("serving http://") and not address:
                host, port = line.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
                address.append((host.strip("[]"), int(port)))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        while not address or not _healthy(*address[0]):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("deblur serve did not start:\n" + "".join(output[-30:]))
            time.sleep(0.2)
        yield Server(process, *address[0], output)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
        reader.join(5)


def _healthy(host: str, port: int) -> bool:
    try:
        status, _, _ = request(host, port, "GET", "/healthz", timeout=2)
    except OSError:
        return False
    return status == 200


def request(
    host: str, port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None, timeout=300
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


# === What the clients send ===


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def photos() -> dict[str, bytes]:
    """Real photos at the sizes people send: small, and a 1280x720 frame."""
    astronaut = Image.fromarray(skimage_data.astronaut())
    return {
        "small.png": png(astronaut.crop((100, 50, 260, 170))),
        "coffee.png": png(Image.fromarray(skimage_data.coffee()).resize((200, 150))),
        "hd.png": png(astronaut.resize((1280, 720), Image.Resampling.BICUBIC)),
    }


def bad_files() -> dict[str, bytes]:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 60_000, 60_000, 8, 2, 0, 0, 0)
    bomb = (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 99)) + chunk(b"IEND", b"")
    )
    return {
        "notes.png": b"these are notes, not a photo\n" * 20,
        "cut.png": photos()["small.png"][:3000],
        "bomb.png": bomb,
    }


def multipart(name: str, data: bytes) -> tuple[bytes, str]:
    boundary = f"deblur{random.getrandbits(64):x}"
    head = f'--{boundary}\r\nContent-Disposition: form-data; name="image"; filename="{name}"\r\n'
    head += "Content-Type: application/octet-stream\r\n\r\n"
    return head.encode() + data + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def abort_upload(host: str, port: int, data: bytes) -> None:
    """Send the headers and half the body of an upload, then hang up."""
    body, kind = multipart("aborted.png", data)
    with socket.create_connection((host, port), timeout=30) as sock:
        head = f"POST /v1/deblur HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {kind}\r\n"
        sock.sendall((head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body[: len(body) // 2])
        time.sleep(0.05)


@dataclass
class Outcome:
    kind: str  # "photo", "bad" or "aborted"
    name: str
    status: int | None  # None: aborted, no answer expected
    seconds: float
    correct: bool | None = None  # a 200: is it the photo's correct answer


@dataclass
class LoadReport:
    outcomes: list[Outcome]
    seconds: float
    rss_before_mb: float
    rss_after_mb: float
    healthy_after: bool

    def problems(self) -> list[str]:
        found = []
        for outcome in self.outcomes:
            if outcome.status is not None and outcome.status not in ANSWERS:
                found.append(f"{outcome.name}: answered {outcome.status}")
            if outcome.status == 200 and (outcome.kind != "photo" or not outcome.correct):
                found.append(f"{outcome.name}: a 200 that is not the photo's correct answer")
            if outcome.kind == "bad" and outcome.status == 200:
                found.append(f"{outcome.name}: a bad file was deblurred")
        if not self.healthy_after:
            found.append("the server is not healthy afterwards")
        return found

    def summary(self) -> str:
        answered = Counter(o.status for o in self.outcomes if o.status is not None)
        photos = sorted(o.seconds for o in self.outcomes if o.kind == "photo" and o.status == 200)
        lines = [
            f"{len(self.outcomes)} requests in {self.seconds:.1f} s: "
            + ", ".join(f"{count} x {status}" for status, count in sorted(answered.items()))
            + f", {sum(o.status is None for o in self.outcomes)} aborted uploads",
            f"every 200 correct: {all(o.correct for o in self.outcomes if o.status == 200)}; "
            f"healthy afterwards: {self.healthy_after}",
            f"server memory: {self.rss_before_mb:.0f} MB before, {self.rss_after_mb:.0f} MB after",
        ]
        if photos:
            lines.append(
                f"photos answered 200: latency median {np.median(photos):.2f} s, max {photos[-1]:.2f} s "
                "(queueing included)"
            )
        return "\n".join(lines)


def run_load(server: Server, *, clients: int = 16, requests: int = 48, seed: int = 0) -> LoadReport:
    """The mixed load: 2/3 photos, 1/6 bad files, the rest aborted uploads, shuffled, from `clients` threads."""
    good, bad = photos(), bad_files()
    expected = {}
    for name, data in good.items():  # each photo's correct answer, asked alone
        status, _, body = request(server.host, server.port, "POST", "/v1/deblur", *_form(name, data))
        assert status == 200, f"{name}: {status} {body[:200]!r}"
        expected[name] = body
    rng = random.Random(seed)
    plan = [("photo", list(good)[i % len(good)]) for i in range(requests * 2 // 3)]
    plan += [("bad", list(bad)[i % len(bad)]) for i in range(requests // 6)]
    plan += [("aborted", "hd.png")] * (requests - len(plan))
    rng.shuffle(plan)
    rss_before = server.rss_mb()
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    work = iter(plan)

    def client() -> None:
        while True:
            with lock:
                item = next(work, None)
            if item is None:
                return
            kind, name = item
            started = time.perf_counter()
            if kind == "aborted":
                abort_upload(server.host, server.port, good[name])
                outcome = Outcome(kind, name, None, time.perf_counter() - started)
            else:
                data = good[name] if kind == "photo" else bad[name]
                status, _, body = request(server.host, server.port, "POST", "/v1/deblur", *_form(name, data))
                correct = body == expected[name] if status == 200 and kind == "photo" else None
                outcome = Outcome(kind, name, status, time.perf_counter() - started, correct)
            with lock:
                outcomes.append(outcome)

    started = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    time.sleep(1.0)  # let the server drop the aborted uploads' connections
    healthy = _healthy(server.host, server.port)
    return LoadReport(outcomes, seconds, rss_before, server.rss_mb(), healthy)


def _form(name: str, data: bytes) -> tuple[bytes, dict[str, str]]:
    body, kind = multipart(name, data)
    return body, {"Content-Type": kind}

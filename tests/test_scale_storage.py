"""Inputs and outputs in an object store: moto's S3 server on loopback, which pyarrow's S3 file system (what the
workers read and write through) takes for the real one."""

import csv
import io
import uuid

import numpy as np
import pytest
from helpers import save_model
from PIL import Image
from typer.testing import CliRunner

from deblur.cli import app
from deblur.scale import FAILED_LIST, storage

pytest.importorskip("ray")
moto_server = pytest.importorskip("moto.server")


@pytest.fixture
def bucket(monkeypatch):
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    for name, value in {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    storage._file_system_of.cache_clear()  # file systems made for another server
    name = f"photos-{uuid.uuid4().hex[:8]}"  # moto keeps its buckets for the process, across servers
    storage._file_system(f"s3://{name}?allow_bucket_creation=true")[0].create_dir(name)
    yield f"s3://{name}"
    storage._file_system_of.cache_clear()
    server.stop()


def png(seed: int) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.random.default_rng(seed).integers(0, 256, (40, 56, 3), dtype=np.uint8)).save(buffer, "PNG")
    return buffer.getvalue()


def test_storage_lists_reads_and_writes_objects(bucket):
    storage.write_bytes(f"{bucket}/in/a.png", b"one")
    storage.write_bytes(f"{bucket}/in/deeper/b.JPG", b"two")
    storage.write_bytes(f"{bucket}/in/notes.txt", b"three")
    assert storage.list_files(f"{bucket}/in", {".png", ".jpg"}) == [
        (f"{bucket}/in/a.png", "a.png"),
        (f"{bucket}/in/deeper/b.JPG", "deeper/b.JPG"),
    ]
    assert storage.read_bytes(f"{bucket}/in/deeper/b.JPG") == b"two"
    assert storage.is_file(f"{bucket}/in/a.png") and not storage.is_file(f"{bucket}/in/c.png")
    with pytest.raises(Exception, match="c.png: no such file"):
        storage.read_bytes(f"{bucket}/in/c.png")


def test_photos_from_and_to_the_object_store_with_a_corrupt_one_listed(bucket, tmp_path):
    model = save_model(tmp_path / "run", zero_init_output=False)
    for index in range(3):
        storage.write_bytes(f"{bucket}/in/photo{index}.png", png(index))
    storage.write_bytes(f"{bucket}/in/broken.png", b"\x89PNG not really")
    args = ["predict", f"{bucket}/in", "--out", f"{bucket}/out", "--model", str(model), "--runtime", "tensorflow"]
    result = CliRunner().invoke(app, [*args, "--engine", "ray", "--workers", "2", "-q"])

    assert result.exit_code == 1, result.output
    assert "3 done, 0 skipped, 1 failed" in result.output
    written = storage.list_files(f"{bucket}/out", {".png", ".csv"})
    assert [name for _, name in written] == [FAILED_LIST, "photo0.png", "photo1.png", "photo2.png"]
    assert Image.open(io.BytesIO(storage.read_bytes(f"{bucket}/out/photo1.png"))).size == (56, 40)
    rows = list(csv.reader(io.StringIO(storage.read_bytes(f"{bucket}/out/{FAILED_LIST}").decode())))
    assert rows[1][0] == f"{bucket}/in/broken.png"

    again = CliRunner().invoke(app, [*args, "--engine", "ray", "-q"])
    assert "0 done, 3 skipped, 1 failed" in again.output

    storage.remove(f"{bucket}/in/broken.png")
    fixed = CliRunner().invoke(app, [*args, "--engine", "ray", "-q"])
    assert fixed.exit_code == 0 and "0 done, 3 skipped, 0 failed" in fixed.output
    assert not storage.is_file(f"{bucket}/out/{FAILED_LIST}")  # nothing failed: the old list is gone

    over = CliRunner().invoke(app, [*args[:3], f"{bucket}/in", *args[4:], "--engine", "ray", "--format", "png"])
    assert over.exit_code == 1 and "would overwrite an input" in over.output

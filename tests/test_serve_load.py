"""deblur serve on loopback, under the load of benchmarks/serve_load.py, and stopped by SIGTERM mid-deblur."""

import signal
import threading
import time

import pytest
from helpers import save_model

from deblur.serve.loadtest import multipart, photos, request, run_load, running_server


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return save_model(tmp_path_factory.mktemp("run"), width=4, blocks=1, norm="instance", zero_init_output=False)


@pytest.mark.slow
def test_sixteen_clients_forty_eight_requests_to_a_server_that_warns_it_listens_beyond_this_machine(model):
    # One server for both: each start and stop takes about 12 s of the suite.
    with running_server("--model", str(model), "--queue", "4", "--host", "0.0.0.0") as server:
        report = run_load(server, clients=16, requests=48)
        print(report.summary())
        output = "".join(server.output)
    assert "warning: listening on 0.0.0.0, not only this machine" in output
    assert report.problems() == []
    statuses = [outcome.status for outcome in report.outcomes]
    assert len(statuses) == 48 and statuses.count(None) == 8  # the aborted uploads
    # The line (4 waiting + 1 running) fills before it refuses: with every photo, the truncated one (its header is
    # fine, so it waits its turn and is answered 400 then) takes a place too, so a burst can leave 200s fewer than 5.
    admitted = [o for o in report.outcomes if o.status == 200 or (o.name == "cut.png" and o.status == 400)]
    assert len(admitted) >= 5 and statuses.count(200) >= 2, report.summary()
    assert {outcome.status for outcome in report.outcomes if outcome.kind == "bad"} <= {400, 415, 503}
    assert report.rss_after_mb < report.rss_before_mb * 1.2 + 100
    assert all(outcome.seconds < 120 for outcome in report.outcomes)


@pytest.mark.slow
def test_sigterm_finishes_the_deblur_in_progress_refuses_the_rest_and_exits_0(model):
    big = photos()["hd.png"]
    with running_server("--model", str(model)) as server:
        answers = {}

        def send(name):
            body, kind = multipart(name, big)
            answers[name] = request(
                server.host, server.port, "POST", "/v1/deblur?ensemble=8", body, {"Content-Type": kind}
            )[0]

        first = threading.Thread(target=send, args=("first",))
        first.start()
        while request(server.host, server.port, "GET", "/healthz")[2].find(b'"running":1') < 0:
            time.sleep(0.01)
        second = threading.Thread(target=send, args=("second",))
        second.start()
        time.sleep(0.5)  # in line behind the first
        server.process.send_signal(signal.SIGTERM)
        first.join(120)
        second.join(120)
        assert server.process.wait(60) == 0
        output = "".join(server.output)
    assert answers == {"first": 200, "second": 503}
    assert "Traceback" not in output
    with pytest.raises(OSError):
        request(server.host, server.port, "GET", "/healthz", timeout=2)


def test_a_port_in_use_is_one_clear_error():
    from deblur.errors import SettingError
    from deblur.serve.server import listen

    taken = listen("127.0.0.1", 0)
    try:
        with pytest.raises(SettingError, match=r"cannot listen on 127.0.0.1:\d+: .*in use"):
            listen("127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()


def test_a_port_or_limit_that_cannot_be_used_is_named():
    from deblur.errors import SettingError
    from deblur.serve.limits import Limits
    from deblur.serve.server import listen

    # had been socket's TypeError "'str' object cannot be interpreted as an integer"
    with pytest.raises(SettingError, match="cannot listen on 127.0.0.1:8000: 'str' object cannot be interpreted"):
        listen("127.0.0.1", "8000")
    # NaN had let any size through, -1 refused every request, a string ended on a TypeError inside a request
    with pytest.raises(SettingError, match="the server's limits: max_pixels must be a whole number, at least 1; got n"):
        Limits(max_pixels=float("nan"))
    with pytest.raises(SettingError, match="waiting must be .* got -1; max_video_seconds must be .* above 0; got 0"):
        Limits(waiting=-1, max_video_seconds=0)
    assert Limits(waiting=0).waiting == 0  # none may wait: 503 while one is deblurred


def test_a_port_in_use_is_said_before_the_model_loads_and_a_model_that_fails_frees_the_port(monkeypatch):
    import deblur.inference
    from deblur.errors import SettingError
    from deblur.serve import server
    from deblur.serve.server import listen

    taken = listen("127.0.0.1", 0)
    port = taken.getsockname()[1]
    monkeypatch.setattr(deblur.inference, "open_deblurrer", lambda *a, **k: pytest.fail("the model loaded"))
    try:
        with pytest.raises(SettingError, match="cannot listen on"):  # had been said after seconds of loading
            server.serve(host="127.0.0.1", port=port)
    finally:
        taken.close()

    def fails(*args, **kwargs):
        raise SettingError("no such model")

    monkeypatch.setattr(deblur.inference, "open_deblurrer", fails)
    with pytest.raises(SettingError, match="no such model"):
        server.serve(host="127.0.0.1", port=port)
    listen("127.0.0.1", port).close()  # the port it took is given back


def test_an_empty_host_is_refused_not_opened_to_every_network(monkeypatch):
    # `--host $HOST` with HOST unset: the socket had listened on every interface
    from deblur.errors import SettingError
    from deblur.serve import server

    monkeypatch.setattr(server, "listen", lambda *args: pytest.fail("listened"))
    with pytest.raises(SettingError, match=r"the host is empty: name the address to listen on \(127.0.0.1") as refused:
        server.serve(host="", port=0)
    assert refused.value.settings == ("host",)

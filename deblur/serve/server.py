"""`deblur serve`: load the model once, listen, and stop gracefully.

Served by uvicorn, the ASGI server FastAPI is made for. On Ctrl-C or SIGTERM the listening socket closes, the
requests still waiting in line are answered 503, the deblur in progress finishes and is answered, and `serve`
returns (the command exits 0; a second Ctrl-C stops at once).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import uvicorn

from deblur.errors import SettingError, check_switches, given_log
from deblur.runtime import DEFAULT_RUNTIME
from deblur.serve.limits import Limits, given_limits
from deblur.serve.names import check_host_names, check_origins, given_names
from deblur.serve.service import DeblurService
from deblur.settings import DeblurSettings
from deblur.ways import DEFAULT_METHOD

LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}


class _Server(uvicorn.Server):
    """uvicorn's server, but a signal is a request to stop, not re-raised after the shutdown (exit code 0), and
    the line of waiting requests is closed before uvicorn waits for the requests in flight."""

    def __init__(self, config: uvicorn.Config, on_shutdown: Callable[[], None]) -> None:
        super().__init__(config)
        self.on_shutdown = on_shutdown

    def handle_exit(self, sig, frame) -> None:
        if self.should_exit:
            self.force_exit = True  # a second Ctrl-C: stop now
        self.should_exit = True

    async def shutdown(self, sockets=None) -> None:
        self.on_shutdown()
        await super().shutdown(sockets)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket, or an error that names the address (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except (OSError, OverflowError, TypeError) as err:  # TypeError: a port of "8000", a host of None
        sock.close()
        raise SettingError(f"cannot listen on {host}:{port}: {err}", settings=("host", "port")) from None
    sock.listen(128)
    return sock


def serve(
    model: str | Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    precision: str = "auto",
    runtime: str = DEFAULT_RUNTIME,
    method: str = DEFAULT_METHOD,
    estimates: int | None = None,
    limits: Limits | None = None,
    cors_origins: str | tuple[str, ...] = (),
    allowed_hosts: str | tuple[str, ...] = (),
    show_paths: bool = False,
    log: Callable[[str], None] = print,
) -> None:
    """Serve the page and the API until stopped (`model` as `deblur.paths.choose_model` takes it). Requests may be
    addressed to this machine's own names and addresses, `host`, and `allowed_hosts` (`deblur.serve.app.KnownHost`)."""
    if not isinstance(host, str):  # 5 had ended on "'int' object has no attribute 'strip'"
        raise SettingError(
            f"the host is {type(host).__name__} {host!r}: name the address as a string", settings=("host",)
        )
    if not host.strip():  # `--host $HOST`, unset: the socket had taken it for every interface, open to the network
        raise SettingError(
            "the host is empty: name the address to listen on (127.0.0.1, this machine only; 0.0.0.0, every "
            "network it is on)",
            settings=("host",),
        )
    cors_origins = given_names(cors_origins, "cors_origins", "cors_origin")
    allowed_hosts = given_names(allowed_hosts, "allowed_hosts", "allow_host")
    check_origins(cors_origins)  # before the model loads: written otherwise than a browser sends it, none matched
    check_host_names(allowed_hosts)
    limits = given_limits(limits)
    check_switches(show_paths=show_paths)  # "no" had shown the model's path to anyone: a string is true
    log = given_log(log)
    # checked before the port is taken, as the rest: precision="fp8" had been said after it
    settings = DeblurSettings(model, method, precision, runtime, estimates=estimates)
    from deblur.inference import open_deblurrer
    from deblur.serve.app import create_app
    from deblur.serve.card import model_info

    sock = listen(host, port)  # before the model loads: a port in use had been said only after it
    try:
        deblurrer, chosen = open_deblurrer(settings, log=log)
        # Anyone who reaches the server sees this: the model's name and card, and its path only when asked for.
        way = deblurrer.way().name
        info = model_info(chosen.path, chosen.name, deblurrer.precision, method=way, show_path=show_paths)
        service = DeblurService(deblurrer, info, limits)
    except BaseException:
        sock.close()
        raise
    if host not in LOCAL_HOSTS:
        log(
            f"warning: listening on {host}, not only this machine: anyone who can reach it can send photos (there "
            "is no login). Use --host 127.0.0.1 unless that is what you want."
        )
    address = sock.getsockname()
    shown = f"[{address[0]}]" if ":" in address[0] else address[0]
    log(f"serving http://{shown}:{address[1]}/ (API: /docs); Ctrl-C to stop")
    config = uvicorn.Config(
        create_app(service, cors_origins=cors_origins, allowed_hosts=(host, *allowed_hosts)),
        log_level="info",
        timeout_graceful_shutdown=None,  # the deblur in progress always finishes
        server_header=False,
    )
    _Server(config, on_shutdown=service.queue.close).run(sockets=[sock])

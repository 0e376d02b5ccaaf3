"""The web app: the API's routes, the page and its assets (all inside the package: no CDN), the OpenAPI page,
and the guards every request passes: the upload size limit and the same-origin rule."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from deblur import __version__
from deblur.serve.job_routes import router as job_router
from deblur.serve.jobs import VideoJobs
from deblur.serve.routes import ANSWER_HEADERS, router
from deblur.serve.service import DeblurService

STATIC = Path(str(resources.files("deblur.serve") / "static"))
log = logging.getLogger("deblur.serve")


def create_app(
    service: DeblurService,
    *,
    cors_origins: tuple[str, ...] = (),
    allowed_hosts: tuple[str, ...] = (),
    jobs: VideoJobs | None = None,
) -> FastAPI:
    """The app around a loaded model. Its lifespan warms the model up at start-up and, at shutdown, lets the
    running deblur finish while refusing the ones still waiting, and cancels a running video job and removes
    every job's files. `allowed_hosts`: host names requests may be addressed to beside this machine's own
    (`KnownHost`)."""
    jobs = jobs or VideoJobs(service.deblurrer, service.limits)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.warm_up()
        yield
        service.queue.close()
        jobs.close()
        service.queue.join()

    # FastAPI's own /docs page loads Swagger UI from a CDN; fastapi-offline's serves the same from its package.
    app = FastAPIOffline(
        title="deblur",
        version=__version__,
        summary="Deblur photos with a DeblurGAN-style CNN. The page at / uses this API.",
        redoc_url=None,
        favicon_url="/static/favicon.svg",
        lifespan=lifespan,
    )
    app.state.service = service
    app.state.jobs = jobs
    app.add_exception_handler(RequestValidationError, one_line_error)
    app.add_exception_handler(Exception, internal_error)
    app.include_router(router)
    app.include_router(job_router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["GET", "POST", "DELETE"],  # DELETE: cancelling a video job
            expose_headers=list(ANSWER_HEADERS),  # else another origin's script cannot read them
        )
    app.add_middleware(SameOrigin, allowed=cors_origins)
    app.add_middleware(KnownHost, allowed=allowed_hosts)
    app.add_middleware(
        BodyLimit, max_bytes=service.limits.max_bytes, paths={"/v1/jobs": service.limits.max_video_bytes}
    )
    return app


async def one_line_error(request: Request, err: RequestValidationError) -> JSONResponse:
    """A request FastAPI's own checks refuse (a query or form value of the wrong type or out of range) answers 422
    in the shape of every other error, `{"detail": "text"}`, naming the option, not pydantic's list of objects."""
    problems = []
    for error in err.errors():
        where = [str(part) for part in error.get("loc", ()) if part not in ("query", "body", "path", "header")]
        value = error.get("input")
        shown = f" (got {value!r})" if isinstance(value, (str, int, float)) else ""
        problems.append(f"{'.'.join(where) or 'the request'}: {error.get('msg', 'invalid')}{shown}")
    return JSONResponse({"detail": "; ".join(problems)}, status_code=422)


async def internal_error(request: Request, err: Exception) -> JSONResponse:
    """A bug anywhere answers 500 in the shape of every other error, not as plain text; the traceback goes to the
    server's log."""
    log.error("%s %s failed", request.method, request.url.path, exc_info=err)
    return JSONResponse({"detail": f"the server failed: {type(err).__name__}"}, status_code=500)


class BodyLimit:
    """Refuses a request body over `max_bytes` with 413: at once from its Content-Length, or as soon as a body
    sent without one grows past the limit. Pure ASGI, so the body is never held whole before the check."""

    def __init__(self, app, max_bytes: int, paths: dict[str, int] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.paths = paths or {}  # a path's own limit (clips are larger than photos)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.paths.get(scope["path"], self.max_bytes)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            return await _refuse_size(send, limit)
        received = 0
        started = False

        async def counted_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge
            return message

        async def watched_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, watched_send)
        except _TooLarge:
            if not started:
                await _refuse_size(send, limit)


class _TooLarge(Exception):
    pass


async def _refuse_size(send, max_bytes: int) -> None:
    detail = f"the upload is over the limit of {max_bytes:,} bytes"
    await _send_error(send, 413, detail, ((b"connection", b"close"),))


async def _send_error(send, status: int, detail: str, headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A JSON error as the routes give them (`{"detail": ...}`), sent from a middleware, before any route runs."""
    body = json.dumps({"detail": detail}).encode()
    start = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


class SameOrigin:
    """Refuses (403) a request that a page from another origin sent, unless that origin is allowed: without it,
    any web page a user opens could make their browser post photos to this server and keep its CPU busy."""

    def __init__(self, app, allowed: tuple[str, ...] = ()) -> None:
        self.app = app
        self.allowed = set(allowed)

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            origin = headers.get(b"origin", b"").decode("latin-1")
            host = headers.get(b"host", b"").decode("latin-1")
            if origin and origin.split("://", 1)[-1] != host and origin not in self.allowed and "*" not in self.allowed:
                await _send_error(send, 403, f"cross-origin requests from {origin} are not allowed")
                return
        await self.app(scope, receive, send)


class KnownHost:
    """Refuses (403) a request addressed to a host name this server was not started for.

    DNS rebinding: a page on a name the attacker controls is answered from the attacker's server, then the name is
    made to point at 127.0.0.1, and the page's own origin now reaches this server, Origin and Host agreeing. Its
    requests still name the attacker's host, so only the names this machine goes by are taken, as Jupyter and Vite
    do: localhost and *.localhost, any IP address (rebinding needs a name), and `allowed` ("*": any)."""

    def __init__(self, app, allowed: tuple[str, ...] = ()) -> None:
        self.app = app
        self.allowed = {name.lower() for name in allowed}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if host and not self.known(host_name(host)):
                await _send_error(
                    send,
                    403,
                    f"requests addressed to {host_name(host)} are not allowed: start the server with --allow-host "
                    f"{host_name(host)} if that name is this machine's",
                )
                return
        await self.app(scope, receive, send)

    def known(self, name: str) -> bool:
        if name == "localhost" or name.endswith(".localhost") or name in self.allowed or "*" in self.allowed:
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True


def host_name(host: str) -> str:
    """The name in a Host header, lower case, without its port or an IPv6 address's brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host

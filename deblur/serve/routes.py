"""The HTTP API: `POST /v1/deblur`, `GET /v1/model`, `GET /healthz`. Each route parses the request, hands the
photo to `DeblurService` (the code `deblur predict` runs), and writes the response; no image logic here."""

from __future__ import annotations

import logging
import tempfile
from collections import Counter
from functools import partial
from typing import Annotated, Any, Literal, get_args
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from deblur.errors import FULL_DISK, SettingError
from deblur.files import safe_file_name
from deblur.imageio import ImageReadError, NotAnImageError
from deblur.predict import SMALL_PHOTO
from deblur.serve.service import DeblurService
from deblur.serve.work import NO_ROOM, Busy, ClientGone
from deblur.strength import DEFAULT_STRENGTH, MAX_STRENGTH
from deblur.ways import METHODS, check_ensemble_for

log = logging.getLogger("deblur.serve")
router = APIRouter()

PHOTO_BODY = {  # what the OpenAPI page shows for the upload: a file field, or the image itself as the body
    "required": True,
    "content": {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "properties": {"image": {"type": "string", "format": "binary", "description": "The photo."}},
                "required": ["image"],
            }
        },
        "image/*": {"schema": {"type": "string", "format": "binary"}},
    },
}
ERRORS = {
    400: {
        "description": "Not usable: truncated or corrupt, too small, or over the pixel limit (a decompression "
        "bomb is refused from its header, before decoding)."
    },
    413: {"description": "The upload is larger than the server's limit."},
    415: {"description": "Not an image Pillow can read (a video clip is said to be one: clips go to POST /v1/jobs)."},
    503: {"description": "Busy (every place in line is taken) or shutting down; see Retry-After."},
    507: {"description": "The server's disk is full: no room for a large upload."},
    500: {"description": "Inference failed; the server goes on serving."},
}


Ensemble = Literal["1", "2", "4", "8"]
Format = Literal["png", "jpg", "webp"]
# What the answer to /v1/deblur says beside the image (`deblur.serve.app` lets allowed origins read them).
ANSWER_HEADERS = ("X-Deblur-Seconds", "X-Deblur-Way", "X-Deblur-Lost", "X-Deblur-Small")
OPTIONS = ("ensemble", "format", "strength", "method")  # as query parameters or as multipart fields beside the photo


def unknown_names(given, known: tuple[str, ...], kind: str) -> str | None:
    """A message naming what in `given` is not in `known`, or None: a misspelled option must not pass unseen."""
    extra = sorted(set(given) - set(known))
    if not extra:
        return None
    return f"unknown {kind}(s): {', '.join(extra)}; known: {', '.join(known) or 'none'}"


def given_twice(names) -> str | None:
    """A message naming the parameters or fields given more than once, or None: which one counts must not be
    guessed."""
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    return f"given more than once: {', '.join(twice)}" if twice else None


def content_disposition(file_name: str) -> str:
    """The download name as RFC 6266 sends it: `filename` in ASCII for every client, and `filename*` in UTF-8
    (RFC 5987) where the name has more (a header travels as Latin-1: a name in another script cannot go as is)."""
    header = f'inline; filename="{safe_file_name(file_name, ascii_only=True)}"'
    return header if file_name.isascii() else f"{header}; filename*=UTF-8''{quote(file_name, safe='')}"


def form_options(fields: dict[str, str]) -> dict[str, Any]:
    """The options sent as multipart fields, checked as the query parameters are (ValueError says what is wrong)."""
    options: dict[str, Any] = {}
    if "ensemble" in fields:
        if fields["ensemble"] not in get_args(Ensemble):
            raise ValueError(f"ensemble must be one of {', '.join(get_args(Ensemble))}; got {fields['ensemble']!r}")
        options["ensemble"] = fields["ensemble"]
    if "format" in fields:
        if fields["format"] not in get_args(Format):
            raise ValueError(f"format must be one of {', '.join(get_args(Format))}; got {fields['format']!r}")
        options["fmt"] = fields["format"]
    if "strength" in fields:
        try:
            strength = float(fields["strength"])
        except ValueError:
            strength = float("nan")
        if not 0 <= strength <= 100 * MAX_STRENGTH:
            raise ValueError(f"strength must be a number from 0 to {100 * MAX_STRENGTH:g}; got {fields['strength']!r}")
        options["strength"] = strength
    if "method" in fields:  # checked in the route, as the query's is: `Deblurrer.way`, one check
        options["method"] = fields["method"]
    return options


def error(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


def busy(err: Busy) -> JSONResponse:
    return error(503, str(err), {"Retry-After": str(err.retry_after)})


def no_room(err: OSError) -> JSONResponse:
    """507 for a full disk met while an upload is read, saying so without the server's folders; any other OSError
    is the server's (500)."""
    if err.errno not in FULL_DISK:
        raise err
    log.error("no room for an upload in %s: %s", tempfile.gettempdir(), err)  # the operator is told where
    return error(507, NO_ROOM)


GONE = 499  # the client hung up: no one is there to read the answer


@router.post(
    "/v1/deblur",
    summary="Deblur one photo",
    response_class=Response,
    responses={200: {"content": {"image/png": {}, "image/jpeg": {}, "image/webp": {}}}, **ERRORS},
    openapi_extra={"requestBody": PHOTO_BODY},
)
async def deblur(
    request: Request,
    ensemble: Annotated[
        Ensemble,
        Query(description="Mirrored/turned copies deblurred and averaged: a little better, that many times slower."),
    ] = "1",
    fmt: Annotated[Format, Query(alias="format", description="The output format.")] = "png",
    strength: Annotated[
        float,
        Query(
            ge=0,
            le=100 * MAX_STRENGTH,
            description="Percent of the model's change kept: 0 gives the photo back, 100 the model's output, more "
            "pushes further (blurry + strength/100 * (deblurred - blurry)).",
        ),
    ] = 100 * DEFAULT_STRENGTH,
    method: Annotated[
        str | None,
        Query(
            description="How to deblur, as `predict --method`: kernel-aware (the network given the kernel path's "
            "deconvolution), network or kernel (the camera-shake kernel path). Without it, the server's `--method`.",
            json_schema_extra={"enum": list(METHODS)},
        ),
    ] = None,
) -> Response:
    """A photo in (a multipart field `image`, or the image itself as the body), the deblurred photo out, as
    `deblur predict` writes it: EXIF orientation applied, grayscale, alpha and 16-bit PNG kept. The options may
    also come as multipart fields beside `image`; an unknown parameter or field is refused, naming it."""
    service: DeblurService = request.app.state.service
    problem = unknown_names(request.query_params, OPTIONS, "parameter") or given_twice(
        k for k, _ in request.query_params.multi_items()
    )
    if problem:
        return error(400, problem)
    try:
        service.queue.check()  # before reading the upload: refused at once
    except Busy as err:
        return busy(err)
    try:
        data, name, fields = await _read_photo(request)
    except ValueError as err:
        return error(400, str(err))
    except ClientDisconnect:
        return Response(status_code=GONE)
    except OSError as err:  # a large multipart part is spooled to disk
        return no_room(err)
    if data is None:
        return error(400, "no photo: send it as the multipart field 'image' or as the request body")
    problem = unknown_names(fields, OPTIONS, "field")
    twice = sorted(set(fields) & set(request.query_params))
    if problem or twice:
        return error(400, problem or f"given both as a parameter and as a field: {', '.join(twice)}")
    try:
        chosen = form_options(fields)
    except ValueError as err:
        return error(422, str(err))
    ensemble, fmt, strength = chosen.get("ensemble", ensemble), chosen.get("fmt", fmt), chosen.get("strength", strength)
    method = chosen.get("method", method)
    try:
        way = service.deblurrer.way(method)  # a server started with --method kernel has no model
        check_ensemble_for(way, int(ensemble))  # the kernel way runs no network to average
    except SettingError as err:
        return error(422, str(err))
    try:
        width, height = service.check(data, name)
    except NotAnImageError as err:
        return error(415, str(err))
    except ImageReadError as err:  # too large, too small, truncated or corrupt
        return error(400, str(err))
    try:
        service.queue.admit()
    except Busy as err:
        return busy(err)
    job = partial(service.deblur, data, name, ensemble=int(ensemble), strength=strength / 100, fmt=fmt, method=method)
    try:
        expected = service.expected_seconds(width, height, int(ensemble))
        result = await service.queue.run(job, request.is_disconnected, expected)
    except Busy as err:
        return busy(err)
    except ClientGone:
        return Response(status_code=GONE)
    except ImageReadError as err:  # truncated: the header was fine, the pixels are not
        return error(400, str(err))
    except Exception as err:  # a failure inside inference must not take the server down
        log.exception("deblurring %s failed", name)
        return error(500, f"deblurring {name} failed: {type(err).__name__}: {err}")
    stem = name.rsplit(".", 1)[0] or "photo"
    headers = {
        "Content-Disposition": content_disposition(f"{safe_file_name(stem)}-deblurred.{fmt}"),
        "X-Deblur-Seconds": f"{result.seconds:.3f}",
        "X-Deblur-Way": result.way,
    }
    if result.lost:  # what the chosen format could not hold: "transparency" (flattened onto white), "depth"
        headers["X-Deblur-Lost"] = ",".join(result.lost)
    if result.small:  # the side under which a crop deblurs worse alone than within its photo (predict's hint)
        headers["X-Deblur-Small"] = str(SMALL_PHOTO)
    return Response(result.body, media_type=result.media_type, headers=headers)


async def _read_photo(request: Request) -> tuple[bytes | None, str, dict[str, str]]:
    """The upload's bytes and file name, from the multipart field `image` or the raw body, and the multipart's
    other (text) fields; ValueError names a file under another field, or a field given twice."""
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        async with request.form(max_files=1, max_fields=8) as form:
            items = form.multi_items()
            problem = given_twice(key for key, _ in items)
            files = sorted(key for key, value in items if not isinstance(value, str) and key != "image")
            if problem or files:
                raise ValueError(problem or f"unknown file field(s): {', '.join(files)}; the photo goes in 'image'")
            fields = {key: value for key, value in items if isinstance(value, str)}
            upload = form.get("image")
            if upload is None or isinstance(upload, str):
                return None, "", fields
            return await upload.read(), upload.filename or "upload", fields
    body = await request.body()
    return (body or None), "upload", {}


@router.get("/v1/model", summary="The model this server runs")
async def model(request: Request) -> dict[str, Any]:
    """Which model, in which precision, its architecture and its card's figures, and the server's limits."""
    service: DeblurService = request.app.state.service
    limits = {
        "max_bytes": service.limits.max_bytes,
        "max_pixels": service.limits.max_pixels,
        "line": service.queue.capacity,
    }
    return {**service.model_info, "limits": limits}


@router.get("/healthz", summary="Is it serving")
async def healthz(request: Request) -> JSONResponse:
    """200 while the server takes work, 503 once it is shutting down; with the line's state."""
    service: DeblurService = request.app.state.service
    closing = service.queue.closing
    body = {"status": "shutting down" if closing else "ok", **service.queue.status()}
    body["seconds_per_megapixel"] = service.seconds_per_megapixel
    return JSONResponse(body, status_code=503 if closing else 200)

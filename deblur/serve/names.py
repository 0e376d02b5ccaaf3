"""The origins (`--cors-origin`) and host names (`--allow-host`) a server is started with, checked as given: one
written otherwise than a browser sends it (`localhost:3000`, `http://localhost:3000/`, `photos.example.org:8000`)
never matches, and the page it was meant for was refused with 403 though the server had started without a word."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from deblur.errors import SettingError

ANY = "*"  # any origin, or any host name


def given_names(names: str | Iterable[str] | None, name: str, setting: str) -> tuple[str, ...]:
    """Origins or host names as given (the parameter `name`, the command's option `setting`): one as a string is
    one, not its letters (allowed_hosts="photos.example.org" had allowed hosts named "p", "h", "o", ... and not the
    name itself; an origin was refused as 'h'); None is none (it had been "'NoneType' object is not iterable")."""
    if names is None:
        return ()
    given = (names,) if isinstance(names, str) else tuple(names) if isinstance(names, Iterable) else (names,)
    if not all(isinstance(item, str) for item in given):  # 5 had ended on "'int' object has no attribute 'strip'"
        raise SettingError(f"{name} must be strings, one or a list of them; got {names!r}", settings=(setting,))
    return given


def check_origins(origins: Iterable[str]) -> None:
    """Refuse an origin that is not `scheme://host[:port]` as a browser's `Origin` header writes it (or `*`, or
    `null`, which a browser sends from a file:// page)."""
    for origin in origins:
        if origin in (ANY, "null") or _is_origin(origin):
            continue
        raise SettingError(
            f"{origin!r} is not an origin as a browser sends it: scheme://host[:port], e.g. http://localhost:3000, "
            "with no path, not even a / after it (or * for any)",
            settings=("cors_origin",),
        )


def check_host_names(names: Iterable[str]) -> None:
    """Refuse a host name with a scheme, a port or a path: the server compares the name alone (`app.host_name`)."""
    for name in names:
        if name == ANY or _is_address(name):
            continue
        if not name.strip() or any(mark in name for mark in ":/ "):
            raise SettingError(
                f"{name!r} is not a host name as requests address the server: give the name alone, e.g. "
                "photos.example.org, with no scheme, port or path (IP addresses are always answered)",
                settings=("allow_host",),
            )


def _is_origin(origin: str) -> bool:
    parts = urlsplit(origin)
    try:
        parts.port  # noqa: B018  raises for a port that is no number
    except ValueError:
        return False
    plain = not (parts.path or parts.query or parts.fragment or parts.username or parts.password)
    return "://" in origin and bool(parts.scheme and parts.hostname) and plain and origin == origin.strip()


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True

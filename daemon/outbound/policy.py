"""The outbound URL policy for every URL an API client supplies (webhooks now; tool
executors and workflow callbacks later): HTTPS only, and never a loopback,
private, link-local, multicast or reserved address, literally or by DNS.

`security.allow_private_targets = true` lifts both rules, for tests and demos.
The operator's own `base_url`s are trusted and never pass through here.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import SplitResult, urlsplit

from daemon.domain.errors import InvalidRequest

Resolver = Callable[[str], list[str]]


def system_resolver(host: str) -> list[str]:
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return sorted({str(info[4][0]) for info in infos})


def check_url(url: str, *, param: str, allow_private: bool,
              resolve: Resolver = system_resolver) -> list[str]:
    """Raise `InvalidRequest` naming `param` unless `url` is an allowed target. Returns
    the addresses it checked (none when private targets are allowed), so a caller can
    connect to exactly those and not resolve again (DNS can change in between)."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname or not _port_ok(parts):
        raise InvalidRequest(f"'{param}' must be an absolute https:// URL; got {url!r}.",
                             param=param, code="invalid_url")
    if allow_private:
        return []
    if parts.scheme != "https":
        raise InvalidRequest(f"'{param}' must use https://.", param=param, code="invalid_url")
    addresses = _addresses(parts.hostname, resolve, param)
    for address in addresses:
        if not is_public(address):
            raise InvalidRequest(
                f"'{param}' points at a non-public address ({address}); loopback, private, "
                "link-local, multicast and reserved targets are refused.",
                param=param, code="forbidden_target")
    return addresses


def _port_ok(parts: SplitResult) -> bool:
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not 0–65535
    except ValueError:
        return False
    return True


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast and not ip.is_reserved


def _addresses(host: str, resolve: Resolver, param: str) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        addresses = resolve(host)
    except (OSError, UnicodeError) as exc:
        raise InvalidRequest(f"'{param}' host {host!r} could not be resolved: {exc}.",
                             param=param, code="invalid_url") from exc
    if not addresses:
        raise InvalidRequest(f"'{param}' host {host!r} has no addresses.", param=param,
                             code="invalid_url")
    return addresses

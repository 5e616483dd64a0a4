"""The outbound URL policy for every URL an API client supplies (completion webhooks,
HTTP and MCP tool executors, workflow callbacks): HTTPS only, and never a loopback,
private, link-local, multicast or reserved address, literally or by DNS, nor an IPv6
spelling of one (see `is_public`).

`security.allow_private_targets = true` lifts both rules, for tests and demos.
The operator's own `base_url`s are trusted and never pass through here.

The rules are separately callable, so a client can apply them at the moment it
connects (see `daemon.outbound.http`):

    check_form(url)           scheme and shape: absolute http(s) URL, a host, a valid
                              port; https unless private targets are allowed
    resolve_host(host)        the addresses a host stands for (an IP literal is itself)
    check_addresses(addrs)    refuse unless every address is public
    check_url(url)            all three, as at submit time
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
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
    parts = check_form(url, param=param, allow_private=allow_private)
    if allow_private:
        return []
    assert parts.hostname is not None  # check_form refuses a URL without a host
    return check_addresses(resolve_host(parts.hostname, param=param, resolve=resolve),
                           param=param)


def check_form(url: str, *, param: str, allow_private: bool) -> SplitResult:
    """The URL's scheme and shape, no DNS: an absolute http(s) URL with a host and a
    valid port, and https unless `allow_private`. Returns the split URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname or not _port_ok(parts):
        raise InvalidRequest(f"'{param}' must be an absolute https:// URL; got {url!r}.",
                             param=param, code="invalid_url")
    if parts.username is not None or parts.password is not None:
        raise InvalidRequest(f"'{param}' must not carry credentials (user:password@); send "
                             "them another way.", param=param, code="invalid_url")
    if not allow_private and parts.scheme != "https":
        raise InvalidRequest(f"'{param}' must use https://.", param=param, code="invalid_url")
    return parts


def check_addresses(addresses: Iterable[str], *, param: str) -> list[str]:
    """Raise `InvalidRequest` (code "forbidden_target") unless every address is public;
    return them."""
    checked = list(addresses)
    refused = non_public(checked)
    if refused:
        raise forbidden_target(refused[0], param=param)
    return checked


def non_public(addresses: Iterable[str]) -> list[str]:
    """The addresses among `addresses` that are not public, in order."""
    return [address for address in addresses if not is_public(address)]


def forbidden_target(address: str, *, param: str) -> InvalidRequest:
    return InvalidRequest(
        f"'{param}' points at a non-public address ({address}); loopback, private, "
        "link-local, multicast and reserved targets are refused.",
        param=param, code="forbidden_target")


def ip_literal(host: str) -> str | None:
    """`host` as a normalised IP address when it is one (no brackets), else None."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return None


def _port_ok(parts: SplitResult) -> bool:
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not 0–65535
    except ValueError:
        return False
    return True


# Never a target, whatever `ipaddress` calls global: loopback, private, link-local,
# CGNAT, multicast, and the IETF special-purpose registries (RFC 6890 and after).
BLOCKED_V4 = tuple(ipaddress.IPv4Network(n) for n in (
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
    "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24",
    "192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15",
    "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    "255.255.255.255/32"))
# IPv6 targets come from global unicast, the only space IANA hands out. Everything
# outside it is refused outright, and with it every form that embeds an IPv4 address
# in ::/8: IPv4-mapped ::ffff:0:0/96 and SIIT's ::ffff:0:0:0/96 (how a host or a
# translator spells an IPv4 peer, never an address a DNS answer or a receiver has),
# IPv4-compatible ::/96 (deprecated), local-use NAT64 64:ff9b:1::/48 (a network's own
# translator), and whatever other spelling ::/8 allows (::1:ffff:7f00:1, ...).
# Judging those by their IPv4 would give every internal address one more name.
GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
# Inside global unicast, never a target. 2001::/23 holds Teredo (2001::/32), refused
# outright too: it names a server and an obfuscated NAT mapping, is reached through
# whichever relay the network offers, and the registry marks it not globally reachable.
BLOCKED_V6 = tuple(ipaddress.IPv6Network(n) for n in (
    "2001::/23", "2001:db8::/32", "2620:4f:8000::/48", "3fff::/20"))
# The two forms judged by the IPv4 they carry, at a fixed place: the packets go to that
# IPv4 host, and a public one is a real target (DNS64 answers public names with the
# well-known NAT64 prefix; 6to4 sites are public IPv4 hosts).
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")


def is_public(address: str) -> bool:
    """True only for an address outside every blocked range. IPv6 must be global
    unicast; NAT64 (64:ff9b::/96) and 6to4 (2002::/16) are judged by the IPv4 they
    embed, and every other IPv6 form of an IPv4 address is refused."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False  # not an address at all: never a public one
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = embedded_ipv4(ip)
        if embedded is None:
            return (ip in GLOBAL_UNICAST and ip.is_global
                    and not any(ip in net for net in BLOCKED_V6))
        ip = embedded
    return ip.is_global and not any(ip in net for net in BLOCKED_V4)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a judged IPv6 form carries: 64:ff9b::a.b.c.d (NAT64) or
    2002:AABB:CCDD:: (6to4); None for any other address."""
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in SIX_TO_FOUR:
        return ip.sixtofour
    return None


def resolve_host(host: str, *, param: str, resolve: Resolver = system_resolver) -> list[str]:
    """The addresses `host` stands for: an IP literal is itself, a name goes to
    `resolve`. A name that does not resolve is an `InvalidRequest` (code "invalid_url")."""
    literal = ip_literal(host)
    if literal is not None:
        return [literal]
    try:
        addresses = resolve(host)
    except (OSError, UnicodeError) as exc:
        raise InvalidRequest(f"'{param}' host {host!r} could not be resolved: {exc}.",
                             param=param, code="invalid_url") from exc
    if not addresses:
        raise InvalidRequest(f"'{param}' host {host!r} has no addresses.", param=param,
                             code="invalid_url")
    return addresses


class TargetCheck:
    """`check_url` with its settings bound, remembering each URL's verdict: checking the
    50,000 records of one batch that name the same executor resolves its host once."""

    def __init__(self, *, allow_private: bool, resolve: Resolver = system_resolver) -> None:
        self.allow_private = allow_private
        self.resolve = resolve
        self._verdicts: dict[str, InvalidRequest | None] = {}

    def __call__(self, url: str, param: str) -> None:
        if url not in self._verdicts:
            try:
                check_url(url, param=param, allow_private=self.allow_private,
                          resolve=self.resolve)
                self._verdicts[url] = None
            except InvalidRequest as exc:
                self._verdicts[url] = exc
        refused = self._verdicts[url]
        if refused is not None:
            raise InvalidRequest(refused.message, param=param, code=refused.code)

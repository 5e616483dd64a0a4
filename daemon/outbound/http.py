"""One async client for every outbound call to a URL an API client supplied
(completion webhooks now; HTTP tool executors and workflow callbacks later).

It runs on the shared I/O loop with one pooled aiohttp session and applies the URL
policy (`daemon.outbound.policy`) twice:

* before sending, to the URL itself: scheme and shape (https only unless private
  targets are allowed), and an IP-literal host must be public;
* at connect time, to what a host name resolves to: the connector's resolver is a
  `PolicyResolver`, which resolves the name once (off the loop), refuses the request
  if any address is not public, and hands aiohttp exactly the addresses it checked.
  The connection therefore goes to a checked address (no second lookup that DNS
  rebinding could answer differently), while the URL keeps the host name, so TLS
  SNI, the certificate check and the Host header all use the name.

Redirects are never followed, cookies are never kept, proxies from the environment
are never used, and the answer's body is read up to the client's `max_bytes`
(`[gateway] max_response_mb`) or a smaller cap the call names (`outbound.body`).

    OutboundError
      kind "refused"      the policy refuses the URL or an address its host resolves to
      kind "timeout"      no complete answer within `timeout_s`
      kind "connection"   unresolvable name, refused, reset, disconnected, truncated body
      kind "too_large"    the answer's body is over the cap (`status` is set)
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.helpers import is_ip_address
from yarl import URL

from daemon.domain.errors import InvalidRequest
from daemon.outbound.body import MAX_BYTES, BodyTooLarge, read_capped, size_text
from daemon.outbound.policy import (
    Resolver,
    check_addresses,
    check_form,
    forbidden_target,
    ip_literal,
    non_public,
    system_resolver,
)

TARGETS_KEPT = 1024  # URLs whose form was checked, remembered
DEFAULT_TIMEOUT_S = 10.0
USER_AGENT = "relayd/1"

_NUMERIC_FLAGS = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


@dataclass(frozen=True)
class OutboundReply:
    """The receiver's answer, any status (redirects are answers too, never followed)."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class OutboundError(Exception):
    """No usable answer: `kind` is "refused", "timeout", "connection" or "too_large".

    `code` is the policy's error code ("invalid_url", "forbidden_target") for a refusal;
    `status` is the answer's status when one came back (kind "too_large")."""

    def __init__(self, kind: str, message: str, *, code: str | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code
        self.status = status


class TargetRefused(Exception):
    """Raised by `PolicyResolver` when a name resolves to a non-public address. Not an
    OSError, so aiohttp lets it through unwrapped (and never caches it)."""

    def __init__(self, host: str, address: str) -> None:
        super().__init__(f"{host!r} resolves to a non-public address ({address})")
        self.host = host
        self.address = address


class PolicyResolver(AbstractResolver):
    """aiohttp's resolver for outbound calls: resolve with the blocking `resolve` in
    the loop's executor, refuse unless every address is public (or `allow_private`),
    and return exactly those addresses, each tagged with the host name."""

    def __init__(self, resolve: Resolver = system_resolver, *, allow_private: bool) -> None:
        self._resolve = resolve
        self._allow_private = allow_private

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        literal = ip_literal(host)
        if literal is not None:
            addresses = [literal]
        else:
            loop = asyncio.get_running_loop()
            try:
                addresses = await loop.run_in_executor(None, self._resolve, host)
            except UnicodeError as exc:  # an unencodable name: a lookup failure
                raise OSError(f"{host!r} could not be resolved: {exc}") from exc
            if not addresses:
                raise OSError(f"{host!r} has no addresses")
        if not self._allow_private:
            refused = non_public(addresses)
            if refused:
                raise TargetRefused(host, refused[0])
        results = [_result(host, address, port) for address in addresses]
        if family in (socket.AF_INET, socket.AF_INET6):
            results = [r for r in results if r["family"] == family]
            if not results:
                raise OSError(f"{host!r} has no {family.name} address")
        return results

    async def close(self) -> None:
        return None


def _result(host: str, address: str, port: int) -> ResolveResult:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    return ResolveResult(hostname=host, host=address, port=port, family=family,
                         proto=socket.IPPROTO_TCP, flags=_NUMERIC_FLAGS)


class OutboundClient:
    """POSTs JSON to user-supplied URLs through one pooled aiohttp session, created on
    first use on the running loop (the I/O loop) and closed by `aclose`."""

    def __init__(self, *, allow_private: bool, resolve: Resolver = system_resolver,
                 connection_limit: int = 100, dns_ttl_s: int | None = 10,
                 ssl_context: ssl.SSLContext | None = None,
                 user_agent: str = USER_AGENT, max_bytes: int = MAX_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        self.allow_private = allow_private
        self.max_bytes = max_bytes
        self.resolver = PolicyResolver(resolve, allow_private=allow_private)
        self._limit = max(1, connection_limit)
        self._dns_ttl_s = dns_ttl_s
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._user_agent = user_agent
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._targets: dict[tuple[str, str], URL] = {}
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}

    async def post_json(
        self,
        url: str,
        payload: bytes | Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        param: str = "url",
        max_bytes: int | None = None,
    ) -> OutboundReply:
        """POST `payload` (raw JSON bytes, or a mapping to encode) to `url` once and
        return the answer, whatever its status. `param` names the URL's field in a
        refusal; `max_bytes` lowers the client's cap for this call (a webhook's answer
        is never used), never raises it. Raises `OutboundError`."""
        if max_bytes is not None and max_bytes < 0:
            raise ValueError("max_bytes must be >= 0")
        limit = self.max_bytes if max_bytes is None else min(max_bytes, self.max_bytes)
        target = self._checked(url, param)
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        sent = {"Content-Type": "application/json", "User-Agent": self._user_agent,
                **(headers or {})}
        try:
            return await self._post(target, body, sent, timeout_s, limit)
        except TargetRefused as exc:
            refusal = forbidden_target(exc.address, param=param)
            raise OutboundError("refused", refusal.message, code=refusal.code) from exc
        except TimeoutError as exc:  # before OSError: TimeoutError is one
            raise OutboundError(
                "timeout", f"no complete answer from {url} within {timeout_s:g} s") from exc
        except aiohttp.InvalidURL as exc:
            raise OutboundError("refused", f"'{param}' is not a usable URL: {_describe(exc)}",
                                code="invalid_url") from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise OutboundError("connection", f"{url}: {_describe(exc)}") from exc

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _checked(self, url: str, param: str) -> URL:
        """`_check`, remembered per URL (a batch calls one executor thousands of times);
        what depends on DNS is checked at every connect, by the resolver."""
        key = (url, param)
        target = self._targets.get(key)
        if target is None:
            if len(self._targets) >= TARGETS_KEPT:
                self._targets.clear()
            target = self._targets[key] = self._check(url, param)
        return target

    def _check(self, url: str, param: str) -> URL:
        """The policy on the URL itself, before anything is sent. The host checked is
        the one aiohttp will connect to (yarl's parse, not only urlsplit's), and an IP
        literal, which aiohttp never hands to the resolver, must be public here."""
        try:
            check_form(url, param=param, allow_private=self.allow_private)
            try:
                target = URL(url)
            except ValueError as exc:
                raise InvalidRequest(f"'{param}' is not a usable URL: {exc}.", param=param,
                                     code="invalid_url") from exc
            host = target.raw_host
            allowed = ("https", "http") if self.allow_private else ("https",)
            if target.scheme not in allowed or not host:
                raise InvalidRequest(f"'{param}' must be an absolute https:// URL; got "
                                     f"{url!r}.", param=param, code="invalid_url")
            if is_ip_address(host) or ip_literal(host) is not None:
                literal = ip_literal(host)
                if literal is None:  # aiohttp would not resolve it, nor can we check it
                    raise InvalidRequest(f"'{param}' host {host!r} is not a valid IP "
                                         "address.", param=param, code="invalid_url")
                if not self.allow_private:
                    check_addresses([literal], param=param)
        except InvalidRequest as exc:
            raise OutboundError("refused", exc.message, code=exc.code) from exc
        return target

    async def _post(self, url: URL, body: bytes, headers: Mapping[str, str],
                    timeout_s: float, max_bytes: int) -> OutboundReply:
        session = self._open()
        timeout = self._timeouts.get(timeout_s)
        if timeout is None:
            timeout = self._timeouts[timeout_s] = aiohttp.ClientTimeout(total=timeout_s)
        async with session.post(url, data=body, headers=headers, timeout=timeout,
                                allow_redirects=False) as resp:
            try:
                body = await read_capped(resp, max_bytes)
            except BodyTooLarge:
                resp.close()  # the rest is never read: drop the connection
                raise self._too_large(url, resp.status, max_bytes) from None
            return OutboundReply(status=resp.status, headers=resp.headers, body=body)

    def _too_large(self, url: URL, status: int, limit: int) -> OutboundError:
        setting = " ([gateway] max_response_mb)" if limit == self.max_bytes else ""
        return OutboundError("too_large", f"the answer from {url} is over the "
                             f"{size_text(limit)} limit{setting}", status=status)

    def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is not None and not self._session.closed:
            if loop is not self._loop:
                raise RuntimeError("OutboundClient is bound to another event loop")
            return self._session
        connector = aiohttp.TCPConnector(
            resolver=self.resolver, limit=self._limit, limit_per_host=0, ssl=self._ssl,
            use_dns_cache=self._dns_ttl_s is not None, ttl_dns_cache=self._dns_ttl_s)
        self._session = aiohttp.ClientSession(
            connector=connector, trust_env=False, cookie_jar=aiohttp.DummyCookieJar())
        self._loop = loop
        return self._session


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

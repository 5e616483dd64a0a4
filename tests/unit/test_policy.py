"""The outbound URL policy: https only, public addresses only, literally or by DNS."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

import pytest

from daemon.api.middleware import status_of
from daemon.domain.errors import InvalidRequest
from daemon.outbound.policy import (
    check_addresses,
    check_form,
    check_url,
    forbidden_target,
    ip_literal,
    is_public,
    non_public,
    resolve_host,
    system_resolver,
)

PUBLIC = "93.184.216.34"


def make_resolver(*addresses: str, calls: list[str] | None = None) -> Callable[[str], list[str]]:
    def resolve(host: str) -> list[str]:
        if calls is not None:
            calls.append(host)
        return list(addresses)
    return resolve


def failing_resolver(host: str) -> list[str]:
    raise OSError("Name or service not known")


def refused(url: str, *, resolve: Callable[[str], list[str]] | None = None,
            allow_private: bool = False) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as info:
        check_url(url, param="webhookUrl", allow_private=allow_private,
                  resolve=resolve or make_resolver(PUBLIC))
    assert info.value.param == "webhookUrl"
    assert status_of(info.value) == 400
    return info.value


def test_https_public_ip_literal_is_allowed_without_resolving() -> None:
    calls: list[str] = []
    check_url(f"https://{PUBLIC}/hook", param="webhookUrl", allow_private=False,
              resolve=make_resolver("10.0.0.1", calls=calls))
    assert calls == []


def test_https_public_hostname_is_allowed() -> None:
    calls: list[str] = []
    check_url("https://hooks.example.com:8443/relay?x=1", param="webhookUrl",
              allow_private=False, resolve=make_resolver(PUBLIC, "2606:2800:220:1::1",
                                                         calls=calls))
    assert calls == ["hooks.example.com"]


def test_http_is_refused() -> None:
    assert refused(f"http://{PUBLIC}/hook").code == "invalid_url"


@pytest.mark.parametrize("url", ["not a url", "hooks.example.com/relay", "https://",
                                 "https:///path", "ftp://example.com/x", "file:///etc/passwd",
                                 "javascript:alert(1)", ""])
def test_not_an_absolute_url_is_refused(url: str) -> None:
    assert refused(url).code == "invalid_url"


@pytest.mark.parametrize("host", [
    "127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.0.1", "172.31.255.254", "192.168.1.1",
    "169.254.169.254", "[::1]", "[fe80::1]", "224.0.0.1", "0.0.0.0", "240.0.0.1",
    "255.255.255.255", "[::ffff:127.0.0.1]", "[::ffff:10.0.0.1]", "100.64.0.1", "[fc00::1]",
    "[ff02::1]", "[::]",
])
def test_non_public_literal_is_refused(host: str) -> None:
    error = refused(f"https://{host}/hook")
    assert error.code == "forbidden_target"


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "192.168.0.10", "::1",
                                     "169.254.169.254", "fd12:3456::1"])
def test_hostname_resolving_to_a_private_address_is_refused(address: str) -> None:
    error = refused("https://hooks.example.com/relay", resolve=make_resolver(address))
    assert error.code == "forbidden_target"
    assert address in error.message


def test_one_private_address_among_public_ones_is_enough_to_refuse() -> None:
    error = refused("https://hooks.example.com/relay",
                    resolve=make_resolver(PUBLIC, "10.0.0.7"))
    assert error.code == "forbidden_target"


def test_resolver_error_is_a_400() -> None:
    error = refused("https://no-such-host.invalid/relay", resolve=failing_resolver)
    assert error.code == "invalid_url"
    assert "no-such-host.invalid" in error.message


def test_resolver_with_no_addresses_is_a_400() -> None:
    assert refused("https://empty.example.com/", resolve=make_resolver()).code == "invalid_url"


@pytest.mark.parametrize("url", ["http://127.0.0.1:9000/hook", "https://10.0.0.1/hook",
                                 "http://localhost:8080/hook", "http://[::1]/hook"])
def test_allow_private_lifts_both_rules(url: str) -> None:
    calls: list[str] = []
    check_url(url, param="webhookUrl", allow_private=True,
              resolve=make_resolver("127.0.0.1", calls=calls))
    assert calls == []


def test_allow_private_still_needs_an_absolute_http_url() -> None:
    assert refused("ftp://127.0.0.1/x", allow_private=True).code == "invalid_url"


@pytest.mark.parametrize("url", ["https://8.8.8.8:abc/hook", "https://8.8.8.8:99999/hook"])
def test_url_with_an_invalid_port_is_refused(url: str) -> None:
    # Refused at submit time, so no client ever meets a port it cannot parse.
    assert refused(url).code == "invalid_url"


def test_param_is_named_in_the_refusal() -> None:
    with pytest.raises(InvalidRequest) as info:
        check_url("http://x", param="tools[0].executor", allow_private=False,
                  resolve=make_resolver(PUBLIC))
    assert info.value.param == "tools[0].executor"


@pytest.mark.parametrize(("address", "public"), [
    ("8.8.8.8", True), ("2001:4860:4860::8888", True), ("127.0.0.1", False),
    ("fe80::1%eth0", False), ("::ffff:8.8.8.8", False), ("::ffff:192.168.0.1", False),
])
def test_is_public(address: str, public: bool) -> None:
    assert is_public(address) is public


def test_localhost_through_the_system_resolver_is_refused() -> None:
    assert all(not is_public(a) for a in system_resolver("localhost"))
    with pytest.raises(InvalidRequest) as info:
        check_url("https://localhost/hook", param="webhookUrl", allow_private=False)
    assert info.value.code == "forbidden_target"


@pytest.mark.parametrize("host", ["2130706433", "127.1", "0x7f.0.0.1"])
def test_odd_loopback_spellings_are_refused_by_the_system_resolver(host: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        check_url(f"https://{host}/hook", param="webhookUrl", allow_private=False)
    assert info.value.code == "forbidden_target"


# --- the parts, separately -----------------------------------------------------------------


def test_check_form_returns_the_split_url_without_resolving() -> None:
    parts = check_form("https://hooks.example.com:8443/relay?x=1", param="webhookUrl",
                       allow_private=False)
    assert (parts.hostname, parts.port, parts.path) == ("hooks.example.com", 8443, "/relay")


@pytest.mark.parametrize(("url", "allow_private", "ok"), [
    ("https://10.0.0.1/h", False, True),  # the form only: addresses are checked apart
    ("http://hooks.example.com/h", False, False),
    ("http://hooks.example.com/h", True, True),
    ("ftp://hooks.example.com/h", True, False),
    ("https://hooks.example.com:99999/h", True, False),
])
def test_check_form(url: str, allow_private: bool, ok: bool) -> None:
    if ok:
        check_form(url, param="u", allow_private=allow_private)
        return
    with pytest.raises(InvalidRequest) as info:
        check_form(url, param="u", allow_private=allow_private)
    assert (info.value.code, info.value.param) == ("invalid_url", "u")


def test_check_addresses() -> None:
    assert check_addresses([PUBLIC, "2606:2800:220:1::1"], param="u") == [
        PUBLIC, "2606:2800:220:1::1"]
    with pytest.raises(InvalidRequest) as info:
        check_addresses([PUBLIC, "10.0.0.7", "127.0.0.1"], param="u")
    assert info.value.code == "forbidden_target"
    assert "(10.0.0.7)" in info.value.message


def test_non_public_and_forbidden_target() -> None:
    assert non_public([PUBLIC, "10.0.0.7", "::1", "not-an-address"]) == [
        "10.0.0.7", "::1", "not-an-address"]
    error = forbidden_target("10.0.0.7", param="callbackUrl")
    assert (error.code, error.param, status_of(error)) == ("forbidden_target", "callbackUrl", 400)
    assert "'callbackUrl' points at a non-public address (10.0.0.7)" in error.message


def test_resolve_host() -> None:
    calls: list[str] = []
    assert resolve_host("::1", param="u", resolve=make_resolver(calls=calls)) == ["::1"]
    assert resolve_host("hooks.example.com", param="u",
                        resolve=make_resolver(PUBLIC, calls=calls)) == [PUBLIC]
    assert calls == ["hooks.example.com"]
    with pytest.raises(InvalidRequest) as info:
        resolve_host("hooks.example.com", param="u", resolve=failing_resolver)
    assert info.value.code == "invalid_url"


@pytest.mark.parametrize(("host", "literal"), [
    ("127.0.0.1", "127.0.0.1"), ("::FFFF:7f00:1", "::ffff:7f00:1"), ("127.1", None),
    ("2130706433", None), ("hooks.example.com", None), ("", None),
])
def test_ip_literal(host: str, literal: str | None) -> None:
    assert ip_literal(host) == literal


def test_is_public_of_something_that_is_not_an_address_is_false() -> None:
    assert is_public("hooks.example.com") is False


# The SSRF table: every form an internal target can take, and public ones that must pass.
BLOCKED_FORMS = [
    "127.0.0.1", "127.255.255.254", "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255",
    "100.64.0.1", "100.127.255.254", "169.254.169.254", "172.16.0.1", "172.31.255.255",
    "192.0.0.8", "192.0.0.170", "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1",
    "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1",
    "255.255.255.255",
    "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
    "::127.0.0.1", "64:ff9b::127.0.0.1", "64:ff9b::a00:1", "64:ff9b:1::1",
    "2002:7f00:1::", "2002:a00:1::1", "2002:c0a8:101::", "2001:0:4136:e378:8000:63bf:80ff:fffe",
    "2001:db8::1", "2001:10::1", "100::1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0",
    "fec0::1", "ff02::1", "3fff::1", "not an address",
]
PUBLIC_FORMS = [
    "93.184.216.34", "1.1.1.1", "8.8.8.8", "2606:4700:4700::1111",
    "64:ff9b::5db8:d822", "2002:5db8:d822::1",
]


@pytest.mark.parametrize("address", BLOCKED_FORMS)
def test_internal_forms_are_never_public(address: str) -> None:
    assert not is_public(address)


@pytest.mark.parametrize("address", PUBLIC_FORMS)
def test_public_forms_pass(address: str) -> None:
    assert is_public(address)


@pytest.mark.parametrize("url", ["https://user:pw@example.com/hook", "https://user@example.com/",
                                 "https://:pw@example.com/"])
def test_urls_with_credentials_are_refused(url: str) -> None:
    with pytest.raises(InvalidRequest, match="credentials") as refused:
        check_url(url, param="webhookUrl", allow_private=True)
    assert refused.value.param == "webhookUrl"


# Every IPv6 form that embeds or translates to an IPv4 address, with the embedded
# address public (93.184.216.34) and internal (127.0.0.1): refused outright whatever
# it embeds, or judged by the IPv4 it carries.
IPV4_IN_IPV6 = [
    # (form, with a public IPv4, with loopback)        refused outright
    ("IPv4-mapped ::ffff:0:0/96", "::ffff:93.184.216.34", "::ffff:127.0.0.1"),
    ("SIIT ::ffff:0:0:0/96", "::ffff:0:93.184.216.34", "::ffff:0:127.0.0.1"),
    ("IPv4-compatible ::/96", "::93.184.216.34", "::127.0.0.1"),
    ("local-use NAT64 64:ff9b:1::/48", "64:ff9b:1::5db8:d822", "64:ff9b:1::7f00:1"),
    ("Teredo 2001::/32", "2001:0:4136:e378:8000:63bf:a247:27dd",
     "2001:0:4136:e378:8000:63bf:80ff:fffe"),
    ("another ::/8 spelling", "::1:ffff:5db8:d822", "::1:ffff:7f00:1"),
    ("another ::/8 spelling", "0:0:1::ffff:5db8:d822", "0:0:1::ffff:7f00:1"),
]
JUDGED = [  # (form, with a public IPv4, with loopback): judged by the IPv4 they carry
    ("NAT64 64:ff9b::/96", "64:ff9b::93.184.216.34", "64:ff9b::127.0.0.1"),
    ("6to4 2002::/16", "2002:5db8:d822::1", "2002:7f00:1::1"),
]


@pytest.mark.parametrize(("form", "public", "internal"), IPV4_IN_IPV6)
def test_ipv6_forms_of_an_ipv4_address_are_refused_outright(form: str, public: str,
                                                             internal: str) -> None:
    assert not is_public(public), form
    assert not is_public(internal), form


@pytest.mark.parametrize(("form", "public", "internal"), JUDGED)
def test_nat64_and_6to4_are_judged_by_the_ipv4_they_carry(form: str, public: str,
                                                          internal: str) -> None:
    assert is_public(public), form
    assert not is_public(internal), form


@pytest.mark.parametrize("address", [
    address for _, public, internal in IPV4_IN_IPV6 + JUDGED for address in (public, internal)
    if not is_public(address)])
def test_every_refused_form_is_refused_as_a_literal_and_as_a_dns_answer(address: str) -> None:
    literal = refused(f"https://[{address}]/hook")
    assert literal.code == "forbidden_target"
    assert f"({ipaddress.ip_address(address)})" in literal.message  # as the URL parser has it
    answer = refused("https://hooks.example.com/hook", resolve=make_resolver(PUBLIC, address))
    assert answer.code == "forbidden_target"


def test_outside_global_unicast_nothing_is_public() -> None:
    # Unassigned and special space beside the embedding forms: discard, SRv6, ULA, ...
    for address in ("100::1", "5f00::1", "4000::1", "fc00::1", "fec0::1", "ff0e::1"):
        assert not is_public(address), address

"""Is a host (or a URL's host) this machine's loopback? One answer for every caller:
serve's and the MCP HTTP server's token rule, the client's proxy choice, doctor."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback(host: str) -> bool:
    """`localhost`, 127.0.0.0/8, ::1 (with or without brackets)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def loopback_url(url: str) -> bool:
    """The URL's host is loopback (a URL that does not parse is not)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return is_loopback(host)

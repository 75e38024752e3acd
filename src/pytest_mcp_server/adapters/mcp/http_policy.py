"""The Streamable HTTP transport's policy, free of the MCP SDK: where the server may
listen, who may talk to it, and how much it accepts.

* ``HttpSettings``: ``--host``, ``--port``, the bearer token, ``--allow-host``; refuses a
  bind to anything but a loopback address without a token.
* ``take_token``: the token from ``--token-file`` or ``$PYTEST_MCP_SERVER_TOKEN``, checked
  (and the variable removed from the environment, so no pytest run inherits it).
* ``allowed_hosts`` / ``allowed_origins``: the ``Host`` and ``Origin`` values a request
  may carry (DNS rebinding protection); ``token_matches``: the constant-time comparison.
* The limits: request body size, open sessions, connections, the shutdown grace.

Source of the rules: the MCP specification, *Transports*, *Streamable HTTP*, *Security
Warning* (2025-11-25 and 2026-07-28): servers MUST validate ``Origin`` (403 when it is not
allowed), SHOULD bind only to localhost when running locally, and SHOULD authenticate every
connection. The SDK applies them (``server.serve_http``); this module decides them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import MutableMapping
from pathlib import Path

from pydantic import Field, SecretStr, ValidationInfo, field_validator

from pytest_mcp_server.domain.policy import (
    DEFAULT_HTTP_HOST,
    DEFAULT_HTTP_PORT,
    MIN_TOKEN_CHARS,
    TOKEN_ENV,
)
from pytest_mcp_server.engine.models import _Frozen

MCP_PATH = "/mcp"
"""The endpoint's path: ``http://HOST:PORT/mcp``."""


# RFC 6750, section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_TOKEN_HINT = "generate one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"


class TokenError(ValueError):
    """The bearer token cannot be used; the message names its source (never its value)
    and says what to do."""


def check_token(token: str, source: str) -> str:
    """``token`` (from ``source``, e.g. ``--token-file /run/secrets/t``) if usable: at least
    ``MIN_TOKEN_CHARS`` characters of RFC 6750's ``b64token`` alphabet (what an
    ``Authorization: Bearer`` header can carry). Raises ``TokenError`` otherwise."""
    if not token:
        raise TokenError(f"{source}: the token is empty; {_TOKEN_HINT}")
    if not _B64TOKEN.fullmatch(token):
        raise TokenError(
            f"{source}: the token holds characters a bearer token cannot carry "
            f"(allowed: letters, digits, - . _ ~ + / and trailing =); {_TOKEN_HINT}"
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenError(
            f"{source}: the token has {len(token)} characters, fewer than {MIN_TOKEN_CHARS}; {_TOKEN_HINT}"
        )
    return token


def take_token(token_file: Path | None, environ: MutableMapping[str, str]) -> str | None:
    """The bearer token: the content of ``token_file`` (surrounding whitespace stripped),
    else ``environ[TOKEN_ENV]``, else None (no authentication).

    ``TOKEN_ENV`` is removed from ``environ`` in every case, so that no process the server
    starts (pytest, the project's tests) inherits it. Raises ``TokenError`` when the file
    cannot be read or the token is unusable (``check_token``).
    """
    from_env = environ.pop(TOKEN_ENV, None)
    if token_file is not None:
        try:
            text = token_file.expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise TokenError(
                f"--token-file: cannot read {token_file}: {exc.strerror or exc}; give a readable file holding the token"
            ) from None
        except UnicodeDecodeError:
            raise TokenError(f"--token-file: {token_file} is not UTF-8 text; {_TOKEN_HINT}") from None
        return check_token(text.strip(), f"--token-file {token_file}")
    if from_env is not None:
        return check_token(from_env.strip(), f"${TOKEN_ENV}")
    return None


def token_matches(given: str, expected: str) -> bool:
    """Whether a request's bearer token is the server's, in time independent of where they
    differ (``hmac.compare_digest`` on the UTF-8 bytes)."""
    # imported here: hmac loads OpenSSL (about 4 MB of RSS), which the CLI's summarize,
    # importing this module for its flags, does not need
    import hmac

    return hmac.compare_digest(given.encode(), expected.encode())


def _host_label(address: str) -> str:
    """An IP address as it appears in a ``Host`` header or URL: IPv6 in brackets."""
    return f"[{address}]" if ":" in address else address


class HttpSettings(_Frozen):
    """How the HTTP transport listens and whom it serves (command-line options).

    ``token``: the bearer token every request must carry, or None. ``host``: the address to
    bind, an IP address or ``localhost`` (127.0.0.1); anything but a loopback address
    needs a token. ``port``: 0 lets the system pick a free one. ``allow_hosts``: further
    ``Host`` names clients use to reach the server (a DNS name, a container's published
    address), ``NAME`` (any port) or ``NAME:PORT``.

    Raises ``pydantic.ValidationError`` for a host that is not an IP address, a port out
    of range, a malformed ``allow_hosts`` entry, or a non-loopback bind without a token.
    """

    token: SecretStr | None = None
    host: str = DEFAULT_HTTP_HOST
    port: int = Field(DEFAULT_HTTP_PORT, ge=0, le=65535)
    allow_hosts: tuple[str, ...] = ()

    @field_validator("host")
    @classmethod
    def _host_is_an_address_and_loopback_unless_a_token(cls, value: str, info: ValidationInfo) -> str:
        if value == "localhost":
            value = "127.0.0.1"
        try:
            address = ipaddress.ip_address(value.strip("[]"))
        except ValueError:
            raise ValueError(
                f"{value!r} is not an IP address; give one (127.0.0.1, ::1, or 0.0.0.0 for every interface)"
            ) from None
        if not address.is_loopback and info.data.get("token") is None:
            raise ValueError(
                f"{address} is not a loopback address, and without a token anyone who can reach it could run "
                f"this project's tests; refused. Give a token (--token-file FILE or ${TOKEN_ENV}; clients send "
                f"'Authorization: Bearer <token>'), or bind to 127.0.0.1"
            )
        return str(address)

    @field_validator("allow_hosts")
    @classmethod
    def _allow_hosts_are_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if not re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._]+)(:[0-9]{1,5})?", entry):
                raise ValueError(f"{entry!r} is not a host name or address with an optional :PORT (e.g. devbox:8765)")
        return value

    @property
    def is_loopback(self) -> bool:
        """Whether the bind address is a loopback address (127.0.0.0/8, ::1)."""
        return ipaddress.ip_address(self.host).is_loopback

    def endpoint_url(self, port: int) -> str:
        """``http://HOST:PORT/mcp`` for the bound ``port`` (the readiness line's URL)."""
        return f"http://{_host_label(self.host)}:{port}{MCP_PATH}"

    def allowed_hosts(self, port: int) -> list[str]:
        """The ``Host`` header values a request may carry, once bound to ``port``: the bind
        address and its ``localhost`` forms with that port (a wildcard bind such as 0.0.0.0
        is reached locally through 127.0.0.1 / ::1), then each ``allow_hosts`` entry (any
        port when it names none: ``NAME:*``, the SDK's pattern). Without a port, for 80."""
        address = ipaddress.ip_address(self.host)
        names = [_host_label(self.host)]
        if address.is_unspecified:
            names = ["127.0.0.1"] + (["[::1]"] if address.version == 6 else [])
        if address.is_loopback or address.is_unspecified:
            names.append("localhost")
        forms = [f"{name}:{port}" for name in names] + (names if port == 80 else [])
        for entry in self.allow_hosts:
            forms += [entry] if re.search(r":[0-9]+$", entry) else [entry, f"{entry}:*"]
        return forms

    def allowed_origins(self, port: int) -> list[str]:
        """The ``Origin`` values a request may carry (a request without one is allowed: it
        does not come from a browser page): ``http://`` and each allowed host; ``https://``
        too for the ``allow_hosts`` entries (a TLS proxy in front)."""
        extra = set(self.allow_hosts) | {f"{entry}:*" for entry in self.allow_hosts}
        return [
            f"{scheme}://{form}"
            for form in self.allowed_hosts(port)
            for scheme in (("http", "https") if form in extra else ("http",))
        ]

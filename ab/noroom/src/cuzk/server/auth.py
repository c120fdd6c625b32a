"""Who may talk to the daemon: a bearer token checked on every gRPC call, and TLS credentials.

The token travels as gRPC metadata ``authorization: Bearer <token>`` (the HTTP server takes the
same header; the scheme's case does not matter, as in HTTP). It is compared in constant time; a
call without it, or with another, ends with UNAUTHENTICATED before any servicer code runs.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc

from cuzk.errors import BadInput

AUTH_HEADER = "authorization"
TOKEN_ENV = "CUZK_TOKEN"  # where the daemon and the client take a token from when none is set


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``token``."""
    return ((AUTH_HEADER, f"Bearer {token}"),)


def token_matches(header: str | bytes | None, expected: bytes) -> bool:
    """``header`` is ``Bearer <expected>`` (scheme in any case; compared in constant time)."""
    if header is None:
        return False
    text = header.decode("latin-1") if isinstance(header, bytes) else header
    scheme, _, given = text.strip().partition(" ")
    ok_scheme = scheme.lower() == "bearer"
    same = hmac.compare_digest(given.strip().encode("utf-8", "surrogateescape"), expected)
    return ok_scheme and same


def from_environment_hint() -> str:
    """What a refused client is told when the daemon's token came from $CUZK_TOKEN: a leftover
    variable is the usual reason why Curio, which sends no token, is refused."""
    return (
        f"the daemon took its token from ${TOKEN_ENV} in its environment; Curio sends no "
        f"token: unset {TOKEN_ENV} where the daemon starts unless every client is to send it"
    )


class TokenInterceptor(grpc.aio.ServerInterceptor):
    """Refuses every call whose metadata lacks ``authorization: Bearer <token>``; ``hint``
    (optional) is added to the refusal (see :func:`from_environment_hint`)."""

    def __init__(self, token: str, hint: str | None = None) -> None:
        if not token:
            raise BadInput("auth.token: an empty token protects nothing")
        self._token = token.encode()
        suffix = "" if hint is None else f"; {hint}"
        self._deny_none = _refusal(
            "this daemon requires a bearer token and the call sent none "
            f"(metadata 'authorization: Bearer …'){suffix}"
        )
        self._deny_wrong = _refusal(
            f"wrong bearer token (metadata 'authorization: Bearer …'){suffix}"
        )

    async def intercept_service(  # type: ignore[override]  # grpc's stub generics, not ours
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        sent = False
        for key, value in handler_call_details.invocation_metadata or ():
            if key == AUTH_HEADER:
                if token_matches(value, self._token):
                    return await continuation(handler_call_details)
                sent = True
        return self._deny_wrong if sent else self._deny_none


def _refusal(message: str) -> grpc.RpcMethodHandler:
    """A handler that answers UNAUTHENTICATED with ``message`` without reading the request."""

    async def deny(_requests: Any, context: grpc.aio.ServicerContext) -> None:
        # (status set and returned, not raised: an exception's traceback would keep the call
        # alive longer; the request is never read, so a stranger's bytes cost nothing)
        context.set_code(grpc.StatusCode.UNAUTHENTICATED)
        context.set_details(message)

    return grpc.stream_unary_rpc_method_handler(deny, response_serializer=_nothing)


def _nothing(_message: object) -> bytes:
    return b""


def _read(path: Path, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise BadInput(f"{what} {path}: cannot read it ({e.strerror})") from e


def server_credentials(cert: Path, key: Path) -> grpc.ServerCredentials:
    """TLS for the listener from PEM files (certificate chain and private key)."""
    return grpc.ssl_server_credentials([(_read(key, "auth.tls_key"), _read(cert, "auth.tls_cert"))])


def channel_credentials(ca_cert: Path | None) -> grpc.ChannelCredentials:
    """TLS for a client; ``ca_cert`` None trusts the system's roots."""
    root = None if ca_cert is None else _read(ca_cert, "TLS CA certificate")
    return grpc.ssl_channel_credentials(root_certificates=root)

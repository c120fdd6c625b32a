"""Who may talk to the daemon: a bearer token checked on every gRPC call, and TLS credentials.

The token travels as gRPC metadata ``authorization: Bearer <token>`` (the HTTP server takes the
same header). It is compared in constant time; a call without it, or with another, ends with
UNAUTHENTICATED before any servicer code runs.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from cuzk.errors import BadInput

AUTH_HEADER = "authorization"


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    """Call metadata carrying ``token``."""
    return ((AUTH_HEADER, f"Bearer {token}"),)


class TokenInterceptor(grpc.ServerInterceptor):
    """Refuses every call whose metadata lacks ``authorization: Bearer <token>``."""

    def __init__(self, token: str) -> None:
        if not token:
            raise BadInput("auth.token: an empty token protects nothing")
        self._expected = f"Bearer {token}".encode()

        def deny(_request: Any, context: grpc.ServicerContext) -> None:
            context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                "missing or wrong bearer token (metadata 'authorization: Bearer …')",
            )

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        for key, value in handler_call_details.invocation_metadata or ():
            if key == AUTH_HEADER:
                got = value.encode() if isinstance(value, str) else bytes(value)
                if hmac.compare_digest(got, self._expected):
                    return continuation(handler_call_details)
        return self._deny


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

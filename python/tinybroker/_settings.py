"""Connection settings: the server address, the token and TLS, from the
arguments of connect() and, for what they leave unset, the TINYBROKER_*
environment variables (as tinybroker-cli and the C++ client read them)."""

import os
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import grpc

from ._servers import ServerSpec, split_servers
from ._tls_diagnosis import TlsFiles, check_key_pair
from .errors import SecurityError

DEFAULT_SERVER = "127.0.0.1:7400"

# gRPC channel options: reconnect on our schedule (as the C++ client does).
RECONNECT_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
    # The broker bounds the frames it sends (a delivery frame holds one
    # message of up to its limits.max_message_bytes); gRPC's default of
    # 4 MiB would refuse a larger message.
    ("grpc.max_receive_message_length", -1),
]


@dataclass
class Settings:
    """What a channel is made of."""

    server: str
    credentials: Optional[grpc.ChannelCredentials]
    metadata: Tuple[Tuple[str, str], ...]
    options: List[Tuple[str, object]]
    tls_files: TlsFiles = TlsFiles()
    #: The client's name (connect's `name`), sent with every call; or None.
    name: Optional[str] = None
    #: Every address given (issue 30): `server` is the first of them.
    servers: List[str] = field(default_factory=list)


def _env(name: str) -> Optional[str]:
    return os.environ.get(name) or None


def _read(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise SecurityError(f'cannot read {what} "{path}": {err.strerror}') \
            from None


def _check_token(token: str) -> str:
    if not token or any(not (0x21 <= ord(c) <= 0x7e) for c in token):
        raise SecurityError("the token may hold only visible ASCII characters "
                            "(no spaces, no control characters) and may not "
                            "be empty")
    return token


def resolve(server: Optional[ServerSpec] = None, *, token: Optional[str] = None,
            token_file: Optional[str] = None, ca: Optional[str] = None,
            cert: Optional[str] = None, key: Optional[str] = None,
            tls_server_name: Optional[str] = None,
            channel_options: Sequence[Tuple[str, object]] = ()) -> Settings:
    """Returns the settings; an argument beats its variable. Raises
    SecurityError for settings that cannot be used, InvalidRequestError for
    an empty address among several."""
    servers = split_servers(server or _env("TINYBROKER_SERVER")
                            or DEFAULT_SERVER)
    if token is not None and token_file is not None:
        raise SecurityError("give token or token_file, not both")
    if token is None and token_file is None:
        token, token_file = _env("TINYBROKER_TOKEN"), _env("TINYBROKER_TOKEN_FILE")
        if token and token_file:
            raise SecurityError("TINYBROKER_TOKEN and TINYBROKER_TOKEN_FILE "
                                "are both set; use one")
    if token_file is not None:
        token = _read(token_file, "token file").decode("utf-8", "replace").rstrip()
        if not token:
            raise SecurityError(f'token file "{token_file}" holds no token')
    metadata: Tuple[Tuple[str, str], ...] = ()
    if token:
        metadata = (("authorization", "Bearer " + _check_token(token)),)
    ca = ca or _env("TINYBROKER_CA")
    cert = cert or _env("TINYBROKER_CERT")
    key = key or _env("TINYBROKER_KEY")
    name = tls_server_name or _env("TINYBROKER_TLS_SERVER_NAME")
    if (cert is None) != (key is None):
        raise SecurityError("a client certificate (cert, TINYBROKER_CERT) "
                            "needs its key (key, TINYBROKER_KEY), and a key "
                            "its certificate")
    if cert is not None and key is not None:
        _read(cert, "certificate file")  # an unreadable file is named first
        _read(key, "key file")
        mismatch = check_key_pair(cert, key)
        if mismatch:
            raise SecurityError(mismatch)
    options = list(RECONNECT_OPTIONS) + list(channel_options)
    credentials = None
    if ca is not None or cert is not None:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read(ca, "CA file") if ca else None,
            private_key=_read(key, "key file") if key else None,
            certificate_chain=_read(cert, "certificate file") if cert else None)
        if name:
            options.append(("grpc.ssl_target_name_override", name))
    files = TlsFiles(ca, cert, key, name) if credentials else TlsFiles()
    return Settings(servers[0], credentials, metadata, options, files,
                    servers=servers)


def make_channel(settings: Settings,
                 server: Optional[str] = None) -> grpc.Channel:
    """Returns a threaded-API channel for `settings`, to `server` (one of
    its addresses) or its first address."""
    target = server or settings.server
    if settings.credentials is None:
        return grpc.insecure_channel(target, options=settings.options)
    return grpc.secure_channel(target, settings.credentials,
                               options=settings.options)


def make_aio_channel(settings: Settings,
                     server: Optional[str] = None) -> "grpc.aio.Channel":
    """Returns an asyncio channel for `settings`, to `server` or its first
    address."""
    from grpc import aio
    target = server or settings.server
    if settings.credentials is None:
        return aio.insecure_channel(target, options=settings.options)
    return aio.secure_channel(target, settings.credentials,
                              options=settings.options)


def is_permanent(code: grpc.StatusCode) -> bool:
    """Stream endings another attempt cannot fix (no reconnect)."""
    return code in (grpc.StatusCode.INVALID_ARGUMENT,
                    grpc.StatusCode.UNAUTHENTICATED,
                    grpc.StatusCode.PERMISSION_DENIED,
                    grpc.StatusCode.UNIMPLEMENTED)

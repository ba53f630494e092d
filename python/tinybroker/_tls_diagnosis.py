"""Why a connection to the broker failed, told apart (as the C++ client's
client/tls_diagnosis.hpp does; docs/security.md, "When a TLS connection
fails").

grpcio 1.51 reports a failed first connection as UNAVAILABLE "failed to
connect to all addresses; last error: ..." whose tail tells some causes by
itself ("certificate verify failed", "Peer name X is not in peer
certificate", "wrong version number", "Connection refused"), and says only
"Socket closed" for a plain-text client at a TLS port and for a broker that
wants or refuses a client certificate. A short TLS handshake of the
client's own (the ssl module, the same files) to the same address tells
those apart.
"""

import ipaddress
import socket
import ssl
import time
from typing import NamedTuple, Optional, Tuple

import grpc

#: How long each step of a probe may take, in seconds.
PROBE_TIMEOUT = 2.0


class TlsFiles(NamedTuple):
    """The TLS settings a channel was made with (all None: plain text)."""

    ca: Optional[str] = None
    cert: Optional[str] = None
    key: Optional[str] = None
    server_name: Optional[str] = None

    @property
    def tls(self) -> bool:
        """True when the channel speaks TLS."""
        return self.ca is not None or self.cert is not None


_NOT_TLS = ("the broker does not speak TLS there (it answered in plain "
            "text); connect without ca and cert (TINYBROKER_CA, "
            "TINYBROKER_CERT), or to the broker's TLS port")


def classify(details: str) -> str:
    """Returns the cause gRPC's `details` tell by themselves: "refused",
    "server_not_trusted", "name_mismatch", "server_not_tls", or "unknown"
    (for "Socket closed" and anything else)."""
    if "is not in peer certificate" in details:
        return "name_mismatch"
    if "wrong version number" in details or "packet length too long" in details:
        return "server_not_tls"
    if "certificate verify failed" in details:
        return "server_not_trusted"
    if "Connection refused" in details:
        return "refused"
    return "unknown"


def _split(server: str) -> Optional[Tuple[str, int]]:
    for scheme in ("dns:///", "ipv4:", "ipv6:"):
        if server.startswith(scheme):
            server = server[len(scheme):]
    host, sep, port = server.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def _context(files: TlsFiles, verify: bool) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    if verify:
        if files.ca:
            ctx.load_verify_locations(files.ca)
        else:
            ctx.load_default_certs()
    else:
        ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    if files.cert and files.key:
        ctx.load_cert_chain(files.cert, files.key, password=b"")
    return ctx


def _handshake(server: str, files: TlsFiles, verify: bool,
               timeout: float) -> Tuple[str, Optional[ssl.SSLSocket],
                                        Optional[BaseException]]:
    """Connects and shakes hands: ("unreached"|"not_tls"|"failed"|"ok",
    the TLS socket when "ok", the error when "failed")."""
    address = _split(server)
    if address is None:
        return "unreached", None, None
    try:
        ctx = _context(files, verify)
        sock = socket.create_connection(address, timeout=timeout)
    except (OSError, ssl.SSLError, ValueError):
        return "unreached", None, None
    name = files.server_name or address[0]
    tls = ctx.wrap_socket(sock, server_hostname=None if _is_ip(name) else name,
                          do_handshake_on_connect=False)
    try:
        tls.do_handshake()
        return "ok", tls, None
    except ssl.SSLError as err:
        tls.close()
        if err.reason in ("WRONG_VERSION_NUMBER", "PACKET_LENGTH_TOO_LONG",
                          "RECORD_LAYER_FAILURE"):
            return "not_tls", None, err
        return "failed", None, err
    except OSError as err:
        tls.close()
        return "failed", None, err


def _server_certificate(server: str, files: TlsFiles, timeout: float) -> str:
    """The sentence on why the broker's certificate fails verification."""
    outcome, tls, err = _handshake(server, files, True, timeout)
    if tls is not None:
        tls.close()
    code = getattr(err, "verify_code", None)
    if code in (9, 10):  # X509_V_ERR_CERT_NOT_YET_VALID / _HAS_EXPIRED
        state = "has expired" if code == 10 else "is not valid yet"
        return (f"the broker's certificate {state} (certificate verify "
                "failed); the broker needs a renewed certificate")
    by = f'the CA in "{files.ca}"' if files.ca else "any of the system's CAs"
    why = f" ({err.verify_message})" if getattr(err, "verify_message", None) \
        else ""
    return (f"the broker's certificate is not trusted: it is not signed by "
            f"{by}{why}; give the CA that signed the broker's certificate "
            "(ca=..., TINYBROKER_CA)")


def _refusal_detail(cert: str) -> str:
    """Why the broker may have refused the certificate in `cert`: expired
    or not valid yet; "" when neither."""
    try:
        decoded = ssl._ssl._test_decode_cert(cert)  # type: ignore
        not_after = ssl.cert_time_to_seconds(decoded["notAfter"])
        not_before = ssl.cert_time_to_seconds(decoded["notBefore"])
    except Exception:  # an unreadable certificate: say nothing more
        return ""
    if not_after < time.time():
        return (f"it expired on {decoded['notAfter']}; use a renewed "
                "certificate")
    if not_before > time.time():
        return f"it is not valid before {decoded['notBefore']}"
    return ""


def probe(server: str, files: TlsFiles,
          timeout: float = PROBE_TIMEOUT) -> str:
    """Shakes hands with the broker at `server` with `files` (none: only
    learns whether the port speaks TLS); returns the sentence naming the
    cause it found, or "" when it found none."""
    outcome, tls, _ = _handshake(server, files, False, timeout)
    if not files.tls:
        if tls is not None:
            tls.close()
        return ("the broker speaks TLS there and this client plain text; "
                "give the CA that signed the broker's certificate (ca=..., "
                "TINYBROKER_CA)") if outcome == "ok" else ""
    if outcome == "not_tls":
        return _NOT_TLS
    if tls is None:
        return ""
    try:
        closed = tls.recv(64) == b""
    except (ssl.SSLError, ConnectionError):
        closed = True
    except OSError:  # no answer within the timeout: no verdict
        closed = False
    finally:
        tls.close()
    if not closed:
        return ""
    if not files.cert:
        return ("the broker requires a client certificate (mutual TLS) and "
                "closed the connection; give one (cert=... and key=..., "
                "TINYBROKER_CERT and TINYBROKER_KEY)")
    detail = _refusal_detail(files.cert) or (
        "it is not signed by a CA the broker trusts (its client_ca), or not "
        "meant for client authentication")
    return f'the broker refused the client certificate "{files.cert}": {detail}'


def explain(server: str, files: TlsFiles, details: str,
            timeout: float = PROBE_TIMEOUT) -> str:
    """Returns the sentence naming the likely cause of a failed connection
    whose gRPC details are `details`, probing when they do not tell; ""
    when the cause is unknown."""
    cause = classify(details)
    if cause == "refused":
        return ("nothing listens there (connection refused); is tinybroker "
                "running there?")
    if cause == "name_mismatch":
        name = details.split("Peer name ", 1)[-1].split(
            " is not in peer certificate", 1)[0]
        return (f'the broker\'s certificate does not carry the name "{name}"'
                "; connect by a name the certificate carries, or name one "
                "with tls_server_name (TINYBROKER_TLS_SERVER_NAME)")
    if cause == "server_not_tls":
        return _NOT_TLS
    try:
        if cause == "server_not_trusted":
            return _server_certificate(server, files, timeout)
        return probe(server, files, timeout)
    except Exception:  # a probe must never hide the original error
        return ""


def connect_message(server: str, files: Optional[TlsFiles],
                    code: grpc.StatusCode, details: str) -> str:
    """Returns the message of a ConnectError: "cannot reach the broker at
    SERVER: " and the likely cause when it can be told, then gRPC's code
    and details."""
    why = explain(server, files or TlsFiles(), details) \
        if "failed to connect to all addresses" in details else ""
    if not why:
        return f"cannot reach the broker at {server}: {code.name}: {details}"
    return f"cannot reach the broker at {server}: {why} ({code.name}: {details})"


def check_key_pair(cert: str, key: str) -> Optional[str]:
    """Returns the sentence saying that the key in `key` is not the private
    key of the certificate in `cert` (or cannot be read), else None."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        ctx.load_cert_chain(cert, key, password=b"")
    except ssl.SSLError as err:
        if "KEY_VALUES_MISMATCH" in str(err) or err.reason == "KEY_VALUES_MISMATCH":
            return (f'the client key "{key}" does not belong to the '
                    f'certificate "{cert}" (cert and key, TINYBROKER_CERT and '
                    "TINYBROKER_KEY, must be a pair)")
        return (f'the client certificate "{cert}" or key "{key}" cannot be '
                f"read ({err.reason or err}); an encrypted key is not "
                "supported")
    except OSError:  # unreadable: reported when the files are read
        return None
    return None

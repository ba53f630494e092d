"""The client's checks of what it is about to send (issue 26): payloads are
bytes-like or str, and every protobuf string field (topics, patterns, group
names, tags, keys, header names and values) is text the broker can read.
A wrong type raises TypeError; text that is not UTF-8 raises
InvalidRequestError naming the field, before anything is sent (as the C++
client does, client/check.hpp)."""

import dataclasses
import datetime
import math
from typing import TYPE_CHECKING, Any, Mapping, Optional

import grpc

from .errors import InvalidRequestError

if TYPE_CHECKING:  # pragma: no cover
    from ._settings import Settings

#: The most bytes of a bad value an error message quotes.
_MAX_QUOTED = 64

#: The metadata key that carries the client's name (issue 26, point 6).
CLIENT_NAME_KEY = "tinybroker-client-name"
#: The longest client name, in bytes of UTF-8.
MAX_CLIENT_NAME_BYTES = 128


def _quoted(value: str) -> str:
    shown = value[:_MAX_QUOTED]
    text = repr(shown)
    return text + "..." if len(value) > _MAX_QUOTED else text


def text(field: str, value: Any) -> str:
    """Returns `value` (a str, or bytes holding UTF-8) as a str the broker
    can read. Raises TypeError for another type and InvalidRequestError for
    text that is not UTF-8; both name `field`."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as err:
            raise InvalidRequestError(
                f"{field} {_quoted(value)} is not UTF-8 (at character "
                f"{err.start}: {value[err.start]!r} cannot be encoded)",
                grpc.StatusCode.INVALID_ARGUMENT) from None
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InvalidRequestError(
                f"{field} {raw[:_MAX_QUOTED]!r} is not UTF-8 (at byte offset "
                f"{err.start}: 0x{raw[err.start]:02x})",
                grpc.StatusCode.INVALID_ARGUMENT) from None
    raise TypeError(f"{field} must be a str, not {type(value).__name__}")


def payload(field: str, value: Any) -> bytes:
    """Returns the payload's bytes: bytes, bytearray and memoryview as they
    are, a str as UTF-8. Raises TypeError for anything else (an int would
    otherwise become that many zero bytes, a list of ints their bytes) and
    InvalidRequestError for a str that is not UTF-8."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return text(field, value).encode("utf-8")
    raise TypeError(f"{field} must be bytes, bytearray, memoryview or str "
                    f"(sent as UTF-8), not {type(value).__name__}")


def headers(field: str, value: Optional[Mapping[Any, Any]]) -> dict:
    """Returns the headers as a dict of str; raises TypeError or
    InvalidRequestError naming the header."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{field} must be a mapping of str to str, not "
                        f"{type(value).__name__}")
    out = {}
    for name, item in value.items():
        name = text(f"{field} key", name)
        out[name] = text(f"{field}[{name!r}]", item)
    return out


#: The largest millisecond count a message's ttl or delay may hold (32
#: bits on the wire; the broker bounds delays further, limits.max_delay).
_MAX_MILLIS = 2**32 - 1


def millis(field: str, seconds: Any) -> int:
    """Returns `seconds` (an int or float, 0 = none) as whole milliseconds,
    rounded up so that a short time never becomes none. Raises TypeError for
    another type, InvalidRequestError for a negative or too large value;
    both name `field`."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise TypeError(f"{field} must be a number of seconds, not "
                        f"{type(seconds).__name__}")
    if not math.isfinite(seconds) or seconds < 0:
        raise InvalidRequestError(
            f"{field} is {seconds!r} seconds; it must be 0 (none) or more",
            grpc.StatusCode.INVALID_ARGUMENT)
    ms = math.ceil(seconds * 1000)
    if ms > _MAX_MILLIS:
        raise InvalidRequestError(
            f"{field} is {seconds!r} seconds; the most is {_MAX_MILLIS // 1000}",
            grpc.StatusCode.INVALID_ARGUMENT)
    return ms


def unix_millis(field: str, when: Any) -> int:
    """Returns `when` (None, a datetime, or seconds since the Unix epoch) as
    milliseconds since the Unix epoch (0 for None). A naive datetime is
    taken as local time. Raises TypeError or InvalidRequestError naming
    `field`."""
    if when is None:
        return 0
    if isinstance(when, datetime.datetime):
        when = when.timestamp()
    if isinstance(when, bool) or not isinstance(when, (int, float)):
        raise TypeError(f"{field} must be a datetime or seconds since the "
                        f"Unix epoch, not {type(when).__name__}")
    if not math.isfinite(when) or when <= 0:
        raise InvalidRequestError(
            f"{field} is {when!r}; it must be a time after the Unix epoch",
            grpc.StatusCode.INVALID_ARGUMENT)
    return math.ceil(when * 1000)


def priority(field: str, value: Any) -> int:
    """Returns `value` if it is an int from 0 to 9; raises TypeError or
    InvalidRequestError naming `field`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{field} must be an int from 0 to 9, not "
                        f"{type(value).__name__}")
    if not 0 <= value <= 9:
        raise InvalidRequestError(
            f"{field} is {value}; priorities go from 0 to 9",
            grpc.StatusCode.INVALID_ARGUMENT)
    return value


def client_name(name: Optional[str]) -> Optional[str]:
    """Returns the metadata value of client name `name` (None when unset):
    at most MAX_CLIENT_NAME_BYTES of UTF-8 without control characters.
    gRPC metadata carries printable ASCII only, so '%' and every byte
    outside it are percent-encoded (as gRPC encodes grpc-message). Raises
    TypeError or InvalidRequestError."""
    if name is None or name == "":
        return None
    name = text("name", name)
    raw = name.encode("utf-8")
    if len(raw) > MAX_CLIENT_NAME_BYTES:
        raise InvalidRequestError(
            f"name {_quoted(name)} is {len(raw)} bytes of UTF-8; the most is "
            f"{MAX_CLIENT_NAME_BYTES}", grpc.StatusCode.INVALID_ARGUMENT)
    for at, char in enumerate(name):
        if ord(char) < 0x20 or 0x7f <= ord(char) < 0xa0:
            raise InvalidRequestError(
                f"name {_quoted(name)} holds a control character (at "
                f"character {at}: {char!r})",
                grpc.StatusCode.INVALID_ARGUMENT)
    return "".join(chr(b) if 0x20 <= b < 0x7f and b != 0x25 else f"%{b:02X}"
                   for b in raw)


def named(settings: "Settings", name: Optional[str]) -> "Settings":
    """Returns `settings` with client name `name` (checked by client_name)
    added to the metadata of every call and stream."""
    value = client_name(name)
    if value is None:
        return settings
    return dataclasses.replace(
        settings, name=name,
        metadata=settings.metadata + ((CLIENT_NAME_KEY, value),))

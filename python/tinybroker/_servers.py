"""Several broker addresses for one client (issue 30, point 5): the nodes of
a cluster, or independent brokers to fail over between. `connect` takes one
"HOST:PORT", several joined by commas, or a list; the clients keep a channel
per address, use the first that answers and, when its stream is lost, go on
with the next one (as the C++ async_client does, docs/client.md)."""

import random
from typing import List, Sequence, Union

import grpc

from .errors import InvalidRequestError

#: What `connect`'s `server` may be.
ServerSpec = Union[str, Sequence[str]]


def split_servers(server: ServerSpec) -> List[str]:
    """Returns the addresses of `server` (a "HOST:PORT", several joined by
    commas, or a list of them), spaces trimmed. Raises InvalidRequestError
    naming the problem when one is empty or there are none."""
    parts = server.split(",") if isinstance(server, str) else list(server)
    result = [str(part).strip() for part in parts]
    if not result or any(not part for part in result):
        shown = server if isinstance(server, str) else ",".join(
            str(part) for part in parts)
        raise InvalidRequestError(
            f'an empty broker address in "{shown}"; expected HOST:PORT, '
            "or several joined by commas", grpc.StatusCode.INVALID_ARGUMENT)
    return result


def ordered(servers: List[str], randomize: bool) -> List[str]:
    """Returns `servers` shuffled when `randomize` (what NATS clients do
    unless told no_randomize: clients given the same list spread over the
    nodes), else as given."""
    result = list(servers)
    if randomize and len(result) > 1:
        random.shuffle(result)
    return result

"""tinybroker: the Python client of the in-memory message broker.

    import tinybroker

    with tinybroker.connect() as client:          # TINYBROKER_SERVER, else 127.0.0.1:7400
        client.publish("orders.eu.created", b'{"id": 1}')
        for job in client.join("workers", "jobs.>"):
            job.ack()

`tinybroker.aio` has the same API for asyncio. See docs/client.md, "Python
client".
"""

from ._settings import DEFAULT_SERVER
from ._types import Delivery, Message, PublishResult
from .client import Client, connect
from .errors import (AuthError, BrokerError, ClientClosedError, ConnectError,
                     ConnectionLostError, InvalidRequestError,
                     MessageTooLargeError, NoRespondersError, PublishError,
                     PublishQueueFullError, RequestTimeoutError, SecurityError,
                     SubscribeError, SubscriptionEndedError, TinybrokerError)
from ._requests import Reply
from .subscription import Subscription

__version__ = "0.1.0"

__all__ = [
    "connect", "Client", "Subscription", "Delivery", "Message",
    "PublishResult", "DEFAULT_SERVER", "TinybrokerError", "ConnectError",
    "ConnectionLostError", "ClientClosedError", "AuthError", "SecurityError",
    "BrokerError", "PublishError", "PublishQueueFullError", "SubscribeError",
    "SubscriptionEndedError", "InvalidRequestError", "MessageTooLargeError",
    "Reply", "NoRespondersError", "RequestTimeoutError",
]

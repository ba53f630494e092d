"""Issue 26, point 1: a client that gives up reconnecting does not stop
silently. With the broker killed (SIGKILL), the threaded and the asyncio
client call on_error once with the final error, log a WARNING naming the
address and the attempts, and wait_closed() raises that error, so that a
worker consuming through callbacks can exit non-zero."""

import asyncio
import logging
import signal

import pytest

import tinybroker
import tinybroker.aio


def kill(broker) -> None:
    """Kills the broker at once (no goodbye on its streams)."""
    broker.process.send_signal(signal.SIGKILL)
    broker.process.wait()


def test_threaded_give_up_is_reported(own_broker, caplog):
    errors = []
    caplog.set_level(logging.WARNING, logger="tinybroker")
    c = tinybroker.connect(own_broker.address, reconnect_max_attempts=2,
                           reconnect_initial_backoff=0.05,
                           reconnect_max_backoff=0.2, on_error=errors.append)
    try:
        c.subscribe("tgu.>", lambda d: None)
        c.join("tgug", "tguj.>", lambda d: d.ack())
        kill(own_broker)
        with pytest.raises(tinybroker.ConnectionLostError,
                           match="gave up after 2 failed attempts") as raised:
            c.wait_closed(30)
        assert c.state == "closed"
        assert len(errors) == 1 and errors[0] is raised.value
        assert c.final_error is raised.value
        assert own_broker.address in str(raised.value)
        warnings = [r for r in caplog.records
                    if r.levelno == logging.WARNING and "gave up" in
                    r.getMessage()]
        assert len(warnings) == 1
        assert own_broker.address in warnings[0].getMessage()
        assert "2 failed attempts" in warnings[0].getMessage()
    finally:
        c.close()
    assert len(errors) == 1  # close() reports nothing more


def test_threaded_wait_closed_returns_after_close(own_broker):
    errors = []
    c = tinybroker.connect(own_broker.address, on_error=errors.append)
    with pytest.raises(TimeoutError):
        c.wait_closed(0.05)
    c.close()
    c.wait_closed(1)  # closed by the program: no error
    assert c.final_error is None and errors == []


def test_asyncio_give_up_is_reported(own_broker, caplog):
    caplog.set_level(logging.WARNING, logger="tinybroker")

    async def main():
        errors = []
        c = await tinybroker.aio.connect(
            own_broker.address, reconnect_max_attempts=2,
            reconnect_initial_backoff=0.05, reconnect_max_backoff=0.2,
            on_error=errors.append)
        try:
            await c.subscribe("agu.>", lambda d: None)
            await c.join("agug", "aguj.>", lambda d: d.ack())
            kill(own_broker)
            with pytest.raises(tinybroker.ConnectionLostError,
                               match="gave up after 2 failed attempts") as raised:
                await c.wait_closed(30)
            assert c.state == "closed"
            assert len(errors) == 1 and errors[0] is raised.value
        finally:
            await c.close()
        with pytest.raises(tinybroker.ConnectionLostError):
            await c.wait_closed(1)  # close() after the give-up keeps it
        assert len(errors) == 1
    asyncio.run(main())
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING and "gave up" in r.getMessage()]
    assert len(warnings) == 1 and own_broker.address in warnings[0]


def test_failed_connect_is_raised_not_reported_twice(own_broker):
    errors = []
    address = own_broker.address
    own_broker.stop()
    with pytest.raises(tinybroker.ConnectError):
        tinybroker.connect(address, timeout=2, on_error=errors.append)
    assert errors == []  # connect() raised it; on_error is for the rest

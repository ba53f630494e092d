"""Fixtures: real brokers started from the binary named by TINYBROKER_BROKER
(ctest sets it to build/tinybroker), on free loopback ports, metrics off."""

import os
import re
import signal
import socket
import subprocess
import tempfile
import time
from typing import Iterator, List, Optional

import pytest

import tinybroker


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """One tinybroker process; `restart` brings it back on the same port."""

    def __init__(self, config: Optional[str] = None) -> None:
        self.binary = os.environ.get("TINYBROKER_BROKER")
        if not self.binary or not os.access(self.binary, os.X_OK):
            pytest.fail("set TINYBROKER_BROKER to the tinybroker binary "
                        f"(got {self.binary!r})", pytrace=False)
        self.dir = tempfile.mkdtemp(prefix="tinybroker-pytest-")
        self.config = None
        if config is not None:
            self.config = os.path.join(self.dir, "broker.toml")
            with open(self.config, "w") as f:
                f.write(config)
        self.port = 0
        self.process: Optional[subprocess.Popen] = None
        self.start()

    @property
    def address(self) -> str:
        """HOST:PORT of the broker."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """Starts it (on its old port after a stop) and waits until it
        listens."""
        log = os.path.join(self.dir, "broker.log")
        argv: List[str] = [self.binary, "--listen", f"127.0.0.1:{self.port}",
                           "--metrics-listen", "off"]
        if self.config:
            argv += ["--config", self.config]
        with open(log, "w") as out:
            self.process = subprocess.Popen(argv, stdout=out, stderr=out)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(log) as f:
                text = f.read()
            found = re.search(r"listening on 127\.0\.0\.1:(\d+)", text)
            if found:
                self.port = int(found.group(1))
                return
            if self.process.poll() is not None:
                pytest.fail(f"the broker exited: {text}", pytrace=False)
            time.sleep(0.01)
        pytest.fail("the broker did not listen within 10 s", pytrace=False)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(6)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        """Stops it and starts it again on the same port."""
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    """A broker shared by the tests (each uses its own topics and groups)."""
    b = Broker()
    yield b
    b.stop()


@pytest.fixture
def own_broker() -> Iterator[Broker]:
    """A broker of the test's own (to restart it)."""
    b = Broker()
    yield b
    b.stop()


@pytest.fixture
def client(broker: Broker) -> Iterator[tinybroker.Client]:
    """A connected threaded client."""
    with tinybroker.connect(broker.address) as c:
        yield c


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No TINYBROKER_* variable from the caller's shell leaks into a test."""
    for name in list(os.environ):
        if name.startswith("TINYBROKER_") and name != "TINYBROKER_BROKER":
            monkeypatch.delenv(name)


def wait_until(predicate, timeout: float = 5.0) -> bool:
    """Polls `predicate` every 10 ms until true or `timeout` passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def pytest_report_header() -> str:
    """Which tinybroker package is under test (the installed one in ctest)."""
    return f"tinybroker package: {os.path.dirname(tinybroker.__file__)}"

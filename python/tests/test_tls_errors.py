"""Each way a TLS connection fails is named by its likely cause in the
ConnectError (issue 26, point 8), and a key that does not belong to its
certificate is refused before connecting. Certificates from
tests/e2e/make_test_certs.sh."""

import os
import subprocess
import tempfile
from typing import Dict, Iterator, Optional

import pytest

import tinybroker
from conftest import Broker

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "tests", "e2e", "make_test_certs.sh")


@pytest.fixture(scope="module")
def certs() -> Iterator[str]:
    """A directory of the test certificates."""
    if not os.path.exists(SCRIPT):
        pytest.skip("tests/e2e/make_test_certs.sh is not beside the package")
    with tempfile.TemporaryDirectory(prefix="tinybroker-certs-") as path:
        subprocess.run(["sh", SCRIPT, path], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        yield path


def tls_config(certs: str, client_ca: bool) -> str:
    text = (f'[tls]\ncert = "{certs}/server.crt"\n'
            f'key = "{certs}/server.key"\n')
    if client_ca:
        text += f'client_ca = "{certs}/ca.crt"\n'
    return text


@pytest.fixture(scope="module")
def tls_broker(certs: str) -> Iterator[Broker]:
    b = Broker(tls_config(certs, False))
    yield b
    b.stop()


@pytest.fixture(scope="module")
def mtls_broker(certs: str) -> Iterator[Broker]:
    b = Broker(tls_config(certs, True))
    yield b
    b.stop()


@pytest.fixture(scope="module")
def plain_broker() -> Iterator[Broker]:
    b = Broker()
    yield b
    b.stop()


def connect_error(broker: Broker, certs: str, ca: Optional[str] = None,
                  client: Optional[str] = None, **kwargs: str) -> str:
    """The message of connect()'s ConnectError with test files `ca` and
    `client` (client.crt and client.key for "client")."""
    files: Dict[str, str] = {}
    if ca:
        files["ca"] = os.path.join(certs, ca)
    if client:
        files["cert"] = os.path.join(certs, client + ".crt")
        files["key"] = os.path.join(certs, client + ".key")
    server = f"localhost:{broker.port}"
    with pytest.raises(tinybroker.ConnectError) as caught:
        tinybroker.connect(server, timeout=5, **files, **kwargs).close()
    return str(caught.value)


def test_a_plaintext_client_is_told_the_broker_speaks_tls(tls_broker, certs):
    assert "the broker speaks TLS there" in connect_error(tls_broker, certs)


def test_a_wrong_ca_is_named(tls_broker, certs):
    message = connect_error(tls_broker, certs, "other-ca.crt")
    assert "the broker's certificate is not trusted: it is not signed by " \
        f'the CA in "{certs}/other-ca.crt"' in message, message


def test_a_name_mismatch_is_named(tls_broker, certs):
    message = connect_error(tls_broker, certs, "ca.crt",
                            tls_server_name="broker.example")
    assert 'does not carry the name "broker.example"' in message, message


def test_a_tls_client_at_a_plain_port_is_told(plain_broker, certs):
    message = connect_error(plain_broker, certs, "ca.crt")
    assert "the broker does not speak TLS there" in message, message


def test_a_missing_client_certificate_is_named(mtls_broker, certs):
    message = connect_error(mtls_broker, certs, "ca.crt")
    assert "the broker requires a client certificate" in message, message


def test_an_expired_client_certificate_is_named(mtls_broker, certs):
    message = connect_error(mtls_broker, certs, "ca.crt", "expired-client")
    assert ("the broker refused the client certificate "
            f'"{certs}/expired-client.crt": it expired on') in message, message


def test_a_client_certificate_from_another_ca_is_named(mtls_broker, certs):
    message = connect_error(mtls_broker, certs, "ca.crt", "other-client")
    assert ("the broker refused the client certificate "
            f'"{certs}/other-client.crt": it is not signed by a CA the '
            "broker trusts") in message, message


def test_a_valid_client_certificate_connects(mtls_broker, certs):
    with tinybroker.connect(f"localhost:{mtls_broker.port}",
                            ca=f"{certs}/ca.crt", cert=f"{certs}/client.crt",
                            key=f"{certs}/client.key", timeout=5):
        pass


def test_a_key_of_another_certificate_is_refused_before_connecting(certs):
    # Nothing listens at port 1: the refusal comes before any connection.
    with pytest.raises(tinybroker.SecurityError) as caught:
        tinybroker.connect("127.0.0.1:1", ca=f"{certs}/ca.crt",
                           cert=f"{certs}/client.crt",
                           key=f"{certs}/other-client.key")
    assert str(caught.value) == (
        f'the client key "{certs}/other-client.key" does not belong to the '
        f'certificate "{certs}/client.crt" (cert and key, TINYBROKER_CERT '
        "and TINYBROKER_KEY, must be a pair)")


def test_a_lazy_clients_publish_unary_names_the_cause(mtls_broker, certs):
    with tinybroker.connect(f"localhost:{mtls_broker.port}",
                            ca=f"{certs}/ca.crt", lazy=True) as client:
        with pytest.raises(tinybroker.ConnectError) as caught:
            client.publish_unary([("tls.x", b"hello")], timeout=5)
    assert "the broker requires a client certificate" in str(caught.value)

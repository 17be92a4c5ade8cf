"""The agent's fingerprint records where the host really ran, read from an IMDSv2 endpoint served
here over real HTTP (token first, refused without it, as EC2's is with HttpTokens=required)."""

from __future__ import annotations

import threading
import time
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from tests.agent_modules import load

running = load("benchfleet_run")  # the prepare step's fingerprint
placement = running.benchfleet_placement

TOKEN = "AQAEAFake-token=="
METADATA = {"placement/region": "eu-north-1", "placement/availability-zone": "eu-north-1b",
            "instance-type": "t3.xlarge"}


class Imds(BaseHTTPRequestHandler):
    requests: list[tuple[str, str]] = []

    def do_PUT(self) -> None:  # http.server's naming
        Imds.requests.append(("PUT", self.path))
        if self.path != "/latest/api/token" or not self.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
            self.send_error(400)
            return
        self._answer(TOKEN)

    def do_GET(self) -> None:
        Imds.requests.append(("GET", self.path))
        if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
            self.send_error(401)  # IMDSv1 is off on benchfleet hosts
            return
        value = METADATA.get(self.path.removeprefix("/latest/meta-data/"))
        if value is None:
            self.send_error(404)
            return
        self._answer(value)

    def _answer(self, text: str) -> None:
        body = text.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def fingerprint(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The agent's fingerprint of this host (the database's side is not what these tests are about)."""
    monkeypatch.setattr(running.benchfleet_dbclient, "server_state", lambda conn, requested: {})
    fp: dict[str, object] = running.fingerprint({}, types.SimpleNamespace(library=None, tls="off"), {})
    return fp


@pytest.fixture
def imds() -> Iterator[str]:
    Imds.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Imds)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_fingerprint_records_the_region_and_zone_the_host_reports(imds: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(placement.ENDPOINT_ENV, imds)
    fp = fingerprint(monkeypatch)
    assert (fp["region"], fp["availability_zone"], fp["instance_type"]) == ("eu-north-1", "eu-north-1b", "t3.xlarge")
    assert "placement_error" not in fp
    assert Imds.requests[0] == ("PUT", "/latest/api/token")  # a session token before any read


def test_an_unanswering_metadata_service_is_said_not_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(placement.ENDPOINT_ENV, "http://127.0.0.1:9")  # discard port: refused at once
    started = time.monotonic()
    fp = fingerprint(monkeypatch)
    assert time.monotonic() - started < 2 * placement.TIMEOUT_S
    assert fp["region"] is None and fp["availability_zone"] is None
    assert str(fp["placement_error"]).startswith("instance metadata:")


def test_off_ec2_nothing_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(placement.ENDPOINT_ENV, raising=False)
    monkeypatch.setattr(placement, "on_ec2", lambda: False)
    monkeypatch.setattr(placement, "_request", lambda *a: pytest.fail("asked the network off EC2"))
    fp = fingerprint(monkeypatch)
    assert "region" not in fp and "availability_zone" not in fp


def test_disabled_like_the_sdks(imds: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(placement.ENDPOINT_ENV, imds)
    monkeypatch.setenv(placement.DISABLED_ENV, "true")
    assert placement.placement() == {} and Imds.requests == []

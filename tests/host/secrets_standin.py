"""A Secrets Manager stand-in reachable from inside a host's network namespace: moto's Secrets
Manager behind GetSecretValue's JSON protocol on the namespace's 127.0.0.1. The agent's boto3
reaches it through AWS_ENDPOINT_URL_SECRETSMANAGER, the way it reaches the real service with the
instance role.

Two ways to run it:
- ``python secrets_standin.py`` under ``ip netns exec``: stdin ``{"name": ..., "secret": {...}}``
  (a secret of its own moto), stdout one line ``{"arn": ..., "port": ...}``, then it serves until
  stdin closes;
- ``serve_in(netns_path, client, host=...)``: in the test's own process, answering from the moto
  account the test runs (the secrets provisioning created, by their ARNs), its listening socket made
  inside the namespace (setns in a thread of its own: the socket stays in the namespace it was made in).
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
from moto import mock_aws

CLONE_NEWNET = 0x40000000


def handler_for(sm: Any, served: list[dict[str, Any]] | None = None) -> type[BaseHTTPRequestHandler]:
    """GetSecretValue answered from ``sm`` (a moto client); ``served`` gets each answer given."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            status, answer = 400, {"__type": "InvalidRequestException", "message": "unsupported"}
            if self.headers.get("X-Amz-Target") == "secretsmanager.GetSecretValue":
                try:
                    value: dict[str, Any] = sm.get_secret_value(SecretId=body["SecretId"])
                    status, answer = 200, {"ARN": value["ARN"], "Name": value["Name"],
                                           "SecretString": value["SecretString"],
                                           "VersionId": value["VersionId"],
                                           "CreatedDate": value["CreatedDate"].timestamp()}
                    if served is not None:
                        served.append(answer)
                except sm.exceptions.ResourceNotFoundException:
                    status, answer = 400, {"__type": "ResourceNotFoundException", "message": "not found"}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-amz-json-1.1")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def _listening_in(netns_path: str, host: str) -> socket.socket:
    """A TCP socket listening on ``host`` in the namespace at ``netns_path``."""
    made: dict[str, Any] = {}

    def enter() -> None:
        fd = os.open(netns_path, os.O_RDONLY)
        try:
            if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
                made["error"] = OSError(ctypes.get_errno(), f"setns {netns_path}")
                return
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sock.listen(16)
            made["socket"] = sock
        finally:
            os.close(fd)

    thread = threading.Thread(target=enter)  # this thread alone enters the namespace, and ends there
    thread.start()
    thread.join()
    if "error" in made:
        raise made["error"]
    return made["socket"]  # type: ignore[no-any-return]


def serve_in(netns_path: str, sm: Any, served: list[dict[str, Any]] | None = None,
             host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """The stand-in for ``sm`` on ``host`` inside the namespace; its port is ``server_address[1]``;
    shut it down with ``shutdown()`` and ``server_close()``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(sm, served), bind_and_activate=False)
    server.socket = _listening_in(netns_path, host)
    server.server_address = server.socket.getsockname()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    request = json.loads(sys.stdin.readline())
    with mock_aws():
        sm = boto3.client("secretsmanager", region_name="us-east-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
        arn = sm.create_secret(Name=request["name"], SecretString=json.dumps(request["secret"]))["ARN"]
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler_for(sm))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print(json.dumps({"arn": arn, "port": server.server_address[1]}), flush=True)
        sys.stdin.read()  # until the test closes our stdin
        server.shutdown()


if __name__ == "__main__":
    main()

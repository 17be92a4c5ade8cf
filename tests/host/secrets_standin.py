"""A Secrets Manager stand-in reachable from inside a host's network namespace (run with
``ip netns exec``): moto's Secrets Manager behind GetSecretValue's JSON protocol on 127.0.0.1.

stdin: ``{"name": ..., "secret": {...}}``. stdout: one line ``{"arn": ..., "port": ...}``, then it
serves until stdin closes. The agent's boto3 reaches it through AWS_ENDPOINT_URL_SECRETSMANAGER,
the way it reaches the real service with the instance role.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
from moto import mock_aws


def main() -> None:
    request = json.loads(sys.stdin.readline())
    with mock_aws():
        sm = boto3.client("secretsmanager", region_name="us-east-1", aws_access_key_id="testing",
                          aws_secret_access_key="testing")
        arn = sm.create_secret(Name=request["name"], SecretString=json.dumps(request["secret"]))["ARN"]

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

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print(json.dumps({"arn": arn, "port": server.server_address[1]}), flush=True)
        sys.stdin.read()  # until the test closes our stdin
        server.shutdown()


if __name__ == "__main__":
    main()

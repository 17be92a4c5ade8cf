"""Where this host really runs: region, availability zone and instance type from the EC2 instance
metadata service, IMDSv2 (a session token first; benchfleet's launch template requires tokens).

The fingerprint records these so results are labelled with the place that was measured, never with
what the spec asked for. Off EC2 (local mode, a laptop) nothing is asked and nothing is returned.
``AWS_EC2_METADATA_SERVICE_ENDPOINT`` and ``AWS_EC2_METADATA_DISABLED`` are the AWS SDKs' own
settings and mean the same here. Standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from typing import Dict, Optional

ENDPOINT_ENV = "AWS_EC2_METADATA_SERVICE_ENDPOINT"
DISABLED_ENV = "AWS_EC2_METADATA_DISABLED"
DEFAULT_ENDPOINT = "http://169.254.169.254"
TOKEN_TTL_S = 60
TIMEOUT_S = 2.0
# Fingerprint field -> metadata path.
PATHS = {"region": "placement/region", "availability_zone": "placement/availability-zone",
         "instance_type": "instance-type"}
# How a host knows it is an EC2 instance without asking the network: Nitro's DMI vendor, Xen's UUID.
_EC2_MARKERS = (("/sys/devices/virtual/dmi/id/board_vendor", "Amazon EC2"), ("/sys/hypervisor/uuid", "ec2"))


def on_ec2() -> bool:
    for path, prefix in _EC2_MARKERS:
        try:
            with open(path) as f:
                if f.read().strip().startswith(prefix):
                    return True
        except OSError:
            continue
    return False


def _request(url: str, method: str, headers: Dict[str, str]) -> str:
    # http(s) only: placement() refuses any other scheme in the endpoint setting.
    req = urllib.request.Request(url, method=method, headers=headers)  # noqa: S310
    with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:  # noqa: S310
        return str(resp.read().decode().strip())


def placement() -> Dict[str, Optional[str]]:
    """``region``, ``availability_zone`` and ``instance_type`` of this instance; {} off EC2. When the
    service does not answer on EC2, the fields are None and ``placement_error`` says why."""
    if os.environ.get(DISABLED_ENV, "").lower() == "true":
        return {}
    endpoint = os.environ.get(ENDPOINT_ENV)
    if not endpoint and not on_ec2():
        return {}
    base = (endpoint or DEFAULT_ENDPOINT).rstrip("/")
    out: Dict[str, Optional[str]] = dict.fromkeys(PATHS)
    if not base.startswith(("http://", "https://")):
        out["placement_error"] = f"instance metadata: {ENDPOINT_ENV} is not an http(s) URL"
        return out
    try:
        token = _request(f"{base}/latest/api/token", "PUT",
                         {"X-aws-ec2-metadata-token-ttl-seconds": str(TOKEN_TTL_S)})
        for field, path in PATHS.items():
            out[field] = _request(f"{base}/latest/meta-data/{path}", "GET",
                                  {"X-aws-ec2-metadata-token": token}) or None
    except (OSError, urllib.error.URLError, ValueError) as e:
        out["placement_error"] = f"instance metadata: {e}"
    return out

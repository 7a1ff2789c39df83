"""What an anonymous caller can make the server spend: server CPU per OAuth dynamic client registration (201) and
per token request with a wrong client secret, against a running `manage.py serve`.

    python bench/oauth_cost.py PORT SOURCE_ADDRESS N      # e.g. 8001 127.0.0.5 10

Standard library only. CPU is the gunicorn processes' user + system time (from /proc) over the requests,
divided by their number; SOURCE_ADDRESS (a loopback address) keeps the requests apart from the per-address
throttles' other counts: use a fresh one per run, N at most DOCSMCP_OAUTH_REGISTRATION_MAX.
"""
import base64
import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    port, source, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    pids = [int(p) for p in subprocess.check_output(["pgrep", "-f", f"gunicorn.*{port}"]).split()]

    def cpu() -> float:
        ticks = 0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except FileNotFoundError:
                continue
            ticks += int(fields[11]) + int(fields[12])
        return ticks / os.sysconf("SC_CLK_TCK")

    def request(method: str, path: str, body: str, headers: dict) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    def measure(label: str, count: int, send) -> bytes:
        statuses, data = [], b""
        cpu_before, wall_before = cpu(), time.time()
        for _ in range(count):
            status, data = send()
            statuses.append(status)
        cpu_after, wall_after = cpu(), time.time()
        print(f"{label} x{count}: server CPU {1000 * (cpu_after - cpu_before) / count:.0f} ms/request, "
              f"wall {1000 * (wall_after - wall_before) / count:.0f} ms, statuses {sorted(set(statuses))}")
        return data

    metadata = json.dumps({"client_name": "cost", "redirect_uris": ["http://127.0.0.1/cb"],
                           "token_endpoint_auth_method": "client_secret_basic"})
    data = measure("register (confidential client)", n, lambda: request(
        "POST", "/oauth/register/", metadata, {"Content-Type": "application/json"}))
    client_id = json.loads(data)["client_id"]
    auth = "Basic " + base64.b64encode(f"{client_id}:wrong-secret".encode()).decode()
    form = "grant_type=authorization_code&code=x&redirect_uri=http%3A%2F%2F127.0.0.1%2Fcb"
    measure("token with a wrong client secret", 8, lambda: request(
        "POST", "/oauth/token/", form, {"Content-Type": "application/x-www-form-urlencoded", "Authorization": auth}))


if __name__ == "__main__":
    main()

"""Start and stop a real ``lineage-listener serve`` process on a loopback port."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "test-token-7f3a"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, store: Path, port: int | None = None, token: str | None = TOKEN,
                 args: tuple[str, ...] = ()) -> None:
        self.store, self.port, self.token, self.args = store, port or free_port(), token, args
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> "Server":
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("LINEAGE_SERVER_TOKEN", None)
        if self.token:
            env["LINEAGE_SERVER_TOKEN"] = self.token
        self.proc = subprocess.Popen([sys.executable, "-m", "lineage_listener", "serve", "--store", str(self.store),
                                      "--port", str(self.port), *self.args], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1):
                    return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited: {self.proc.stdout.read()}")
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def stop(self) -> int | None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        return self.proc.returncode if self.proc else None

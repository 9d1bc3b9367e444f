"""Start and stop a real ``lineage-listener serve`` process on a loopback port."""
from __future__ import annotations

import os
import socket
import ssl
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
                 extra_args: list[str] | None = None, output: Path | None = None,
                 tls: tuple[Path, Path, Path] | None = None, env: dict[str, str] | None = None,
                 cwd: Path | None = None) -> None:
        """``extra_args``: more ``serve`` options; ``output``: a file for the server's log (else a pipe,
        read when it exits early: keep it short); ``tls``: certificate, key and the CA that signed
        them: served over HTTPS; ``env``: more environment variables (secrets); ``cwd``: the folder it
        runs in (relative paths of its arguments)."""
        self.store, self.port, self.token, self.cwd = store, port or free_port(), token, cwd
        self.extra_args, self.output, self.env = list(extra_args or []), output, dict(env or {})
        self.context = None
        if tls is not None:
            self.extra_args += ["--tls-cert", str(tls[0]), "--tls-key", str(tls[1])]
            self.context = ssl.create_default_context(cafile=str(tls[2]))
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60) -> "Server":
        env = {**os.environ, "PYTHONPATH": str(ROOT), **self.env}
        env.pop("LINEAGE_SERVER_TOKEN", None)
        if self.token:
            env["LINEAGE_SERVER_TOKEN"] = self.token
        out = open(self.output, "w") if self.output else subprocess.PIPE  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen([sys.executable, "-m", "lineage_listener", "serve", "--store", str(self.store),
                                      "--port", str(self.port), *self.extra_args], env=env, stdout=out,
                                     stderr=subprocess.STDOUT, text=True, cwd=self.cwd)
        if self.output:
            out.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=1, context=self.context):
                    return self
            except OSError:
                if self.proc.poll() is not None:
                    log = self.output.read_text() if self.output else self.proc.stdout.read()
                    raise RuntimeError(f"server exited: {log}")
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def stop(self) -> int | None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(30)
        return self.proc.returncode if self.proc else None

"""Run README blocks as printed, against the stack `make run` starts, in a network namespace of their own.

`python -m tests.readme_sandbox SPEC.json RESULT.json`, started by `tests/integration/test_readme.py` in a
new network namespace (so `http://127.0.0.1:8000`, the address the README prints, is this run's API and
nobody else's, on any machine): brings up the loopback, starts the fake OpenAI-compatible server, starts the
stack as `make run` does (`memctl up`, embedded PostgreSQL and Redis under the spec's data folder), then runs
each block in order: `sh` blocks with bash (their exports carry over to the next blocks), `python` blocks
with this interpreter from the repository root, `json` MCP configurations by launching the server they name
with the `mcp` SDK's client. Writes each block's exit code and output, and what the fake model was asked.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.services import REPO

API = "http://127.0.0.1:8000"
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, _SIOCGIFFLAGS, struct.pack("16sH", b"lo", 0))[:18])[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | _IFF_UP))


def _healthy() -> bool:
    import httpx

    try:
        return httpx.get(f"{API}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _run_sh(block: str, env: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    marker = "__README_ENV__"
    script = f"set -euo pipefail\n{block}\necho {marker}\nenv -0"
    done = subprocess.run(["bash", "-c", script], cwd=REPO, env=env, capture_output=True, timeout=300)
    out = done.stdout.decode(errors="replace")
    printed, _, rest = out.partition(marker + "\n")
    new_env = dict(env)
    if done.returncode == 0:
        new_env = dict(item.split("=", 1) for item in rest.split("\0") if "=" in item)
    return {
        "rc": done.returncode,
        "stdout": printed,
        "stderr": done.stderr.decode(errors="replace")[-3000:],
    }, new_env


def _run_python(block: str, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-"], input=block.encode(), cwd=REPO, env=env, capture_output=True, timeout=300
    )
    return {
        "rc": done.returncode,
        "stdout": done.stdout.decode(errors="replace"),
        "stderr": done.stderr.decode(errors="replace")[-3000:],
    }


def _run_mcp_config(block: str, env: dict[str, str]) -> dict[str, Any]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    servers = json.loads(block)["mcpServers"]
    out: dict[str, Any] = {"rc": 0, "stdout": "", "stderr": "", "tools": {}}

    async def exercise(name: str, config: dict[str, Any]) -> None:
        params = StdioServerParameters(
            command=config["command"],
            args=config.get("args", []),
            env={**env, **config.get("env", {})},
            cwd=REPO,
        )
        async with Client(params, read_timeout_seconds=120) as client:
            tools = await client.list_tools()
            context = await client.call_tool("get_context", {"query": "package manager"})
            out["tools"][name] = sorted(t.name for t in tools.tools)
            out["stdout"] += str(getattr(context.content[0], "text", "")) + "\n"
            if context.is_error:
                out["rc"] = 1

    try:
        for name, config in servers.items():
            asyncio.run(exercise(name, config))
    except Exception as exc:  # reported, not raised: the test shows it
        out.update(rc=1, stderr=f"{type(exc).__name__}: {exc}")
    return out


def main(spec_path: str, result_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    loopback_up()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORY_", "OPENAI_"))}
    base.pop("DATABASE_URL", None)
    base.pop("REDIS_URL", None)
    base.update(MEMORY_DATA_DIR=spec["data_dir"], MEMORY_LOG_FORMAT="json", PYTHONPATH=str(REPO))
    results: list[dict[str, Any]] = []
    fake = FakeOpenAI().start()
    fake.script(*[Reply(**reply) for reply in spec.get("model_script", [])])
    log = open(spec["log"], "ab")  # noqa: SIM115 - the stack's log, for the test to show
    stack = subprocess.Popen(
        [sys.executable, "-m", "memctl.cli", "up"],
        cwd=REPO,
        env=base,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while not _healthy():
            if stack.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the stack did not come up (exit {stack.poll()}); see {spec['log']}")
            time.sleep(0.5)
        env = {**base, "OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-readme-fake-not-a-secret-000"}
        for block in spec["blocks"]:
            if block["lang"] == "sh":
                result, env = _run_sh(block["text"], env)
            elif block["lang"] == "python":
                result = _run_python(block["text"], env)
            else:
                result = _run_mcp_config(block["text"], env)
            results.append({"line": block["line"], **result})
    finally:
        os.killpg(stack.pid, signal.SIGTERM)
        try:
            stack.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(stack.pid, signal.SIGKILL)
        log.close()
        fake.stop()
    Path(result_path).write_text(json.dumps({"blocks": results, "model_calls": fake.calls}, default=str))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

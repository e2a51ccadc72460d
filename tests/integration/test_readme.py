"""Every fenced block of README.md is run as printed (or named below with the test that covers it), so the
README cannot drift from the product: the recipes of "Using it from an agent" run against the stack `make run`
starts, at the address the README prints, inside a network namespace of their own (`tests/readme_sandbox.py`)."""

from __future__ import annotations

import ctypes
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.services import REPO, die_with_parent

pytestmark = [pytest.mark.integration, pytest.mark.slow]

README = REPO / "README.md"
RUN_LANGS = {"sh", "python", "json"}
# blocks not run here, each with what covers it instead
COVERED_ELSEWHERE = {
    "make run": "`make run`: tests/integration/test_make_run.py runs it; `make test`: what CI runs (.ci/run)",
    "docker compose": "no Docker engine on these machines: tests/unit/test_compose_file.py checks the file and the image",
    '"event": "task.finished"': "an example log line: parsed below, and tests/integration/test_extraction_pipeline.py checks the real ones",
}
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
CLONE_NEWNET = 0x40000000


@dataclass
class Block:
    lang: str
    text: str
    line: int


def blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    return [Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in _FENCE.finditer(text)]


def _covered(block: Block) -> str | None:
    return next((why for marker, why in COVERED_ELSEWHERE.items() if marker in block.text), None)


def _enter_network_namespace() -> None:
    die_with_parent()
    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET)")


def test_every_readme_block_is_run_or_named_with_what_covers_it() -> None:
    for block in blocks():
        if block.lang in RUN_LANGS and not _covered(block):
            continue
        assert _covered(block) or block.lang == "", (
            f"README.md:{block.line}: a ```{block.lang} block nothing runs"
        )
        if '"event": "task.finished"' in block.text:
            line = json.loads(block.text)
            assert line["event"] == "task.finished" and "outcome" in line


def test_the_agent_recipes_run_as_printed_against_make_runs_stack(tmp_path: Path) -> None:
    run = [b for b in blocks() if b.lang in RUN_LANGS and not _covered(b)]
    assert [b.lang for b in run] == ["sh", "python", "json", "python", "python"], [b.line for b in run]
    spec = {
        "data_dir": str(tmp_path / "md"),
        "log": str(tmp_path / "stack.log"),
        "blocks": [b.__dict__ for b in run],
        # the model of the Agents SDK recipe: it calls recall_memory, then answers
        "model_script": [
            {
                "kind": "ok",
                "style": "tool_call",
                "tool_name": "recall_memory",
                "content": '{"query": "editor"}',
            },
            {"kind": "ok", "content": "You use Helix."},
        ],
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.readme_sandbox",
            str(tmp_path / "spec.json"),
            str(tmp_path / "result.json"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        preexec_fn=_enter_network_namespace,
    )
    log_tail = (
        (tmp_path / "stack.log").read_text(errors="replace")[-3000:]
        if (tmp_path / "stack.log").exists()
        else ""
    )
    assert done.returncode == 0, f"{done.stderr[-3000:]}\n--- stack log ---\n{log_tail}"
    result = json.loads((tmp_path / "result.json").read_text())
    for block, outcome in zip(run, result["blocks"], strict=True):
        assert outcome["rc"] == 0, (
            f"README.md:{block.line} failed:\n{outcome['stdout'][-2000:]}\n{outcome['stderr']}"
        )
    keys, plain, mcp, langgraph, agents = result["blocks"]
    # the key, the explicit memory, search and context through curl
    assert '"op":"add"' in keys["stdout"] and "Uses pnpm" in keys["stdout"] and '"context"' in keys["stdout"]
    # plain Python: the procedural memory it remembered is in the context block it printed
    assert "Answer in French" in plain["stdout"]
    # MCP: the configured command serves every tool, and get_context answered from the memory
    assert mcp["tools"]["memory"] == ["forget", "get_context", "list_memories", "recall", "remember"]
    assert "pnpm" in mcp["stdout"]
    # LangGraph: the graph answered from the store
    assert langgraph["stdout"].strip() == "Uses the Helix editor"
    # Agents SDK: the model called recall_memory, whose answer (from the memory API) it was sent back
    assert agents["stdout"].strip() == "You use Helix."
    tool_answers = [
        m["content"] for call in result["model_calls"] for m in call["messages"] if m["role"] == "tool"
    ]
    assert any("Uses the Helix editor" in answer for answer in tool_answers), tool_answers

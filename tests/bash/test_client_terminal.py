"""Bash through the ACP client's terminal (issue 17): a spawned `sidecar serve --acp` whose client offered
`terminal: true`, a test client that runs the argv `terminal/create` hands it (as an editor would: its own
environment, its own process group, output kept up to `outputByteLimit`), the strict scripted model."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from sidecar.testing.scripted_server import ScriptedModelServer
from sidecar.tools.bash import sandbox
from tests.bash.test_bash_e2e import result_text
from tests.bash.test_bash_runtime import procs_running
from tests.conftest import TEST_API_KEY, Harness, start_harness

CLIENT_SECRET = "client-side-token-7f3a9c"


@dataclass
class Term:
    proc: asyncio.subprocess.Process
    limit: int
    buffer: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    pump: asyncio.Task[None] | None = None

    def add(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > self.limit:
            cut = len(self.buffer) - self.limit
            while cut < len(self.buffer) and (self.buffer[cut] & 0xC0) == 0x80:
                cut += 1  # never in the middle of a UTF-8 character (ACP: truncate at a char boundary)
            del self.buffer[:cut]
            self.truncated = True

    def exit_status(self) -> dict[str, Any] | None:
        code = self.proc.returncode
        if code is None:
            return None
        if code < 0:
            return {"exitCode": None, "signal": signal.Signals(-code).name}
        return {"exitCode": code, "signal": None}


class TerminalClient:
    """ACP `terminal/*` implemented by running the argv it receives; every call recorded."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.terminals: dict[str, Term] = {}
        self.created = 0
        self.create_delay = 0.0  # a slow editor: terminal/create answered this much later
        self.failing: set[str] = set()  # methods answered with a JSON-RPC error
        # An editor whose own environment holds secrets: nothing of it may reach the command.
        self.env = {**os.environ, "ANTHROPIC_API_KEY": TEST_API_KEY, "CLIENT_TOKEN": CLIENT_SECRET}

    def install(self, harness: Harness) -> None:
        for method in ("create", "output", "wait_for_exit", "kill", "release"):
            harness.process.handlers[f"terminal/{method}"] = self._handler(method)

    def _handler(self, method: str) -> Any:
        impl = getattr(self, method)

        async def handle(params: dict[str, Any]) -> Any:
            self.calls.append((f"terminal/{method}", params))
            if f"terminal/{method}" in self.failing:
                raise RuntimeError(f"the editor's terminal broke ({method})")  # answered as -32603
            return await impl(params)

        return handle

    def methods(self) -> list[str]:
        return [m for m, _ in self.calls]

    def params(self, method: str) -> list[dict[str, Any]]:
        return [p for m, p in self.calls if m == method]

    async def create(self, params: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(self.create_delay)
        proc = await asyncio.create_subprocess_exec(
            params["command"], *params.get("args", []), cwd=params.get("cwd"), env=self.env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        term = Term(proc, int(params.get("outputByteLimit") or 1 << 30))
        term.pump = asyncio.create_task(self._pump(term))
        self.created += 1
        terminal_id = f"term-{self.created}"
        self.terminals[terminal_id] = term
        return {"terminalId": terminal_id}

    async def _pump(self, term: Term) -> None:
        assert term.proc.stdout is not None
        while chunk := await term.proc.stdout.read(65536):
            term.add(chunk)

    async def output(self, params: dict[str, Any]) -> dict[str, Any]:
        term = self.terminals[params["terminalId"]]
        result: dict[str, Any] = {"output": term.buffer.decode("utf-8", errors="replace"),
                                  "truncated": term.truncated}
        if (status := term.exit_status()) is not None:
            result["exitStatus"] = status
        return result

    async def wait_for_exit(self, params: dict[str, Any]) -> dict[str, Any]:
        term = self.terminals[params["terminalId"]]
        await term.proc.wait()
        if term.pump is not None:
            await term.pump
        status = term.exit_status()
        assert status is not None
        return status

    async def kill(self, params: dict[str, Any]) -> dict[str, Any]:
        term = self.terminals[params["terminalId"]]
        if term.proc.returncode is None:
            try:
                os.killpg(term.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return {}

    async def release(self, params: dict[str, Any]) -> dict[str, Any]:
        term = self.terminals.pop(params["terminalId"])
        if term.proc.returncode is None:
            os.killpg(term.proc.pid, signal.SIGKILL)
        return {}

    async def close(self) -> None:
        for term in self.terminals.values():
            if term.proc.returncode is None:
                os.killpg(term.proc.pid, signal.SIGKILL)
                await term.proc.wait()


@pytest_asyncio.fixture
async def terminal_sidecar(
    sidecar_env: dict[str, str], model_server: ScriptedModelServer, tmp_path: Path
) -> AsyncIterator[tuple[Harness, TerminalClient]]:
    settings = {"secretEnvVars": ["CLIENT_TOKEN"]}
    harness = await start_harness("acp", {**sidecar_env, "CLIENT_TOKEN": CLIENT_SECRET}, model_server, tmp_path,
                                  client_capabilities={"terminal": True}, settings=settings)
    client = TerminalClient()
    client.install(harness)
    yield harness, client
    await harness.process.close()
    await client.close()


def bash(command: str, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_use", "name": "Bash", "input": {"command": command, **extra}}


async def run_calls(harness: Harness, model: ScriptedModelServer, session: str,
                    calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    model.add_turns([{"content": [c]} for c in calls] + [{"content": [{"type": "text", "text": "done"}]}])
    assert await harness.prompt(session, "go") == "end_turn"
    return [r for req in model.message_requests()[-len(calls):] for r in req.tool_results()]


async def test_output_reaches_the_model_and_the_terminal_is_embedded_in_the_tool_call(
    terminal_sidecar: tuple[Harness, TerminalClient], workspace: Path, model_server: ScriptedModelServer
) -> None:
    harness, client = terminal_sidecar
    (workspace / "sub").mkdir()
    session = await harness.new_session(workspace)
    results = await run_calls(harness, model_server, session, [
        bash("printf 'one\\n'; echo two >&2; exit 3"),
        bash("cd sub"),
        bash("pwd"),
    ])
    first = result_text(results[0])
    assert first.startswith("one\ntwo\nExit code 3 ("), first
    assert results[0].get("is_error") is True
    assert "Working directory is now" in result_text(results[1])
    assert result_text(results[2]).startswith(f"{(workspace / 'sub').resolve()}\nExit code 0 ("), results[2]
    # Every command went through the client: created, waited for, read, released; none killed.
    creates = client.params("terminal/create")
    assert len(creates) == 3 and len(client.params("terminal/release")) == 3
    assert client.params("terminal/kill") == []
    assert creates[0]["command"].endswith("/env") and creates[0]["args"][0] == "-i"
    assert creates[0]["cwd"] == str(workspace.resolve()) and creates[0]["outputByteLimit"] > 0
    # The editor's card shows the terminal while it runs and after it ended.
    updates = [u for u in harness.process.updates_for(session, "tool_call_update")]
    terminal_ids = {c["terminalId"] for u in updates for c in u.get("content") or [] if c["type"] == "terminal"}
    assert terminal_ids == {"term-1", "term-2", "term-3"}
    final = [u for u in updates if u.get("status") in ("completed", "failed")]
    assert [{k: v for k, v in u["content"][0].items() if k != "_meta"} for u in final] == [
        {"type": "terminal", "terminalId": f"term-{i}"} for i in (1, 2, 3)]
    assert final[0]["status"] == "failed" and final[0]["content"][1]["content"]["text"].startswith("Exit code 3")
    running = [u for u in updates if u.get("status") == "in_progress" and u.get("content")]
    assert running[0]["content"] == [{"type": "terminal", "terminalId": "term-1"}]


async def test_no_secret_reaches_the_command_from_the_sidecar_or_the_client(
    terminal_sidecar: tuple[Harness, TerminalClient], workspace: Path, model_server: ScriptedModelServer
) -> None:
    harness, client = terminal_sidecar
    session = await harness.new_session(workspace)
    [result] = await run_calls(harness, model_server, session, [bash("env")])
    text = result_text(result)
    assert "TMPDIR=" in text and "GIT_TERMINAL_PROMPT=0" in text, text  # the sidecar's scrubbed environment
    for leak in ("ANTHROPIC_API_KEY", "CLIENT_TOKEN", TEST_API_KEY, CLIENT_SECRET):
        assert leak not in text
    # Nor does the client see a secret, or any value of the environment, in what it is asked to run: the
    # environment comes in a file only this user can read, which the command's loader deletes.
    create = client.params("terminal/create")[0]
    asked = " ".join([create["command"], *create["args"]])
    assert TEST_API_KEY not in asked and CLIENT_SECRET not in asked
    assert "TMPDIR=" not in asked and "PATH=" not in asked
    env_file = Path(create["args"][create["args"].index("-c") + 2])
    assert env_file.name.endswith(".env") and not env_file.exists()


async def test_long_output_is_bounded_as_when_the_sidecar_runs_it(
    terminal_sidecar: tuple[Harness, TerminalClient], workspace: Path, model_server: ScriptedModelServer
) -> None:
    """2.6 MB of numbered lines: the client keeps only its last MiB, yet the model gets the first lines
    (read while the command ran), the last lines and a marker naming the saved file, within 30,000
    characters."""
    harness, _ = terminal_sidecar
    session = await harness.new_session(workspace)
    [result] = await run_calls(harness, model_server, session, [bash("seq 1 30000; sleep 1; seq 30001 450000")])
    text = result_text(result)
    assert len(text) <= 30_000 + 200
    assert text.startswith("1\n2\n3\n")
    assert "\n450000\nExit code 0 (" in text
    assert "[... output cut: more than" in text and "saved at" in text
    saved = Path(text.split("saved at ", 1)[1].split(";", 1)[0])
    kept = saved.read_text()
    assert kept.startswith("1\n2\n") and kept.endswith("449999\n450000\n")


@pytest.mark.parametrize("how", ["session/cancel", "$/cancel_request"])
async def test_cancel_kills_and_releases_the_terminal_at_once(
    terminal_sidecar: tuple[Harness, TerminalClient], workspace: Path, model_server: ScriptedModelServer,
    how: str,
) -> None:
    harness, client = terminal_sidecar
    model_server.add_turns([{"content": [bash("sleep 63.25")]}, {"content": [{"type": "text", "text": "x"}]}])
    session = await harness.new_session(workspace)
    proc = harness.process
    prompt_id = 10_000  # sent by hand, so $/cancel_request can name it
    answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    proc._pending[prompt_id] = answer
    await proc.send({"jsonrpc": "2.0", "id": prompt_id, "method": "session/prompt",
                     "params": {"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}})
    for _ in range(600):
        if procs_running("sleep 63.25"):
            break
        await asyncio.sleep(0.05)
    assert procs_running("sleep 63.25")
    started = time.monotonic()
    if how == "session/cancel":
        await proc.notify("session/cancel", {"sessionId": session})
    else:
        await proc.notify("$/cancel_request", {"requestId": prompt_id})
    assert (await asyncio.wait_for(answer, 10))["stopReason"] == "cancelled"
    took = time.monotonic() - started
    print(f"cancel ({how}) answered after {took * 1000:.0f} ms")
    assert took < 0.5, f"cancel answered after {took:.3f} s"
    assert client.methods()[-2:] == ["terminal/kill", "terminal/release"]
    for _ in range(40):
        if not procs_running("sleep 63.25"):
            break
        await asyncio.sleep(0.05)
    assert procs_running("sleep 63.25") == []


@pytest.mark.parametrize("broken", ["terminal/wait_for_exit", "terminal/create"])
async def test_a_client_error_is_an_error_result_and_leaves_no_process(
    terminal_sidecar: tuple[Harness, TerminalClient], workspace: Path, model_server: ScriptedModelServer,
    broken: str,
) -> None:
    harness, client = terminal_sidecar
    client.failing.add(broken)
    session = await harness.new_session(workspace)
    [result] = await run_calls(harness, model_server, session, [bash("sleep 61.75; echo late")])
    text = result_text(result)
    assert result.get("is_error") is True
    assert f"{broken} answered error -32603: the editor's terminal broke" in text, text
    if broken == "terminal/create":
        assert text.startswith("The editor could not start the command in its terminal") and "Nothing ran" in text
        assert client.methods() == ["terminal/create"]
    else:
        assert "the command was stopped" in text
        assert client.methods()[-2:] == ["terminal/kill", "terminal/release"]
    assert procs_running("sleep 61.75") == []
    # The session is not stuck: the next prompt runs a command again.
    client.failing.clear()
    [again] = await run_calls(harness, model_server, session, [bash("echo fine")])
    assert result_text(again).startswith("fine\nExit code 0 (")


@pytest.mark.skipif(not sandbox.available(), reason=f"no sandbox: {sandbox.unavailable_reason()}")
async def test_a_read_only_command_is_still_sandboxed_read_only(
    terminal_sidecar: tuple[Harness, TerminalClient], workspace: Path, model_server: ScriptedModelServer
) -> None:
    """`git status` runs without asking; with a stale index it would rewrite `.git/index` (the control at
    the end shows it does); in the client's terminal the sandbox keeps the workspace read-only."""
    harness, client = terminal_sidecar

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(workspace), *args], check=True, capture_output=True)

    (workspace / "hello.py").write_text("print('hi')\n")
    git("init", "-q")
    git("add", "hello.py")
    os.utime(workspace / "hello.py", (time.time() + 5, time.time() + 5))  # the index's stat data is stale
    index = workspace / ".git" / "index"
    before = index.read_bytes(), index.stat().st_mtime_ns
    session = await harness.new_session(workspace)
    [result] = await run_calls(harness, model_server, session, [bash("git status --short")])
    assert "hello.py" in result_text(result) and not result.get("is_error")
    assert harness.permission_requests == []
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
    args = client.params("terminal/create")[0]["args"]
    assert sandbox.bubblewrap() in args and "--ro-bind" in args
    writable = [args[i + 1] for i, a in enumerate(args) if a == "--bind"]
    assert writable and not [w for w in writable if Path(w).is_relative_to(workspace.resolve())], writable
    git("status", "--short")
    assert index.stat().st_mtime_ns != before[1]  # control: outside the sandbox git status writes it


async def test_background_commands_stay_local(
    terminal_sidecar: tuple[Harness, TerminalClient], workspace: Path, model_server: ScriptedModelServer
) -> None:
    harness, client = terminal_sidecar
    session = await harness.new_session(workspace)
    [result] = await run_calls(harness, model_server, session, [bash("echo bg", run_in_background=True)])
    assert "running in the background with ID: bash_1" in result_text(result)
    assert client.calls == []


async def test_a_timeout_kills_the_terminal_and_says_so(
    terminal_sidecar: tuple[Harness, TerminalClient], workspace: Path, model_server: ScriptedModelServer
) -> None:
    harness, client = terminal_sidecar
    session = await harness.new_session(workspace)
    [result] = await run_calls(harness, model_server, session, [bash("echo started; sleep 62.5", timeout=1000)])
    text = result_text(result)
    assert result.get("is_error") is True
    assert text.startswith("started\nTimed out after 1000 ms ("), text
    assert client.methods()[-4:] == ["terminal/kill", "terminal/wait_for_exit", "terminal/output",
                                     "terminal/release"]
    assert procs_running("sleep 62.5") == []


async def test_a_cancel_while_the_editor_creates_the_terminal_still_kills_it(
    terminal_sidecar: tuple[Harness, TerminalClient], workspace: Path, model_server: ScriptedModelServer
) -> None:
    """The turn is cancelled before terminal/create is answered: the prompt answers at once, and once the
    terminal's id arrives it is killed and released (the command does not run on in the editor)."""
    harness, client = terminal_sidecar
    client.create_delay = 1.0
    model_server.add_turns([{"content": [bash("sleep 64.25")]}, {"content": [{"type": "text", "text": "x"}]}])
    session = await harness.new_session(workspace)
    prompt = asyncio.create_task(harness.prompt(session, "wait"))
    for _ in range(600):
        if client.params("terminal/create"):
            break
        await asyncio.sleep(0.02)
    started = time.monotonic()
    await harness.process.notify("session/cancel", {"sessionId": session})
    assert await asyncio.wait_for(prompt, 10) == "cancelled"
    assert time.monotonic() - started < 0.5
    for _ in range(100):
        if client.methods()[-2:] == ["terminal/kill", "terminal/release"]:
            break
        await asyncio.sleep(0.05)
    assert client.methods() == ["terminal/create", "terminal/kill", "terminal/release"]
    assert client.terminals == {} and procs_running("sleep 64.25") == []


async def test_a_replayed_session_shows_the_output_instead_of_a_terminal_that_is_gone(
    terminal_sidecar: tuple[Harness, TerminalClient], workspace: Path, model_server: ScriptedModelServer,
    sidecar_env: dict[str, str], tmp_path: Path,
) -> None:
    harness, _ = terminal_sidecar
    session = await harness.new_session(workspace)
    await run_calls(harness, model_server, session, [bash("printf 'one\\n'; echo two >&2; exit 3")])
    fresh = await start_harness("acp", sidecar_env, model_server, tmp_path)  # the editor restarted
    try:
        await fresh.process.request("session/load", {"sessionId": session, "cwd": str(workspace), "mcpServers": []})
        updates = fresh.process.updates_for(session, "tool_call_update")
    finally:
        await fresh.process.close()
    assert not [c for u in updates for c in u.get("content") or [] if c["type"] == "terminal"]
    final = next(u for u in updates if u.get("status") == "failed")
    texts = [c["content"]["text"] for c in final["content"]]
    assert texts[0] == "one\ntwo" and texts[1].startswith("Exit code 3 (")

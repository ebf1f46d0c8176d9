"""The Bash tool running real processes: output, exit codes, cwd persistence, timeouts, cancel, secrets."""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import pytest

from sidecar.errors import ToolError
from sidecar.session import Session
from sidecar.tools.bash import runner
from sidecar.tools.bash.bash import Bash, BashInput
from sidecar.tools.bash.bash_output import BashOutput, BashOutputInput
from sidecar.tools.bash.kill_shell import KillShell, KillShellInput
from sidecar.tools.bash.shells import shells_of
from tests.bash.conftest import make_ctx


async def run_bash(
    session: Session, command: str, progress: list[str] | None = None, **kw: object
) -> tuple[str, bool]:
    tool = Bash()
    inp = BashInput(command=command, **kw)  # type: ignore[arg-type]
    ctx = make_ctx(session, progress=progress)
    await tool.validate(inp, ctx)
    await tool.check_permission(inp, ctx)
    out = await tool.run(inp, ctx)
    return out.joined_text(), out.is_error


async def until_running(marker: str, count: int, within: float = 10.0) -> None:
    """Wait until ``count`` live processes carry ``marker`` (the command under test has started)."""
    for _ in range(int(within / 0.05)):
        if len(procs_running(marker)) == count:
            return
        await asyncio.sleep(0.05)
    assert len(procs_running(marker)) == count


def procs_running(marker: str, anywhere: bool = False) -> list[int]:
    """Live (non-zombie) processes whose command line starts with ``marker`` (works across PID namespaces);
    ``anywhere``: mentions it anywhere (the command's bash, or its sandbox, from the moment it starts,
    before it has exec'd the program itself)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().split(") ")[1][0]
        except OSError:
            continue
        if (marker in cmdline if anywhere else cmdline.startswith(marker)) and state != "Z":
            found.append(int(entry))
    return found


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


async def test_output_and_exit_code(session: Session) -> None:
    text, err = await run_bash(session, "echo hello; echo oops >&2; exit 3")
    assert text.startswith("hello\noops\nExit code 3 (")
    assert err


async def test_stdout_stderr_interleaved_in_order(session: Session) -> None:
    text, _ = await run_bash(session, "echo 1; echo 2 >&2; echo 3; echo 4 >&2")
    assert text.splitlines()[:4] == ["1", "2", "3", "4"]


async def test_ansi_stripped(session: Session) -> None:
    text, _ = await run_bash(session, r"printf '\033[31mred\033[0m plain\n'")
    assert text.splitlines()[0] == "red plain"


async def test_cd_persists_env_does_not(session: Session, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    text, _ = await run_bash(session, "cd sub && export FOO=bar")
    assert f"Working directory is now {workspace / 'sub'}." in text
    text, _ = await run_bash(session, 'pwd; echo "foo=${FOO:-unset}"')
    assert text.splitlines()[:2] == [str(workspace / "sub"), "foo=unset"]


async def test_cd_outside_workspace_is_not_kept(session: Session, workspace: Path) -> None:
    text, _ = await run_bash(session, "cd /")
    assert "outside the workspace roots" in text
    text, _ = await run_bash(session, "pwd")
    assert text.splitlines()[0] == str(workspace)


async def test_credentials_removed_from_env(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-should-not-leak-123")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok-secret-should-not-leak-456")
    monkeypatch.setenv("SIDECAR_TEST_VISIBLE", "visible")
    text, _ = await run_bash(session, "env")
    assert "should-not-leak" not in text
    assert "SIDECAR_TEST_VISIBLE=visible" in text


async def test_timeout_kills_child_ignoring_sigterm(session: Session, workspace: Path) -> None:
    script = "trap '' TERM; (trap '' TERM; exec sleep 61.25) & wait"
    started = time.monotonic()
    text, err = await run_bash(session, script, timeout=500)
    assert err
    assert "Timed out after 500 ms" in text
    assert time.monotonic() - started < 10
    await asyncio.sleep(0.2)
    assert procs_running("sleep 61.25") == []


async def test_cancel_kills_the_process_group(session: Session, workspace: Path) -> None:
    task = asyncio.create_task(run_bash(session, "sleep 62.5 & sleep 62.75; wait"))
    await until_running("sleep 62.", 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)
    assert procs_running("sleep 62.") == []


async def test_cancel_does_not_wait_for_a_command_that_ignores_sigterm(session: Session) -> None:
    # The user pressed stop: the group gets SIGKILL after a short grace, not the 2 s a timeout allows.
    task = asyncio.create_task(run_bash(session, "trap '' TERM; sleep 63.25 & trap '' TERM; sleep 63.5; wait"))
    await until_running("sleep 63.", 2)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    waited = time.monotonic() - started
    assert procs_running("sleep 63.") == []  # gone when the cancellation returns, not later
    print(f"cancel of a SIGTERM-ignoring command: {waited * 1000:.0f} ms")
    assert waited < runner.KILL_GRACE_S  # never the timeout's grace (a wide bound: the goal is 200 ms)


async def test_large_output_is_bounded_and_saved(session: Session) -> None:
    text, err = await run_bash(session, "seq 1 200000")
    assert not err
    assert len(text) <= 30_000 + 200
    assert text.startswith("1\n2\n3\n")
    assert "200000\nExit code 0" in text
    saved = Path(text.split("The whole output is saved at ")[1].split(";")[0])
    lines = (await asyncio.to_thread(saved.read_text)).splitlines()
    assert lines[-1] == "200000"
    assert len(lines) == 200000


async def test_one_gigabyte_of_output(session: Session) -> None:
    text, err = await run_bash(session, "yes | head -c 1073741824", timeout=600000)
    assert not err
    assert "1,073,741,824 bytes in all" in text
    assert text.startswith("y\ny\n")
    assert len(text) < 31_000


async def test_saved_output_holds_no_secret(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    # The saved file is redacted piece by piece: one key straddles the first 1 MiB piece's end.
    key = "sk-ant-saved-output-key-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    command = f"head -c {(1 << 20) - 10} /dev/zero | tr '\\0' x; echo {key}; seq 1 20000; echo {key}"
    text, err = await run_bash(session, command)
    assert not err, text[-2000:]
    saved = Path(text.split("The whole output is saved at ")[1].split(";")[0])
    data = await asyncio.to_thread(saved.read_bytes)
    assert key.encode() not in data
    assert data.count(b"[REDACTED]") == 2
    assert data.startswith(b"x" * ((1 << 20) - 10) + b"[REDACTED]\n1\n2\n")
    assert data.endswith(b"\n20000\n[REDACTED]\n")


def test_redact_file_matches_redact_bytes_at_every_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import random

    from sidecar import secrets

    keys = ["KEY-0123456789", "KEY-0123456789-LONGER", "other-secret"]
    monkeypatch.setattr(secrets, "secret_values", lambda: sorted(keys, key=len, reverse=True))
    monkeypatch.setattr(secrets, "_FILE_PIECE", 16)  # every secret cut by some piece's end
    rng = random.Random(7)
    path = tmp_path / "out.txt"
    for _ in range(300):
        words = [rng.choice([*keys, "KEY-0123", "other", "x" * rng.randint(0, 40), "\n"]) for _ in range(20)]
        data = "".join(words).encode()
        path.write_bytes(data)
        inode = path.stat().st_ino
        assert secrets.redact_file(path) == (secrets.redact_bytes(data) != data)
        assert path.read_bytes() == secrets.redact_bytes(data)
        if secrets.redact_bytes(data) == data:
            assert path.stat().st_ino == inode  # a file without a secret is only read
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_a_secret_across_the_scan_windows_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan maps the file a window at a time: a key cut by a window's end is found whole in the next."""
    from sidecar import secrets

    key = "KEY-0123456789-across"
    monkeypatch.setattr(secrets, "secret_values", lambda: [key])
    monkeypatch.setattr(secrets, "_MAP_WINDOW", mmap_granularity())
    window = secrets._MAP_WINDOW
    path = tmp_path / "out.txt"
    for at in [*range(window - len(key), window + 1), 2 * window - 1, 3 * window - len(key)]:
        data = bytearray(b"x" * (3 * window))
        data[at : at + len(key)] = key.encode()
        path.write_bytes(bytes(data[: 3 * window]))
        assert secrets.redact_file(path), at
        assert key.encode() not in path.read_bytes()
    path.write_bytes(b"x" * (3 * window) + key.encode()[:-1])
    assert not secrets.redact_file(path)


def mmap_granularity() -> int:
    import mmap

    return mmap.ALLOCATIONGRANULARITY


async def test_progress_streams_while_running(session: Session) -> None:
    progress: list[str] = []
    await run_bash(session, "echo first; sleep 1; echo second", progress=progress)
    assert any("first" in p and "second" not in p for p in progress)


async def test_background_shell_polled_and_killed(session: Session, workspace: Path) -> None:
    server = workspace / "srv.py"
    server.write_text(
        "import http.server, socketserver, sys\n"
        "class H(http.server.SimpleHTTPRequestHandler):\n"
        "    def log_message(self, *a): print('GET', self.path, flush=True)\n"
        "with socketserver.TCPServer(('127.0.0.1', 0), H) as s:\n"
        "    print('PORT', s.server_address[1], flush=True)\n"
        "    s.serve_forever()\n"
    )
    import sys

    text, _ = await run_bash(session, f"{sys.executable} srv.py", run_in_background=True)
    assert "Command running in the background with ID: bash_1" in text
    out = BashOutput()
    port = None
    for _ in range(100):
        res = await out.run(BashOutputInput(bash_id="bash_1"), make_ctx(session))
        if "PORT" in res.joined_text():
            port = int(res.joined_text().split("PORT ")[1].split()[0])
            assert "Status: running" in res.joined_text()
            break
        await asyncio.sleep(0.1)
    assert port is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /hello HTTP/1.0\r\n\r\n")
    await writer.drain()
    await reader.read()
    writer.close()
    await asyncio.sleep(0.3)
    res = await out.run(BashOutputInput(bash_id="bash_1", filter="^GET"), make_ctx(session))
    assert res.joined_text().splitlines()[0] == "GET /hello"
    res = await out.run(BashOutputInput(bash_id="bash_1"), make_ctx(session))
    assert res.joined_text().startswith("(no new output)")
    killed = await KillShell().run(KillShellInput(shell_id="bash_1"), make_ctx(session))
    assert killed.joined_text().startswith("Shell bash_1 was killed")
    pid = shells_of(session).shells["bash_1"].running.pgid
    assert not pid_alive(pid)
    res = await out.run(BashOutputInput(bash_id="bash_1"), make_ctx(session))
    assert "Status: killed" in res.joined_text()


async def test_background_shells_end_with_session(session: Session, workspace: Path) -> None:
    await run_bash(session, "sleep 63.5", run_in_background=True)
    for _ in range(100):
        if procs_running("sleep 63.5"):
            break
        await asyncio.sleep(0.05)
    assert procs_running("sleep 63.5")
    await shells_of(session).close()
    await asyncio.sleep(0.2)
    assert procs_running("sleep 63.5") == []


async def test_unknown_shell_id_tells_the_model(session: Session) -> None:
    with pytest.raises(ToolError, match="No background shell 'bash_9'"):
        await BashOutput().run(BashOutputInput(bash_id="bash_9"), make_ctx(session))


async def test_timeout_out_of_range_refused(session: Session) -> None:
    with pytest.raises(ToolError, match="timeout must be between 1 and 600000"):
        await Bash().validate(BashInput(command="ls", timeout=700000), make_ctx(session))


def _pump_bytes(
    pieces: list[bytes], cap: int | None, tail_cap: int, tmp_path: Path, pipe: int = 0, on_loop: bool = False
) -> tuple[bytes, int]:
    """What ``OutputPump`` saves for ``pieces`` written one by one into its pipe (of ``pipe`` bytes).
    ``on_loop``: read on an event loop first, as a foreground command's pump is (a thread takes over
    past ``LOOP_HOLD_MAX`` bytes)."""
    import fcntl
    import threading

    from sidecar.tools.bash import runner

    read_fd, write_fd = os.pipe()
    if pipe:
        fcntl.fcntl(write_fd, 1031, pipe)  # F_SETPIPE_SZ, as runner.start does: the pump naps after small reads
    path = tmp_path / "out.txt"

    def write() -> None:
        for piece in pieces:
            os.write(write_fd, piece)
        os.close(write_fd)

    async def pump_on_loop() -> runner.OutputPump:
        pump = runner.OutputPump(read_fd, path, cap, tail_cap=tail_cap, loop=asyncio.get_running_loop())
        pump.start(on_loop=True)
        writer = threading.Thread(target=write)
        writer.start()
        assert pump.ended is not None
        await pump.ended
        writer.join()
        return pump

    if on_loop:
        pump = asyncio.run(pump_on_loop())
        assert pump.done.is_set()
        return path.read_bytes(), pump.total
    pump = runner.OutputPump(read_fd, path, cap, tail_cap=tail_cap)
    pump.start()
    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    pump.done.wait()
    return path.read_bytes(), pump.total


@pytest.mark.parametrize("tail_cap", [900_000, 1_500_000])
@pytest.mark.parametrize("on_loop", [False, True])
@pytest.mark.parametrize("pipe", [0, 1 << 20])
@pytest.mark.parametrize("cap", [None, 3_000_000, 500_000, 0])
def test_pump_file_is_head_gap_tail_with_escapes_stripped(tmp_path: Path, cap: int | None, pipe: int,
                                                          on_loop: bool, tail_cap: int) -> None:
    """A tail of ``_PIPE_TAIL_MIN`` or more is held in pipes: the middle it drops was never read, so it is
    counted as written, escapes included (the rest is exact); a smaller one in the ring, all exact."""
    import random

    rng = random.Random(4)
    pieces: list[bytes] = []
    plain: list[bytes] = []
    for i in range(400):
        if i % 3:
            text = f"line {i} ".encode() * rng.randint(1, 4000) + b"\n"
            pieces.append(text)
            plain.append(text)
        else:  # coloured, cut at random places (escapes split across writes)
            text = f"\x1b[3{i % 8}mred {i}\x1b[0m \x1b]0;title\x07ok\n".encode() * rng.randint(1, 50)
            cut = sorted(rng.sample(range(1, len(text)), 3))
            pieces += [text[: cut[0]], text[cut[0] : cut[1]], text[cut[1] : cut[2]], text[cut[2] :]]
            plain.append(f"red {i} ok\n".encode() * (text.count(b"\n")))
    whole = b"".join(plain)
    saved, total = _pump_bytes(pieces, cap, tail_cap, tmp_path, pipe, on_loop)
    if cap is None or len(whole) <= cap + tail_cap:
        assert total == len(whole)
        assert saved == whole
        return
    omitted = len(whole) - cap - tail_cap
    gap = re.escape(b"\n[... ") + rb"([\d,]+)" + re.escape(b" bytes omitted here ...]\n")
    found = re.fullmatch(re.escape(whole[:cap]) + gap + re.escape(whole[-tail_cap:]), saved, re.DOTALL)
    assert found is not None, "not the head, a gap and the tail"
    said = int(found.group(1).replace(b",", b""))
    escapes = len(b"".join(pieces)) - len(whole)
    if tail_cap < runner._PIPE_TAIL_MIN:
        assert said == omitted
    else:  # (bytes still held from the loop when the head is full go to the ring: then exact)
        assert omitted <= said <= omitted + escapes
    assert total == cap + said + tail_cap


@pytest.mark.parametrize("cap", [None, 100, 0])
def test_a_short_output_pumped_on_the_loop_is_whole_with_escapes_stripped(tmp_path: Path, cap: int | None) -> None:
    """Under ``LOOP_HOLD_MAX``: the pipe ends while the loop still reads it, and the loop writes the file."""
    pieces = [b"plain \x1b[3", b"1mred\x1b", b"[0m \x1b]0;ti", b"tle\x07ok\n", b"x" * 300 + b"\n"]
    whole = b"plain red ok\n" + b"x" * 300 + b"\n"
    saved, total = _pump_bytes(pieces, cap, 50, tmp_path, on_loop=True)
    assert total == len(whole)
    if cap is None:
        assert saved == whole
    else:
        omitted = len(whole) - cap - 50
        assert saved == whole[:cap] + f"\n[... {omitted:,} bytes omitted here ...]\n".encode() + whole[-50:]


def test_a_fast_output_is_read_in_a_fraction_of_its_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pump that reads the pipe whenever something is in it wakes once per write of the command (each a
    loop turn and a wake-up taken from the command's CPU). After a read that found the pipe nearly empty
    it naps, so `head`'s 8,192 writes of 8 KiB (each after a read of its own pipe) reach the file in far
    fewer reads, and whole."""
    import fcntl
    import subprocess

    reads: list[int] = []
    readv = os.readv

    def counted(fd: int, buffers: list[memoryview]) -> int:
        n = readv(fd, buffers)
        reads.append(n)
        return n

    monkeypatch.setattr(os, "readv", counted)
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)  # as runner.start sets it
    writer = subprocess.Popen(["bash", "-c", "yes | head -c 67108864"], stdout=write_fd)
    os.close(write_fd)
    path = tmp_path / "out"
    runner.OutputPump(read_fd, path, cap=None).run()
    assert writer.wait() == 0
    assert path.read_bytes() == b"y\n" * (1 << 25)
    assert len(reads) <= 8192 // 8, f"{len(reads)} reads for 8,192 writes"


def test_the_middle_of_a_long_output_is_moved_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the head the pump holds the tail in pipes: what a fast command writes is spliced there and on to
    /dev/null, never read into the sidecar. 48 MiB after a 1 MiB head, written 1 MiB at a time: most of it
    moved, the file the head, the gap and the exact tail, and no pipe of the pump's left open."""
    import fcntl
    import subprocess

    moved: list[int] = []
    read: list[int] = []
    splice, readv = os.splice, os.readv

    def counted_splice(src: int, dst: int, count: int, *args: object) -> int:
        n = splice(src, dst, count, *args)  # type: ignore[arg-type]
        if src == read_fd:
            moved.append(n)
        return n

    def counted_readv(fd: int, buffers: list[memoryview]) -> int:
        n = readv(fd, buffers)
        if fd == read_fd:
            read.append(n)
        return n

    monkeypatch.setattr(os, "splice", counted_splice)
    monkeypatch.setattr(os, "readv", counted_readv)
    read_fd, write_fd = os.pipe()
    fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    script = "import sys\nfor i in range(48):\n    sys.stdout.buffer.write(b'%02d' % i * (1 << 19))\n"
    writer = subprocess.Popen(["python3", "-c", script], stdout=write_fd)
    os.close(write_fd)
    fds_before = set(os.listdir("/proc/self/fd"))
    path = tmp_path / "out"
    runner.OutputPump(read_fd, path, cap=1 << 20, tail_cap=runner.TAIL_CAP).run()
    assert writer.wait() == 0
    whole = b"".join(b"%02d" % i * (1 << 19) for i in range(48))
    gap = f"\n[... {len(whole) - (1 << 20) - runner.TAIL_CAP:,} bytes omitted here ...]\n".encode()
    assert path.read_bytes() == whole[: 1 << 20] + gap + whole[-runner.TAIL_CAP :]
    assert sum(moved) + sum(read) == len(whole)
    assert sum(moved) > len(whole) // 2, f"{sum(moved):,} of {len(whole):,} bytes moved"
    assert set(os.listdir("/proc/self/fd")) <= fds_before


def test_a_tail_short_of_pipes_keeps_what_they_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pipes of the default size where TAIL_CAP was wanted (the user's pipe quota reached): the pump
    neither hangs nor makes more; the file is the head, a gap that counts the rest, and the last bytes."""
    import fcntl
    import subprocess

    monkeypatch.setattr(runner, "_TAIL_PIPES_MAX", 2)
    real_fcntl = fcntl.fcntl

    def no_bigger_pipes(fd: int, cmd: int, arg: int = 0) -> int:
        if cmd == fcntl.F_SETPIPE_SZ:
            raise PermissionError(1, "Operation not permitted")
        return real_fcntl(fd, cmd, arg)

    read_fd, write_fd = os.pipe()
    real_fcntl(write_fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    script = "import sys\nfor i in range(24):\n    sys.stdout.buffer.write(b'%02d' % i * (1 << 19))\n"
    writer = subprocess.Popen(["python3", "-c", script], stdout=write_fd)
    os.close(write_fd)
    monkeypatch.setattr(fcntl, "fcntl", no_bigger_pipes)
    fds_before = set(os.listdir("/proc/self/fd"))
    path = tmp_path / "out"
    pump = runner.OutputPump(read_fd, path, cap=1 << 20, tail_cap=runner.TAIL_CAP)
    pump.run()
    assert writer.wait() == 0
    whole = b"".join(b"%02d" % i * (1 << 19) for i in range(24))
    saved = path.read_bytes()
    found = re.fullmatch(rb"(.*)\n\[\.\.\. ([\d,]+) bytes omitted here \.\.\.\]\n(.*)", saved, re.DOTALL)
    assert found is not None
    head, said, kept = found.group(1), int(found.group(2).replace(b",", b"")), found.group(3)
    assert head == whole[: 1 << 20]
    assert 0 < len(kept) <= 2 * (64 << 10) and whole.endswith(kept)
    assert len(head) + said + len(kept) == len(whole) == pump.total
    assert set(os.listdir("/proc/self/fd")) <= fds_before


async def test_output_after_the_loop_hands_over_is_kept(session: Session) -> None:
    """A command still running after ``LOOP_HOLD_S`` is pumped on by a thread, from where the loop was."""
    text, err = await run_bash(session, f"echo first; sleep {runner.LOOP_HOLD_S * 3}; echo second")
    assert not err
    assert text.splitlines()[:2] == ["first", "second"]


@pytest.mark.parametrize(("command", "moves"), [
    ("ls", False), ("ls -la | head -3", False), ("git status", False), ("pwd; echo $(ls)", False),
    ("cd sub && ls", True), ("ls; cd ..", True), ("builtin cd sub", True), ("eval cd sub", True),
    ("pushd sub", True), ("popd", True), ("echo $(cd sub; pwd)", True), ("for d in a; do cd $d; done", True),
    ("touch x", True),  # not read-only: whatever it runs may move the shell (``source``, a function)
])
def test_what_may_move_the_shell(workspace: Path, command: str, moves: bool) -> None:
    from sidecar.shell.classify import Where, analyze
    from sidecar.tools.bash.bash import moves_the_shell

    assert moves_the_shell(analyze(command, Where(workspace))) is moves


async def test_a_read_only_cd_still_moves_the_shell_and_ls_leaves_it(session: Session, workspace: Path) -> None:
    """``ls`` runs without the cwd report (bash execs it), ``cd sub && ls`` with it."""
    (workspace / "sub").mkdir()
    (workspace / "sub" / "inner.txt").write_text("x")
    text, _ = await run_bash(session, "ls")
    assert text.splitlines()[0] == "sub" and "Working directory" not in text
    assert shells_of(session).cwd == workspace
    text, _ = await run_bash(session, "cd sub && ls")
    assert text.splitlines()[0] == "inner.txt"
    assert f"Working directory is now {workspace / 'sub'}." in text
    text, _ = await run_bash(session, "ls")
    assert text.splitlines()[0] == "inner.txt"
    assert list(session.store.tool_output_dir(session.id).glob("*.cwd")) == []


async def test_exit_codes_without_a_pidfd(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where there is no pidfd (not Linux, an old kernel) a thread waits for the command instead."""
    def no_pidfd(pid: int) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    text, err = await run_bash(session, "echo hello; exit 3")
    assert err and text.startswith("hello\nExit code 3 (")
    text, err = await run_bash(session, "true")
    assert not err and text.startswith("(no output)\nExit code 0 (")


def test_commands_on_two_event_loops_at_once(tmp_path: Path) -> None:
    """A process may run more than one loop (the LSP transport's and the main one): each command's exit is
    seen by the loop that started it."""
    import threading

    async def one(code: int) -> int | None:
        running = await runner.start(f"sleep 0.2; exit {code}", cwd=tmp_path, env=dict(os.environ),
                                     output_path=tmp_path / f"out-{code}.log", policy=None)
        await runner.run(running, 10_000)
        return running.exit_code

    codes: dict[int, int | None] = {}
    other = threading.Thread(target=lambda: codes.__setitem__(5, asyncio.run(one(5))))
    other.start()
    codes[6] = asyncio.run(one(6))
    other.join()
    assert codes == {5: 5, 6: 6}


@pytest.mark.parametrize(("command", "argv"), [
    ("ls", ["ls"]), ("ls -la src", ["ls", "-la", "src"]), ("git  status --short", ["git", "status", "--short"]),
    ("ls --color=auto a.b/c:d@e%f+g,h", ["ls", "--color=auto", "a.b/c:d@e%f+g,h"]),
    ("ls *.py", None), ("ls a?", None), ("ls [ab]", None), ("ls {a,b}", None), ("ls ~", None), ("ls $HOME", None),
    ("ls 'a b'", None), ('ls "a"', None), ("ls a\\ b", None), ("ls > x", None), ("ls; pwd", None),
    ("ls | head", None), ("ls && ls", None), ("ls # note", None), ("ls\nls", None), ("ls\tsrc", None),
    ("echo hi", None), ("pwd", None), ("test -d x", None), ("time ls", None), ("FOO=1 ls", None),
    ("./ls", None), ("/bin/ls", None), ("no-such-program-29", None), ("", None),
])
def test_what_runs_without_bash(command: str, argv: list[str] | None) -> None:
    plain = runner.plain_argv(command, dict(os.environ))
    assert (plain[0] if plain is not None else None) == argv


def test_bash_env_or_an_exported_function_keeps_bash() -> None:
    assert runner.plain_argv("ls", {**os.environ, "BASH_ENV": "/x"}) is None
    assert runner.plain_argv("ls", {**os.environ, "BASH_FUNC_ls%%": "() { echo not ls; }"}) is None


async def test_a_command_run_without_bash_sees_what_bash_would_export(session: Session, workspace: Path) -> None:
    """``printenv`` of plain words runs without bash; ``PWD`` and ``_`` are what bash would have exported,
    and the same command through bash (a pipe) agrees."""
    (workspace / "sub").mkdir()
    await run_bash(session, "cd sub")
    direct, _ = await run_bash(session, "printenv PWD _")
    piped, _ = await run_bash(session, "printenv PWD _ | cat")
    program = __import__("shutil").which("printenv")
    assert direct.splitlines()[:2] == [str(workspace / "sub"), program]
    assert piped.splitlines()[:1] == [str(workspace / "sub")]


async def test_a_started_command_ends_when_its_output_cannot_be_pumped(
        session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault after the command's process started (its output pump cannot start) ends that process: nothing
    else holds it, so it would run on unowned (here for a minute), its output read by no one."""
    def broken(self: runner.OutputPump, on_loop: bool = False) -> None:
        raise OSError("injected: no pump")

    monkeypatch.setattr(runner.OutputPump, "start", broken)
    with pytest.raises(OSError, match="injected"):
        await run_bash(session, "cd . && sleep 65.125")  # a cd: reports its directory, never a spare's
    assert await gone("sleep 65.125")


async def gone(marker: str) -> bool:
    """Whether every process mentioning ``marker`` ends soon (a killed sandbox's children take a moment)."""
    for _ in range(250):
        if not procs_running(marker, anywhere=True):
            return True
        await asyncio.sleep(0.02)
    return False

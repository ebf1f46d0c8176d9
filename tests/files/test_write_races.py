"""Writes that races and a full disk cannot misdirect or lose: a folder flipped between a real directory
and a symlink pointing outside the workspace during approved Writes and Edits; a disk that fills up; the
temp files a killed write left behind. Real files, real threads, a real tmpfs."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sidecar.workspace.textfile import TEMP_SUFFIX, remove_stale_temps
from tests.files.helpers import Agent, RecordingChannel


@dataclass
class InsideOnlyChannel(RecordingChannel):
    """A user who approves what lands in the workspace and rejects anything that names ``outside``."""

    outside: str = ""
    rejected: list[dict[str, Any]] = field(default_factory=list)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.requests.append((method, params))
        if self.outside in json.dumps(params):
            self.rejected.append(params)
            return {"outcome": {"outcome": "selected", "optionId": "reject_once"}}
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class Flipper(threading.Thread):
    """Swaps ``ws/sub`` between the real folder and a symlink to ``outside`` (atomically, with
    ``renameat2(RENAME_EXCHANGE)``, so the name always exists), as fast as it can."""

    def __init__(self, sub: Path, outside: Path) -> None:
        super().__init__(daemon=True)
        self.sub = sub
        self.other = sub.with_name(".sub-other")
        self.other.symlink_to(outside)
        self.stop = threading.Event()
        self.flips = 0

    def run(self) -> None:
        while not self.stop.is_set():
            _exchange(self.sub, self.other)  # sub is the link now
            time.sleep(0.0005)
            _exchange(self.sub, self.other)  # and the folder again
            self.flips += 1
            time.sleep(0.003)


def _files_under(root: Path) -> list[Path]:
    return [Path(d) / f for d, _, fs in os.walk(root) for f in fs]


@pytest.mark.parametrize("mode", ["default", "acceptEdits"])
async def test_symlink_swap_race_sends_nothing_outside(mode: str, tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    sub = ws / "sub"
    sub.mkdir(parents=True)
    outside = (tmp_path / "outside").resolve()
    outside.mkdir()
    agent = Agent(ws, tmp_path, mode=mode)
    channel = InsideOnlyChannel(outside=str(outside))
    agent.channel.request = channel.request  # type: ignore[method-assign]
    flipper = Flipper(sub, outside)
    results: list[tuple[str, str, bool]] = []
    flipper.start()
    calls = 0
    try:
        # At least 100 files, and on until the flipper has swapped the folder over 50 times (faster tools
        # finish 100 files before it has: the race must really be raced, whatever the machine's speed).
        while calls < 100 or (flipper.flips <= 50 and calls < 5000):
            i = calls
            calls += 1
            target = str(sub / f"f{i}.txt")
            text, is_error, _ = await agent.call("Write", file_path=target, content=f"version {i}\n")
            results.append(("Write", text, is_error))
            text, is_error, _ = await agent.call("Edit", file_path=target, old_string=f"version {i}",
                                                 new_string=f"edited {i}")
            results.append(("Edit", text, is_error))
    finally:
        flipper.stop.set()
        flipper.join()
        await agent.close()
    assert flipper.flips > 50
    assert _files_under(outside) == [], "a write went through the symlink"
    internal = [r for r in results if "internal error" in r[1].lower() or "fault in the tool" in r[1]]
    assert internal == []
    assert len(results) == 2 * calls
    landed = [r for r in results if not r[2]]
    assert landed, "no write succeeded at all: the test raced nothing"
    # What landed is in the real folder; no temp file is left anywhere.
    wrong = {i: (sub / f"f{i}.txt").read_text() for i in range(calls) if (sub / f"f{i}.txt").exists()
             and (sub / f"f{i}.txt").read_text() not in (f"version {i}\n", f"edited {i}\n")}
    assert wrong == {}
    assert [p for p in _files_under(ws) if p.name.endswith(TEMP_SUFFIX)] == []
    errors = {r[1].split(".")[0] for r in results if r[2]}
    print(f"{mode}: {len(landed)}/{2 * calls} landed, {flipper.flips} flips, errors: {sorted(errors)[:6]}")


@contextlib.contextmanager
def tiny_tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where.resolve()
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(root: Path) -> None:
    fd = os.open(root / "filler.bin", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)


async def test_a_full_disk_is_a_clear_error_and_loses_nothing(tmp_path: Path) -> None:
    with tiny_tmpfs(tmp_path / "small", "256k") as ws:
        original = "".join(f"line {n}\n" for n in range(2000)).encode()  # ~18 KB
        (ws / "kept.txt").write_bytes(original)
        (ws / "nb").mkdir()
        _fill(ws)
        agent = Agent(ws, tmp_path, mode="acceptEdits")
        try:
            text, is_error, _ = await agent.call("Read", file_path=str(ws / "kept.txt"))
            assert not is_error
            text, is_error, _ = await agent.call("Edit", file_path=str(ws / "kept.txt"), old_string="line 5\n",
                                                 new_string="line five\n")
            assert is_error and "disk is full" in text and "kept.txt is unchanged" in text, text
            assert "internal error" not in text
            text, is_error, _ = await agent.call("Write", file_path=str(ws / "kept.txt"),
                                                 content="x" * 100_000)
            assert is_error and "disk is full" in text, text
            text, is_error, _ = await agent.call("Write", file_path=str(ws / "nb" / "new.txt"),
                                                 content="y" * 100_000)
            assert is_error and "disk is full" in text and "Nothing was written" in text, text
        finally:
            await agent.close()
        assert (ws / "kept.txt").read_bytes() == original
        assert not (ws / "nb" / "new.txt").exists()
        assert [p for p in _files_under(ws) if p.name.endswith(TEMP_SUFFIX)] == []
        # Once there is room again, the same edit lands.
        (ws / "filler.bin").unlink()
        agent = Agent(ws, tmp_path, mode="acceptEdits")
        try:
            await agent.call("Read", file_path=str(ws / "kept.txt"))
            text, is_error, _ = await agent.call("Edit", file_path=str(ws / "kept.txt"), old_string="line 5\n",
                                                 new_string="line five\n")
            assert not is_error, text
        finally:
            await agent.close()
        assert b"line five\n" in (ws / "kept.txt").read_bytes()


async def test_a_write_into_a_vanished_folder_is_a_clear_error(tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    (ws / "gone").mkdir(parents=True)
    (ws / "gone" / "a.txt").write_text("alpha\n")
    agent = Agent(ws, tmp_path, mode="acceptEdits")
    try:
        await agent.call("Read", file_path=str(ws / "gone" / "a.txt"))
        (ws / "gone" / "a.txt").unlink()
        (ws / "gone").rmdir()
        text, is_error, _ = await agent.call("Edit", file_path=str(ws / "gone" / "a.txt"), old_string="alpha",
                                             new_string="beta")
        assert is_error and "internal error" not in text
        assert "does not exist" in text or "deleted" in text or "disappeared" in text, text
    finally:
        await agent.close()


def test_stale_temp_files_of_a_killed_write_are_removed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / ".git").mkdir()
    stale = ws / "src" / f".main.py.0123456789ab{TEMP_SUFFIX}"
    fresh = ws / "src" / f".util.py.ba9876543210{TEMP_SUFFIX}"
    other = ws / "src" / ".main.py.swp"
    in_git = ws / ".git" / f".x.000000000000{TEMP_SUFFIX}"
    (ws / ".venv" / "lib").mkdir(parents=True)
    in_venv = ws / ".venv" / "lib" / f".site.py.000000000000{TEMP_SUFFIX}"  # installed packages: not walked
    for p in (stale, fresh, other, in_git, in_venv):
        p.write_text("partial")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    os.utime(in_git, (old, old))
    os.utime(in_venv, (old, old))
    link = ws / f".link.aaaaaaaaaaaa{TEMP_SUFFIX}"
    link.symlink_to(other)
    assert remove_stale_temps(ws) == [stale]
    assert not stale.exists() and fresh.exists() and other.exists() and in_git.exists() and link.is_symlink()
    assert in_venv.exists()


def test_a_killed_write_leaves_a_recognisable_temp_that_the_next_start_removes(tmp_path: Path) -> None:
    """A real process killed in the middle of writing (SIGKILL while it fsyncs a big temp file)."""
    import signal
    import sys

    ws = tmp_path / "ws"
    ws.mkdir()
    script = ("import sys, time\nfrom pathlib import Path\nfrom sidecar.workspace.textfile import write_temp\n"
              "t = write_temp(Path(sys.argv[1]), b'x' * 4096)\nprint('written', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script, str(ws / "big.txt")], stdout=subprocess.PIPE,
                            cwd=str(Path(__file__).resolve().parents[2]))
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"written"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    left = [p for p in ws.iterdir()]
    assert len(left) == 1 and left[0].name.startswith(".big.txt.") and left[0].name.endswith(TEMP_SUFFIX)
    assert remove_stale_temps(ws, older_than=0) == left
    assert list(ws.iterdir()) == []


# ---- a new file created by someone else between the tool's check and its write is never replaced ------

def test_create_only_keeps_a_file_that_appeared_meanwhile(tmp_path: Path) -> None:
    from sidecar.workspace.textfile import atomic_write, commit_temp, write_temp

    target = tmp_path / "new.txt"
    tmp = write_temp(target, b"the agent's content\n")
    target.write_bytes(b"the user's file\n")  # appears after the exists-check, before the commit
    with pytest.raises(FileExistsError):
        commit_temp(tmp, target, create_only=True)
    assert target.read_bytes() == b"the user's file\n"
    assert [p.name for p in tmp_path.iterdir()] == ["new.txt"]  # no temp file left behind
    # Without a rival it creates the file, with the mode a plain write would give it.
    fresh = tmp_path / "fresh.txt"
    st = atomic_write(fresh, b"x\n", create_only=True)
    assert fresh.read_bytes() == b"x\n" and st.st_size == 2 and os.stat(fresh).st_nlink == 1
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(fresh).st_mode & 0o777 == 0o666 & ~umask
    # A dangling symlink placed at the name is kept too (never followed, never replaced).
    link = tmp_path / "link.txt"
    link.symlink_to(tmp_path / "elsewhere.txt")
    with pytest.raises(FileExistsError):
        atomic_write(link, b"y\n", create_only=True)
    assert link.is_symlink() and not (tmp_path / "elsewhere.txt").exists()


async def test_an_append_by_another_process_after_the_last_check_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between Edit's last check and its rename another process appends to the file (a log writer): the
    append lands on the old inode, which the rename unlinks. The Edit sees it there and keeps it."""
    from sidecar.tools.files import edit as edit_module

    root = tmp_path / "ws"
    root.mkdir()
    log_file = root / "app.log"
    log_file.write_text("start\nline 1\n")
    agent = Agent(root, tmp_path)
    real_commit = edit_module.commit_temp

    def commit_after_an_append(*args: Any, **kwargs: Any) -> Any:
        with open(log_file, "a") as other:  # the other process, by path, on the old inode
            other.write("line 2 from the other process\n")
        return real_commit(*args, **kwargs)

    try:
        await agent.call("Read", file_path=str(log_file))
        monkeypatch.setattr(edit_module, "commit_temp", commit_after_an_append)
        text, is_error, _ = await agent.call("Edit", file_path=str(log_file), old_string="start", new_string="begin")
    finally:
        await agent.close()
    assert not is_error, text
    assert log_file.read_text() == "begin\nline 1\nline 2 from the other process\n"
    assert "Another process appended 30 bytes to" in text and "kept at the end of the file" in text


async def test_another_change_after_the_last_check_is_saved_and_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sidecar.tools.files import edit as edit_module

    root = tmp_path / "ws"
    root.mkdir()
    target = root / "conf.txt"
    target.write_text("alpha\nbeta\n")
    agent = Agent(root, tmp_path)
    real_commit = edit_module.commit_temp

    def commit_after_an_overwrite(*args: Any, **kwargs: Any) -> Any:
        with open(target, "r+") as other:  # rewrites the old inode in place
            other.write("ALPHA")
        return real_commit(*args, **kwargs)

    try:
        await agent.call("Read", file_path=str(target))
        monkeypatch.setattr(edit_module, "commit_temp", commit_after_an_overwrite)
        text, is_error, _ = await agent.call("Edit", file_path=str(target), old_string="beta", new_string="gamma")
    finally:
        await agent.close()
    assert not is_error, text
    assert target.read_text() == "alpha\ngamma\n"
    assert "Another process changed" in text and "was saved to " in text
    saved = Path(text.split("was saved to ", 1)[1].split(". Compare", 1)[0])
    assert saved.read_text() == "ALPHA\nbeta\n"  # the other process's version is not lost

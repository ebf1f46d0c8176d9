"""A full disk under the session store is a clear error (-32050 ``storage_unavailable`` naming the file),
never -32603 "OSError", and a line cut by it never swallows the next one.

The end-to-end test mounts a tiny tmpfs (root only: skipped elsewhere) and fills it; the store test injects
``OSError(ENOSPC)`` at the store's write boundary after part of the line got in.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sidecar.client.connection import RemoteError
from sidecar.store import SessionStore
from sidecar.testing.scripted_server import ScriptedModelServer
from tests.conftest import start_harness


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "full"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,nr_inodes=64", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        (mount / "sidecar").mkdir()
        fd = os.open(mount / "sidecar" / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"\0" * 512)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


async def test_session_new_on_a_full_disk_is_a_clear_error(
        full_disk: Path, workspace: Path, sidecar_env: dict[str, str], model_server: ScriptedModelServer,
        tmp_path: Path) -> None:
    env = {**sidecar_env, "XDG_DATA_HOME": str(full_disk)}
    harness = await start_harness("acp", env, model_server, tmp_path)
    try:
        with pytest.raises(RemoteError) as err:
            await harness.process.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        # The process is still there and answers the next request.
        listed = await harness.process.request("session/list", {})
    finally:
        await harness.process.close()
    assert err.value.code == -32050
    assert err.value.data["kind"] == "storage_unavailable" and err.value.data["retryable"] is True
    message = str(err.value)
    assert "No space left on device" in message and str(full_disk / "sidecar") in message
    assert "free space there" in message and "OSError" not in message
    assert listed == {"sessions": []}


def test_a_line_cut_by_a_full_disk_is_removed_and_the_next_one_is_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore(tmp_path / "sessions")
    store.append("sess_1", {"type": "session", "id": "sess_1", "cwd": "/w", "created": 1.0})
    real_write = os.write
    calls = {"n": 0}

    def half_then_full(fd: int, data: bytes | memoryview) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[: len(data) // 2])  # part of the line got in
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OSError) as err:
        store.append("sess_1", {"type": "title", "title": "lost to the full disk"})
    monkeypatch.setattr(os, "write", real_write)
    assert err.value.errno == errno.ENOSPC and err.value.filename == str(store.path("sess_1"))
    store.append("sess_1", {"type": "title", "title": "after space was freed"})
    lines = store.path("sess_1").read_text().splitlines()
    assert len(lines) == 2 and "after space was freed" in lines[1]
    saved = store.load("sess_1")
    assert saved is not None and saved.title == "after space was freed"

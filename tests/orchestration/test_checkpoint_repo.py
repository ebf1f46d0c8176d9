"""The shadow repository itself (real git): snapshots written with fewer processes still hold the work
tree exactly, and a new session's repository seeded from another's is as right as a fresh one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sidecar.workspace.shadow import ShadowRepo


def make_workspace(root: Path, files: int = 30) -> Path:
    ws = root / "ws"
    for i in range(files):
        (ws / f"pkg{i % 3}").mkdir(parents=True, exist_ok=True)
        (ws / f"pkg{i % 3}" / f"m{i}.py").write_text(f"value = {i}\n")
    (ws / ".gitignore").write_text("*.log\n")
    (ws / "build.log").write_text("ignored\n")
    # Files older than the index git writes: a real workspace (stat data alone says "unchanged").
    for p in ws.rglob("*"):
        os.utime(p, (1_700_000_000, 1_700_000_000))
    return ws


def held(repo: ShadowRepo, commit: str) -> dict[str, bytes]:
    """Every file of a snapshot, by relative path."""
    names = [os.fsdecode(n) for n in repo.git("ls-tree", "-r", "-z", "--name-only", commit).split(b"\0") if n]
    return {rel: data for rel, (_, data) in repo.entries(commit, names).items()}


def on_disk(ws: Path) -> dict[str, bytes]:
    return {p.relative_to(ws).as_posix(): p.read_bytes() for p in ws.rglob("*")
            if p.is_file() and p.suffix != ".log"}


def fsck(repo: ShadowRepo) -> str:
    proc = subprocess.run(["git", "fsck", "--strict", "--no-dangling"], env=repo.env, cwd=repo.work_tree,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_snapshots_hold_the_work_tree_and_an_unchanged_one_is_its_own_commit(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    repo = ShadowRepo(tmp_path / "a" / "git", ws)
    first = repo.snapshot("refs/sidecar/1", "turn 1")
    assert held(repo, first) == on_disk(ws)
    again = repo.snapshot("refs/sidecar/2", "tool 2")
    # A distinct commit (a restore point is found by its commit), the same files.
    assert again != first and repo.changed(first, again) == set()
    (ws / "pkg0" / "m0.py").write_text("value = 'changed'\n")
    (ws / "pkg1" / "m1.py").unlink()
    (ws / "new.txt").write_text("new\n")
    third = repo.snapshot("refs/sidecar/3", "tool 3")
    assert repo.changed(again, third) == {"pkg0/m0.py", "pkg1/m1.py", "new.txt"}
    assert held(repo, third) == on_disk(ws)
    refs = repo.git("for-each-ref", "--format=%(refname) %(objectname)").decode().split("\n")
    assert refs[:3] == [f"refs/sidecar/1 {first}", f"refs/sidecar/2 {again}", f"refs/sidecar/3 {third}"]
    fsck(repo)
    repo.drop("refs/sidecar/1")
    repo.prune()
    assert held(repo, third) == on_disk(ws)
    fsck(repo)


def snapshotted(tmp_path: Path) -> tuple[Path, ShadowRepo, str]:
    """A workspace and a repository ("a") that took one snapshot of it."""
    ws = make_workspace(tmp_path)
    a = ShadowRepo(tmp_path / "a" / "git", ws)
    return ws, a, a.snapshot("refs/sidecar/1", "turn 1")


def test_a_new_repository_of_the_same_work_tree_starts_from_the_last_one(tmp_path: Path) -> None:
    ws, a, a_first = snapshotted(tmp_path)
    # Changed after a's snapshot, with the same size and the old timestamps back: only the content says so.
    changed = ws / "pkg2" / "m2.py"
    changed.write_text("value = 9\n")
    os.utime(changed, (1_700_000_000, 1_700_000_000))
    b = ShadowRepo(tmp_path / "b" / "git", ws)
    b_first = b.snapshot("refs/sidecar/1", "turn 1")
    # Seeded: a's pack is b's too (a hard link), so the unchanged files were not hashed again.
    a_packs = {(e.name, e.inode()) for e in os.scandir(a.git_dir / "objects" / "pack")}
    assert a_packs and a_packs <= {(e.name, e.inode()) for e in os.scandir(b.git_dir / "objects" / "pack")}
    assert held(b, b_first)["pkg2/m2.py"] == held(a, a_first)["pkg2/m2.py"]  # same stat data: git trusts it
    changed.write_text("value = 10\n")  # a real change (size)
    b_second = b.snapshot("refs/sidecar/2", "tool 2")
    assert b.changed(b_first, b_second) == {"pkg2/m2.py"}
    assert held(b, b_second) == on_disk(ws)
    # a's repository pruned afterwards takes nothing from b.
    a.drop("refs/sidecar/1")
    a.prune()
    assert held(b, b_second) == on_disk(ws)
    fsck(b)


def test_a_repository_left_half_made_or_a_sibling_gone_starts_afresh(tmp_path: Path) -> None:
    ws, a, _ = snapshotted(tmp_path)
    a_dir = a.git_dir
    for p in sorted(a_dir.rglob("*"), reverse=True):  # a's repository removed (30 days old)
        p.unlink() if p.is_file() else p.rmdir()
    a_dir.rmdir()
    b_dir = tmp_path / "b" / "git"
    (b_dir / "objects").mkdir(parents=True)  # a crash before HEAD was written
    b = ShadowRepo(b_dir, ws)
    commit = b.snapshot("refs/sidecar/1", "turn 1")
    assert held(b, commit) == on_disk(ws)
    fsck(b)


def test_a_seeded_repository_holds_the_tiny_files_git_keeps_loose(tmp_path: Path) -> None:
    """Blobs of 0–1 byte (an empty ``__init__.py``) stay loose objects under ``core.bigFileThreshold=1``:
    a repository seeded from another's index must have them too, or every snapshot of it fails."""
    ws = make_workspace(tmp_path)
    (ws / "pkg0" / "__init__.py").write_text("")
    (ws / "one.txt").write_text("x")
    a = ShadowRepo(tmp_path / "a" / "git", ws)
    a.snapshot("refs/sidecar/1", "turn 1")
    b = ShadowRepo(tmp_path / "b" / "git", ws)
    first = b.snapshot("refs/sidecar/1", "turn 1")
    assert held(b, first) == on_disk(ws)
    (ws / "one.txt").write_text("y")
    second = b.snapshot("refs/sidecar/2", "tool 2")
    assert b.changed(first, second) == {"one.txt"}
    fsck(b)


def test_an_index_naming_a_missing_object_is_rebuilt(tmp_path: Path) -> None:
    ws, a, _ = snapshotted(tmp_path)
    (ws / "pkg0" / "__init__.py").write_text("")
    a.snapshot("refs/sidecar/2", "tool 2")
    blob = a.git("rev-parse", "refs/sidecar/2:pkg0/__init__.py").decode().strip()
    (a.git_dir / "objects" / blob[:2] / blob[2:]).unlink()  # lost (a crash, a partial copy)
    (ws / "pkg0" / "new.py").write_text("n = 1\n")
    commit = a.snapshot("refs/sidecar/3", "tool 3")
    assert held(a, commit) == on_disk(ws)


def test_the_agents_temp_files_are_never_in_a_snapshot(tmp_path: Path) -> None:
    """Edit starts writing ``.<name>.<hex>.sidecar-tmp`` before its review: a snapshot taken meanwhile must
    not hold it (a rewind would put it back)."""
    ws = make_workspace(tmp_path)
    (ws / "pkg0" / ".m0.py.1a2b3c.sidecar-tmp").write_text("half written\n")
    repo = ShadowRepo(tmp_path / "a" / "git", ws)
    commit = repo.snapshot("refs/sidecar/1", "turn 1")
    assert not [rel for rel in held(repo, commit) if rel.endswith(".sidecar-tmp")]

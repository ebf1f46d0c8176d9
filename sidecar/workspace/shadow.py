"""A shadow git repository per session: snapshots of the workspace that outlive the process.

The repository lives under the data dir (``$XDG_DATA_HOME/sidecar/checkpoints/<session id>/git``),
never in the workspace; the workspace is only its work tree (``GIT_DIR`` + ``GIT_WORK_TREE``), so the
user's ``.git`` is never read or written (git skips any directory named ``.git``). Every git runs with
no global or system configuration, no hooks, no fsmonitor, no pager (``workspace/gitenv.py``) and a
scrubbed environment, and the repository's own config sets ``core.autocrlf=false`` so bytes round-trip.

A snapshot stages what changed since the last one (``git ls-files --others --modified
--exclude-standard``: the workspace's ``.gitignore`` files are honoured), skipping files over
``MAX_FILE_BYTES``, and writes a parentless commit held by ``refs/sidecar/<n>``; unchanged files cost
nothing (same blobs). Dropping a snapshot deletes its ref; ``prune()`` lets ``git gc`` free what no
ref holds. ``core.bigFileThreshold=1`` makes ``git add`` stream every new blob into one pack per snapshot
instead of one loose object file each: a session's first snapshot of a 200-file workspace took 47–57 ms
of CPU as loose objects, 21 ms as a pack (no delta compression is attempted for those blobs; ``gc`` at
pruning time packs them again).

Processes per snapshot (issue 29: a session's first one ran eight, ~27 ms of CPU): the repository is laid
out by hand (``HEAD``, ``config``, ``objects/``, ``refs/``: what ``git init`` writes, without the two
``git config`` calls that only repeated what every command passes with ``-c``); the commit object and the
ref are written here too (a loose object is a zlib-deflated ``commit <size>\0<body>`` named by its SHA-1;
a loose ref a file holding the commit), so a snapshot is ``ls-files``, ``add`` when something changed,
and ``write-tree`` only when the index did (nothing staged since the last snapshot: its tree again). A
new session's repository of a work tree another session of this process already snapshotted starts from
that one's index (copied with its timestamps, so git's racy-entry checks hold) and its packs (hard links:
packs are immutable), so its first snapshot hashes only what changed instead of the whole workspace.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import threading
import time
import uuid
import weakref
import zlib
from pathlib import Path

from sidecar.errors import ToolError
from sidecar.secrets import scrubbed_env
from sidecar.workspace.gitenv import safe_git_env
from sidecar.workspace.textfile import TEMP_SUFFIX, atomic_write

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_FILES_PER_SNAPSHOT = 50_000
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
IDENTITY = "sidecar <sidecar@localhost>"
CONFIG = b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tautocrlf = false\n"

# Work tree → the repository of this process that last finished a snapshot of it (a new one seeds from it).
_LAST_SNAPSHOT: weakref.WeakValueDictionary[Path, ShadowRepo] = weakref.WeakValueDictionary()
_LAST_SNAPSHOT_LOCK = threading.Lock()


class ShadowError(Exception):
    pass


class ShadowRepo:
    def __init__(self, git_dir: Path, work_tree: Path) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        env = safe_git_env(scrubbed_env())
        env.update({"GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(work_tree), "GIT_CONFIG_NOSYSTEM": "1",
                    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "sidecar",
                    "GIT_AUTHOR_EMAIL": "sidecar@localhost", "GIT_COMMITTER_NAME": "sidecar",
                    "GIT_COMMITTER_EMAIL": "sidecar@localhost", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
        for name in ("GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                     "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_COMMON_DIR"):
            env.pop(name, None)
        self.env = env
        # Held while git runs in the repository (snapshots run in worker threads; a new session's
        # repository copies this one's index and packs under it).
        self.lock = threading.RLock()
        # The tree of the last snapshot while the index still matches it (set by this process only).
        self._last_tree: str | None = None

    def git(self, *args: str, input: bytes | None = None, check: bool = True,
            env: dict[str, str] | None = None) -> bytes:
        proc = subprocess.run(["git", "-c", "core.autocrlf=false", "-c", "core.safecrlf=false",
                               "-c", "core.quotePath=false", "-c", "gc.auto=0", "-c", "core.untrackedCache=false",
                               "-c", "core.bigFileThreshold=1", *args],
                              cwd=self.work_tree, env=env or self.env, input=input, capture_output=True, timeout=120)
        if check and proc.returncode != 0:
            raise ShadowError(f"git {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout

    def ensure(self) -> None:
        if (self.git_dir / "HEAD").exists():
            return
        staging = self.git_dir.with_name(f"{self.git_dir.name}.new-{uuid.uuid4().hex[:8]}")
        try:
            for sub in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
                (staging / sub).mkdir(parents=True)
            (staging / "config").write_bytes(CONFIG)
            # The agent's own temp files (Edit starts writing one before its review) are never a checkpoint's.
            (staging / "info").mkdir()
            (staging / "info" / "exclude").write_bytes(f"*{TEMP_SUFFIX}\n".encode())
            self._seed(staging)
            (staging / "HEAD").write_bytes(b"ref: refs/heads/main\n")
            shutil.rmtree(self.git_dir, ignore_errors=True)  # a layout left without HEAD by a crash
            self.git_dir.parent.mkdir(parents=True, exist_ok=True)
            os.rename(staging, self.git_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _seed(self, staging: Path) -> None:
        """Start from the index and objects of another repository of the same work tree, when there is one.
        Its packs and its loose objects (blobs of 0–1 byte stay loose under ``core.bigFileThreshold=1``, and
        trees) are hard-linked: git objects are immutable, and the copied index names them."""
        with _LAST_SNAPSHOT_LOCK:
            sibling = _LAST_SNAPSHOT.get(self.work_tree)
        if sibling is None or sibling is self:
            return
        with sibling.lock:
            try:
                source = sibling.git_dir / "objects"
                for folder in os.scandir(source):
                    if folder.name == "info" or not folder.is_dir():
                        continue
                    (staging / "objects" / folder.name).mkdir(exist_ok=True)
                    for entry in os.scandir(folder.path):
                        if entry.is_file() and not entry.name.startswith("tmp_"):
                            os.link(entry.path, staging / "objects" / folder.name / entry.name)
                shutil.copy2(sibling.git_dir / "index", staging / "index")
            except OSError as exc:  # gone, another file system: a fresh start hashes the workspace instead
                log.info("checkpoint repository not seeded from %s: %s", sibling.git_dir, exc)
                shutil.rmtree(staging / "objects", ignore_errors=True)
                for sub in ("objects/info", "objects/pack"):
                    (staging / sub).mkdir(parents=True, exist_ok=True)
                with _suppress_missing():
                    os.unlink(staging / "index")

    def snapshot(self, ref: str, message: str) -> str:
        """Commit the work tree as it is now (changes since the last snapshot staged); returns the commit."""
        with self.lock:
            try:
                commit = self._snapshot(ref, message)
            except ShadowError as exc:  # an index naming an object this repository lacks: start it again
                log.info("checkpoint of %s: %s; the index is rebuilt", self.work_tree, exc)
                self._last_tree = None
                with _suppress_missing():
                    os.unlink(self.git_dir / "index")
                commit = self._snapshot(ref, message)
        with _LAST_SNAPSHOT_LOCK:
            _LAST_SNAPSHOT[self.work_tree] = self
        return commit

    def _snapshot(self, ref: str, message: str) -> str:
        self.ensure()
        out = self.git("ls-files", "-z", "--others", "--modified", "--exclude-standard")
        paths = [p for p in out.split(b"\0") if p]
        chosen: list[bytes] = []
        for raw in paths[:MAX_FILES_PER_SNAPSHOT]:
            full = self.work_tree / os.fsdecode(raw)
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                chosen.append(raw)  # deleted: stage the removal
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size > MAX_FILE_BYTES:
                continue
            chosen.append(raw)
        if len(paths) > MAX_FILES_PER_SNAPSHOT:
            log.warning("checkpoint of %s: %d changed files, only the first %d kept", self.work_tree,
                        len(paths), MAX_FILES_PER_SNAPSHOT)
        if chosen:
            self._last_tree = None
            self.git("add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
                     input=b"\0".join(chosen) + b"\0", check=False)
        tree = self._last_tree or self.git("write-tree").decode().strip()
        self._last_tree = tree
        commit = self._write_object(b"commit", f"tree {tree}\nauthor {IDENTITY} {int(time.time())} +0000\n"
                                    f"committer {IDENTITY} {int(time.time())} +0000\n\n{message}\n".encode())
        self._write_ref(ref, commit)
        return commit

    def _write_object(self, kind: bytes, body: bytes) -> str:
        """A loose object, as ``git hash-object -w`` writes it; returns its name."""
        data = kind + b" " + str(len(body)).encode() + b"\0" + body
        name = hashlib.sha1(data, usedforsecurity=False).hexdigest()
        target = self.git_dir / "objects" / name[:2] / name[2:]
        if not target.exists():
            _write_file(target, zlib.compress(data), 0o444)
        return name

    def _write_ref(self, ref: str, commit: str) -> None:
        """A loose ref, as ``git update-ref`` writes it (the repository is ours: the files ref backend)."""
        target = self.git_dir / ref
        _write_file(target, f"{commit}\n".encode(), 0o644)

    def changed(self, a: str, b: str) -> set[str]:
        """Paths (relative, posix) whose content or mode differs between two snapshots."""
        if a == b:
            return set()
        out = self.git("diff-tree", "-r", "-z", "--no-renames", "--name-only", a, b)
        return {os.fsdecode(p) for p in out.split(b"\0") if p}

    def entries(self, commit: str, rels: list[str]) -> dict[str, tuple[str, bytes]]:
        """(mode, bytes) of each of ``rels`` in ``commit`` that it holds as a file, in two git processes
        (``ls-tree`` of the paths, ``cat-file --batch`` of their blobs) instead of two per path."""
        if not rels:
            return {}
        listed = self.git("ls-tree", "-z", "--full-tree", commit, "--", *rels)
        wanted = set(rels)
        found: list[tuple[str, str, str]] = []  # (path, mode, blob)
        for record in listed.split(b"\0"):
            if not record:
                continue
            meta, _, raw_path = record.partition(b"\t")
            mode, kind, sha = meta.decode().split()
            rel = os.fsdecode(raw_path)
            if kind == "blob" and rel in wanted:
                found.append((rel, mode, sha))
        if not found:
            return {}
        out = self.git("cat-file", "--batch", input="".join(f"{sha}\n" for _, _, sha in found).encode())
        result: dict[str, tuple[str, bytes]] = {}
        at = 0
        for rel, mode, _ in found:
            end = out.index(b"\n", at)
            size = int(out[at:end].split()[2])
            result[rel] = (mode, out[end + 1:end + 1 + size])
            at = end + 1 + size + 1  # the blob, then its newline
        return result

    def drop(self, ref: str) -> None:
        self.git("update-ref", "-d", ref, check=False)

    def prune(self) -> None:
        with self.lock:  # a new session's repository may be linking this one's packs
            self.git("reflog", "expire", "--expire=now", "--all", check=False)
            self.git("gc", "-q", "--prune=now", check=False)


def _write_file(target: Path, data: bytes, mode: int) -> None:
    """Write ``target`` whole or not at all (not fsynced: git does not fsync its loose objects either)."""
    try:
        atomic_write(target, data, mode, create_parents=True, durable=False)
    except ToolError as exc:
        raise ShadowError(str(exc)) from None


def _suppress_missing() -> contextlib.suppress:
    return contextlib.suppress(FileNotFoundError)


def prune_old_repos(root: Path, max_age_s: float, keep: str) -> None:
    """Remove shadow repositories of sessions untouched for ``max_age_s`` (never ``keep``)."""
    if not root.is_dir():
        return
    cutoff = time.time() - max_age_s
    for d in root.iterdir():
        try:
            if d.name != keep and d.is_dir() and d.stat().st_mtime < cutoff:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            continue

"""Real git repositories for tests: made with `git init`, committed to, tagged, served as file:// URLs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import SAMPLE_DOCS

ENV = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "Test",
       "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent", "PATH": "/usr/bin:/bin"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=ENV, check=True, capture_output=True, text=True).stdout.strip()


class Repo:
    """A work tree whose commits a corpus builds from; `url` is what the corpus is registered with."""

    def __init__(self, path: Path, subdir: str = ""):
        self.path, self.subdir = path, subdir
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "--quiet", "--initial-branch=main")

    @property
    def url(self) -> str:
        return self.path.resolve().as_uri()

    @property
    def docs(self) -> Path:
        return self.path / self.subdir if self.subdir else self.path

    def write(self, relpath: str, text: str) -> None:
        path = self.docs / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def remove(self, relpath: str) -> None:
        (self.docs / relpath).unlink()

    def commit(self, message: str = "docs") -> str:
        git(self.path, "add", "-A")
        git(self.path, "commit", "--quiet", "--allow-empty", "-m", message)
        return git(self.path, "rev-parse", "HEAD")

    def tag(self, name: str) -> None:
        git(self.path, "tag", name)

    def branch(self, name: str) -> None:
        git(self.path, "branch", "--force", name)


def sample_repo(path: Path, subdir: str = "docs") -> Repo:
    """A repository holding the bundled sample corpus under `subdir`, plus a README outside it."""
    repo = Repo(path, subdir)
    shutil.copytree(SAMPLE_DOCS, repo.docs, dirs_exist_ok=True)
    (repo.path / "README.md").write_text("# Not documentation\n\nOutside the corpus root.\n")
    repo.commit("sample docs")
    return repo

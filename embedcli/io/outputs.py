"""Writing tensors to files: chosen by suffix, written atomically, never left half-written."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from embedcli.errors import MissingExtraError, OutputError, OutputFormatError

if TYPE_CHECKING:
    import torch

OUTPUT_SUFFIXES = (".npy", ".pt", ".safetensors")


def same_file(path: Path, source: Path | int) -> bool:
    """Whether ``path`` is the file ``source`` is (a path, through links too, or an open file
    descriptor such as stdin's); False where either is not there."""
    try:
        target = os.stat(path)
        found = os.fstat(source) if isinstance(source, int) else os.stat(source)
    except (OSError, ValueError):
        return False
    return (found.st_dev, found.st_ino) == (target.st_dev, target.st_ino)


def check_not_an_input(path: Path, inputs: Iterable[Path | int | None], flag: str) -> None:
    """Refuse an output that is the same file as any input (a path, through links too, or an
    open file descriptor such as stdin's), before anything is written: it would be destroyed."""
    for source in inputs:
        if source is not None and same_file(path, source):
            what = "standard input" if isinstance(source, int) else str(source)
            raise OutputError(
                f"{flag} {path} is the same file as the input {what}: writing it would destroy "
                "the input; choose another name"
            )


def check_output_path(
    path: Path, dtype: str, inputs: Iterable[Path | int | None] = (), flag: str = "--output"
) -> Path:
    """Refuse a bad --output before any work is done: suffix, folder, permissions, dtype, and
    an output that is one of the ``inputs``."""
    suffix = path.suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise OutputFormatError(
            f"cannot tell the format of {path} from its suffix {suffix or '(none)'!r}; "
            f"use one of: {', '.join(OUTPUT_SUFFIXES)}"
        )
    if suffix == ".npy" and dtype == "bfloat16":
        raise OutputFormatError(
            "NumPy has no bfloat16, so .npy cannot hold it exactly; write .pt or .safetensors, "
            "or pass --dtype float32"
        )
    if path.is_dir():
        raise OutputError(f"{path} is a directory; give a file name")
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(f"cannot write {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: the folder {folder} is not writable")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputError(f"cannot write {path}: the file exists and is read-only")
    check_not_an_input(path, inputs, flag)
    return path


class _Written:
    """The output files this process has put in place, in order: what an interrupt may say."""

    def __init__(self) -> None:
        self.paths: list[Path] = []

    def reset(self) -> None:
        """Forget them: a new command begins."""
        self.paths.clear()


WRITTEN = _Written()


@contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP wait until the block ends, then are delivered, so that a
    rename and the record of it are one step that an interrupt never splits. Python runs
    signal handlers in the main thread whichever thread the signal reached, so the handlers
    are swapped, not the signal mask; off the main thread there is nothing to hold."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, lambda s, _: came.append(s)) for signum in held}
    try:
        yield
    finally:
        for signum, handler in previous.items():  # None: set outside Python, not restorable
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
        for signum in dict.fromkeys(came):
            signal.raise_signal(signum)  # now, to the handler that was there before


def _put_in_place(tmp: Path, target: Path, record: bool = True) -> None:
    """Rename ``tmp`` onto ``target`` and record it, with no interrupt in between."""
    with _signals_held():
        os.replace(tmp, target)
        if record:
            WRITTEN.paths.append(target)


def check_png(path: Path | None) -> None:
    """Refuse a --png that cannot be written (a folder, a blank name, a name not *.png,
    matplotlib missing) before any work, and before torch is imported: matplotlib is looked
    for, not imported."""
    if path is None:
        return
    if not path.name or path.is_dir():  # '.', '..', '/', an existing folder
        what = ". is the current folder" if str(path) == "." else f"{path} is a folder"
        raise OutputError(f"--png {what}, not a PNG file name; give a file name ending in .png")
    if not path.name.strip():
        raise OutputFormatError(
            f"--png {str(path)!r} has a blank file name; give a file name ending in .png"
        )
    if path.suffix.lower() != ".png":
        raise OutputFormatError(f"--png writes PNG images; name the file *.png, not {path.name}")
    import importlib.util

    try:
        found = importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):  # ValueError: a module set to None (blocked)
        found = False
    if not found:
        raise MissingExtraError(NO_MATPLOTLIB)


NO_MATPLOTLIB = "--png needs matplotlib, which is not installed: pip install 'embedcli[plot]'"


def _permissions(path: Path) -> int:
    """The bits a new file gets: those of the file it replaces, or the umask's default."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


@contextmanager
def atomic_write(path: Path, record: bool = True) -> Iterator[BinaryIO]:
    """A binary file handle for ``path`` that is only ever seen whole: it writes a temporary file
    beside ``path`` and renames it into place on success (keeping the permissions of a file it
    replaces); on any error or Ctrl-C the temporary file is removed. Raises OSError.
    ``record``: an output the user asked for (not a cache entry), for :data:`WRITTEN`."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    handle = os.fdopen(fd, "wb")
    try:
        yield handle
        handle.close()  # the last buffered bytes: a full disk may show only here
        os.chmod(tmp, _permissions(path))  # mkstemp makes 0600
        _put_in_place(tmp, path, record)
    except BaseException:
        # Clean up without raising over the real error (closing flushes, which can fail too).
        with contextlib.suppress(OSError):
            handle.close()
        raise
    finally:
        tmp.unlink(missing_ok=True)  # still there only on failure


class Staging:
    """Several output files written as one: each to a temporary file beside its target, all
    renamed into place together once every one is whole (Ctrl-C, SIGTERM and SIGHUP held off
    for the renames), or all removed. A failure or an interrupt leaves every target as it was.
    Call from the main thread (signal handlers can be set only there)."""

    def __init__(self) -> None:
        self._files: list[tuple[Path, Path, BinaryIO]] = []  # (temporary, target, handle)

    def open(self, path: Path) -> BinaryIO:
        """A binary handle whose bytes become ``path`` at :meth:`commit`."""
        try:
            fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        handle = os.fdopen(fd, "wb")
        self._files.append((Path(name), path, handle))
        return _Named(handle, path)  # type: ignore[return-value]

    def commit(self) -> None:
        """Every file into place: closed (a full disk may show only now), then renamed."""
        for tmp, target, handle in self._files:
            try:
                handle.close()
                os.chmod(tmp, _permissions(target))  # mkstemp makes 0600
            except OSError as exc:
                raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None
        # Ctrl-C, SIGTERM and SIGHUP wait out the renames (microseconds), then are delivered:
        # every file is in place, or none is, and what an interrupt says is true.
        with _signals_held():
            for tmp, target, _ in self._files:
                try:
                    _put_in_place(tmp, target)
                except OSError as exc:
                    raise OutputError(f"cannot write {target}: {exc.strerror or exc}") from None

    def discard(self) -> None:
        """Remove every temporary file (those already renamed are gone from their names)."""
        for tmp, _, handle in self._files:
            with contextlib.suppress(OSError):
                handle.close()
            tmp.unlink(missing_ok=True)


class _Named:
    """A staged file's handle whose failed writes name the target, not the temporary file."""

    def __init__(self, handle: BinaryIO, target: Path) -> None:
        self._handle, self._target = handle, target

    def write(self, data: bytes) -> int:
        try:
            return self._handle.write(data)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(self._target)) from None

    def __getattr__(self, name: str) -> object:
        return getattr(self._handle, name)


@contextmanager
def staged() -> Iterator[Staging]:
    """A :class:`Staging` committed when the block ends, discarded if it raises; an OSError
    while writing names the target, not the temporary file."""
    stage = Staging()
    try:
        yield stage
        stage.commit()
    except OSError as exc:
        stage.discard()
        raise OutputError(f"cannot write {_target_of(stage, exc)}: {exc.strerror or exc}") from None
    except BaseException:
        stage.discard()
        raise


def _target_of(stage: Staging, exc: OSError) -> str:
    """The target an OSError on a temporary file is about (the first one where it names none)."""
    for tmp, target, _ in stage._files:
        if exc.filename in (str(tmp), str(target)):
            return str(target)
    return str(stage._files[0][1]) if stage._files else "the output"


def write_tensor(path: Path, tensor: torch.Tensor, name: str = "input_embeddings") -> None:
    """Write ``tensor`` as .npy, .pt or .safetensors, atomically. Every format fails the same
    way: one OSError's own words (a full disk says so), whichever library met it."""
    suffix = path.suffix.lower()
    data = tensor.detach().cpu().contiguous()
    try:
        with atomic_write(path) as handle:
            sink = _Sink(handle)
            try:
                _serialise(suffix, data, name, sink)
            except RuntimeError:  # torch.save wraps the OSError its writer met
                if sink.error is None:
                    raise
                raise sink.error from None
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _serialise(suffix: str, data: torch.Tensor, name: str, sink: _Sink) -> None:
    if suffix == ".npy":
        import numpy as np

        np.save(sink, data.numpy())  # not a real file to NumPy: written by write(), in blocks
    elif suffix == ".pt":
        import torch

        torch.save(data, sink)
    else:
        from safetensors.torch import save

        sink.write(save({name: data}))


class _Sink:
    """A file handle seen only through ``write``, which keeps the OSError it met: NumPy's
    ``tofile`` on a real file reports a full disk as "N requested and M written", and torch's
    writer turns it into a RuntimeError."""

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self.error: OSError | None = None

    def write(self, data: bytes) -> int:
        try:
            return self._handle.write(data)
        except OSError as exc:
            self.error = exc
            raise

    def flush(self) -> None:
        self._handle.flush()


STREAM_SUFFIXES = (".npy", ".safetensors")
_HEADER_BYTES = 256  # reserved, so the final shape can be written in place at the end
_NPY_DESCR = {"float32": "<f4", "float16": "<f2"}
_SAFETENSORS_DTYPE = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
_ITEM_SIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


def check_stream_path(path: Path) -> None:
    """Refuse, before any work, an output that cannot be streamed."""
    suffix = path.suffix.lower()
    if suffix not in STREAM_SUFFIXES:
        raise OutputFormatError(
            f"streaming (-t/--seq-len) writes .npy or .safetensors, whose header is finished "
            f"once the rows are counted; {suffix or 'a file without a suffix'} ({path}) is not "
            "one of them (torch.save needs the whole tensor in memory): write .npy instead"
        )


class ArrayStreamWriter:
    """Write a (N, *row_shape) array row block by row block, N unknown until the end.

    The file is written with plain ``write`` calls (no memory map, whose written pages would count
    against the process) through :func:`atomic_write`; the header, reserved up front, gets the
    final shape when the writer closes, and only then is the file renamed into place. On any
    error or Ctrl-C the temporary file is removed: no partial output is ever left.
    """

    def __init__(
        self, path: Path, row_shape: tuple[int, ...], dtype: str, name: str = "input_embeddings"
    ) -> None:
        check_stream_path(path)
        self.path, self.row_shape, self.dtype, self.name = path, row_shape, dtype, name
        self.rows = 0
        self._file = atomic_write(path)
        self._handle: BinaryIO | None = None

    def __enter__(self) -> ArrayStreamWriter:
        try:
            self._handle = self._file.__enter__()
            self._handle.write(self._header())
        except OSError as exc:
            if self._handle is not None:
                self._file.__exit__(type(exc), exc, exc.__traceback__)
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        return self

    def write(self, block: bytes, rows: int) -> None:
        """Append ``rows`` rows given as raw little-endian bytes."""
        try:
            self._handle.write(block)
        except OSError as exc:
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc
        self.rows += rows

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: object
    ) -> None:
        if kind is not None:
            self._file.__exit__(kind, error, trace)  # removes the temporary file
            return
        try:
            self._handle.seek(0)
            self._handle.write(self._header())
            self._file.__exit__(None, None, None)  # renames it into place
        except OSError as exc:
            self._file.__exit__(type(exc), exc, exc.__traceback__)
            raise OutputError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def _header(self) -> bytes:
        shape = (self.rows, *self.row_shape)
        if self.path.suffix.lower() == ".npy":
            text = (
                f"{{'descr': '{_NPY_DESCR[self.dtype]}', 'fortran_order': False, "
                f"'shape': {shape}, }}"
            )
            body = text.ljust(_HEADER_BYTES - 10 - 1) + "\n"  # magic (6) + version (2) + len (2)
            return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body.encode("latin1")
        nbytes = self.rows * _ITEM_SIZE[self.dtype]
        for size in self.row_shape:
            nbytes *= size
        meta = {
            self.name: {
                "dtype": _SAFETENSORS_DTYPE[self.dtype],
                "shape": list(shape),
                "data_offsets": [0, nbytes],
            }
        }
        body = json.dumps(meta, separators=(",", ":")).ljust(_HEADER_BYTES - 8)
        return len(body).to_bytes(8, "little") + body.encode("ascii")

"""What ``embedcli count`` is asked to do, as one frozen object that checks itself when made:
a combination of flags that means nothing is refused before any file is read."""

from __future__ import annotations

from dataclasses import dataclass, field

from embedcli.corpus.listing import Selection
from embedcli.errors import UsageError
from embedcli.models.hub.session import OFFLINE, HubAccess
from embedcli.tokenization.engines import mode

Window = tuple[str | None, int]  # --share-of: (a model's name, or None for a number; tokens)


@dataclass(frozen=True)
class CountRequest:
    """The flags of ``embedcli count``, read; made only when they make sense together."""

    paths: tuple[str, ...] = ()  # none: standard input
    encodings: tuple[str, ...] = ()  # -e, in the order given
    models: tuple[str, ...] = ()  # -m, in the order given
    access: HubAccess = OFFLINE  # --download: hf: tokenizers may come from the network
    selection: Selection = field(default_factory=Selection)
    errors: str = "skip"  # text that is not UTF-8: skip, replace or strict
    sort: str = "tokens"
    top: int = 20
    tree: bool = False
    depth: int = 3
    min_share: float = 0.0
    min_share_given: bool = False  # --min-share written otherwise than its default "0"
    context: Window | None = None
    as_json: bool = False
    as_jsonl: bool = False
    as_csv: bool = False
    quiet: bool = False
    engine: str = "local"  # local or dask
    scheduler: str | None = None  # a Dask scheduler's address
    workers: int | None = None
    engine_info: bool = False
    list_models: bool = False

    def __post_init__(self) -> None:
        if self.list_models:
            extra = self._given(("PATH", bool(self.paths)), ("--engine-info", self.engine_info))
            if extra:
                raise UsageError(
                    f"--list-models prints the model table: drop {' and '.join(extra)}"
                )
        elif self.engine_info:
            self._check_engine_info()
        else:
            self._check_count()

    def _given(self, *more: tuple[str, bool]) -> list[str]:
        """The flags of another mode given beside this one."""
        flags = (("--jsonl", self.as_jsonl), ("--csv", self.as_csv), ("--tree", self.tree))
        return [flag for flag, on in (more[0], *flags, *more[1:]) if on]

    def _check_engine_info(self) -> None:
        extra = self._given(("PATH", bool(self.paths)))
        if extra:
            raise UsageError(f"--engine-info counts nothing: drop {' and '.join(extra)}")
        remote = [f for f, on in (("--engine dask", self.engine == "dask"),
                                  ("--scheduler", self.scheduler is not None)) if on]  # fmt: skip
        if remote:
            raise UsageError(
                "--engine-info describes this machine's engines, not a Dask cluster's workers: "
                f"drop {' and '.join(remote)}"
            )

    def _check_count(self) -> None:

        mode()  # a bad EMBEDCLI_COUNT_ENGINE: a usage error now, not every file skipped later
        outputs = self._given(("--json", self.as_json))
        if len(outputs) > 1:
            raise UsageError(f"{' and '.join(outputs)} cannot be combined; pick one")
        if self.engine != "dask" and self.scheduler is not None:
            raise UsageError("--scheduler needs --engine dask")
        if not self.tree and (self.depth != 3 or self.min_share_given):
            raise UsageError("--depth and --min-share shape --tree: add --tree")

    @property
    def counted_models(self) -> list[str]:
        """-m's models; --share-of gpt-4o alone counts in gpt-4o's encoding."""
        named = self.context is not None and self.context[0] is not None
        if named and not self.encodings and not self.models:
            return [self.context[0]]  # type: ignore[index, list-item]
        return list(self.models)

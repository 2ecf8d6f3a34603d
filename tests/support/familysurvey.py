"""Every model_type of transformers' causal-LM, masked-LM and sequence-to-sequence mappings,
built as a tiny random model and set beside ``embedcli embed --weights FOLDER --ids ...``.

Each type runs in a process of its own (a build may crash or hang), under a time limit:

    python tests/support/familysurvey.py [TYPE ...] [--jobs 2] [--json survey.json]

and says, per type: ``exact`` (embedcli's tensor equals the first block's input, to the bit),
``wrong`` (exit 0 with other numbers: the worst outcome), ``refused`` (embedcli said no, with
its line), ``unbuilt`` (transformers could not build it at small sizes: why). The closing note
of a families change quotes its totals.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

IDS = [[5, 17, 200, 42, 9, 383, 77]]
MEMORY_LIMIT = 6 << 30  # bytes of address space per worker


def mappings() -> dict[str, str]:
    """model_type -> the head it is built with (causal, masked, seq2seq), in that preference."""
    from transformers.models.auto import modeling_auto as auto

    kinds: dict[str, str] = {}
    for kind, names in (
        ("causal", auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES),
        ("masked", auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES),
        ("seq2seq", auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES),
    ):
        for model_type in names:
            kinds.setdefault(model_type, kind)
    return kinds


def one(model_type: str, kind: str) -> dict:
    """Build, embed and compare one type: {type, kind, status, detail}."""
    import torch
    import transformers

    from support.familymodels import CASES, Case, build, first_block_input, load

    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    row = {"type": model_type, "kind": kind}
    # the group's own case where there is one (its config fix-ups), else the type's defaults
    case = next((c for c in CASES if c.model_type == model_type and c.name == model_type),
                None) or next((c for c in CASES if c.model_type == model_type),
                              Case(model_type, model_type, kind=kind))  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "model"
        try:
            build(case, folder)
            expected = first_block_input(load(folder, case), IDS)
        except Exception as error:
            lines = traceback.format_exception_only(type(error), error)
            return {**row, "status": "unbuilt", "detail": lines[-1].strip()[:300]}
        from embedcli.cli import app
        from support.helpers import make_runner

        out = Path(tmp) / "out.pt"
        ids = [a for r in IDS for a in ("--ids", ",".join(map(str, r)))]
        args = ["embed", "--weights", str(folder), *ids, "-o", str(out), "--json"]
        result = make_runner().invoke(app, args)
        if result.exit_code != 0:
            detail = (result.stderr or result.output).strip().splitlines()
            return {**row, "status": "refused", "detail": (detail or ["?"])[-1][:300]}
        got = torch.load(out)
        if got.shape == expected.shape and torch.equal(got, expected):
            return {**row, "status": "exact", "detail": ""}
        diff = (
            float((got.float() - expected.float()).abs().max())
            if got.shape == expected.shape
            else f"shape {tuple(got.shape)} vs {tuple(expected.shape)}"
        )
        return {**row, "status": "wrong", "detail": f"max |diff| {diff}"}


def _worker(types: list[str]) -> None:
    """Survey ``types`` in this process, one JSON line each, as each finishes."""
    import resource

    # a config whose defaults are a real model's (a 150k vocabulary, 256 experts) is refused
    # its memory here, rather than taking the machine's
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    kinds = mappings()
    for model_type in types:
        print("ROW " + json.dumps(one(model_type, kinds.get(model_type, "causal"))), flush=True)


def _chunk(types: list[str], timeout: float) -> list[dict]:
    """Run ``types`` in one process; a type that crashes it or runs past ``timeout`` is recorded
    as unbuilt, and the rest go on in a new process."""
    rows: list[dict] = []
    left = list(types)
    while left:
        command = [sys.executable, __file__, "--worker", *left]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                   text=True)  # fmt: skip
        timer = threading.Timer(timeout * len(left), process.kill)
        timer.start()
        for line in process.stdout:
            if line.startswith("ROW "):
                row = json.loads(line[4:])
                rows.append(row)
                left.remove(row["type"])
                timer.cancel()
                timer = threading.Timer(timeout, process.kill)
                timer.start()
                print(f"{row['status']:8} {row['type']:28} {row['detail']}", flush=True)
        process.wait()
        timer.cancel()
        if left:  # the first one left crashed the process, or hung
            row = {"type": left.pop(0), "status": "unbuilt",
                   "detail": f"the process ended (exit {process.returncode})"}  # fmt: skip
            rows.append(row)
            print(f"{row['status']:8} {row['type']:28} {row['detail']}", flush=True)
    return rows


def main() -> int:
    if sys.argv[1:2] == ["--worker"]:
        _worker(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("types", nargs="*")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=240)
    parser.add_argument("--json", type=Path)
    options = parser.parse_args()
    wanted = options.types or sorted(mappings())
    chunks = [wanted[i :: options.jobs] for i in range(options.jobs)]
    with ThreadPoolExecutor(options.jobs) as pool:
        rows = [row for part in pool.map(lambda c: _chunk(c, options.timeout), chunks)
                for row in part]  # fmt: skip
    rows.sort(key=lambda r: r["type"])
    totals = Counter(r["status"] for r in rows)
    print(dict(totals))
    if options.json:
        options.json.write_text(json.dumps(rows, indent=1))
    return 1 if totals.get("wrong") else 0


if __name__ == "__main__":
    raise SystemExit(main())

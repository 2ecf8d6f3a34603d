"""A worker process running llama.cpp's converter, ``convert_hf_to_gguf.py``, as it ships: for
each job, one line of JSON on stdin ({"folder", "out", "outtype"}), it runs the converter's
``main()`` with those arguments and answers one line of JSON on stdout. The converter's own
output goes to stderr. Run as ``python convert_worker.py LLAMA_CPP_TREE``."""

from __future__ import annotations

import json
import sys

from replies import replies as reply_stream


def main() -> None:
    replies = reply_stream()
    tree = sys.argv[1]
    sys.path.insert(0, tree)  # its conversion package; it puts its own gguf-py first itself
    sys.argv = ["convert_hf_to_gguf.py"]
    import convert_hf_to_gguf as converter

    for line in sys.stdin:
        job = json.loads(line)
        sys.argv = ["convert_hf_to_gguf.py", job["folder"], "--outtype", job["outtype"]]
        sys.argv += ["--outfile", job["out"]]
        try:
            converter.main()
            reply = {"ok": True}
        except SystemExit as stop:
            reply = {"ok": False, "error": f"the converter exited with {stop.code}"}
        except Exception as error:
            reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        print(json.dumps(reply), file=replies, flush=True)


if __name__ == "__main__":
    main()

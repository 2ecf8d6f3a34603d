"""A worker process running llama.cpp itself (the llama_cpp package) on GGUF files: for each
job, one line of JSON on stdin ({"gguf", "ids", "names", "out"}), it loads the model, decodes
the ids as one sequence, and saves the tensors of its compute graph named in "names" (the first
computed under each name), float32, to "out" (.npz), answering one line of JSON on stdout.

The tensors are read with llama.cpp's eval callback (cb_eval), from ggml's own struct
ggml_tensor (ggml.h: GGML_MAX_DIMS 4, GGML_MAX_OP_PARAMS 64, GGML_MAX_SRC 10, GGML_MAX_NAME 64),
on the CPU backend, where a tensor's data is host memory.
"""

from __future__ import annotations

import ctypes
import json
import sys

import numpy as np
from replies import replies as reply_stream
from replies import started_llama_cpp

LOG: list[str] = []  # llama.cpp's last log lines


def _errors() -> str:
    return " ".join(line.strip() for line in LOG if "error" in line or "failed" in line)


class GGMLTensor(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("buffer", ctypes.c_void_p),
        ("ne", ctypes.c_int64 * 4),
        ("nb", ctypes.c_size_t * 4),
        ("op", ctypes.c_int),
        ("op_params", ctypes.c_int32 * 16),
        ("flags", ctypes.c_int32),
        ("src", ctypes.c_void_p * 10),
        ("view_src", ctypes.c_void_p),
        ("view_offs", ctypes.c_size_t),
        ("data", ctypes.c_void_p),
        ("name", ctypes.c_char * 64),
        ("extra", ctypes.c_void_p),
        ("padding", ctypes.c_char * 8),
    ]


def run(llama_cpp, job: dict) -> dict:
    wanted = set(job["names"])
    found: dict[str, np.ndarray] = {}
    seen: list[str] = []

    def callback(pointer, ask, _data):
        tensor = ctypes.cast(pointer, ctypes.POINTER(GGMLTensor)).contents
        name = tensor.name.decode(errors="replace")
        if ask:
            return name in wanted or len(seen) < 80
        if len(seen) < 80:
            seen.append(name)
        ne = list(tensor.ne)
        dense = tensor.type == 0 and tensor.nb[0] == 4 and tensor.nb[1] == 4 * ne[0]
        if name in wanted and name not in found and dense and tensor.data:
            count = ne[0] * ne[1] * ne[2] * ne[3]
            values = np.ctypeslib.as_array(
                ctypes.cast(tensor.data, ctypes.POINTER(ctypes.c_float)), shape=(count,)
            )
            found[name] = values.copy().reshape(ne[3], ne[2], ne[1], ne[0]).squeeze()
        return True

    hook = llama_cpp.ggml_backend_sched_eval_callback(callback)
    model_params = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(job["gguf"].encode(), model_params)
    if not model:
        return {"ok": False, "error": f"llama.cpp could not load the model: {_errors()}"}
    ids = job["ids"]
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = params.n_batch = params.n_ubatch = max(64, len(ids))
    params.n_threads = params.n_threads_batch = 1
    params.embeddings = bool(job.get("embeddings"))
    params.cb_eval = hook
    context = llama_cpp.llama_init_from_model(model, params)
    try:
        tokens = (llama_cpp.llama_token * len(ids))(*ids)
        batch = llama_cpp.llama_batch_get_one(tokens, len(ids))
        run_batch = llama_cpp.llama_encode if job.get("encode") else llama_cpp.llama_decode
        status = run_batch(context, batch)
    finally:
        llama_cpp.llama_free(context)
        llama_cpp.llama_model_free(model)
    if status != 0:
        return {"ok": False, "error": f"llama.cpp returned {status}: {_errors()}", "seen": seen}
    np.savez(job["out"], **found)
    return {"ok": True, "found": sorted(found), "seen": seen}


def main() -> None:
    replies = reply_stream()
    llama_cpp, _kept = started_llama_cpp(LOG)
    for line in sys.stdin:
        try:
            reply = run(llama_cpp, json.loads(line))
        except Exception as error:
            reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        print(json.dumps(reply), file=replies, flush=True)


if __name__ == "__main__":
    main()

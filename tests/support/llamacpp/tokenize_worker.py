"""A worker process running llama.cpp's own tokenizer (the llama_cpp package) on GGUF files:
for each job, one line of JSON on stdin ({"gguf", "texts", "special"}), it loads the file's
vocabulary only (``vocab_only``, as ``Llama(path, vocab_only=True)`` does), tokenizes each text
with ``add_special`` off and ``parse_special`` as asked, and answers one line of JSON on stdout:
{"ok": true, "ids": [[...], ...], "add_bos", "add_eos", "bos", "eos"} (and, where the job
asks for "specials", "eot", "sep", "pad" and "eog": every id llama_vocab_is_eog holds; -1 is
none) or {"ok": false, "error"}. A file whose vocabulary llama.cpp refuses is an error naming
llama.cpp's log.

The last file's vocabulary is kept loaded, so a test may send many texts for one file.
"""

from __future__ import annotations

import json
import sys

from replies import replies as reply_stream
from replies import started_llama_cpp

LOG: list[str] = []  # llama.cpp's last log lines


def _errors() -> str:
    return " ".join(line.strip() for line in LOG if "error" in line or "failed" in line)


class Vocab:
    def __init__(self, llama_cpp, path: str) -> None:
        self.llama_cpp = llama_cpp
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self.model = llama_cpp.llama_model_load_from_file(path.encode(), params)
        if not self.model:
            raise RuntimeError(f"llama.cpp cannot load the vocabulary: {_errors()}")
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)

    def tokenize(self, text: str, special: bool) -> list[int]:
        lc = self.llama_cpp
        data = text.encode("utf-8", "surrogatepass")
        size = len(data) + 16
        while True:
            out = (lc.llama_token * size)()
            n = lc.llama_tokenize(self.vocab, data, len(data), out, size, False, special)
            if n >= 0:
                return list(out[:n])
            if -n <= size:
                raise RuntimeError(f"llama_tokenize returned {n}: {_errors()}")
            size = -n

    def facts(self) -> dict:
        lc = self.llama_cpp
        return {
            "add_bos": bool(lc.llama_vocab_get_add_bos(self.vocab)),
            "add_eos": bool(lc.llama_vocab_get_add_eos(self.vocab)),
            "bos": lc.llama_vocab_bos(self.vocab),
            "eos": lc.llama_vocab_eos(self.vocab),
            "n_tokens": lc.llama_vocab_n_tokens(self.vocab),
        }

    def specials(self) -> dict:
        lc, vocab = self.llama_cpp, self.vocab
        eog = [i for i in range(lc.llama_vocab_n_tokens(vocab)) if lc.llama_vocab_is_eog(vocab, i)]
        return {
            "eot": lc.llama_vocab_eot(vocab),
            "sep": lc.llama_vocab_sep(vocab),
            "pad": lc.llama_vocab_pad(vocab),
            "eog": eog,
        }

    def close(self) -> None:
        self.llama_cpp.llama_model_free(self.model)


def main() -> None:
    replies = reply_stream()
    llama_cpp, _kept = started_llama_cpp(LOG)
    loaded: tuple[str, Vocab] | None = None
    for line in sys.stdin:
        try:
            job = json.loads(line)
            if loaded is None or loaded[0] != job["gguf"]:
                if loaded is not None:
                    loaded[1].close()
                    loaded = None
                loaded = (job["gguf"], Vocab(llama_cpp, job["gguf"]))
            vocab = loaded[1]
            special = bool(job.get("special", False))
            ids = [vocab.tokenize(text, special) for text in job["texts"]]
            reply = {"ok": True, "ids": ids, **vocab.facts()}
            if job.get("specials"):
                reply |= vocab.specials()
        except Exception as error:
            reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        print(json.dumps(reply), file=replies, flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# llama.cpp's runtime, the oracle of every GGUF tokenizer test, built once from its sdist where no
# wheel for this machine is at hand (about 20 minutes on 2 cores), kept in a cache outside the
# repo, installed into the given Python's environment, then the tests that need it run:
#
#   bash bench/build_llama_cpp.sh [.venv/bin/python]
#
# The wheel is kept in ${XDG_CACHE_HOME:-~/.cache}/embedcli-tests/wheels; a second run reuses it.
# Those tests skip, saying why, where llama_cpp cannot be imported (.ci/fetch-llama-cpp installs a
# prebuilt wheel from ../shared/wheels where there is one).
set -euo pipefail
python=${1:-.venv/bin/python}
version=0.3.36
wheels="${XDG_CACHE_HOME:-$HOME/.cache}/embedcli-tests/wheels"
mkdir -p "$wheels"
wheel=$(ls "$wheels"/llama_cpp_python-"$version"-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
    "$python" -m pip wheel --no-deps --no-binary llama-cpp-python -w "$wheels" \
    "llama-cpp-python==$version"
  wheel=$(ls "$wheels"/llama_cpp_python-"$version"-*.whl | head -n 1)
fi
"$python" -m pip install -q "$wheel"
"$python" -m pytest -n0 -q tests/tokenization/test_gguf_sentencepiece.py \
  tests/tokenization/test_gguf_pre_tokenizers.py tests/tokenization/test_gguf_wpm_ugm_rwkv.py \
  tests/models/test_gguf_conversions.py

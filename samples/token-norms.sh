#!/usr/bin/env bash
# Embed a text file, save the input embeddings to .npy, and list the tokens whose input vectors
# have the largest L2 norm: the --json report gives the pieces, the .npy file the numbers.
# Usage: samples/token-norms.sh [FILE] [TOP]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
file=${1:-"$here/lighthouse.txt"}
top=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

embedcli embed - < "$file" --d-model 32 --context-length 256 --truncate-to-context --device cpu \
  --output "$work/emb.npy" --json > "$work/report.json"

python3 - "$work/report.json" "$work/emb.npy" "$top" <<'PY'
import json, sys
import numpy as np

report = json.load(open(sys.argv[1]))
vectors = np.load(sys.argv[2])[0]          # (T, d): the only sequence of the batch
pieces = [t["piece"] for t in report["tokens"][0]]
norms = np.linalg.norm(vectors, axis=1)
print(f"{len(pieces)} tokens, vectors of {vectors.shape[1]} dimensions, truncated {report['truncated'][0]}")
for index in np.argsort(-norms, kind="stable")[: int(sys.argv[3])]:
    print(f"{index:>4}  {norms[index]:8.4f}  {pieces[index]!r}")
PY

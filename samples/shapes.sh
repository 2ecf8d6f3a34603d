#!/usr/bin/env bash
# Print the shape of every step of the forward pass for a batch of two texts, from --json output.
# Usage: samples/shapes.sh [TEXT] [TEXT]
set -euo pipefail
first=${1:-"Hello, world!"}
second=${2:-"Hi"}

embedcli embed "$first" "$second" --d-model 16 --device cpu --json |
  python3 -c '
import json, sys
report = json.load(sys.stdin)
cfg = report["config"]
print("encoding={} d_model={} device={}".format(cfg["encoding"], cfg["d_model"], cfg["device"]))
for step in report["steps"]:
    shape = "x".join(str(n) for n in step["shape"])
    print("{:<20} {:<10} {}".format(step["name"], shape, step["dtype"]))
print("padding per sequence:", [row.count(0) for row in report["attention_mask"]])
'

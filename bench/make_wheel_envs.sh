#!/usr/bin/env bash
# Two virtual environments with embedcli installed as a user installs it, one per torch wheel,
# for `python bench/startup_bench.py --env DIR/cpu --env DIR/default`:
#   DIR/cpu      torch's CPU build first ($CPU_TORCH), then the project
#   DIR/default  the project alone: pip takes whatever torch it resolves (on Linux x86-64, the
#                CUDA build: several GB; seen here: torch 2.14.1 with CUDA 13 libraries)
# An environment that exists already only gets the project reinstalled (minutes, not GBs).
#
#   bench/make_wheel_envs.sh [DIR]        (default DIR: /tmp/embedcli-wheels)
#   CPU_TORCH="torch --index-url https://download.pytorch.org/whl/cpu" bench/make_wheel_envs.sh
set -euo pipefail
dir=${1:-/tmp/embedcli-wheels}
root=$(cd "$(dirname "$0")/.." && pwd)
# On the machines this project is built on, torch==2.13.0 is the CPU build on local disk.
read -r -a cpu_torch <<< "${CPU_TORCH:-torch==2.13.0}"

for kind in cpu default; do
    env="$dir/$kind"
    if [ -x "$env/bin/embedcli" ]; then
        "$env/bin/pip" install --quiet --no-deps --force-reinstall "$root"
        continue
    fi
    python3 -m venv "$env"
    if [ "$kind" = cpu ]; then
        "$env/bin/pip" install --quiet "${cpu_torch[@]}"
    fi
    "$env/bin/pip" install --quiet "$root"
done
for kind in cpu default; do
    "$dir/$kind/bin/python" -c "import torch; print('$dir/$kind: torch', torch.__version__)"
done

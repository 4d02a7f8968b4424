#!/usr/bin/env bash
# Make one peer's virtual environment: benchmarks/peers/setup.sh simgrag-ref|vector-graph-rag|kgp-ref|hipporag2
# (pins and paths: benchmarks/peers/envs.py; PEERS_HOME=/work/peers by default, PEERS_PYTHON picks the interpreter)
set -euo pipefail
exec "${PEERS_PYTHON:-python3.11}" "$(dirname "$0")/envs.py" "$@"

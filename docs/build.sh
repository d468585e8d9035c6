#!/usr/bin/env bash
# Build the documentation site with warnings as errors (as CI does); HTML in docs/_build/html.
# Needs the docs extra: pip install -e ".[docs]"
set -euo pipefail
cd "$(dirname "$0")/.."
exec python -m sphinx -W --keep-going -b html docs docs/_build/html "$@"

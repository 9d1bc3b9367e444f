#!/usr/bin/env bash
# The two ways to look at a column's lineage in a browser (the demo ends with this):
# write it as one self-contained HTML file, and print the command that serves the store
# with its web UI, and the URL of that column's page.
#   examples/in_browser.sh STORE DATASET COLUMN HTML_FILE
set -euo pipefail

store=$1 dataset=$2 column=$3 html=$4
repo=$(cd "$(dirname "$0")/.." && pwd)

# The same lineage-listener as the demo: the project's venv when none is active, else a checkout.
venv_cli=
if [[ -z "${VIRTUAL_ENV:-}" && -x "$repo/.venv/bin/lineage-listener" ]]; then
  venv_cli="$repo/.venv/bin/lineage-listener"
  ll=("$venv_cli")
elif command -v lineage-listener >/dev/null 2>&1; then
  ll=(lineage-listener)
else
  export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
  ll=("$(command -v python || command -v python3)" -m lineage_listener)
fi

rel() {  # a path as the user can type it from here
  if [[ $1 == "$PWD/"* ]]; then echo "${1#"$PWD/"}"; else echo "$1"; fi
}
if [[ -n $venv_cli ]]; then shown=$(rel "$venv_cli")
elif [[ ${ll[0]} == lineage-listener ]]; then shown=lineage-listener
else shown="PYTHONPATH=$repo ${ll[*]}"
fi

if ! wrote=$("${ll[@]}" html --store "$store" -o "$html" "$dataset" "$column" 2>&1 >/dev/null); then
  echo "$wrote" >&2
  exit 1
fi
python=$(command -v python3 || command -v python)
quote() { "$python" -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"; }

echo
echo "The same lineage in a browser:"
echo "  1. one self-contained file, no server (${wrote##*: }): open $(rel "$html")"
echo "  2. the lineage server and its web UI (search, dataset pages, runs; Ctrl-C stops it):"
echo "       $shown serve --store $(rel "$store")"
echo "     then open http://127.0.0.1:8765/#/column/$(quote "$dataset")/$(quote "$column")"

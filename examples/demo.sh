#!/usr/bin/env bash
# Zero-code lineage demo: run an unmodified PySpark job under spark-submit with
# capture turned on by configuration only, ask the store where a column came from, then show
# the two ways to see the same lineage in a browser (an HTML file, and the lineage server).
#   examples/demo.sh [OUTPUT_DIR]        (default: ./demo-output)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$repo/demo-output}" && cd "${1:-$repo/demo-output}" && pwd)
store="$out/lineage.duckdb"

# Use the project's venv when there is one and none is active.
if [[ -z "${VIRTUAL_ENV:-}" && -x "$repo/.venv/bin/python" ]]; then
  export PATH="$repo/.venv/bin:$PATH"
fi
python=$(command -v python)
export PYSPARK_PYTHON="$python" PYSPARK_DRIVER_PYTHON="$python"
if command -v lineage-listener >/dev/null 2>&1; then
  ll=(lineage-listener)
else  # a checkout that is not pip-installed
  export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
  ll=("$python" -m lineage_listener)
fi

rm -rf "$out/raw" "$out/paid_orders" "$out/revenue_by_country" "$out/warehouse" "$store" "$store.wal"

echo "+ spark-submit \$(lineage-listener spark-conf --store $store) examples/sample_job.py $out"
# shellcheck disable=SC2046  # word splitting of the printed arguments is intended
spark-submit --master "local[2]" --conf spark.ui.enabled=false --conf spark.sql.shuffle.partitions=4 \
  $("${ll[@]}" spark-conf --store "$store") \
  "$repo/examples/sample_job.py" "$out" 2> "$out/spark-submit.log"
echo "(Spark's log: $out/spark-submit.log)"

target="file:$out/revenue_by_country"
echo
echo "Upstream lineage of $target . revenue:"
if "${ll[@]}" upstream --help >/dev/null 2>&1; then
  "${ll[@]}" upstream --store "$store" "$target" revenue
else
  "${ll[@]}" sql --store "$store" "
    SELECT target_column, source_dataset, source_column, transform, kind, expression
    FROM column_lineage
    WHERE target_dataset = '$target' AND (target_column = 'revenue' OR target_column IS NULL)
    ORDER BY kind, source_dataset, source_column"
fi

"$repo/examples/in_browser.sh" "$store" "$target" revenue "$out/revenue_lineage.html"

"""One zero-code job (``spark-submit $(lineage-listener spark-conf ...)``, the bridge and its worker)
checks, at the cost of one Spark application, what the in-process tests check in process:

- the run records the Airflow task and DAG run that launched it, from the conf keys exactly as
  Airflow's OpenLineage provider sets them (``tests/test_airflow_parent.py`` for the rest);
- each write records its rows, bytes and files, and each read the rows it counted
  (``tests/test_write_statistics.py``);
- a SQL variable set from a query carries its lineage into the statements of its session that read
  it, and each session keeps its own variables, a SQL script's local ones too
  (``tests/test_sql_variables.py``; Spark 4 only).
"""
from __future__ import annotations

import json
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

import duckdb
import pyspark
import pytest

from lineage_listener.openlineage import ingest
from tests.server_helpers import TOKEN, Server
from tests.test_docs_commands import the_server_pages_run_request
from tests.test_bridge_jobs import capture_args, run_job

SPARK4 = int(pyspark.__version__.split(".")[0]) >= 4

#: What Airflow's provider passes (``_get_parent_job_information_as_spark_properties``): the namespace,
#: ``<dag_id>.<task_id>``, the task run's UUID (v7), and the DAG run's.
#: The task and DAG run are those of ``tests/fixtures/openlineage/airflow_dag_task.ndjson``.
PARENT = {
    "spark.openlineage.parentJobNamespace": "airflow-prod",
    "spark.openlineage.parentJobName": "sales_dag.load_totals",
    "spark.openlineage.parentRunId": "0197a0c0-0000-7000-8000-0000000000d2",
    "spark.openlineage.rootParentRunId": "0197a0c0-0000-7000-8000-0000000000d1",
    "spark.openlineage.rootParentJobName": "sales_dag",
    "spark.openlineage.rootParentJobNamespace": "airflow-prod",
}
FIXTURES = Path(__file__).parent / "fixtures" / "openlineage"

JOB = '''
import json, sys
from pyspark.sql import SparkSession

cfg = json.loads(sys.argv[1])
spark = SparkSession.builder.appName("zero-code-run").getOrCreate()
spark.range(100).selectExpr("id", "id % 7 AS k").write.parquet(cfg["source"])
spark.sql(f"CREATE TABLE zc_t USING parquet AS SELECT * FROM parquet.`{cfg['source']}` WHERE k > 2")
spark.sql("CREATE TABLE zc_empty USING parquet AS SELECT * FROM zc_t WHERE k > 100")
if cfg["variables"]:
    spark.sql("DECLARE VARIABLE v BIGINT DEFAULT 0")
    spark.sql("SET VAR v = (SELECT max(id) FROM zc_t)")
    spark.sql("CREATE TABLE zc_var USING parquet AS SELECT v AS m, k FROM zc_t")
    other = spark.newSession()  # its own variables, the same name
    other.sql("DECLARE VARIABLE v BIGINT DEFAULT 0")
    other.sql("SET VAR v = (SELECT min(k) FROM zc_t)")
    other.sql("CREATE TABLE zc_other USING parquet AS SELECT v AS m FROM zc_t")
    spark.sql("""BEGIN
        DECLARE lv BIGINT DEFAULT 0;
        SET lv = (SELECT sum(id) FROM zc_t);
        CREATE TABLE zc_script USING parquet AS SELECT lv AS m FROM zc_t;
    END""")
spark.stop()
'''


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("zero_code_run")
    store = tmp / "lineage.duckdb"
    script = tmp / "job.py"
    script.write_text(JOB)
    source = tmp / "source"
    parent = [arg for key, value in PARENT.items() for arg in ("--conf", f"{key}={value}")]
    conf = ["--conf", f"spark.sql.warehouse.dir={tmp / 'warehouse'}"]
    code, out, err = run_job([*capture_args(store), *parent, *conf, str(script),
                              json.dumps({"source": str(source), "variables": SPARK4})], tmp)
    assert code == 0, err[-3000:]
    return store, "file:" + str(source)


def test_the_run_records_the_airflow_task_and_dag_run(captured):
    store, _ = captured
    with duckdb.connect(str(store), read_only=True) as con:
        runs = con.execute("""SELECT parent_job_namespace, parent_job_name, parent_run_id, root_parent_job_namespace,
                                     root_parent_job_name, root_parent_run_id FROM runs""").fetchall()
    assert runs == [("airflow-prod", "sales_dag.load_totals", PARENT["spark.openlineage.parentRunId"],
                     "airflow-prod", "sales_dag", PARENT["spark.openlineage.rootParentRunId"])]


def test_with_airflows_events_the_run_appears_under_its_dag_run(captured, tmp_path):
    """Airflow's own events ingested into the same store: the DAG run lists the Spark run, whose page
    links its task and DAG run, over a real server; each write shows its rows."""
    store, _ = captured
    copy = tmp_path / "with_airflow.duckdb"
    shutil.copy(store, copy)
    with open(FIXTURES / "airflow_dag_task.ndjson") as events:
        ingest.ingest(str(copy), events)
    with duckdb.connect(str(copy), read_only=True) as con:
        app_run = con.execute("SELECT run_id FROM runs WHERE app_name = 'zero-code-run'").fetchone()[0]
    dag_run, task = (f"openlineage:{PARENT[k]}" for k in ("spark.openlineage.rootParentRunId",
                                                          "spark.openlineage.parentRunId"))
    server = Server(copy).start()
    try:
        dag = get(server, f"/api/runs/{dag_run}")
        spark_run = get(server, f"/api/runs/{app_run}")
        page = the_server_pages_run_request(server, app_run, tmp_path)  # the server page's example, on this run
    finally:
        server.stop()
    assert not page, "\n".join(page)
    assert [c["run_id"] for c in dag["children"]] == [app_run]
    assert dag["children"][0]["task"] == "sales_dag.load_totals"
    assert spark_run["parent"] == {"namespace": "airflow-prod", "name": "sales_dag.load_totals", "run_id": dag_run,
                                   "openlineage_run_id": PARENT["spark.openlineage.parentRunId"], "query_id": task}
    assert spark_run["root"]["run_id"] == dag_run and spark_run["root"]["name"] == "sales_dag"
    rows = {q["target_dataset"]: q["rows"] for q in spark_run["queries"] if q["target_dataset"]}
    assert rows["spark_catalog.default.zc_t"] == 56 and rows["spark_catalog.default.zc_empty"] == 0


def test_each_write_records_what_it_produced(captured):
    store, source = captured
    with duckdb.connect(str(store), read_only=True) as con:
        writes = dict(con.execute("""SELECT q.target_dataset, w.rows FROM write_statistics w
                                     JOIN queries q USING (query_id)""").fetchall())
        sizes = con.execute("SELECT min(bytes), min(files) FROM write_statistics").fetchone()
        reads = dict(con.execute("""SELECT q.target_dataset, r.rows FROM read_statistics r JOIN queries q USING (query_id)
                                    WHERE r.dataset = ?""", [source]).fetchall())
    assert writes["spark_catalog.default.zc_t"] == 56 and writes["spark_catalog.default.zc_empty"] == 0
    assert writes[source] == 100
    assert sizes[0] > 0 and sizes[1] >= 1
    assert reads == {"spark_catalog.default.zc_t": 100}


@pytest.mark.skipif(not SPARK4, reason="SQL variables came with Spark 4.0")
def test_variables_carry_lineage_per_session(captured):
    store, _ = captured
    with duckdb.connect(str(store), read_only=True) as con:
        edges = con.execute("""SELECT target_dataset, target_column, source_column, transform FROM column_lineage
                               WHERE target_dataset IN ('spark_catalog.default.zc_var', 'spark_catalog.default.zc_other',
                                                        'spark_catalog.default.zc_script')
                                 AND kind = 'direct'""").fetchall()
    by_target = {}
    for target, column, source, transform in edges:
        by_target.setdefault((target.rsplit(".", 1)[-1], column), set()).add((source, transform))
    assert by_target[("zc_var", "m")] == {("id", "aggregate")}  # max(id), set in this session
    assert by_target[("zc_var", "k")] == {("k", "identity")}
    assert by_target[("zc_other", "m")] == {("k", "aggregate")}  # min(k): the other session's own v
    assert by_target[("zc_script", "m")] == {("id", "aggregate")}  # a script's local variable


def get(server: Server, path: str) -> dict:
    request = urllib.request.Request(server.url + urllib.parse.quote(path, safe="/:"),
                                     headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())

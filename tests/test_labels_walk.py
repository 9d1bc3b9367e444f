"""The labels of a dataset's columns walk only the columns on a path from a labelled column to the
question (a key-level closure, then the hops among those columns read at once): each answer here is
checked against the states the rules give, and against the propagation over the whole store (a walk
downstream from every labelled column, which prunes nothing). Stores are written through the
store's write path."""
from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from lineage_listener.govern import labelstore
from lineage_listener.govern.answers import column_labels
from lineage_listener.query import open_store
from lineage_listener.store.connection import open_writable
from lineage_listener.store.rows import row_of
from lineage_listener.store.upsert import commit_batch

DB = "spark_catalog.db."


def at(day: int) -> datetime:
    return datetime(2026, 1, 1) + timedelta(days=day - 1, hours=3)


def step(source: tuple[str, str], target: tuple[str, str | None], day: int, transform: str = "identity",
         expr: str | None = None, masking: bool = False) -> tuple:
    """One captured direct edge, as its own query and run (``target`` column None: a dataset-level edge)."""
    run = f"{target[0]}-{day}-{transform}"
    return (f"{run}:q", run, target[0], target[1], source[0], source[1], transform, "direct", expr or source[1],
            masking, at(day).isoformat(sep=" "))


def store_of(tmp_path: Path, rows: list[tuple], labels: list[tuple[str, str, str, bool]],
             datasets: list[tuple] = (), columns: list[tuple[str, str]] = ()) -> Path:
    path = tmp_path / "lineage.duckdb"
    batch = labelstore.set_batch(labels, "test")
    for r in rows:
        batch.add(row_of("column_lineage", r))
    for name, location in datasets:
        batch.add(row_of("datasets", (name, "table", "parquet", location, None, at(1), at(1))))
    for i, (name, column) in enumerate(columns):
        batch.add(row_of("dataset_columns", (name, column, "string", True, at(1), at(1), i)))
    con = open_writable(path)
    try:
        commit_batch(con, batch)
    finally:
        con.close()
    return path


def labels_of(answer: dict) -> dict[str, set[str]]:
    return {c["column"]: {x["label"] for x in c["labels"]} for c in answer["columns"]}


def masked_of(answer: dict) -> dict[str, set[str]]:
    return {c["column"]: {x["label"] for x in c["masked"]} for c in answer["columns"] if c["masked"]}


def agrees_with_the_whole_store(path: Path, dataset: str) -> dict:
    """The dataset's answer, checked column by column against the whole store's propagation."""
    store = open_store(path)
    answer = column_labels(store, dataset, influence=False)
    whole = {c["column"]: c for c in column_labels(store, influence=False)["columns"] if c["dataset"] == dataset}
    for c in answer["columns"]:
        mine = {k: c[k] for k in ("labels", "masked")}
        theirs = {k: whole[c["column"]][k] for k in ("labels", "masked")} if c["column"] in whole \
            else {"labels": [], "masked": []}
        assert mine == theirs, c["column"]
    return answer


def test_a_masking_step_mid_path_stops_the_copy_past_it(tmp_path):
    """s.email -> a.email (clear) -> b.h (sha2: masking) -> c.h; s.email -> b.e -> c.e in clear."""
    s, a, b, c = DB + "s", DB + "a", DB + "b", DB + "c"
    rows = [step((s, "email"), (a, "email"), 1), step((a, "email"), (b, "h"), 2, "derived", "sha2(email, 256)", True),
            step((b, "h"), (c, "h"), 3), step((s, "email"), (b, "e"), 2), step((b, "e"), (c, "e"), 3, "rename")]
    path = store_of(tmp_path, rows, [(s, "email", "pii.email", True)])
    answer = agrees_with_the_whole_store(path, c)
    assert labels_of(answer) == {"h": set(), "e": {"pii.email"}}
    assert masked_of(answer) == {"h": {"pii.email"}}
    hops = next(x for x in next(col for col in answer["columns"] if col["column"] == "e")["labels"])["hops"]
    assert [(h["source"], h["target"], h["run_id"]) for h in hops] == [
        ([s, "email"], [b, "e"], f"{b}-2-identity"), ([b, "e"], [c, "e"], f"{c}-3-rename")]


def test_a_declared_masking_function_mid_path_stops_the_copy(tmp_path):
    s, a, b = DB + "s", DB + "a", DB + "b"
    rows = [step((s, "email"), (a, "k"), 1, "derived", "my_hash(email)"), step((a, "k"), (b, "k"), 2)]
    path = store_of(tmp_path, rows, [(s, "email", "pii.email", True)])
    assert labels_of(column_labels(open_store(path), b, influence=False)) == {"k": {"pii.email"}}
    answer = column_labels(open_store(path), b, influence=False, masking=["my_hash"])
    assert labels_of(answer) == {"k": set()} and masked_of(answer) == {"k": {"pii.email"}}


def test_a_path_backwards_in_time_carries_no_label(tmp_path):
    """s -> a on day 5, a -> b on day 3 and again on day 7: b holds s's data from day 7 on only,
    and the path shown uses the day 7 capture."""
    s, a, b, c = DB + "s", DB + "a", DB + "b", DB + "c"
    rows = [step((s, "x"), (a, "x"), 5), step((a, "x"), (b, "x"), 3), step((a, "x"), (c, "x"), 3)]
    later = step((a, "x"), (b, "x"), 7)
    path = store_of(tmp_path, rows + [later[:1] + (later[1] + "-again",) + later[2:]],
                    [(s, "x", "confidential", True)])
    assert labels_of(agrees_with_the_whole_store(path, c)) == {"x": set()}
    answer = agrees_with_the_whole_store(path, b)
    assert labels_of(answer) == {"x": {"confidential"}}
    hops = answer["columns"][0]["labels"][0]["hops"]
    assert [h["captured_at"] for h in hops] == [at(5), at(7)]
    assert hops[-1]["run_id"] == f"{b}-7-identity-again"


def test_a_path_arriving_among_many_captures_is_timed_from_those_read_with_the_hops(tmp_path, monkeypatch):
    """a -> b was captured every day for 150 days, s -> a on day 80 only: the path uses a -> b's day 80
    capture, one far from both ends of its captures. Every capture time of the hops on the paths is
    read with them, so the walk asks the store for no capture time of its own."""
    s, a, b = DB + "s", DB + "a", DB + "b"
    rows = [step((s, "x"), (a, "x"), 80)] + [step((a, "x"), (b, "x"), day) for day in range(1, 151)]
    path = store_of(tmp_path, rows, [(s, "x", "confidential", True)])
    expected = agrees_with_the_whole_store(path, b)

    def no_lookup(*args, **kwargs):
        raise AssertionError("a capture time was looked up")
    monkeypatch.setattr("lineage_listener.govern.answers.nearest_captures", no_lookup)
    answer = column_labels(open_store(path), b, influence=False)
    assert answer == expected and labels_of(answer) == {"x": {"confidential"}}
    hops = answer["columns"][0]["labels"][0]["hops"]
    assert [(h["captured_at"], h["run_id"]) for h in hops] == [(at(80), f"{a}-80-identity"),
                                                               (at(80), f"{b}-80-identity")]


def test_a_path_written_by_storage_location_continues_the_table(tmp_path):
    """a job wrote file:/wh/a (the location of table a) from s; another copied table a to b."""
    s, a, b = DB + "s", DB + "a", DB + "b"
    rows = [step((s, "email"), ("file:/wh/a", "email"), 1), step((a, "email"), (b, "email"), 2)]
    path = store_of(tmp_path, rows, [(s, "email", "pii.email", True)], datasets=[(a, "file:/wh/a")])
    assert labels_of(agrees_with_the_whole_store(path, b)) == {"email": {"pii.email"}}
    assert labels_of(agrees_with_the_whole_store(path, a)) == {"email": {"pii.email"}}
    assert labels_of(column_labels(open_store(path), "file:/wh/a/", influence=False)) == {"email": {"pii.email"}}


def test_a_struct_copied_whole_carries_its_labelled_field(tmp_path):
    """s.st.email is labelled; a.st <- s.st copies the whole struct; b.e <- a.st.email names the field."""
    s, a, b = DB + "s", DB + "a", DB + "b"
    rows = [step((s, "st"), (a, "st"), 1), step((a, "st.email"), (b, "e"), 2)]
    path = store_of(tmp_path, rows, [(s, "st.email", "pii.email", True)])
    assert labels_of(agrees_with_the_whole_store(path, b)) == {"e": {"pii.email"}}


def test_an_edge_into_a_whole_dataset_reaches_each_of_its_columns(tmp_path):
    """s.x -> a (a direct edge stored with a null target column); a.y -> b.y."""
    s, a, b = DB + "s", DB + "a", DB + "b"
    rows = [step((s, "x"), (a, None), 1), step((a, "y"), (b, "y"), 2)]
    path = store_of(tmp_path, rows, [(s, "x", "confidential", True)], columns=[(a, "y")])
    assert labels_of(agrees_with_the_whole_store(path, a)) == {"y": {"confidential"}}
    assert labels_of(agrees_with_the_whole_store(path, b)) == {"y": {"confidential"}}


def test_a_review_on_the_way_stops_the_label_and_an_own_label_stays(tmp_path):
    s, a, b = DB + "s", DB + "a", DB + "b"
    rows = [step((s, "x"), (a, "x"), 1), step((a, "x"), (b, "x"), 2), step((s, "y"), (b, "y"), 2)]
    path = store_of(tmp_path, rows, [(s, "x", "pii", True), (s, "y", "pii", True), (a, "x", "pii", False),
                                     (b, "y", "confidential", True)])
    assert labels_of(agrees_with_the_whole_store(path, b)) == {"x": set(), "y": {"pii", "confidential"}}


def test_questions_in_one_session_answer_as_each_asked_alone(tmp_path):
    """Inside ``store.session()`` the names and hops one question read serve the next (direct-only
    walks and walks with influence apart); every answer is the one a connection per question
    gives, and the file is free for a writer once the session ends. s.email reaches c.e in clear
    and c.h masked, through a path written by table a's location; c is filtered on t.flag."""
    s, t, a, b, c = DB + "s", DB + "t", DB + "a", DB + "b", DB + "c"
    run = f"{c}-3-filter"
    rows = [step((s, "email"), ("file:/wh/a", "email"), 1), step((a, "email"), (b, "email"), 2),
            step((b, "email"), (c, "h"), 3, "derived", "sha2(email, 256)", True), step((b, "email"), (c, "e"), 3),
            (f"{run}:q", run, c, None, t, "flag", "filter", "indirect", "flag", False, at(3).isoformat(sep=" "))]
    path = store_of(tmp_path, rows, [(s, "email", "pii.email", True), (t, "flag", "confidential", True)],
                    datasets=[(a, "file:/wh/a")])
    store = open_store(path)
    asked = [(d, influence) for influence in (False, True) for d in (c, b, "file:/wh/a/", a, c)]
    alone = [column_labels(store, d, influence=influence) for d, influence in asked]
    with store.session():
        shared = [column_labels(store, d, influence=influence) for d, influence in asked]
    assert shared == alone
    assert labels_of(shared[0]) == {"h": set(), "e": {"pii.email"}} and masked_of(shared[0]) == {"h": {"pii.email"}}
    influenced = {col["column"]: {x["label"] for x in col["influenced_by"]} for col in shared[-1]["columns"]}
    assert influenced == {"h": {"confidential"}, "e": {"confidential"}}
    assert labels_of(shared[2]) == labels_of(shared[3]) == {"email": {"pii.email"}}
    open_writable(path).close()   # the session let go of the file

"""Reading Python functions from their pickled commands, without running them (no Spark needed).

The payloads are made the way PySpark makes them (``pyspark.cloudpickle``, ``(function, return
type)``), from functions of this module pickled by value as a notebook's or a job's are.
"""
from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from pyspark import cloudpickle

from lineage_listener import pycode
from lineage_listener.pycode import pickled
from lineage_listener.pycode.reading import Shape

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # as a job's or notebook's functions are


def command(fn, returns=None) -> bytes:
    return cloudpickle.dumps((fn, returns))


def edges(reading: pycode.Reading, shape: Shape) -> dict[str, set[tuple[str, str]]]:
    """``{output: {(input, transform)}}`` of a reading, guesses marked ``?``."""
    outs = shape.outputs or ("value",)
    return {name: {(shape.inputs[i], t + ("?" if o.guess else "")) for i, t in o.flows}
            for name, o in zip(outs, reading.outputs)}


def read(fn, shape: Shape) -> tuple[pycode.Reading, dict[str, set[tuple[str, str]]]]:
    found = pycode.read(command(fn), shape)
    return found, edges(found, shape)


PEOPLE = ("id", "email", "name", "amount")


# -- pandas and Arrow functions ----------------------------------------------------------


def domains(it):
    for pdf in it:
        pdf["domain"] = pdf["email"].str.split("@").str[1]
        yield pdf[["id", "domain"]]


def test_map_in_pandas_names_each_output_by_the_columns_it_reads():
    found, got = read(domains, Shape("map", PEOPLE, ("id", "domain")))
    assert got == {"id": {("id", "copy")}, "domain": {("email", "derived")}}
    assert found.status == "exact" and found.note() is None and found.label == f"domains ({Path(__file__).name}:" \
        f"{domains.__code__.co_firstlineno})"


def keep_rich(it):
    for pdf in it:
        rich = pdf[pdf.amount > 100]
        yield rich.assign(tier=lambda d: d["amount"].round(-2)).drop(columns=["email"])


def test_a_row_filter_is_a_filter_and_untouched_columns_pass_through():
    shape = Shape("map", PEOPLE, ("id", "name", "amount", "tier"))
    found, got = read(keep_rich, shape)
    assert got == {"id": {("id", "copy")}, "name": {("name", "copy")}, "amount": {("amount", "copy")},
                   "tier": {("amount", "derived")}}
    assert {PEOPLE[i] for i in found.filters} == {"amount"}


def arrow_upper(it):
    import pyarrow.compute as pc
    for batch in it:
        yield pa.RecordBatch.from_arrays([batch.column("id"), pc.utf8_upper(batch.column("name"))],
                                         names=["id", "name_uc"])


def test_map_in_arrow_follows_record_batches():
    found, got = read(arrow_upper, Shape("map", PEOPLE, ("id", "name_uc"), arrow=True))
    assert got == {"id": {("id", "copy")}, "name_uc": {("name", "derived")}} and found.status == "exact"


def total(key, pdf):
    return pd.DataFrame({"name": [key[0]], "total": [pdf["amount"].sum()], "n": [len(pdf)]})


def test_apply_in_pandas_keys_copy_and_reductions_aggregate():
    shape = Shape("grouped", ("name",) + PEOPLE, ("name", "total", "n"), ((1, 4),))
    found, got = read(total, shape)
    assert got == {"name": {("name", "copy")}, "total": {("amount", "aggregate")}, "n": set()}


def per_customer(left, right):
    merged = left.merge(right, on="id")
    merged["score"] = merged["amount"] * merged["weight"]
    return merged[["id", "score"]]


def test_cogrouped_functions_read_both_sides():
    shape = Shape("cogrouped", ("id", "id", "amount", "id", "id", "weight"), ("id", "score"), ((1, 2), (1, 2)))
    found, got = read(per_customer, shape)
    assert got["score"] == {("amount", "derived"), ("weight", "derived")}
    assert ("id", "copy") in got["id"] and found.status == "exact"


# -- scalar UDFs ---------------------------------------------------------------------------


def parts(email, name):
    return (email.split("@")[1], name.upper())


def test_a_struct_result_is_read_field_by_field():
    found, got = read(parts, Shape("scalar", ("_0", "_1"), ("domain", "shout")))
    assert got == {"domain": {("_0", "derived")}, "shout": {("_1", "derived")}}


def tier(amount, currency, unused):
    if amount is None:
        return None
    return "big" if amount > 100 else currency.lower()


def test_a_scalar_udf_narrows_to_the_arguments_it_uses_conditions_included():
    found, got = read(tier, Shape("scalar", ("_0", "_1", "_2")))
    assert got == {"value": {("_0", "derived"), ("_1", "derived")}} and found.status == "exact"


def test_a_library_function_pickled_by_name_uses_every_argument():
    found = pycode.read(pickle.dumps((str.upper, None)), Shape("scalar", ("_0",)))
    assert edges(found, Shape("scalar", ("_0",))) == {"value": {("_0", "derived")}}


# -- UDTFs ---------------------------------------------------------------------------------


class SplitEmail:
    def __init__(self):
        self.seen = 0

    def eval(self, email: str, n: int):
        self.seen += n
        user, domain = email.split("@")
        yield user, domain, n

    def terminate(self):
        yield "total", None, self.seen


def test_a_udtf_reads_eval_and_terminate_with_what_self_keeps():
    shape = Shape("udtf", ("_0", "_1"), ("user", "domain", "n"))
    found, got = read(SplitEmail, shape)
    assert got == {"user": {("_0", "derived")}, "domain": {("_0", "derived")},
                   "n": {("_1", "copy"), ("_1", "derived")}}


# -- what is not read: a guess, with the reason --------------------------------------------


def chosen_at_run_time(it, cols=("id", "email")):
    for pdf in it:
        pick = cols[len(pdf) % 2]
        yield pd.DataFrame({"id": pdf["id"], "value": pdf[pick]})


def test_a_column_chosen_at_run_time_is_a_guess_for_that_output_only():
    shape = Shape("map", PEOPLE, ("id", "value"))
    found, got = read(chosen_at_run_time, shape)
    assert got["id"] == {("id", "copy")}
    assert {i for i, _ in got["value"]} == set(PEOPLE) and all(t.endswith("?") for _, t in got["value"])
    assert found.status == "narrowed" and "chosen at run time" in found.note()


def runs_code(it):
    for pdf in it:
        yield eval("pdf")


def test_a_function_running_code_it_builds_is_not_read():
    found, got = read(runs_code, Shape("map", PEOPLE, ("id",)))
    assert found.status == "fallback" and "eval()" in found.note()
    assert got == {"id": {(c, "derived?") for c in PEOPLE}}


def test_an_edited_source_is_not_read(tmp_path):
    path = tmp_path / "job_code.py"
    path.write_text("def f(it):\n    for pdf in it:\n        yield pdf[['id']]\n")
    scope: dict = {"__name__": "job_code"}
    exec(compile(path.read_text(), str(path), "exec"), scope)  # the job's own definition, as the job made it
    payload = command(scope["f"])
    path.write_text("def f(it):\n    for pdf in it:\n        yield pdf[['email']].rename(columns={'email': 'id'})\n")
    found = pycode.read(payload, Shape("map", PEOPLE, ("id",)))
    assert found.status == "fallback" and "edited since" in found.note()


def test_a_function_from_a_module_is_read_from_its_file_without_importing_it(tmp_path, monkeypatch):
    module = tmp_path / "team_transforms.py"
    module.write_text("raise RuntimeError('imported!')\n\n"
                      "def clean(it):\n    for pdf in it:\n        yield pdf.assign(email=pdf.email.str.lower())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    payload = b"(cteam_transforms\nclean\nNt."  # how a function of an importable module is pickled: by name
    shape = Shape("map", PEOPLE, ("id", "email"))
    found = pycode.read(payload, shape)
    assert edges(found, shape) == {"id": {("id", "copy")}, "email": {("email", "derived")}}
    assert "team_transforms" not in sys.modules


def test_unpickling_never_runs_what_the_payload_asks(tmp_path):
    marker = tmp_path / "ran"
    payload = f"cos\nsystem\n(S'touch {marker}'\ntR.".encode()
    loaded = pickled.load(payload)
    assert isinstance(loaded, pickled.Call) and loaded.called == "os.system" and not marker.exists()
    assert pycode.read(payload, Shape("scalar", ("_0",))).status == "fallback" and not marker.exists()


def test_a_reading_is_kept_per_command_and_shape():
    shape = Shape("map", PEOPLE, ("id", "domain"))
    payload = command(domains)
    assert pycode.read(payload, shape) is pycode.read(payload, shape)
    assert pycode.read(payload, shape) is not pycode.read(payload, Shape("map", PEOPLE[::-1], ("id", "domain")))


@pytest.mark.parametrize("payload", [b"", b"not a pickle", b"\x80\x05K\x01.", pickle.dumps({"a": 1})])
def test_anything_else_falls_back_with_a_reason(payload):
    found = pycode.read(payload, Shape("scalar", ("_0", "_1")))
    assert found.status == "fallback" and found.note() and all(o.guess for o in found.outputs)

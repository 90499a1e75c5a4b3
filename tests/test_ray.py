"""Ray Data: rollout shards normalised on a local 2-CPU cluster, written as Parquet shards."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_rollout
from agent_rollout import normalise_rollout_rows
from support import PURE_PYTHON_ENV

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
arrow = pytest.importorskip("agent_rollout.arrow")
agent_ray = pytest.importorskip("agent_rollout.ray")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    # Workers inherit this process's environment (PYTHONPATH included), so
    # they import agent_rollout from the same checkout.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture
def workers(cluster: None, engine: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Ray's map tasks run ``engine``. A worker picks its engine at import, from its
    environment: for the twin every ``map_batches`` call gets a ``runtime_env`` that
    asks for it (the Rust engine is the workers' default: they start no new ones)."""
    options: dict[str, Any] = {}
    if engine == "python":
        options["runtime_env"] = {"env_vars": {PURE_PYTHON_ENV: "1"}}
        map_batches = ray.data.Dataset.map_batches

        def with_engine(self: Any, *args: Any, **kwargs: Any) -> Any:
            return map_batches(self, *args, **options, **kwargs)

        monkeypatch.setattr(ray.data.Dataset, "map_batches", with_engine)
    probe = ray.remote(agent_rollout.implementation).options(**options)
    assert ray.get(probe.remote()) == engine
    return engine


def write_shards(folder: Path, shards: int, rows: int) -> list[dict]:
    folder.mkdir()
    everything = []
    for s in range(shards):
        lines = []
        for i in range(rows):
            row = {"prompt": [{"role": "user", "content": f"q{s}-{i}", "name": "n"}], "id": i}
            if i % 2:
                row["answer"] = str(i)
            lines.append(json.dumps(row))
            everything.append(row)
        (folder / f"part-{s}.jsonl").write_text("\n".join(lines) + "\n")
    return everything


def test_shards_normalise_and_write_parquet(cluster: None, tmp_path: Path) -> None:
    rows = write_shards(tmp_path / "in", shards=4, rows=250)
    ds = agent_ray.normalise_shards(str(tmp_path / "in"), prompt_kind="messages", max_rows=1000)
    out = tmp_path / "out"
    ds.write_parquet(str(out))
    files = sorted(out.glob("*.parquet"))
    assert files
    table = pq.read_table(out)
    assert str(table.schema.field("prompt").type) == (
        "list<element: struct<role: string, content: string, name: string>>"
    )
    got = sorted(arrow.arrow_to_rows(table), key=lambda r: r["prompt"][0]["content"])
    want = sorted(normalise_rollout_rows(rows), key=lambda r: r["prompt"][0]["content"])
    assert got == want


def test_the_global_cap_holds(cluster: None, tmp_path: Path) -> None:
    write_shards(tmp_path / "in", shards=3, rows=10)
    with pytest.raises(ValueError) as info:
        agent_ray.normalise_shards(str(tmp_path / "in"), prompt_kind="messages", max_rows=25)
    assert str(info.value) == "the rollout shards hold 30 rows, more than max_rows=25 (max_rows=25)"
    # A shard alone over the cap stops at row max_rows + 1, naming the shard and line.
    over = r"part-\d\.jsonl:6: more than 5 rows \(max_rows=5; raise the limit"
    with pytest.raises(ValueError, match=over):
        agent_ray.normalise_shards(str(tmp_path / "in"), prompt_kind="messages", max_rows=5)


def test_worker_errors_name_the_shard_and_the_line(cluster: None, tmp_path: Path) -> None:
    write_shards(tmp_path / "in", shards=2, rows=5)
    with open(tmp_path / "in" / "part-1.jsonl", "a") as f:
        f.write('{"prompt": [{"role": "user"}, {"content": "no role"}]}\n')
    with pytest.raises(ValueError) as info:
        agent_ray.normalise_shards(str(tmp_path / "in"), prompt_kind="messages")
    shard = tmp_path / "in" / "part-1.jsonl"
    assert str(info.value) == (
        f"{shard}:6: row 5: prompt[1]: a chat message needs a 'role' (a non-empty str)"
    )
    with pytest.raises(ValueError, match="needs prompt_kind='text' or 'messages'"):
        agent_ray.normalise_shards(str(tmp_path / "in"), prompt_kind="auto")


def test_read_json_blocks_work_too(cluster: None, tmp_path: Path) -> None:
    # The one-liner: pyarrow's JSON reader types the rows first; the schema is fixed up front.
    rows = [{"prompt": "q1", "answer": "a"}, {"prompt": "q2", "reward": 1.0}]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = ray.data.read_json(str(tmp_path / "a.jsonl"), include_paths=True).map_batches(
        agent_ray.normalise_batch, batch_format="pyarrow", fn_kwargs={"prompt_kind": "text"}
    )
    table = ds.to_arrow_refs()
    got = [r for ref in table for r in arrow.arrow_to_rows(ray.get(ref))]
    # Ray Data hands blocks over as they finish (preserve_order is off by default).
    got.sort(key=lambda row: row["prompt"])
    assert got == [{"prompt": "q1", "answer": "a"}, {"prompt": "q2"}]


def write_mixed_dir(folder: Path) -> None:
    """Two files whose rows need different schemas if typed apart: plain messages, and
    messages with tool calls (pyarrow's JSON reader gives each file its own block)."""
    folder.mkdir()
    plain = [{"prompt": [{"role": "user", "content": f"q{i}"}], "answer": str(i)} for i in range(3)]
    tools = [
        {
            "prompt": [
                {"role": "user", "content": "2+2?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"type": "function", "function": {"name": "add"}}],
                },
            ]
        }
    ]
    (folder / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in plain))
    (folder / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in tools))


def test_the_one_liner_never_writes_two_schemas(cluster: None, tmp_path: Path) -> None:
    """Blocks are normalised apart: each gets the one schema fixed up front, or the run is
    refused, naming the row and key that do not fit; never files of two schemas."""
    write_mixed_dir(tmp_path / "in")

    def one_liner(**kwargs: Any) -> Path:
        out = tmp_path / f"out-{len(list(tmp_path.iterdir()))}"
        ray.data.read_json(str(tmp_path / "in")).map_batches(
            agent_ray.normalise_batch, batch_format="pyarrow", fn_kwargs=kwargs
        ).write_parquet(str(out))
        return out

    with pytest.raises(Exception, match="every block of a dataset must get one schema"):
        one_liner()
    with pytest.raises(Exception) as info:
        one_liner(prompt_kind="messages")
    assert "row 0: prompt[1].tool_calls: a value of Arrow type list<item: struct<" in str(
        info.value
    )
    schema = arrow.merge_schemas(
        arrow.rows_to_arrow([{"prompt": [{"role": "user", "content": "x"}]}]).schema,
        arrow.read_rollout_table(str(tmp_path / "in" / "b.jsonl")).schema,
    )
    out = one_liner(schema=schema)
    schemas = {str(pq.read_schema(path)) for path in out.glob("*.parquet")}
    assert len(list(out.glob("*.parquet"))) >= 2 and len(schemas) == 1
    rows = arrow.arrow_to_rows(pq.read_table(out))
    assert sorted(map(json.dumps, rows)) == sorted(
        json.dumps(r)
        for r in [
            *(
                {"prompt": [{"role": "user", "content": f"q{i}"}], "answer": str(i)}
                for i in range(3)
            ),
            {
                "prompt": [
                    {"role": "user", "content": "2+2?"},
                    {
                        "role": "assistant",
                        "tool_calls": [{"type": "function", "function": {"name": "add"}}],
                    },
                ]
            },
        ]
    )


def test_shards_of_different_keys_get_one_schema(cluster: None, tmp_path: Path) -> None:
    write_mixed_dir(tmp_path / "in")
    ds = agent_ray.normalise_shards(str(tmp_path / "in"), prompt_kind="messages")
    out = tmp_path / "out"
    ds.write_parquet(str(out))
    files = list(out.glob("*.parquet"))
    assert len(files) == 2
    assert len({str(pq.read_schema(path)) for path in files}) == 1
    assert "tool_calls" in str(pq.read_schema(files[0]).field("prompt").type)
    assert len(arrow.arrow_to_rows(pq.read_table(out))) == 4


def test_shards_typed_apart_in_one_task_get_one_schema(workers: str, tmp_path: Path) -> None:
    """Three shards of str contents and one of a list of parts: typed apart, the last one's
    content is JSON text. Read as one block, one task normalises all four and Ray
    concatenates what it hands back: that must already be of one schema."""
    folder = tmp_path / "in"
    folder.mkdir()
    rows = []
    for s, content in enumerate(["a", "b", "c", [{"type": "text", "text": "hi"}]]):
        row = {"prompt": [{"role": "user", "content": content}], "answer": str(s)}
        (folder / f"part-{s}.jsonl").write_text(json.dumps(row) + "\n")
        rows.append(row)
    ds = agent_ray.normalise_shards(str(folder), prompt_kind="messages", override_num_blocks=1)
    assert ds.schema().base_schema.field("prompt").type == pa.list_(
        pa.struct([("role", pa.string()), ("content", arrow.JSON_TYPE)])
    )
    table = pa.concat_tables(ray.get(ds.to_arrow_refs()))
    assert sorted(arrow.arrow_to_rows(table), key=lambda row: row["answer"]) == rows


def test_rows_of_a_read_json_block_name_the_shard() -> None:
    block = pa.table({"prompt": ["a", ""], "path": ["s3://b/x.jsonl", "s3://b/x.jsonl"]})
    with pytest.raises(ValueError) as info:
        agent_ray.normalise_batch(block, prompt_kind="text")
    assert str(info.value).startswith("s3://b/x.jsonl: row 1: prompt: empty prompt")


def test_the_base_install_never_imports_ray() -> None:
    code = "import sys, agent_rollout, agent_rollout.arrow; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_shards_leave_a_worker_in_one_schema_whatever_they_hold(engine: str) -> None:
    """``normalise_shards``' first map: Ray concatenates the outputs of one task's calls,
    so they have one schema however the shards type apart; read back, each shard's table
    converts to the schemas' join."""
    block = pa.table(
        {
            "bytes": [
                b'{"prompt": [{"role": "user", "content": "a"}]}\n',
                b'{"prompt": [{"role": "user", "content": [{"type": "text"}]}], "answer": "1"}\n',
                b'{"prompt": "b"}\n{"prompt": "c"}\n',
            ],
            "path": ["x", "y", "z"],
        }
    )
    calls = [
        agent_ray.shard_tables(block.slice(i, 1), max_rows=10, prompt_kind="messages")
        for i in range(3)
    ]
    assert {call.schema for call in calls} == {agent_ray.SHARDS_SCHEMA}
    counts = agent_ray.shard_schemas(pa.concat_tables(calls))
    assert sorted(counts.column("rows").to_pylist()) == [1, 3]
    schemas = [pa.ipc.read_schema(pa.py_buffer(s)) for s in counts.column("schema").to_pylist()]
    merged = arrow.merge_schemas(*schemas)
    table = agent_ray.shard_rows(pa.concat_tables(calls), schema=merged)
    assert table.schema == merged
    assert list(arrow.arrow_to_rows(table)) == [
        {"prompt": [{"role": "user", "content": "a"}]},
        {"prompt": [{"role": "user", "content": [{"type": "text"}]}], "answer": "1"},
        {"prompt": [{"role": "user", "content": "b"}]},
        {"prompt": [{"role": "user", "content": "c"}]},
    ]
    # normalise_batch gives every block the schema fixed up front instead.
    assert agent_ray.normalise_batch(block.slice(0, 1), prompt_kind="messages").schema == (
        arrow.MESSAGES_SCHEMA
    )


def test_normalise_batch_checks_the_schema_it_is_given() -> None:
    block = pa.table({"prompt": ["a"]})
    with pytest.raises(TypeError, match=r"schema must be a pyarrow\.Schema"):
        agent_ray.normalise_batch(block, schema="text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="schema must be a rollout schema"):
        agent_ray.normalise_batch(block, schema=pa.schema([("prompt", pa.string())]))
    with pytest.raises(ValueError, match="prompt_kind='messages' does not match"):
        agent_ray.normalise_batch(block, schema=arrow.TEXT_SCHEMA, prompt_kind="messages")
    assert agent_ray.normalise_batch(block, schema=arrow.TEXT_SCHEMA).schema == arrow.TEXT_SCHEMA

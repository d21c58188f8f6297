"""Recall's semantic signal: exact vector search, fusion, and degrading to lexical."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.fake_openai import FakeOpenAI, hang
from tests.support.recall import NOW, memory, request
from turngraph.workers.embeddings.deadline import QueryEmbedder
from turngraph.workers.embeddings.endpoint import EndpointEmbedder
from turngraph.workers.embeddings.local import StaticEmbedder
from turngraph.workers.recall.ann import AnnGraph
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.search import search
from turngraph.workers.recall.vectors import VectorIndex, release_freed_memory


@pytest.fixture(scope="module")
def local() -> StaticEmbedder:
    return StaticEmbedder()


INT8_COSINE_ERROR = 2e-3


def test_int8_rows_keep_cosines_within_a_few_thousandths() -> None:
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(300, 640)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    vectors = VectorIndex(640)
    for n, row in enumerate(rows):
        vectors.add(("workspace", "w"), n, row)
    block = vectors._blocks[("workspace", "w")]
    assert block.rows is not None and block.rows.codes.dtype == np.int8 and block.ann is None
    for query in rows[:20]:
        found = vectors.similarity(list(range(300)), query)
        exact = rows @ query
        assert max(abs(found[n] - float(exact[n])) for n in range(300)) < INT8_COSINE_ERROR
    assert vectors.nbytes()["vectors"] < 300 * 640 * 4 / 2  # not float32


def test_exact_vector_search_matches_brute_force_through_removals() -> None:
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(700, 256)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    vectors = VectorIndex(256)
    for n, row in enumerate(rows):
        vectors.add(("workspace", "w"), n, row)
    removed = set(range(0, 700, 3))  # enough to trigger compaction
    for n in removed:
        assert vectors.remove(n)
    assert not vectors.remove(0) and len(vectors) == 700 - len(removed)
    query = rows[5]
    live = [n for n in range(700) if n not in removed]
    expected = sorted(live, key=lambda n: -float(rows[n] @ query))[:10]
    found = vectors.search(("workspace", "w"), query, 10)
    assert [n for n, _ in found] == expected
    assert found[0][1] == pytest.approx(1.0, abs=INT8_COSINE_ERROR)
    assert vectors.similarity([5, 3], query) == {5: pytest.approx(1.0, abs=INT8_COSINE_ERROR)}
    assert vectors.search(("workspace", "other"), query, 10) == []


def test_large_partitions_search_an_hnsw_graph_that_skips_removed_rows() -> None:
    rng = np.random.default_rng(11)
    rows = rng.normal(size=(900, 8)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    vectors = VectorIndex(8, ann_min_rows=300)
    partition = ("workspace", "w")
    for n, row in enumerate(rows[:400]):
        vectors.add(partition, n, row)
    block = vectors._blocks[partition]
    assert block.ann is not None and block.rows is None  # moved on crossing the threshold
    for n, row in enumerate(rows[400:], start=400):
        vectors.add(partition, n, row)  # then grown row by row (resized past 600)
    removed = set(range(0, 900, 5))
    for n in removed:
        assert vectors.remove(n)
    live = [n for n in range(900) if n not in removed]
    hits = 0
    for probe in (1, 7, 451, 899):
        query = rows[probe]
        exact = sorted(live, key=lambda n: -float(rows[n] @ query))[:20]
        found = vectors.search(partition, query, 20)
        assert found[0] == (probe, pytest.approx(1.0, abs=0.01))  # 8-d int8 rows, then graph
        assert not removed.intersection(n for n, _ in found)
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        hits += len(set(exact).intersection(n for n, _ in found))
    assert hits >= 0.9 * 4 * 20  # approximate, but close to exact at this size
    even = vectors.search(partition, rows[451], 40, keep=lambda n: n % 2 == 0)
    kept = [hit for hit in vectors.search(partition, rows[451], 40) if hit[0] % 2 == 0]
    assert even and [n for n, _ in even] == [n for n, _ in kept]  # the graph filters them
    assert [s for _, s in even] == pytest.approx([s for _, s in kept], abs=1e-6)
    for n in list(live)[:400]:  # compaction rebuilds the graph without the dead rows
        vectors.remove(n)
    found = vectors.search(partition, rows[899], 5)
    assert found[0][0] == 899 and len(vectors) == len(live) - 400


def test_a_graph_gives_back_the_rows_it_holds_through_growth_and_updates() -> None:
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(50, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    graph = AnnGraph(16, capacity=8)
    graph.add(np.arange(30, dtype=np.int64), rows[:30])
    graph.add(np.array([5, 40], dtype=np.int64), rows[[45, 40]])  # 5 replaced, 40 new
    assert graph.remove(7) and not graph.remove(7) and len(graph) == 30
    labels, found = graph.vectors([5, 40, 7, 99, 0])  # 7 removed, 99 never added
    assert labels == [5, 40, 0]
    peaks = np.abs(rows[[45, 40, 0]]).max(axis=1, keepdims=True)
    assert np.all(np.abs(found - rows[[45, 40, 0]]) <= peaks / 127 / 2 + 1e-6)  # int8 codes
    assert graph.search(rows[45], 1) == [(5, pytest.approx(1.0, abs=0.01))]  # linked again
    graph.add(np.array([3], dtype=np.int64), rows[[46]])  # an older label, out of order
    graph.add(np.array([2], dtype=np.int64), rows[[47]])
    assert graph.vectors([3, 2])[0] == [3, 2]
    compacted = graph.compacted()  # the same codes, without the removed label
    assert sorted(compacted.live_labels()) == sorted(set(range(30)) - {7} | {40})
    assert np.array_equal(compacted.vectors([5, 40, 3])[1], graph.vectors([5, 40, 3])[1])
    assert graph.vectors([])[1].shape == (0, 16)


def test_a_graph_grows_by_new_chunks_and_never_moves_the_rows_it_searches() -> None:
    rng = np.random.default_rng(5)
    rows = rng.normal(size=(3_000, 32)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    graph = AnnGraph(32, capacity=1_000)
    graph.add(np.arange(1_000, dtype=np.int64), rows[:1_000])
    first = graph._chunks[0]
    for start in range(1_000, 3_000, 250):  # grown in several chunks
        graph.add(np.arange(start, start + 250, dtype=np.int64), rows[start : start + 250])
    assert len(graph._chunks) > 2 and graph._chunks[0] is first  # the graph points into it
    for probe in (0, 999, 1_000, 2_999):  # the graph's distances read the rows in place
        assert graph.search(rows[probe], 1) == [(probe, pytest.approx(1.0, abs=0.01))]
    labels, sims = graph.similarity([0, 1_500, 2_999], rows[1_500])
    assert labels == [0, 1_500, 2_999]
    assert np.allclose(sims, rows[[0, 1_500, 2_999]] @ rows[1_500], atol=0.01)  # 32-d int8


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_a_graph_holds_each_row_once_in_a_byte_a_dimension() -> None:
    rng = np.random.default_rng(4)
    count = 8_000
    rows = rng.normal(size=(count, 640)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    graph = AnnGraph(640, capacity=count)
    before = _rss_bytes()
    for start in range(0, count, 1_000):
        graph.add(np.arange(start, start + 1_000, dtype=np.int64), rows[start : start + 1_000])
    release_freed_memory()  # the build's temporaries, as a bootstrap's end does
    per_row = (_rss_bytes() - before) / count
    # int8 codes (640) and the graph's links: float32 rows in the graph and an int16
    # copy beside them took ~4,000 bytes a row
    assert per_row < 1_500, per_row
    query = rows[3]
    labels, found = graph.vectors(list(range(0, count, 7)))
    assert np.max(np.abs(found @ query - rows[labels] @ query)) < INT8_COSINE_ERROR
    graph.remove(14)
    wanted, sims = graph.similarity([0, 14, 7, 50_000], query)  # 14 removed, 50,000 never added
    assert wanted == [0, 7]
    assert np.max(np.abs(sims - rows[[0, 7]] @ query)) < INT8_COSINE_ERROR
    hits = graph.search(query, 10)
    assert hits is not None and hits[0][0] == 3
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    _, again = graph.similarity([label for label, _ in hits], query)
    assert [s for _, s in hits] == pytest.approx(sorted(again.tolist(), reverse=True))


def test_a_replica_loads_the_graph_library_then_the_embedding_runtime() -> None:
    # usearch 2.26.2 to 2.26.6 crashed the process right here (SIGSEGV in libstdc++'s
    # locale, pyproject.toml): a replica imports ann before its embedder loads onnxruntime
    code = "import turngraph.workers.recall.ann; import onnxruntime; print('loaded')"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "loaded", done.stderr


def test_a_bulk_load_searches_exactly_then_builds_the_graph_once() -> None:
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(500, 8)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    vectors = VectorIndex(8, ann_min_rows=300)
    partition = ("workspace", "w")
    vectors.begin_bulk()
    for n, row in enumerate(rows):
        vectors.add(partition, n, row)
    assert vectors._blocks[partition].ann is None  # exact meanwhile
    assert vectors.search(partition, rows[42], 1)[0][0] == 42
    vectors.end_bulk()
    assert vectors._blocks[partition].ann is not None
    assert vectors.search(partition, rows[42], 1)[0][0] == 42
    vectors.add(partition, 500, rows[0])  # then maintained row by row again
    assert {n for n, _ in vectors.search(partition, rows[0], 2)} == {0, 500}


def test_a_paraphrase_without_shared_words_is_found(local: StaticEmbedder) -> None:
    index = MemoryIndex(local)
    index.add(memory("ski", "I adore skiing down snowy mountains every January"))
    index.add(memory("tax", "The quarterly invoice for the accountant is overdue"))
    for n in range(30):
        index.add(memory(f"f{n}", f"we ordered lunch number {n} from the corner place"))
    response = search(index, request("which winter sport do they enjoy?"), NOW)
    assert response.degraded == []
    first = response.results[0]
    assert first.source_event_ids == ["e_ski"] and first.score.lexical_score == 0.0
    lexical_only = MemoryIndex()
    lexical_only.add(memory("ski", "I adore skiing down snowy mountains every January"))
    assert search(lexical_only, request("which winter sport do they enjoy?"), NOW).results == []


def test_removed_and_forgotten_memories_leave_the_vector_index(local: StaticEmbedder) -> None:
    index = MemoryIndex(local)
    index.add(memory("a", "notes about the garden and the tomatoes"))
    index.add(memory("b", "notes about the garden fence", session_id="s_2"))
    assert index.semantic is not None and index.semantic.vectors is not None
    assert len(index.semantic.vectors) == 2
    index.remove("a")
    index.forget("session", "s_2")
    assert len(index.semantic.vectors) == 0
    index.add(memory("c", "notes about the garden shed"))
    index.add(memory("c", "notes about the garden shed"))  # same text: not embedded again
    assert len(index.semantic.vectors) == 1 and index.semantic.counters.embedded == 3


def test_a_slow_embedder_degrades_to_lexical_within_the_deadline() -> None:
    with FakeOpenAI() as server:
        embedder = EndpointEmbedder(
            base_url=server.base_url, api_key="k", model="m", timeout_s=5.0, max_retries=0
        )
        index = MemoryIndex(embedder)
        index.add(memory("a", "the retry policy uses exponential backoff"))
        index.add(memory("b", "lunch was pizza"))
        assert search(index, request("retry policy backoff"), NOW).degraded == []
        server.add_embeddings(hang())  # new queries from here: a repeated one is cached
        response = search(index, request("the retry policy backoff", deadline_ms=200), NOW)
        assert response.degraded == ["semantic_timeout"]
        assert response.results[0].source_event_ids == ["e_a"]  # lexical still answers
        assert response.took_ms < 200
        server.stop_hangs()
    response = search(index, request("retry policy and backoff"), NOW)  # the server is gone
    assert response.degraded == ["semantic_unavailable"]
    assert response.results[0].source_event_ids == ["e_a"]
    assert index.semantic is not None and index.semantic.queries.counters.timed_out == 1


def test_a_repeated_query_takes_its_vector_from_the_cache(local: StaticEmbedder) -> None:
    index = MemoryIndex(local)
    index.add(memory("a", "the retry policy uses exponential backoff"))
    index.add(memory("b", "lunch was pizza with the team"))
    calls = local.stats.calls
    first = search(index, request("what retry policy do we use"), NOW)
    again = search(index, request("what retry policy do we use"), NOW)
    assert local.stats.calls == calls + 1  # the model ran once
    assert again.results == first.results and again.degraded == []
    assert index.semantic is not None and index.semantic.queries.counters.cached == 1


def test_the_query_cache_drops_the_least_recently_asked(local: StaticEmbedder) -> None:
    queries = QueryEmbedder(local, inline=True, cache_size=2)
    for text in ("one query", "two query", "one query", "three query"):
        vector, reason = queries.embed(text, 1.0)
        assert vector is not None and reason is None and not vector.flags.writeable
    calls = local.stats.calls
    queries.embed("one query", 1.0)  # kept: asked after "two query"
    assert local.stats.calls == calls
    queries.embed("two query", 1.0)  # dropped when "three query" came
    assert local.stats.calls == calls + 1
    assert queries.counters.cached == 2

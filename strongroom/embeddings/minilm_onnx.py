"""all-MiniLM-L6-v2 in onnxruntime, int8: the `minilm` provider's default runtime.

The graph is built here from the same safetensors weights the numpy forward pass reads
(`strongroom.embeddings.minilm`, the reference), with `onnx.helper`, node by node: no torch,
no exported file shipped. It is BERT's encoder as the numpy pass computes it (word, position
and token-type embeddings, LayerNormalization, six layers of 12-head attention with the
additive mask, exact erf GELU) and the masked mean pooling; the vectors are normalised
outside. Unquantised (`build_graph`) it gives the reference vectors (cosine > 0.9999).

`quantise` turns the dense layers' weights into int8, one scale per output column
(`onnxruntime.quantization.quantize_dynamic`, per channel; activations are quantised per
call, over the whole tensor: so a text is run alone, never padded beside others, or its
vector would depend on its batch). That runs about 3x faster than numpy on one core with
cosine 0.977-0.996 to the reference (bench/RESULTS.md). Its vectors are another space:
the provider names it `minilm:all-MiniLM-L6-v2:int8`.

Quantising takes seconds, so the int8 model is built once and kept in a cache directory,
named by the weights (their CRC-32 and size, `minilm.weights_id`), the onnxruntime version
and `GRAPH_VERSION`, written to a
temporary file and renamed (processes building at once each write whole files). Where the
directory cannot be written the model is built in a temporary directory and kept in memory.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx
    import onnxruntime

log = logging.getLogger(__name__)

# Bump when the graph or the quantisation changes: cached files of older ones are not used.
GRAPH_VERSION = 1
OPSET = 17  # LayerNormalization
LAYERS = 6
HEADS = 12
EPSILON = 1e-12
KV = ("key", "value")
OUTPUT = "sentence_embedding"


def cache_dir(configured: Path | None = None) -> Path | None:
    """Where the int8 model is kept: the configured directory, else
    `$XDG_CACHE_HOME/strongroom`, else `~/.cache/strongroom` (None: no home either)."""
    if configured is not None:
        return Path(configured)
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "strongroom"
    try:
        return Path.home() / ".cache" / "strongroom"
    except RuntimeError:  # no HOME and no home directory in the user database
        return None


def cache_name(weights_id: str) -> str:
    import onnxruntime

    return (
        f"all-MiniLM-L6-v2-{weights_id[:16]}-ort{onnxruntime.__version__}"
        f"-g{GRAPH_VERSION}-int8.onnx"
    )


def build_graph(weights: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The fp32 graph: `input_ids` (int64, batch x tokens) and `attention_mask` (float32, 1
    for a real token) in, `sentence_embedding` (float32, batch x 384, mean of the real tokens'
    last hidden states, not normalised) out. `weights` as `minilm._safetensors` gives them:
    dense weights transposed (x @ W)."""
    from onnx import TensorProto, helper, numpy_helper

    nodes: list[onnx.NodeProto] = []
    initializers: list[onnx.TensorProto] = []

    def constant(name: str, value: np.ndarray) -> str:
        initializers.append(numpy_helper.from_array(np.array(value, order="C"), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attributes) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    def weight(name: str) -> str:
        return constant(name, weights[name])

    def dense(x: str, name: str, out: str) -> str:
        product = node("MatMul", [x, weight(name + ".weight")], out + "/matmul")
        return node("Add", [product, weight(name + ".bias")], out)

    def layer_norm(x: str, name: str, out: str) -> str:
        return node(
            "LayerNormalization",
            [x, weight(name + ".weight"), weight(name + ".bias")],
            out,
            axis=-1,
            epsilon=EPSILON,
        )

    hidden = weights["embeddings.word_embeddings.weight"].shape[1]
    size = hidden // HEADS
    factor = np.float32(1 / np.sqrt(size))
    split = constant("heads_shape", np.array([0, 0, 3, HEADS, size], dtype=np.int64))
    merged = constant("hidden_shape", np.array([0, 0, hidden], dtype=np.int64))
    zero = constant("zero", np.array([0], dtype=np.int64))
    one = constant("one", np.array(1.0, dtype=np.float32))
    blocked = constant("blocked", np.array(-1e9, dtype=np.float32))
    index = [constant(f"index{value}", np.array(value, dtype=np.int64)) for value in range(3)]
    sqrt2 = constant("sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    half = constant("half", np.array(0.5, dtype=np.float32))
    tiny = constant("tiny", np.array(1e-9, dtype=np.float32))
    axis1 = constant("axis1", np.array([1], dtype=np.int64))
    axes12 = constant("axes12", np.array([1, 2], dtype=np.int64))
    axis2 = constant("axis2", np.array([2], dtype=np.int64))

    # Embeddings: word + position (the first `tokens` rows) + token type 0, then LayerNorm.
    words = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "words")
    tokens = node("Shape", ["input_ids"], "tokens", start=1, end=2)
    positions = node(
        "Slice",
        [weight("embeddings.position_embeddings.weight"), zero, tokens, zero],
        "positions",
    )
    token_type = constant("token_type", weights["embeddings.token_type_embeddings.weight"][0])
    x = node("Add", [words, positions], "embedded/positions")
    x = node("Add", [x, token_type], "embedded")
    x = layer_norm(x, "embeddings.LayerNorm", "embeddings")

    # The additive mask, (batch, 1, 1, tokens): 0 for a real token, -1e9 for padding.
    padding = node("Sub", [one, "attention_mask"], "padding")
    additive = node("Mul", [padding, blocked], "additive")
    additive = node("Unsqueeze", [additive, axes12], "additive_mask")

    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}."
        at = f"layer{layer}/"
        # Query, key and value in one product (x @ [Wq Wk Wv]), the query's columns scaled by
        # 1 / sqrt(head size) beforehand instead of every score after.
        s = p + "attention.self."
        both = np.concatenate(
            [weights[s + "query.weight"] * factor] + [weights[s + n + ".weight"] for n in KV],
            axis=1,
        )
        bias = np.concatenate(
            [weights[s + "query.bias"] * factor] + [weights[s + n + ".bias"] for n in KV]
        )
        projected = node("MatMul", [x, constant(s + "qkv.weight", both)], at + "qkv/matmul")
        projected = node("Add", [projected, constant(s + "qkv.bias", bias)], at + "qkv")
        shaped = node("Reshape", [projected, split], at + "qkv/heads")  # (b, t, 3, heads, size)
        q = node("Gather", [shaped, index[0]], at + "query/heads", axis=2)
        k = node("Gather", [shaped, index[1]], at + "key/heads", axis=2)
        v = node("Gather", [shaped, index[2]], at + "value/heads", axis=2)
        q = node("Transpose", [q], at + "query", perm=[0, 2, 1, 3])  # (b, heads, t, size)
        k = node("Transpose", [k], at + "key", perm=[0, 2, 3, 1])  # (b, heads, size, t)
        v = node("Transpose", [v], at + "value", perm=[0, 2, 1, 3])
        scores = node("MatMul", [q, k], at + "scores")
        scores = node("Add", [scores, additive], at + "scores/masked")
        probabilities = node("Softmax", [scores], at + "probabilities", axis=-1)
        context = node("MatMul", [probabilities, v], at + "context")
        context = node("Transpose", [context], at + "context/transposed", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, merged], at + "context/merged")
        attended = dense(context, p + "attention.output.dense", at + "attention_output")
        attended = node("Add", [attended, x], at + "attention_residual")
        x = layer_norm(attended, p + "attention.output.LayerNorm", at + "attention_norm")

        # GELU as onnxruntime recognises it (and fuses into one kernel with the bias):
        # x * (1 + erf(x / sqrt 2)) * 0.5.
        inner = dense(x, p + "intermediate.dense", at + "intermediate")
        erf = node("Erf", [node("Div", [inner, sqrt2], at + "gelu/scaled")], at + "erf")
        phi = node("Add", [erf, one], at + "gelu/phi")
        gelu = node("Mul", [node("Mul", [inner, phi], at + "gelu/product"), half], at + "gelu")
        out = dense(gelu, p + "output.dense", at + "output")
        out = node("Add", [out, x], at + "output_residual")
        x = layer_norm(out, p + "output.LayerNorm", at + "output_norm")

    # Masked mean pooling over the real tokens.
    mask = node("Unsqueeze", ["attention_mask", axis2], "pool/mask")
    summed = node(
        "ReduceSum", [node("Mul", [x, mask], "pool/masked"), axis1], "pool/sum", keepdims=0
    )
    counts = node("ReduceSum", ["attention_mask", axis1], "pool/count", keepdims=1)
    counts = node("Max", [counts, tiny], "pool/count_floor")
    node("Div", [summed, counts], OUTPUT)

    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.FLOAT, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", hidden])],
        initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="strongroom",
    )
    model.ir_version = 8  # opset 17; read by every onnxruntime the extra allows
    # Not checked here (`onnx.checker` copies the 91 MB twice more, +300 MiB at the peak):
    # the tests check it, and onnxruntime validates what it loads.
    return model


def quantise(model: onnx.ModelProto | Path, target: Path, **options) -> None:
    """The int8 model at `target`: the weights of the dense layers' products (x @ W) as int8,
    one scale per output column, with 7 bits of range (`reduce_range`); their inputs are
    quantised at run time. The attention's products (scores, context: activations by
    activations) stay float32.

    Chosen by measurement (bench/RESULTS.md): quantising the attention's products too was
    no faster; the embedding table's Gather made the file 23 MB instead of 59 but was no
    faster and less close. 7-bit weights cost little in cosine (the lowest for passages,
    sentences, questions: 0.990, 0.986, 0.982 against 0.992, 0.989, 0.983) and keep
    onnxruntime's int8 products from saturating on CPUs without VNNI (AVX2 sums pairs of
    u8 x s8 in 16 bits), so a model gives the same vectors on any x86.
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = (model if isinstance(model, onnx.ModelProto) else onnx.load(model)).graph
    weights = {initializer.name for initializer in graph.initializer}
    dense = [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    del graph
    settings = {"per_channel": True, "reduce_range": True, "nodes_to_quantize": dense}
    settings.update(options)
    quiet = _Quiet()
    logging.getLogger().addFilter(quiet)  # its advice to pre-process goes to the root logger
    try:
        quantize_dynamic(model, target, weight_type=QuantType.QInt8, **settings)
    finally:
        logging.getLogger().removeFilter(quiet)


class _Quiet(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing" not in record.getMessage()


def session(model: str | Path | bytes) -> onnxruntime.InferenceSession:
    """One thread, sequential (as BLAS_THREADS in minilm.py: throughput comes from more
    processes, not threads); every graph optimisation on."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    source = model if isinstance(model, bytes) else str(model)
    return onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def int8_model(
    weights_id: str,
    weights: Callable[[], dict[str, np.ndarray]],
    directory: Path | None = None,
    reuse: bool = True,
) -> str | bytes:
    """The int8 model: the cached file's path if there is one (and `reuse`), else built now
    (`weights()` gives the tensors) and cached, or, where the cache cannot be written, its
    bytes."""
    folder = cache_dir(directory)
    name = cache_name(weights_id)
    target = folder / name if folder is not None else Path(name)
    if reuse and folder is not None and target.is_file():
        return str(target)
    try:
        if folder is None:
            raise OSError("no cache directory: no XDG_CACHE_HOME and no home directory")
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=folder)
        os.close(handle)
    except OSError as error:
        log.warning(
            "minilm: cannot write the model cache %s (%s); building in memory", folder, error
        )
        with tempfile.TemporaryDirectory(prefix="strongroom-minilm-") as scratch:
            built = Path(scratch) / target.name
            _build_int8(weights, built)
            return built.read_bytes()
    try:
        _build_int8(weights, Path(temporary))
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would keep it from other users
        try:
            os.replace(temporary, target)
        except OSError as error:
            log.warning("minilm: cannot keep the int8 model at %s (%s)", target, error)
            return Path(temporary).read_bytes()
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    log.info("minilm: built the int8 model once, kept at %s", target)
    return str(target)


def int8_session(
    weights_id: str,
    weights: Callable[[], dict[str, np.ndarray]],
    directory: Path | None = None,
) -> onnxruntime.InferenceSession:
    """onnxruntime's session on the int8 model (`int8_model`). A cached file onnxruntime
    cannot read (damaged on disk) is removed and the model built again."""
    source = int8_model(weights_id, weights, directory)
    try:
        return session(source)
    except Exception:
        if isinstance(source, bytes):
            raise
        log.warning("minilm: the cached int8 model %s is unreadable; building it again", source)
        return session(int8_model(weights_id, weights, directory, reuse=False))


def _build_int8(weights: Callable[[], dict[str, np.ndarray]], target: Path) -> None:
    """The float32 graph goes through a file beside `target` and only its path is handed
    to the quantiser: held as objects beside its own copies, the peak was 100+ MiB higher."""
    import onnx

    builds.append(target)
    graph = build_graph(weights())
    float32 = target.with_name(target.name + ".float32")
    try:
        onnx.save_model(graph, float32)
        del graph
        quantise(float32, target)
    finally:
        float32.unlink(missing_ok=True)


# Where this process built int8 models (temporary files): the tests count builds with it.
builds: list[Path] = []

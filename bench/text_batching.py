"""What padding costs the text encoder, and what batching buys it.

Four ways to embed the same held-out review sentences with the shipped int8 MiniLM
encoder, all measured in this run, on this machine, against the common default of
padding every text to the encoder's ``max_tokens``:

- batches, every text padded to ``max_tokens`` (the baseline);
- batches in arrival order, each padded only to its own longest text;
- batches of texts sorted by length, each padded to its own longest text;
- one ``session.run`` per text, no padding at all (the text pipeline's path: each
  execution embeds its one text).

The ratio is what matters, not the absolute numbers.

Usage::

    .venv/bin/python bench/text_batching.py [--texts 200] [--batch 32] [--repeat 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from inferbus_lambda.text import TextEncoder, TextTokenizer, pad_batch

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((REPO_ROOT / "models" / "manifest.json").read_text())["models"]["minilm-l6-int8"]


def fixed_padding(encoder: TextEncoder, sequences: list[list[int]], width: int) -> np.ndarray:
    input_ids, attention_mask = pad_batch([list(s) + [0] * (width - len(s)) for s in sequences])
    attention_mask[:] = 0
    for row, sequence in enumerate(sequences):
        attention_mask[row, : len(sequence)] = 1
    (vectors,) = encoder.session.run(["embedding"], {"input_ids": input_ids, "attention_mask": attention_mask})
    return vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=200, help="held-out texts to embed (default 200)")
    parser.add_argument("--batch", type=int, default=32, help="texts per batch (default 32)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per variant; the median is shown (default 3)")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads (default 1)")
    args = parser.parse_args()

    lines = (REPO_ROOT / "models" / "text-holdout.jsonl").read_text().splitlines()[: args.texts]
    texts = [json.loads(line)["text"] for line in lines]
    max_tokens = MANIFEST["max_tokens"]
    tokenizer = TextTokenizer.load(REPO_ROOT / "models" / MANIFEST["tokenizer"]["file"], max_tokens=max_tokens)
    encoder = TextEncoder.load(REPO_ROOT / "models" / MANIFEST["file"], name="minilm-l6-int8", version=MANIFEST["version"],
                               threads=args.threads)
    sequences = [t.input_ids for t in tokenizer.encode(texts)]
    batches = [sequences[i : i + args.batch] for i in range(0, len(sequences), args.batch)]

    by_length = sorted(sequences, key=len)
    sorted_batches = [by_length[i : i + args.batch] for i in range(0, len(by_length), args.batch)]
    baseline_name = f"batches of {args.batch}, padded to {max_tokens} (baseline)"
    variants = {
        baseline_name: lambda: [fixed_padding(encoder, b, max_tokens) for b in batches],
        f"batches of {args.batch}, padded per batch": lambda: [encoder.embed(b) for b in batches],
        f"batches of {args.batch} sorted by length": lambda: [encoder.embed(b) for b in sorted_batches],
        "one text per session.run (the pipeline)": lambda: [encoder.embed([s]) for s in sequences],
    }
    # The three must agree: padding may not change an embedding.
    per_batch = np.concatenate([encoder.embed(b).vectors for b in batches])
    fixed = np.concatenate([fixed_padding(encoder, b, max_tokens) for b in batches])
    single = np.concatenate([encoder.embed([s]).vectors for s in sequences])
    agreement = min(float((per_batch * fixed).sum(axis=1).min()), float((per_batch * single).sum(axis=1).min()))

    medians = {}
    for name, run in variants.items():
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        medians[name] = statistics.median(times)

    baseline = medians[baseline_name]
    tokens = [len(s) for s in sequences]
    print(f"{len(texts)} held-out texts ({statistics.mean(tokens):.0f} tokens on average, longest {max(tokens)}), "
          f"{args.threads} onnxruntime thread(s), median of {args.repeat}; embeddings agree to cosine {agreement:.5f}")
    print(f"{'variant':46} {'ms/text':>8} {'speed-up':>9}")
    for name, seconds in medians.items():
        print(f"{name:46} {seconds / len(texts) * 1000:8.2f} {baseline / seconds:8.1f}×")


if __name__ == "__main__":
    main()

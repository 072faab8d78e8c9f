"""How much one batched inference per SQS batch buys, against one inference per record.

Both variants run the real code path of the image consumer on an SQS event of N
records: parse + validate every body with the consumer's parser, then score with the
shipped ONNX model, either in ONE ``session.run`` (inferbus) or one per record (the
baseline a hand-written handler often is). Both are measured in this run, on this
machine; the ratio is what matters, not the absolute numbers.

Usage::

    .venv/bin/python bench/batch_inference.py [--records 1000] [--repeat 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from inferbus_lambda.consumer import expect_type
from inferbus_lambda.contracts import ImageSubmitted, new_event
from inferbus_lambda.inference import OnnxClassifier

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST = json.loads((REPO_ROOT / "models" / "manifest.json").read_text())["models"]["digits-mlp"]


def sqs_bodies(count: int) -> list[str]:
    holdout = np.load(REPO_ROOT / "models" / "digits-holdout.npz")["images"]
    bodies = []
    for i in range(count):
        event = new_event(ImageSubmitted(pixels=[int(v) for v in holdout[i % len(holdout)]]), source="inferbus.bench")
        detail = json.loads(event.model_dump_json())
        bodies.append(json.dumps({"id": str(i), "source": event.source, "detail-type": event.type, "detail": detail}))
    return bodies


def run_batched(model: OnnxClassifier, parse, bodies: list[str]) -> None:
    events = [parse(body) for body in bodies]
    model.classify(np.array([event.data.pixels for event in events], dtype=np.float32))


def run_per_record(model: OnnxClassifier, parse, bodies: list[str]) -> None:
    for body in bodies:
        event = parse(body)
        model.classify(np.array([event.data.pixels], dtype=np.float32))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1000, help="records in the SQS event (default 1000)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per variant; the median is shown (default 5)")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads (default 1)")
    args = parser.parse_args()

    model = OnnxClassifier.load(REPO_ROOT / "models" / MANIFEST["file"], name="digits-mlp",
                                version=MANIFEST["version"], threads=args.threads)
    parse = expect_type(ImageSubmitted.EVENT_TYPE)
    bodies = sqs_bodies(args.records)
    variants = {"one session.run per record (baseline)": run_per_record, "one session.run per batch (inferbus)": run_batched}
    medians = {}
    for name, variant in variants.items():
        variant(model, parse, bodies[:10])  # warm up
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            variant(model, parse, bodies)
            times.append(time.perf_counter() - started)
        medians[name] = statistics.median(times)

    baseline = medians["one session.run per record (baseline)"]
    print(f"SQS event of {args.records} ImageSubmitted records, {args.threads} onnxruntime thread(s), median of {args.repeat}")
    print(f"{'variant':42} {'µs/record':>10} {'speed-up':>9}")
    for name, seconds in medians.items():
        print(f"{name:42} {seconds / args.records * 1e6:10.1f} {baseline / seconds:8.1f}×")


if __name__ == "__main__":
    main()

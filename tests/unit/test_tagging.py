"""The tagging features and decoding the text pipeline's taggers rely on: words keep their offsets,
BIO decoding never yields a tag BIO forbids, sentences split where they end, steps check their input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from inferbus_lambda.tagging import (
    MAX_CHARS,
    SHAPE_FEATURES,
    Span,
    bio_spans,
    decode_bio,
    read_words,
    sentence_bounds,
    split_words,
    word_features,
)

TEXTS = [
    "Ada Lovelace loved the new phone and paid $499 for it on 2 December 2026. Brilliant!",
    "I can't believe it's not butter... Dr. Smith's flat isn't in London!!",
    "Write to jo.bloggs@example.org or see https://example.org/a?b=1 (U.S. office), 10:30 or 3.5%.",
    "Zürich – naïve café, «quoted» words; tabs\tand\nnewlines   and emoji 🙂 too",
    "   leading and trailing spaces   ",
]
BIO = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]


@pytest.mark.parametrize("text", TEXTS)
def test_words_are_the_text_at_their_offsets_and_cover_every_non_space(text):
    words = split_words(text)
    assert all(text[w.start:w.end] == w.text for w in words)
    assert all(a.end <= b.start for a, b in itertools.pairwise(words))  # in order, never overlapping
    covered = {i for w in words for i in range(w.start, w.end)}
    assert covered == {i for i, c in enumerate(text) if not c.isspace()}


def test_words_split_as_the_treebank_does():
    assert [w.text for w in split_words("They don't know it's Smith's car.")] == \
        ["They", "do", "n't", "know", "it", "'s", "Smith", "'s", "car", "."]
    assert [w.text for w in split_words("Pay $1,000.50 at 10:30 to me@x.io.")] == \
        ["Pay", "$", "1,000.50", "at", "10:30", "to", "me@x.io", "."]
    # The treebank mostly splits hyphenated words (764 "-" tokens without a space after, in train).
    assert [w.text for w in split_words("A well-known Al-Zaman reporter, O'Brien.")] == \
        ["A", "well", "-", "known", "Al", "-", "Zaman", "reporter", ",", "O'Brien", "."]


def test_sentences_end_after_their_final_punctuation():
    words = [w.text for w in split_words("Great! Really great?! And then... nothing")]
    bounds = sentence_bounds(words)
    assert [words[a:b] for a, b in bounds] == [["Great", "!"], ["Really", "great", "?", "!"],
                                               ["And", "then", "..."], ["nothing"]]
    assert sentence_bounds([]) == []


def test_features_have_one_row_per_word_and_unknown_words_read_as_unknown():
    words = ["Zürich", "is", "a", "remarkablylongwordwithmanycharacters", "42"]
    feeds = word_features(words, {"is": 2, "a": 3, "00": 4})
    assert feeds["word_ids"].tolist() == [[1, 2, 3, 1, 4]]  # digits normalised to 0; unseen -> 1
    assert feeds["chars"].shape == (1, 5, MAX_CHARS) and feeds["chars"].min() >= 0
    assert feeds["chars"][0, 0, :3].tolist() == [ord("Z") + 1, 0xC3 + 1, 0xBC + 1]  # UTF-8 bytes + 1
    assert feeds["shape"].shape == (1, 5, len(SHAPE_FEATURES))
    # Hashed suffixes are the same in every process (crc32, not Python's salted hash).
    assert word_features(["walking"], {})["suffixes"].tolist() == word_features(["talking"], {})["suffixes"].tolist()


@pytest.mark.parametrize("seed", range(20))
def test_bio_decoding_never_continues_what_did_not_begin(seed):
    rng = np.random.default_rng(seed)
    scores = np.log(rng.dirichlet(np.ones(len(BIO)) * 0.3, size=int(rng.integers(1, 25))))
    tags = decode_bio(scores, BIO)
    for previous, tag in zip(["O", *tags], tags):
        if tag.startswith("I-"):
            assert previous[2:] == tag[2:] and previous != "O"
    greedy = [BIO[j] for j in scores.argmax(axis=1)]
    if all(not t.startswith("I-") or (p[2:] == t[2:] and p != "O") for p, t in zip(["O", *greedy], greedy)):
        assert tags == greedy  # when the likeliest tags are valid BIO, they are the answer


def test_bio_decoding_turns_a_lone_inside_into_the_best_valid_sequence():
    probabilities = np.array([[0.9, 0.02, 0.02, 0.02, 0.02, 0.01, 0.01],    # O
                              [0.1, 0.3, 0.5, 0.02, 0.04, 0.02, 0.02]])     # I-PER most likely, alone
    assert decode_bio(np.log(probabilities), BIO) == ["O", "B-PER"]


def test_spans_of_bio_tags():
    assert bio_spans(["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-ORG"]) == [
        Span("PER", 0, 1), Span("LOC", 3, 3), Span("LOC", 4, 4), Span("ORG", 5, 5)]


def test_a_step_refuses_words_that_are_not_the_text():
    text = "Ada went to Paris"
    words = [{"text": w.text, "start": w.start, "end": w.end} for w in split_words(text)]
    assert [w.text for w in read_words(text, words)] == ["Ada", "went", "to", "Paris"]
    with pytest.raises(ValueError, match=r"words\[3\] is not a word of the text"):
        read_words(text, words[:3] + [{"text": "Paris", "start": 0, "end": 5}])
    with pytest.raises(ValueError, match="must be a list"):
        read_words(text, "Ada went")

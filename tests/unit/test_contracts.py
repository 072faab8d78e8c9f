import json

import pytest
from inferbus_lambda.contracts import (
    ImageAnalyzed,
    ImageClassified,
    ImageSubmitted,
    InvalidEventError,
    ModelRef,
    SceneSubmitted,
    from_eventbridge_event,
    from_put_events_entry,
    new_event,
    parse_event,
    to_put_events_entry,
)

PIXELS = list(range(16)) * 4


def image_event():
    return new_event(ImageSubmitted(pixels=PIXELS), source="inferbus.test", correlationid="req-1")


def test_put_events_entry_round_trip_keeps_every_attribute():
    event = image_event()
    entry = to_put_events_entry(event, bus_name="inferbus")
    assert (entry["Source"], entry["DetailType"], entry["EventBusName"]) == ("inferbus.test", "ImageSubmitted", "inferbus")
    assert from_put_events_entry(entry) == event


def test_eventbridge_delivery_is_read_back():
    event = image_event()
    body = json.dumps({"id": "eb-1", "source": event.source, "detail-type": event.type,
                       "detail": json.loads(event.model_dump_json())})
    assert from_eventbridge_event(body).data.pixels == PIXELS


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["data"].update(pixels=PIXELS[:63]), "data.pixels"),
        (lambda d: d["data"]["pixels"].__setitem__(3, 17), "data.pixels.3"),
        (lambda d: d["data"]["pixels"].__setitem__(2, 1.5), "data.pixels.2"),
        (lambda d: d["data"]["pixels"].__setitem__(2, "1"), "data.pixels.2"),
        (lambda d: d["data"].update(extra=1), "data.extra"),
        (lambda d: d.pop("correlationid"), "correlationid"),
        (lambda d: d.update(specversion="0.3"), "specversion"),
        (lambda d: d.update(time="yesterday"), "time"),
        (lambda d: d.update(id=""), "id"),
    ],
)
def test_bad_values_name_the_field(mutate, field):
    detail = json.loads(image_event().model_dump_json())
    mutate(detail)
    with pytest.raises(InvalidEventError) as raised:
        parse_event(detail)
    assert raised.value.reason.startswith(f"{field}:"), raised.value.reason


def test_unknown_type_is_named():
    detail = json.loads(image_event().model_dump_json()) | {"type": "Teleported"}
    with pytest.raises(InvalidEventError, match="unknown event type 'Teleported'"):
        parse_event(detail)


def test_a_missing_type_is_named_as_missing_not_as_an_unknown_none():
    detail = {key: value for key, value in json.loads(image_event().model_dump_json()).items() if key != "type"}
    for missing in (detail, {}):
        with pytest.raises(InvalidEventError) as raised:
            parse_event(missing)
        assert raised.value.reason.startswith("type: Field required (a CloudEvent's type, one of: ")
        assert "None" not in raised.value.reason


def test_not_json_and_not_eventbridge_are_clear_errors():
    with pytest.raises(InvalidEventError, match="not valid JSON"):
        from_eventbridge_event("{nope")
    with pytest.raises(InvalidEventError, match="no 'detail'"):
        from_eventbridge_event("{}")


def test_source_must_match_the_envelope():
    entry = to_put_events_entry(image_event(), bus_name="inferbus") | {"Source": "inferbus.image-classifier"}
    with pytest.raises(InvalidEventError, match="envelope mismatch"):
        from_put_events_entry(entry)


def test_classification_probabilities_must_sum_to_one():
    with pytest.raises(ValueError, match="sum to 1"):
        ImageClassified(input_id="a", label=1, confidence=0.5, probabilities=[0.5] * 10,
                        model=ModelRef(name="m", version="1"), inference_ms=1.0, batch_size=1)


def test_envelope_is_a_valid_cloudevent_for_the_cloudevents_sdk():
    from cloudevents.v1.http import from_dict

    detail = json.loads(image_event().model_dump_json())
    sdk_event = from_dict(detail)
    assert sdk_event["specversion"] == "1.0"
    assert sdk_event["correlationid"] == "req-1"
    assert sdk_event.data["pixels"] == PIXELS


def test_many_errors_give_a_bounded_reason():
    detail = json.loads(image_event().model_dump_json())
    detail["data"]["pixels"] = ["x"] * 64
    with pytest.raises(InvalidEventError) as raised:
        parse_event(detail)
    assert raised.value.reason.count("Input should be a valid integer") == 5
    assert raised.value.reason.endswith("and 59 more")


def analyzed_data(**words_override):
    word = {"text": "Paris", "start": 0, "end": 5, "upos": "PROPN", "ner": "B-LOC"} | words_override
    ref = {"name": "m", "version": "1"}
    return {"input_id": "evt-1", "sentiment": {"label": "positive", "confidence": 0.9, "model": ref},
            "entities": [{"text": "Paris", "type": "LOC", "start": 0, "end": 5}], "words": [word],
            "tagger": ref, "recogniser": ref, "tokens": 3, "truncated": False, "encoder": ref}


def test_text_analyzed_carries_tagged_words_and_trained_entity_types():
    from inferbus_lambda.contracts import ENTITY_TYPES, UPOS_TAGS, TextAnalyzed

    analyzed = TextAnalyzed.model_validate(analyzed_data())
    assert (analyzed.words[0].upos, analyzed.words[0].ner, analyzed.entities[0].type) == ("PROPN", "B-LOC", "LOC")
    assert {"PER", "ORG", "LOC"} <= set(ENTITY_TYPES) and len(UPOS_TAGS) == 17


@pytest.mark.parametrize(("override", "field"), [({"upos": "NN"}, "upos"), ({"ner": "B-MISC"}, "ner"),
                                                  ({"ner": "PER"}, "ner"), ({"start": -1}, "start")])
def test_a_tagged_word_outside_its_tag_sets_is_refused(override, field):
    from inferbus_lambda.contracts import TextAnalyzed
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=rf"words\.0\.{field}"):
        TextAnalyzed.model_validate(analyzed_data(**override))

def scene_detail(width: int, height: int) -> dict:
    scene = SceneSubmitted(width=width, height=height, pixels=[(i * 7) % 17 for i in range(width * height)])
    return json.loads(new_event(scene, source="inferbus.test").model_dump_json())


@pytest.mark.parametrize(("width", "height"), [(8, 8), (48, 48), (64, 17), (128, 128)])
def test_a_scene_of_any_allowed_size_round_trips(width, height):
    event = parse_event(scene_detail(width, height))
    assert (event.data.width, event.data.height, len(event.data.pixels)) == (width, height, width * height)


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d["data"].update(width=10), "data: Value error, pixels must hold width x height = 160 values, got 256"),
        (lambda d: d["data"]["pixels"].append(0), "data: Value error, pixels must hold width x height = 256 values, got 257"),
        (lambda d: d["data"].update(width=7, height=7, pixels=[0] * 49), "data.width: Input should be greater than or equal to 8"),
        (lambda d: d["data"].update(height=129), "data.height: Input should be less than or equal to 128"),
        (lambda d: d["data"].update(width=16.0), "data.width: Input should be a valid integer"),
        (lambda d: d["data"]["pixels"].__setitem__(5, -1), "data.pixels.5: Input should be greater than or equal to 0"),
    ],
)
def test_a_bad_scene_names_what_is_wrong(mutate, reason):
    detail = scene_detail(16, 16)
    mutate(detail)
    with pytest.raises(InvalidEventError) as raised:
        parse_event(detail)
    assert raised.value.reason.startswith(reason), raised.value.reason


def test_an_8x8_image_is_for_the_classifier_only():
    """A scene is its own type; ImageSubmitted keeps its 64 pixels and no longer names another path."""
    assert ImageSubmitted(pixels=PIXELS).analysis == "classify"
    detail = json.loads(image_event().model_dump_json())
    detail["data"]["analysis"] = "full"
    with pytest.raises(InvalidEventError, match="data.analysis: Input should be 'classify'"):
        parse_event(detail)


def test_an_analysis_carries_boxes_classes_scores_and_the_scene_label():
    model = {"name": "m", "version": "1"}
    analyzed = ImageAnalyzed(input_id="s-1", boxes=[[0.0, 1.0, 9.0, 12.5]], classes=[4], scores=[0.93], scene="one",
                             scene_confidence=0.9, detector=model, scene_classifier=model)
    assert analyzed.boxes == [[0.0, 1.0, 9.0, 12.5]] and analyzed.scene == "one"
    with pytest.raises(ValueError, match="as long as each other"):
        ImageAnalyzed(input_id="s-1", boxes=[], classes=[4], scores=[], scene="one", scene_confidence=0.9,
                      detector=model, scene_classifier=model)


@pytest.mark.parametrize(("numbers", "refused"), [
    ([0.5] * 40 + [float("nan")], "nan is not a JSON number"),
    (list(range(30)) + [float("-inf"), 2.5], "-inf is not a JSON number"),
    ([float("inf"), 1, float("nan")], "nan is not a JSON number"),  # the last is named, as the walk meets it first
    ([[1, 2], [3.5, float("nan")]], "nan is not a JSON number"),  # a row of an image
])
def test_a_list_of_numbers_with_a_non_finite_float_is_refused(numbers, refused):
    from inferbus_lambda.contracts import check_strict_json

    with pytest.raises(InvalidEventError, match=refused):
        check_strict_json({"detail": {"data": {"pixels": numbers}}}, "body")


@pytest.mark.parametrize("numbers", [
    list(range(2304)), [0.25 * i for i in range(384)], [True, 1, 2.5], [10**400, 3], [],
])
def test_a_list_of_finite_numbers_passes(numbers):
    from inferbus_lambda.contracts import check_strict_json

    check_strict_json({"detail": {"data": {"pixels": numbers}}}, "body")


def test_a_lone_surrogate_beside_numbers_is_still_found():
    from inferbus_lambda.contracts import check_strict_json

    with pytest.raises(InvalidEventError, match="lone surrogate"):
        check_strict_json({"pixels": [1, 2, 3], "labels": [1, "\ud800"]}, "body")

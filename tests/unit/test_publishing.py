import json

from inferbus_lambda.publishing import MAX_REQUEST_BYTES, entry_size, plan_requests, publish_events


def entry(n, detail_bytes=10):
    return {"Source": "s", "DetailType": "t", "Detail": "x" * detail_bytes, "EventBusName": "b", "Id": n}


class ScriptedEvents:
    """An EventBridge client whose PutEvents fails the entries it is told to, per attempt."""

    def __init__(self, fail):
        self.fail = fail  # {entry Id: [error code per attempt]}
        self.calls = []

    def put_events(self, Entries):  # noqa: N803 - boto3's spelling
        self.calls.append([e["Id"] for e in Entries])
        results = []
        for e in Entries:
            codes = self.fail.get(e["Id"], [])
            code = codes.pop(0) if codes else None
            results.append({"ErrorCode": code, "ErrorMessage": "scripted"} if code else {"EventId": f"ev-{e['Id']}"})
        return {"FailedEntryCount": sum(1 for r in results if "ErrorCode" in r), "Entries": results}


def test_requests_hold_at_most_ten_entries():
    assert [len(r) for r in plan_requests([10] * 25)] == [10, 10, 5]


def test_requests_stay_under_256_kb():
    sizes = [100 * 1024] * 5
    requests = list(plan_requests(sizes))
    assert all(sum(sizes[i] for i in r) <= MAX_REQUEST_BYTES for r in requests)
    assert [i for r in requests for i in r] == list(range(5))


def test_entry_size_counts_time_and_utf8():
    assert entry_size({"Source": "ab", "DetailType": "c", "Detail": "é", "Time": object()}) == 2 + 1 + 2 + 14


def test_transient_failures_are_retried_until_published():
    client = ScriptedEvents({3: ["ThrottlingException", "InternalFailure"]})
    failures = publish_events(client, [entry(i) for i in range(12)], sleep=lambda s: None)
    assert failures == []
    assert client.calls == [list(range(10)), [10, 11], [3], [3]]


def test_permanent_and_exhausted_failures_are_returned_not_dropped():
    client = ScriptedEvents({1: ["InvalidArgument"], 2: ["ThrottlingException"] * 9})
    failures = publish_events(client, [entry(i) for i in range(4)], max_attempts=3, sleep=lambda s: None)
    assert [(f.index, f.error_code) for f in failures] == [(1, "InvalidArgument"), (2, "ThrottlingException")]


def test_oversized_entry_is_a_failure_and_the_rest_are_sent():
    client = ScriptedEvents({})
    failures = publish_events(client, [entry(0), entry(1, MAX_REQUEST_BYTES + 1), entry(2)], sleep=lambda s: None)
    assert [(f.index, f.error_code) for f in failures] == [(1, "EntryTooLarge")]
    assert client.calls == [[0, 2]]


def test_throttled_entries_are_retried_until_published():
    """put_events_throttle_rate: EventBridge's per-entry ThrottlingException, absorbed by the publisher's retries."""
    from inferbus.chaos.faults import ThrottledEvents

    class Bus:
        def __init__(self):
            self.accepted = []

        def put_events(self, Entries):  # noqa: N803
            self.accepted += Entries
            return {"FailedEntryCount": 0, "Entries": [{"EventId": str(i)} for i, _ in enumerate(Entries)]}

    bus = Bus()
    entries = [{"Source": "s", "DetailType": "t", "Detail": json.dumps({"n": i})} for i in range(40)]
    failures = publish_events(ThrottledEvents(bus, 0.3), entries, max_attempts=8, sleep=lambda s: None)
    assert failures == [] and sorted(e["Detail"] for e in bus.accepted) == sorted(e["Detail"] for e in entries)
    assert publish_events(ThrottledEvents(bus, 1.0), entries[:2], max_attempts=2, sleep=lambda s: None)[0].error_code == \
        "ThrottlingException"  # still throttled after the last attempt: returned, never dropped

"""The ingest endpoint reads JSON as strictly as every other path: the same bodies refused, with the same reasons."""

from __future__ import annotations

import pytest
from inferbus_lambda.contracts import loads_strict
from inferbus_lambda.errors import InvalidEventError
from inferbus_lambda.ingest import IngestRefusal, read_cloudevent

STRUCTURED = {"Content-Type": "application/cloudevents+json"}
BINARY = {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": "t-1", "ce-source": "my.app",
          "ce-type": "TextSubmitted"}
EVENT = '{"specversion": "1.0", "id": "t-1", "source": "my.app", "type": "TextSubmitted", "data": %s}'


@pytest.mark.parametrize("data", ['{"text": "a", "text": "b"}', '{"text": NaN}', '{"text": "\\ud800"}',
                                  '{"n": 1%s}' % ("0" * 5000)])
@pytest.mark.parametrize(("headers", "body", "what"), [(STRUCTURED, EVENT, "body"), (BINARY, "%s", "data")])
def test_a_body_every_other_path_refuses_is_refused_with_the_same_reason(data, headers, body, what):
    text = body % data
    with pytest.raises(InvalidEventError) as expected:
        loads_strict(text, what)
    with pytest.raises(IngestRefusal) as refused:
        read_cloudevent(headers, text.encode())
    assert (refused.value.status, refused.value.error, refused.value.reason) == (400, "InvalidEventError",
                                                                                 expected.value.reason)

"""The HTTP ingest endpoint (a Lambda function URL, IAM auth): one CloudEvent per POST, put on the bus.

Answers 202 with the event's id, or 4xx with the reason (see :mod:`inferbus_lambda.ingest`);
503 when the bus refused it for a reason a retry may fix. A ``traceparent`` goes on the bus as
the entry's X-Ray ``TraceHeader`` and is this invocation's ``traceparent`` trace annotation.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.event_handler import LambdaFunctionUrlResolver, Response
from aws_lambda_powertools.metrics import MetricUnit

from inferbus_lambda.contracts import to_put_events_entry
from inferbus_lambda.environment import IngestEnvironment
from inferbus_lambda.handlers import FunctionRuntime, aws_client
from inferbus_lambda.ingest import MAX_EVENT_BYTES, IngestRefusal, read_cloudevent, request_body, validate
from inferbus_lambda.metric_names import EVENTS_INGESTED, EVENTS_REFUSED, PUT_EVENTS_FAILED_ENTRIES
from inferbus_lambda.publishing import TRANSIENT_ERROR_CODES, entry_size, publish_events

environment = IngestEnvironment.from_environ()
runtime = FunctionRuntime(environment, load=lambda info: None)
events = aws_client("events")  # as every function makes its clients
app = LambdaFunctionUrlResolver()


def _answer(status: int, body: dict[str, Any]) -> Response:
    return Response(status_code=status, content_type="application/json", body=json.dumps(body))


def _refuse(refusal: IngestRefusal) -> Response:
    runtime.metrics.add_metric(name=EVENTS_REFUSED, unit=MetricUnit.Count, value=1)
    runtime.logger.warning("event refused", extra={"status": refusal.status, "error": refusal.error, "reason": refusal.reason})
    return _answer(refusal.status, refusal.as_body())


@app.post("/")
@app.post("/events")
def ingest() -> Response:
    request = app.current_event
    try:
        # The body as sent: Powertools' decoded_body decodes it as UTF-8, and a body that is not
        # UTF-8 would fail the invocation (a 502) instead of getting its 400.
        body = request_body(request.body, base64_encoded=request.is_base64_encoded)
        event = validate(read_cloudevent(request.headers, body), reserved_sources=environment.RESERVED_SOURCES)
        entry = to_put_events_entry(event, environment.EVENT_BUS_NAME)
        size = entry_size(entry)
        if size > MAX_EVENT_BYTES:
            raise IngestRefusal(413, "EventTooLarge", f"the event is {size:,} bytes on the bus; "
                                f"the limit is {MAX_EVENT_BYTES:,}")
    except IngestRefusal as refusal:
        return _refuse(refusal)
    failures = publish_events(events, [entry])
    runtime.metrics.add_metric(name=PUT_EVENTS_FAILED_ENTRIES, unit=MetricUnit.Count, value=len(failures))
    if failures:
        failure = failures[0]
        transient = failure.error_code in TRANSIENT_ERROR_CODES
        runtime.logger.error("PutEvents refused the event", extra={"event_id": event.id, "error": failure.error_code})
        return _answer(503 if transient else 502, {"error": failure.error_code, "reason": failure.error_message})
    runtime.metrics.add_metric(name=EVENTS_INGESTED, unit=MetricUnit.Count, value=1)
    if event.traceparent is not None:  # the caller's trace, findable from this function's segment
        runtime.tracer.put_annotation(key="traceparent", value=event.traceparent)
    runtime.logger.info("event ingested", extra={"event_id": event.id, "type": event.type,
                                                 "correlation_id": event.correlationid, "traceparent": event.traceparent})
    return _answer(202, {"id": event.id, "type": event.type, "correlationid": event.correlationid})


lambda_handler = runtime.wrap(app.resolve)

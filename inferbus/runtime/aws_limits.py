"""The AWS limits the twin enforces on requests, answered as AWS answers them, and those it does not.

moto accepts much that AWS refuses. :mod:`.moto_patches` calls these checks, so the embedded
pipeline and ``inferbus serve`` refuse the same requests, with the same error shapes.

Enforced
--------
Every request of an AWS JSON protocol (``X-Amz-Target``: EventBridge, SQS, Step Functions,
DynamoDB, ...): a body that is not UTF-8, not JSON, not a JSON object, or nested deeper than a
parser follows (:data:`MAX_REQUEST_DEPTH`) is a 400 with AWS's JSON error body
``{"__type": "SerializationException", "message": ...}`` (moto answered an HTML 500). So is a
``PutEvents`` whose ``Entries`` is not a list of objects, or whose entry has a value of the wrong
JSON type (a number for ``Source``, ``Resources`` that is not a list of strings).

``PutEvents`` (https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html):

- 1 to 10 entries: otherwise the whole request fails, ``ValidationException`` (400);
- the entries' total size at most 256 KB, each entry counted as "Calculating PutEvents event
  entry size" documents (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-putevent-size.html:
  ``Time`` 14 bytes if present, the UTF-8 bytes of ``Source``, ``DetailType``, ``Detail`` and of
  each ``Resources`` item): otherwise the whole request fails, ``ValidationException`` "Total size
  of the entries in the request is over the limit." (so an entry over 256 KB fails its request).
  One constant with the kit's publisher (``inferbus_lambda.publishing.MAX_REQUEST_BYTES``); a later
  revision of the API reference gives 1 MB, which a deployed bus may then take;
- ``Detail`` a JSON object (moto: ``[]``, ``42``, ``null`` accepted), nested at most 1,000 levels
  ("PutEvents will only process nested JSON up to 1000 levels deep"), its integers within
  -2^63..2^63-1 (the page's "JSON number (integer)" constraint), and no ``NaN`` or ``Infinity``
  (not JSON, though Python's parser takes them): otherwise that entry fails with
  ``MalformedDetail``, the others go on;
- ``Source``, ``DetailType``, ``Detail`` present (moto's own ``InvalidArgument`` per entry);
- the bus's resource policy (:mod:`.resource_policy`): the ``Deny`` statements on
  ``events:PutEvents`` are evaluated for the caller (a local function as its template role, a
  Step Functions execution as its state machine's role, a client of the twin as an untagged user
  of the account, or as the role of its STS session). A denied request fails each of its entries
  on that bus, as the API reference's ``PutEventsResultEntry`` lists the codes:
  ``NotAuthorizedForSourceException`` when the denying statement is about ``events:source``,
  ``AccessDeniedException`` otherwise. ``StringLike``/``StringEquals`` compare case-sensitively,
  as IAM does.

Not enforced (moto's behaviour stands)
--------------------------------------
- PutEvents request rate (a Region's TPS quota, ``ThrottlingException``) and invocation quotas;
- ``DetailType`` and ``Source`` lengths, ``Resources`` ARN format, ``TraceHeader`` length (500);
- ``EventBusName`` that names another account's or Region's bus (moto routes it itself);
- identity-based IAM: every caller is allowed by its own policies; only bus resource policies deny;
- a policy statement :mod:`.resource_policy` does not evaluate (a condition operator or key it
  does not know, a principal other than ``*``, a ``Not…`` element): named in the provisioning
  summary as not enforced;
- request bodies of other protocols (query, REST-XML, REST-JSON) beyond moto's own checks;
- SQS, Step Functions and DynamoDB payload limits (message 256 KB, execution input 256 KB, item
  400 KB), and every service's per-field length limits.

A ``Detail`` 990-1,000 levels deep is refused too: Python's parser stops short of AWS's 1,000.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from inferbus_lambda.publishing import MAX_ENTRIES_PER_REQUEST, MAX_REQUEST_BYTES, entry_size

MAX_DETAIL_DEPTH = 1000  # "PutEvents will only process nested JSON up to 1000 levels deep"
MAX_REQUEST_DEPTH = MAX_DETAIL_DEPTH  # no AWS figure for a request body; the same as a Detail's
INTEGER_RANGE = (-(2**63), 2**63 - 1)
TOTAL_SIZE_MESSAGE = "Total size of the entries in the request is over the limit."
STRING_FIELDS = ("Source", "DetailType", "Detail", "EventBusName", "TraceHeader")
MALFORMED_DETAIL = {"ErrorCode": "MalformedDetail", "ErrorMessage": "Detail is malformed."}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


class RequestRefused(Exception):
    """A whole request AWS refuses: ``code`` is its ``__type``, ``status`` its HTTP status."""

    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.status = code, message, status

    def body(self) -> str:
        return json.dumps({"__type": self.code, "message": self.message})


def nests_deeper(text: str, limit: int) -> bool:
    """Whether ``text``'s arrays and objects nest deeper than ``limit`` (strings skipped), without parsing it."""
    if text.count("[") + text.count("{") <= limit:
        return False  # the usual case, at C speed: it cannot nest deeper than it has brackets
    depth = 0
    for bracket in _BRACKETS.findall(_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > limit:
            return True
    return False


def check_json_request(body: bytes) -> None:
    """Refuse a JSON-protocol request body AWS could not read (an empty body reads as ``{}``).

    Raises
    ------
    RequestRefused
        ``SerializationException``, naming what is wrong.
    """
    if not body:
        return
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RequestRefused("SerializationException", f"the request body is not UTF-8 (byte {error.start})") from None
    if nests_deeper(text, MAX_REQUEST_DEPTH):
        raise RequestRefused("SerializationException", f"the request body nests deeper than {MAX_REQUEST_DEPTH} levels")
    try:
        parsed = json.loads(text)
    except RecursionError:
        raise RequestRefused("SerializationException", "the request body nests too deeply to read") from None
    except ValueError as error:
        raise RequestRefused("SerializationException", f"the request body is not JSON: {error}") from None
    if not isinstance(parsed, dict):
        raise RequestRefused("SerializationException", "the request body is not a JSON object")


def check_put_events_request(entries: Any) -> None:
    """Refuse a ``PutEvents`` request as a whole, as AWS does: entries of the wrong JSON type, their count,
    their total size.

    Raises
    ------
    RequestRefused
        ``SerializationException`` (a value of the wrong type) or ``ValidationException``.
    """
    entries = [] if entries is None else entries
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise RequestRefused("SerializationException", "Entries is a list of PutEventsRequestEntry objects")
    for entry in entries:
        wrong = [key for key in STRING_FIELDS if key in entry and not isinstance(entry[key], str)]
        resources = entry.get("Resources", [])
        if not isinstance(resources, list) or not all(isinstance(resource, str) for resource in resources):
            wrong.append("Resources")
        if "Time" in entry and (isinstance(entry["Time"], bool) or not isinstance(entry["Time"], int | float | str)):
            wrong.append("Time")
        if wrong:
            raise RequestRefused("SerializationException", f"PutEventsRequestEntry: {', '.join(wrong)} of the wrong type")
    if not entries:
        raise RequestRefused("ValidationException", "1 validation error detected: Value '[]' at 'entries' failed to "
                             "satisfy constraint: Member must have length greater than or equal to 1")
    if len(entries) > MAX_ENTRIES_PER_REQUEST:
        raise RequestRefused("ValidationException", "1 validation error detected: Value '[PutEventsRequestEntry]' at "
                             "'entries' failed to satisfy constraint: Member must have length less than or equal to "
                             f"{MAX_ENTRIES_PER_REQUEST}")
    if sum(entry_size(entry) for entry in entries) > MAX_REQUEST_BYTES:
        raise RequestRefused("ValidationException", TOTAL_SIZE_MESSAGE)


class _OutOfRange(Exception):
    """What a Detail may not hold: an integer past 64 bits, or ``NaN``/``Infinity`` (raised from the parser's hooks)."""


def _int64(digits: str) -> int:
    if len(digits) > 18:  # shorter ones are within 64 bits: this runs for every integer of every Detail
        low, high = INTEGER_RANGE
        if len(digits.lstrip("-")) > 19 or not low <= int(digits) <= high:
            raise _OutOfRange(digits)
    return 0  # the value is not kept


def _not_json(constant: str) -> float:
    raise _OutOfRange(constant)  # Python's parser takes NaN and Infinity; JSON (and AWS's parser) does not


def detail_refusal(entry: Mapping[str, Any]) -> dict[str, str] | None:
    """The per-entry error AWS gives a ``Detail`` it cannot take (``MalformedDetail``), or ``None``.

    A missing or unparsable ``Detail`` is left to moto, which answers those as AWS does.
    """
    detail = entry.get("Detail")
    if not isinstance(detail, str) or not detail:
        return None
    if nests_deeper(detail, MAX_DETAIL_DEPTH):
        return dict(MALFORMED_DETAIL)
    try:
        # A parse in C: cheaper than scanning the text for digits or for NaN.
        parsed = json.loads(detail, parse_int=_int64, parse_constant=_not_json)
    except (_OutOfRange, RecursionError):
        return dict(MALFORMED_DETAIL)
    except ValueError:
        return None  # not JSON: moto's own MalformedDetail
    return None if isinstance(parsed, dict) else dict(MALFORMED_DETAIL)

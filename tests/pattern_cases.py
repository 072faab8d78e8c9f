"""Event-pattern cases whose answer AWS documents, each with where it is documented.

Sources: the EventBridge User Guide pages "Creating event patterns" (CREATE), "Comparison
operators" (OPERATORS), "Arrays in event patterns" (ARRAYS), "Matching null values and empty
strings" (NULLS); and AWS's open-source matcher event-ruler, which EventBridge runs: its README
sections (RULER_README) and its tests (RulerTest, ACMachineTest). The answers come from these,
never from what moto does; ``MOTO_DIFFERS`` names the cases where moto 5.2.5 answers otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CREATE = "AWS EventBridge User Guide: Creating event patterns"
OPERATORS = "AWS EventBridge User Guide: Comparison operators"
ARRAYS = "AWS EventBridge User Guide: Arrays in event patterns"
NULLS = "AWS EventBridge User Guide: Matching null values and empty strings"
RULER_README = "event-ruler README"
RULER_TESTS = "event-ruler tests"


@dataclass(frozen=True)
class Case:
    name: str
    pattern: dict[str, Any]
    event: dict[str, Any]
    matches: bool
    source: str


EC2 = {
    "version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718", "detail-type": "EC2 Instance State-change Notification",
    "source": "aws.ec2", "account": "111122223333", "time": "2017-12-22T18:43:48Z", "region": "us-west-1",
    "resources": ["arn:aws:ec2:us-west-1:123456789012:instance/i-1234567890abcdef0"],
    "detail": {"instance-id": "i-1234567890abcdef0", "state": "terminated", "c-count": 5, "d-count": 3, "x-limit": 301.8,
               "source-ip": "10.0.0.33"},
}
IMAGE = {"version": "0", "id": "1", "detail-type": "ImageSubmitted", "source": "my.producer", "account": "123456789012",
         "time": "2026-12-02T10:00:00Z", "region": "us-east-1", "resources": [],
         "detail": {"data": {"pixels": [0] * 3, "analysis": "classify"}}}
EMPLOYEES = {"employees": [[{"firstName": "John", "lastName": "Doe", "ids": [1234, 1000, 9999]},
                            {"firstName": "Anna", "lastName": "Smith"}],
                           [{"firstName": "Peter", "lastName": "Jones", "ids": []}]]}
IMAGE_RFC = {"Image": {"Width": 800, "Height": 600, "Title": "View from 15th Floor",
                       "Thumbnail": {"Url": "http://www.example.com/image/481989943", "Height": 125, "Width": 100},
                       "Animated": False, "IDs": [116, 943, 234, 38793]}}
# The classifier's own rule (pipeline/image_classifier.py): no analysis, or analysis=classify.
CLASSIFIER = {"detail": {"data": {"$or": [{"analysis": [{"exists": False}]}, {"analysis": ["classify"]}]}}}


def _with(data: dict[str, Any]) -> dict[str, Any]:
    return {**IMAGE, "detail": {"data": data}}


CASES = [
    # -- exact values and the structure of a pattern ------------------------------------------
    Case("the EC2 termination pattern", {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"],
                                         "detail": {"state": ["terminated"]}}, EC2, True, CREATE),
    Case("another state", {"source": ["aws.ec2"], "detail": {"state": ["running"]}}, EC2, False, CREATE),
    Case("one of several values", {"source": ["aws.ec2", "aws.fargate"]}, EC2, True, CREATE),
    Case("a field the event lacks", {"detail": {"instance-type": ["t3.micro"]}}, EC2, False, CREATE),
    Case("same field name at another depth", {"state": ["terminated"]}, EC2, False, CREATE),
    Case("values are case-sensitive", {"source": ["AWS.EC2"]}, EC2, False, CREATE),
    Case("fields are ANDed", {"source": ["aws.ec2"], "region": ["eu-west-1"]}, EC2, False, CREATE),
    Case("an event array meets the pattern array", {"resources": ["arn:other", EC2["resources"][0]]}, EC2, True, ARRAYS),
    Case("no common array value", {"resources": ["arn:other"]}, EC2, False, ARRAYS),
    Case("number equals number", {"detail": {"c-count": [5]}}, EC2, True, RULER_README + ": Simple matching"),
    Case("number written another way", {"detail": {"x-limit": [3.018e2]}}, EC2, True, RULER_README + ": Numeric matching"),
    Case("a number is not its string", {"detail": {"c-count": ["5"]}}, EC2, False, RULER_README + ": JSON text matching"),
    Case("a string is not a number", {"detail": {"n": [5]}}, {"detail": {"n": "5"}}, False,
         RULER_README + ": JSON text matching"),
    Case("[1] does not match true", {"detail": {"flag": [1]}}, {"detail": {"flag": True}}, False,
         RULER_README + ": JSON text matching (true is the JSON literal) and its rule compiler"),
    Case("[0] does not match false", {"detail": {"flag": [0]}}, {"detail": {"flag": False}}, False,
         RULER_README + ": JSON text matching"),
    Case("[false] matches false", {"Image": {"Animated": [False]}}, IMAGE_RFC, True, RULER_TESTS + ": RulerTest field combos"),
    Case("[true] does not match false", {"Image": {"Animated": [True]}}, IMAGE_RFC, False,
         RULER_TESTS + ": RulerTest field combos"),
    Case("[true] does not match the string", {"detail": {"flag": [True]}}, {"detail": {"flag": "true"}}, False,
         RULER_README + ": JSON text matching"),
    Case("nested objects", {"Image": {"Width": [800], "Thumbnail": {"Height": [125, 300]}}}, IMAGE_RFC, True,
         RULER_TESTS + ": RulerTest field combos"),
    # -- null and empty -----------------------------------------------------------------------
    Case("empty string", {"detail": {"eventVersion": [""]}}, {"detail": {"eventVersion": "", "responseElements": None}},
         True, NULLS),
    Case("null", {"detail": {"responseElements": [None]}}, {"detail": {"eventVersion": "", "responseElements": None}},
         True, NULLS),
    Case("empty string is not null", {"detail": {"responseElements": [""]}}, {"detail": {"responseElements": None}},
         False, NULLS),
    Case("null is not empty string", {"detail": {"eventVersion": [None]}}, {"detail": {"eventVersion": ""}}, False, NULLS),
    # -- prefix, suffix, equals-ignore-case, wildcard ----------------------------------------
    Case("prefix", {"time": [{"prefix": "2017-12-22"}]}, EC2, True, OPERATORS),
    Case("prefix not met", {"time": [{"prefix": "2018"}]}, EC2, False, OPERATORS),
    Case("prefix on a number", {"detail": {"c-count": [{"prefix": "5"}]}}, EC2, False,
         RULER_README + ": Prefix matching (string-valued fields only)"),
    Case("prefix ignoring case", {"source": [{"prefix": {"equals-ignore-case": "AWS."}}]}, EC2, True, OPERATORS),
    Case("suffix", {"detail": {"instance-id": [{"suffix": "cdef0"}]}}, EC2, True, OPERATORS),
    Case("suffix not met", {"detail": {"instance-id": [{"suffix": ".png"}]}}, EC2, False, OPERATORS),
    Case("suffix ignoring case", {"detail": {"state": [{"suffix": {"equals-ignore-case": "NATED"}}]}}, EC2, True, OPERATORS),
    Case("equals ignoring case", {"detail": {"state": [{"equals-ignore-case": "TERMINATED"}]}}, EC2, True, OPERATORS),
    Case("equals ignoring case, other text", {"detail": {"state": [{"equals-ignore-case": "RUNNING"}]}}, EC2, False,
         OPERATORS),
    Case("wildcard", {"source": [{"wildcard": "aws.*2"}]}, EC2, True, OPERATORS),
    Case("wildcard must cover the whole value", {"source": [{"wildcard": "aws"}]}, EC2, False,
         RULER_TESTS + ": RulerTest wildcard rules"),
    Case("wildcard with an escaped star", {"f": [{"wildcard": "a\\*b"}]}, {"f": "a*b"}, True,
         RULER_README + ": Wildcard matching"),
    Case("escaped star is literal", {"f": [{"wildcard": "a\\*b"}]}, {"f": "axb"}, False, RULER_README + ": Wildcard matching"),
    Case("wildcard file path", {"FilePath": [{"wildcard": "dir/*.png"}]}, {"FilePath": "dir/a.png"}, True, OPERATORS),
    # -- anything-but -------------------------------------------------------------------------
    Case("anything-but a string", {"detail": {"state": [{"anything-but": "initializing"}]}}, EC2, True, OPERATORS),
    Case("anything-but the value itself", {"detail": {"state": [{"anything-but": "terminated"}]}}, EC2, False, OPERATORS),
    Case("anything-but a list", {"detail": {"state": [{"anything-but": ["stopped", "terminated"]}]}}, EC2, False,
         RULER_README + ": Anything-but matching"),
    Case("anything-but a number", {"detail": {"c-count": [{"anything-but": 5}]}}, EC2, False,
         RULER_README + ": Anything-but matching"),
    Case("anything-but numbers, value a string", {"b": [{"anything-but": [111, 222, 333]}]}, {"b": "444"}, True,
         RULER_TESTS + ": RulerTest anything-but"),
    Case("anything-but numbers, value one of them", {"b": [{"anything-but": [111, 222, 333]}]}, {"b": 333}, False,
         RULER_TESTS + ": RulerTest anything-but"),
    Case("anything-but needs the field", {"detail": {"color": [{"anything-but": "red"}]}}, EC2, False,
         RULER_TESTS + ": ACMachineTest anything-but"),
    Case("anything-but prefix", {"Region": [{"anything-but": {"prefix": "us-"}}]}, {"Region": "eu-west-1"}, True, OPERATORS),
    Case("anything-but prefix, value has it", {"Region": [{"anything-but": {"prefix": "us-"}}]}, {"Region": "us-east-1"},
         False, OPERATORS),
    Case("anything-but suffix", {"FileName": [{"anything-but": {"suffix": ".png"}}]}, {"FileName": "a.png"}, False,
         OPERATORS),
    Case("anything-but ignoring case", {"state": [{"anything-but": {"equals-ignore-case": "initializing"}}]},
         {"state": "INITIALIZING"}, False, OPERATORS),
    Case("anything-but wildcard", {"FilePath": [{"anything-but": {"wildcard": "*/lib/*"}}]}, {"FilePath": "/usr/lib/x"},
         False, OPERATORS),
    Case("anything-but over an array", {"tags": [{"anything-but": "a"}]}, {"tags": ["a", "b"]}, True,
         ARRAYS + " (each element is a value)"),
    # -- numeric ------------------------------------------------------------------------------
    Case("numeric range", {"detail": {"c-count": [{"numeric": [">", 0, "<=", 5]}]}}, EC2, True, OPERATORS),
    Case("numeric below", {"detail": {"d-count": [{"numeric": ["<", 10]}]}}, EC2, True, RULER_README + ": Numeric matching"),
    Case("numeric equals", {"detail": {"x-limit": [{"numeric": ["=", 3.018e2]}]}}, EC2, True,
         RULER_README + ": Numeric matching"),
    Case("numeric outside", {"Image": {"Width": [{"numeric": ["<", 800]}]}}, IMAGE_RFC, False,
         RULER_TESTS + ": RulerTest field combos"),
    Case("numeric tight range", {"Image": {"Thumbnail": {"Height": [{"numeric": [">", 124, "<", 126]}]}}}, IMAGE_RFC, True,
         RULER_TESTS + ": RulerTest field combos"),
    Case("numeric on a string", {"detail": {"n": [{"numeric": [">", 0]}]}}, {"detail": {"n": "5"}}, False,
         RULER_README + ": Numeric matching (JSON numbers only)"),
    Case("numeric on a boolean", {"detail": {"n": [{"numeric": [">", 0]}]}}, {"detail": {"n": True}}, False,
         RULER_README + ": Numeric matching (JSON numbers only)"),
    Case("numeric over an array", {"n": [{"numeric": [">", 100]}]}, {"n": [1, 200]}, True, ARRAYS),
    # -- cidr ---------------------------------------------------------------------------------
    Case("cidr /24", {"detail": {"source-ip": [{"cidr": "10.0.0.0/24"}]}}, EC2, True, OPERATORS),
    Case("cidr outside", {"detail": {"source-ip": [{"cidr": "10.1.0.0/24"}]}}, EC2, False, OPERATORS),
    Case("cidr IPv6", {"ip": [{"cidr": "2001:db8::/32"}]}, {"ip": "2001:db8::1"}, True, RULER_README + ": IP Address Matching"),
    # -- exists -------------------------------------------------------------------------------
    Case("exists true", {"detail": {"state": [{"exists": True}]}}, EC2, True, OPERATORS),
    Case("exists false, absent", {"detail": {"color": [{"exists": False}]}}, EC2, True, OPERATORS),
    Case("exists false, present", {"detail": {"state": [{"exists": False}]}}, EC2, False, OPERATORS),
    Case("exists true on an object", {"Image": {"Thumbnail": [{"exists": True}]}}, IMAGE_RFC, False,
         RULER_README + ": Exists matching (leaf nodes only)"),
    Case("exists false on an object", {"Image": {"Thumbnail": [{"exists": False}]}}, IMAGE_RFC, True,
         RULER_README + ": Exists matching (leaf nodes only)"),
    Case("exists true on an empty array", {"d": {"a": [{"exists": True}]}}, {"d": {"a": []}}, False,
         RULER_README + ": Exists matching (an empty array has no leaf)"),
    Case("exists false on an empty array", {"d": {"a": [{"exists": False}]}}, {"d": {"a": []}}, True,
         RULER_README + ": Exists matching (an empty array has no leaf)"),
    Case("exists false on an empty object", {"d": {"a": [{"exists": False}]}}, {"d": {"a": {}}}, True,
         RULER_README + ": Exists matching (leaf nodes only)"),
    Case("exists true on an empty object", {"d": {"a": [{"exists": True}]}}, {"d": {"a": {}}}, False,
         RULER_README + ": Exists matching (leaf nodes only)"),
    Case("exists false inside an array of objects", {"employees": {"firstName": ["Anna"], "ids": [{"exists": False}]}},
         EMPLOYEES, True, RULER_TESTS + ": RulerTest arrays"),
    Case("exists true inside an array of objects", {"employees": {"firstName": ["Anna"], "ids": [{"exists": True}]}},
         EMPLOYEES, False, RULER_TESTS + ": RulerTest arrays"),
    # -- arrays of objects and nested arrays ---------------------------------------------------
    Case("a field of an object in an array", {"employees": {"firstName": ["Anna"]}}, EMPLOYEES, True,
         RULER_README + ": JSON Array Matching"),
    Case("an array of one object", {"a": {"b": ["x"]}}, {"a": [{"b": "x"}]}, True, RULER_README + ": JSON Array Matching"),
    Case("fields from two elements", {"employees": {"firstName": ["Anna"], "lastName": ["Jones"]}}, EMPLOYEES, False,
         RULER_README + ": JSON Array Matching (rulesForJSONEvent)"),
    Case("fields of one element", {"employees": {"firstName": ["John"], "ids": [1000]}}, EMPLOYEES, True,
         RULER_TESTS + ": RulerTest arrays"),
    Case("a value inside a nested array", {"n": [3]}, {"n": [[1, 2], [3]]}, True, RULER_README + ": JSON Array Matching"),
    Case("a value absent from a nested array", {"n": [4]}, {"n": [[1, 2], [3]]}, False, RULER_README + ": JSON Array Matching"),
    Case("an array of objects is not a value", {"employees": ["b"]}, EMPLOYEES, False, RULER_TESTS + ": RulerTest arrays"),
    # -- $or --------------------------------------------------------------------------------------
    Case("$or, second branch", {"source": ["aws.ec2"], "$or": [{"region": ["eu-west-1"]}, {"detail": {"state": ["terminated"]}}]},
         EC2, True, RULER_README + ": The $or Primitive"),
    Case("$or, no branch", {"$or": [{"region": ["eu-west-1"]}, {"detail": {"state": ["running"]}}]}, EC2, False,
         RULER_README + ": The $or Primitive"),
    Case("$or nested with and", {"detail": {"$or": [{"c-count": [1]}, {"d-count": [3], "state": ["terminated"]}]}}, EC2, True,
         RULER_README + ": Rule examples with $or"),
    # -- the kit's own rule --------------------------------------------------------------------
    Case("classifier: no analysis", CLASSIFIER, _with({"pixels": [0]}), True, RULER_README + ": Exists matching"),
    Case("classifier: analysis=classify", CLASSIFIER, IMAGE, True, RULER_README + ": The $or Primitive"),
    Case("classifier: analysis=full", CLASSIFIER, _with({"analysis": "full"}), False, RULER_README + ": The $or Primitive"),
    Case("classifier: analysis=[]", CLASSIFIER, _with({"analysis": []}), True,
         RULER_README + ": Exists matching (an empty array has no leaf)"),
    Case("classifier: analysis={}", CLASSIFIER, _with({"analysis": {}}), True, RULER_README + ": Exists matching"),
]

# Where moto 5.2.5's own matcher answers otherwise (why the runtime replaces it).
MOTO_DIFFERS = {
    "[1] does not match true", "[0] does not match false", "numeric on a boolean", "exists true on an empty array",
    "exists false on an empty array",
    "exists false on an empty object", "exists true on an empty object", "exists false inside an array of objects",
    "an array of one object", "a field of an object in an array", "fields of one element", "a value inside a nested array",
    "classifier: analysis=[]", "classifier: analysis={}",
}

# Patterns EventBridge refuses (InvalidEventPatternException), with a word of the reason.
INVALID = [
    ({"source": []}, "empty arrays"),
    ({"source": "aws.ec2"}, "object or an array"),
    ({"detail": {"n": [{"numeric": [">", "five"]}]}}, "numeric"),
    ({"detail": {"n": [{"numeric": ["<", 5, ">", 1]}]}}, "lower bound"),
    ({"detail": {"n": [{"exists": "yes"}]}}, "true or false"),
    ({"detail": {"n": [{"prefix": 5}]}}, "string"),
    ({"detail": {"n": [{"anything-but": ["a", 1]}]}}, "all strings or all numbers"),
    ({"detail": {"n": [{"wildcard": "a**b"}]}}, "consecutive"),
    ({"detail": {"n": [{"cidr": "10.0.0.0/33"}]}}, "IP network"),
    ({"detail": {"n": [{"contains": "x"}]}}, "unknown matcher"),
    ({"detail": {"n": [{"prefix": "a", "suffix": "b"}]}}, "exactly one"),
]

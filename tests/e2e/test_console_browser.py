"""The console of ``inferbus serve`` in a real headless browser (Debian's chromium, driven by selenium
through chromedriver): a person approves a review and redrives a dead-letter queue by clicking, and
the results arrive on the bus, where a client's own rule and queue see them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from inferbus_lambda.contracts import to_put_events_entry
from inferbus_lambda.rejections import DEAD_LETTER_ATTRIBUTES

from inferbus.demo.inputs import sample_event, sample_events
from inferbus.model.names import DEAD_LETTER_QUEUE_URL
from tests.declared import DEMO, PIPELINE
from tests.e2e.test_serve import client
from tests.redis_server import free_port
from tests.functional.test_console import envelope

pytestmark = pytest.mark.slow
CONSUMER = next(c for c in PIPELINE.consumers if c.name in DEMO)
REVIEWED = next(w for w in PIPELINE.workflows if w.review_queue)
FEEDER = next(c for c in PIPELINE.consumers if REVIEWED.accepts.type in c.emits and c.name in DEMO)
INSTALL = "apt-get install -y --no-install-recommends chromium chromium-driver"
XSS = '<script>window.pwned = "script"</script><img src=x onerror="window.pwned = \'img\'">'
WAIT_S = 60


def browser():
    """Headless chromium; a machine without it fails in one line saying how to install it."""
    try:
        from selenium import webdriver
    except ImportError:
        pytest.fail("the console test needs selenium: pip install -e '.[dev]'", pytrace=False)
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if binary is None or driver is None:
        pytest.fail(f"the console test needs Debian's chromium and chromedriver: {INSTALL}", pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)  # --no-sandbox: CI runs as root, where chromium's sandbox cannot start
    return webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver))


@pytest.fixture(scope="module")
def served(template, tmp_path_factory):
    """``inferbus serve --json`` in a subprocess, a client's rule and queue watching every result, and
    the console open in a headless browser."""
    path = tmp_path_factory.mktemp("console") / "template.json"
    path.write_text(json.dumps(template))
    page = browser()  # first: a machine without chromium fails before starting anything
    process = subprocess.Popen([sys.executable, "-m", "inferbus.cli", "serve", "--port", str(free_port()), "--json",
                                "--template", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        ready = json.loads(process.stdout.readline())
        assert ready["kind"] == "ready" and ready["console"] == ready["endpoint"] + "/_inferbus/", ready
        events, sqs = client("events", ready["endpoint"]), client("sqs", ready["endpoint"])
        watch = sqs.create_queue(QueueName="console-watch")["QueueUrl"]
        events.put_rule(Name="console-watch", EventBusName=ready["bus"], EventPattern=json.dumps(
            {"source": [c.result_source for c in PIPELINE.producers]}))
        events.put_targets(Rule="console-watch", EventBusName=ready["bus"],
                           Targets=[{"Id": "watch", "Arn": "arn:aws:sqs:us-east-1:123456789012:console-watch"}])
        page.get(ready["console"])
        yield ready, page, Watch(sqs, watch)
    finally:
        page.quit()
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err


class Watch:
    """The client's queue of results: every result event seen so far."""

    def __init__(self, sqs: Any, url: str) -> None:
        self.sqs, self.url, self.seen = sqs, url, []

    def wait_for(self, wanted: Callable[[dict], bool]) -> dict:
        began = time.monotonic()
        while time.monotonic() - began < WAIT_S:
            found = [event for event in self.seen if wanted(event)]
            if found:
                return found[0]
            for message in self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10,
                                                    WaitTimeSeconds=1).get("Messages", []):
                self.seen.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])
        pytest.fail(f"no such result within {WAIT_S} s; seen {[e['detail-type'] for e in self.seen]}")


def until(page, find: Callable[[Any], Any], what: str) -> Any:
    """What ``find(page)`` returns once it is truthy (the page refreshes itself every 2 s)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    def attempt(driver: Any) -> Any:
        try:
            return find(driver)
        except StaleElementReferenceException:
            return None  # a section was rebuilt between finding and reading: look again

    return WebDriverWait(page, WAIT_S, poll_frequency=0.2).until(attempt, message=f"the page never showed {what}")


def click(page, selector: str) -> None:
    from selenium.webdriver.common.by import By

    until(page, lambda d: [b for b in d.find_elements(By.CSS_SELECTOR, selector) if b.is_enabled()], selector)[0].click()


def api(ready: dict, endpoint: str) -> Any:
    with urllib.request.urlopen(f"{ready['console']}api/{endpoint}", timeout=30) as answer:
        return json.load(answer)


def section_text(page, section: str) -> str:
    from selenium.webdriver.common.by import By

    return page.find_element(By.ID, section).text


def test_a_review_approved_by_clicking_completes_its_workflow(served):
    ready, page, watch = served
    from selenium.webdriver.common.by import By

    events = client("events", ready["endpoint"])
    entries = [to_put_events_entry(event, ready["bus"]) for event, _ in sample_events(FEEDER, 10, source="console.e2e")]
    assert events.put_events(Entries=entries)["FailedEntryCount"] == 0
    approve = until(page, lambda d: d.find_elements(By.CSS_SELECTOR, "button[data-action='approve']"), "a review")[0]
    transaction = approve.get_attribute("data-transaction")
    (case,) = [r["case"] for r in api(ready, "reviews") if r["transaction_id"] == transaction]
    execution = case["execution"].rsplit(":", 1)[-1]
    reviewer = page.find_element(By.ID, "reviewer")
    reviewer.clear()
    reviewer.send_keys("ana")
    page.find_element(By.CSS_SELECTOR, f"input[data-note='{transaction}']").send_keys("checked by phone")
    click(page, f"button[data-action='approve'][data-transaction='{transaction}']")

    until(page, lambda d: f"{transaction}: approved" in d.find_element(By.ID, "status").text, "the decision")
    completed = watch.wait_for(lambda e: e["source"] == REVIEWED.result_source and e["detail-type"] in REVIEWED.emits
                               and e["detail"]["data"].get("reviewer") == "ana")
    assert completed["detail"]["data"].get("note") in (None, "checked by phone")
    until(page, lambda d: completed["detail-type"] in section_text(d, "events"), "the result among recent events")
    until(page, lambda d: not d.find_elements(By.CSS_SELECTOR, f"button[data-transaction='{transaction}']"),
          "the case leave the list")
    until(page, lambda d: [row for row in d.find_elements(By.CSS_SELECTOR, "#executions tbody tr")
                           if execution in row.text and "SUCCEEDED" in row.text], "its execution succeed")


def test_a_dead_letter_redriven_by_clicking_is_processed(served):
    ready, page, watch = served
    from selenium.webdriver.common.by import By

    sqs = client("sqs", ready["endpoint"])
    dlq_url = ready["outputs"][CONSUMER.output_key(DEAD_LETTER_QUEUE_URL)]
    event, _ = sample_event(CONSUMER, 0, source="console.e2e")
    sqs.send_message(QueueUrl=dlq_url, MessageBody=envelope(event))  # as SQS moves one after its receives failed
    dlq = dlq_url.rsplit("/", 1)[-1]
    until(page, lambda d: event.id in section_text(d, "dead-letters"), "the dead letter")
    click(page, f"button[data-action='redrive'][data-queue='{dlq}']")

    until(page, lambda d: f"{dlq}: moved 1 back to" in d.find_element(By.ID, "status").text, "the redrive")
    result = watch.wait_for(lambda e: e["detail-type"] in CONSUMER.emits and e["detail"].get("subject") == event.id)
    assert result["source"] == CONSUMER.result_source
    depth = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"]
    assert depth["ApproximateNumberOfMessages"] == "0"
    until(page, lambda d: event.id not in section_text(d, "dead-letters"), "the dead letter leave the list")


def test_reasons_are_shown_as_text_never_run(served):
    """Event data is user input: a reason holding markup is shown as the characters it is."""
    ready, page, _ = served
    from selenium.webdriver.common.by import By

    sqs = client("sqs", ready["endpoint"])
    dlq_url = ready["outputs"][CONSUMER.output_key(DEAD_LETTER_QUEUE_URL)]
    reason = DEAD_LETTER_ATTRIBUTES[2]
    sqs.send_message(QueueUrl=dlq_url, MessageBody=json.dumps({"detail": XSS}),
                     MessageAttributes={reason: {"DataType": "String", "StringValue": XSS}})
    invalid_url = ready["outputs"]["InvalidEventsQueueUrl"]
    sqs.send_message(QueueUrl=invalid_url, MessageBody=json.dumps({"consumer": XSS, "error": "InvalidEventError",
                                                                   "reason": XSS, "event_id": XSS}))
    until(page, lambda d: section_text(d, "dead-letters").count(XSS) >= 3, "the reasons as text")
    assert page.execute_script("return window.pwned") is None
    assert page.find_element(By.ID, "dead-letters").find_elements(By.TAG_NAME, "img") == []
    assert page.find_element(By.ID, "dead-letters").find_elements(By.TAG_NAME, "script") == []


def test_a_page_of_another_site_cannot_read_the_review_queue(served, tmp_path):
    """moto answers every origin's CORS preflight: a page elsewhere could read task tokens off the
    review queue through the AWS API and approve around the console. The endpoint refuses it."""
    ready, page, _ = served
    review_queue = ready["outputs"][REVIEWED.review_queue_output]
    (tmp_path / "index.html").write_text("<title>another site</title>")
    # Another site: 127.0.0.2 is this machine too, but a page there is no page of the console's.
    elsewhere = ThreadingHTTPServer(("127.0.0.2", 0), partial(SimpleHTTPRequestHandler, directory=str(tmp_path)))
    threading.Thread(target=elsewhere.serve_forever, daemon=True).start()
    try:
        page.get(f"http://127.0.0.2:{elsewhere.server_address[1]}/index.html")
        answer = page.execute_async_script("""
            const [endpoint, queue, done] = arguments;
            fetch(endpoint + "/", {method: "POST", headers: {
                "Content-Type": "application/x-www-form-urlencoded",
                "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20261205/us-east-1/sqs/aws4_request, "
                                 + "SignedHeaders=host, Signature=0"},
                body: "Action=ReceiveMessage&VisibilityTimeout=0&QueueUrl=" + encodeURIComponent(queue)})
              .then((response) => response.text()).then((text) => done("read: " + text),
                                                         (error) => done("refused: " + error));
        """, ready["endpoint"], review_queue)
    finally:
        elsewhere.shutdown()
        page.get(ready["console"])
    assert answer.startswith("refused: "), answer[:300]

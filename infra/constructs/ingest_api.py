"""The HTTP ingest endpoint: a Lambda function URL whose function validates a CloudEvent and puts it on the bus.

Producers without the PutEvents API (a browser backend, a webhook, another language's HTTP
client) POST one CloudEvent, structured or binary, and get 202 with its id or 4xx with the reason.

Secure defaults
---------------
- IAM auth (``AWS_IAM``): every request is SigV4-signed by a principal allowed
  ``lambda:InvokeFunctionUrl`` on this function; attach the ``ProducerPolicy`` (stack output
  ``IngestProducerPolicyArn``) to a producer's role. No CORS: browsers cannot call it directly.
- The function's role may write its own logs, send X-Ray segments and put events on the bus,
  nothing else; the bus policy still denies it every source an inferbus producer reserves.
- An API key or a JWT instead of IAM: put an API Gateway in front (``docs/operations.md``).
"""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct
from inferbus_lambda.metric_names import EVENTS_INGESTED, EVENTS_REFUSED, PUT_EVENTS_FAILED_ENTRIES

from .alarms import PERIOD, add_alarms, emf_metric, function_metrics, resource_widget
from .dashboard_pages import DashboardPages
from .function import FunctionSpec, add_function

INGEST_ALARMS = ("FunctionErrors", "Throttles", "PutEventsFailedEntries")


class IngestApi(Construct):
    """Parameters
    ----------
    bus
        Where accepted events go.
    function
        The ingest function (code, environment, sizing).
    """

    def __init__(self, scope: Construct, construct_id: str, *, bus: events.IEventBus, function: FunctionSpec) -> None:
        super().__init__(scope, construct_id)
        self.function, self.role, self.log_group = add_function(self, function)
        bus.grant_put_events_to(self.function)
        self.url = self.function.add_function_url(auth_type=lambda_.FunctionUrlAuthType.AWS_IAM)
        self.producer_policy = iam.ManagedPolicy(
            self, "ProducerPolicy",
            description="Attach to a producer's role: it may POST CloudEvents to the inferbus ingest URL",
            statements=[iam.PolicyStatement(actions=["lambda:InvokeFunctionUrl"], resources=[self.function.function_arn],
                                            conditions={"StringEquals": {"lambda:FunctionUrlAuthType": "AWS_IAM"}})],
        )

    def monitor(self, *, alarm_topic: sns.ITopic, metrics_namespace: str, service: str, insights: bool,
                dashboard: DashboardPages) -> list[cloudwatch.Alarm]:
        """Alarms on failed invocations, throttles and events the bus refused; a row on the dashboard."""
        resources = function_metrics(self.function, insights)
        ingested = emf_metric(metrics_namespace, EVENTS_INGESTED, {"service": service}, label="events ingested per minute")
        refused = emf_metric(metrics_namespace, EVENTS_REFUSED, {"service": service}, label="refused (4xx)")
        put_failed = emf_metric(metrics_namespace, PUT_EVENTS_FAILED_ENTRIES, {"service": service},
                                label="PutEvents failed entries")
        errors = self.function.metric_errors(period=PERIOD, statistic="Sum")
        name = self.node.id
        alarms = add_alarms(self, [
            ("FunctionErrors", errors, 1, "invocations that failed as a whole (callers got 5xx)"),
            ("Throttles", resources.throttles, 1, "requests throttled (callers got 429)"),
            ("PutEventsFailedEntries", put_failed, 1, "events the bus refused after the retries (callers got 502/503)"),
        ], name, alarm_topic)
        dashboard.add_widgets(
            cloudwatch.GraphWidget(title=f"{name}: ingest rate and refusals (per min)", left=[ingested, refused]),
            cloudwatch.GraphWidget(title=f"{name}: latency and errors", left=[
                self.function.metric_duration(period=PERIOD, statistic="p95")], right=[errors, put_failed]),
            resource_widget(f"{name}: resource use (throttles, concurrency, memory %, CPU ms)", [resources]),
        )
        return alarms

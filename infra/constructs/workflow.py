"""A Step Functions workflow written in ASL (``statemachines/``), started by an EventBridge rule.

Secure defaults
---------------
- The state machine's role may only invoke the functions it names, put events on its
  bus and send to the queues it names (least privilege, granted here from the props).
- Execution logs go to a log group of its own; X-Ray tracing is on.
- The rule target has retries and a DLQ (encrypted, TLS-only): an event EventBridge
  cannot start an execution for is kept, not dropped.
- The ASL file holds the workflow's own states; at synth the kit wraps them in its protocol
  (Accept, Route, Duplicate, Rejected, AcceptFailed, EmitFailure, Failed: see
  :mod:`inferbus.model.workflow_protocol`) and keeps the whole inline in the template
  (``DefinitionString``), so cfn-lint and the embedded runtime see exactly what deploys; every
  ``${Placeholder}`` in it must have a substitution, checked here.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from inferbus.model.asl import placeholders
from inferbus.model.workflow_protocol import parse, wrap

from ..nag import acknowledge_state_machine_role
from .secure_queue import add_rule_with_dead_letter_queue


class Workflow(Construct):
    """Parameters
    ----------
    bus
        The bus the rule listens on and the workflow publishes to (``${EventBusName}``).
    event_pattern
        Which events start an execution.
    definition_file
        The ASL file: the workflow's own states, which the kit wraps.
    emits
        The types of the events it publishes (Accept derives their ids).
    accepts_from
        The only ``source`` values Accept takes input from (resolved); empty: any.
    substitutions
        Values of the file's placeholders, besides ``EventBusName``, ``ResultSource`` and the
        ``<Name>FunctionArn`` of each function in ``functions``.
    result_source
        ``source`` of the events the workflow emits (``${ResultSource}``).
    functions
        The functions the workflow invokes, by placeholder stem (``{"Accept": fn}`` fills
        ``${AcceptFunctionArn}`` and grants invoke on ``fn``).
    send_to_queues
        Queues the workflow sends messages to (granted ``sqs:SendMessage``).
    express
        Express (short, high-rate, at-least-once, up to 5 minutes) or Standard (exactly-once
        starts, may wait for a person for days). Timeouts are the ASL's (per Task).
    log_level, log_execution_data, log_retention
        Execution logging.
    target_retry_attempts, target_max_event_age_s, dlq_retention_days
        EventBridge's retries to start an execution, and its DLQ.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bus: events.IEventBus,
        event_pattern: events.EventPattern,
        definition_file: Path,
        result_source: str,
        functions: Mapping[str, lambda_.IFunction],
        express: bool,
        log_level: str,
        log_execution_data: bool,
        log_retention: logs.RetentionDays,
        target_retry_attempts: int,
        target_max_event_age_s: int,
        dlq_retention_days: int,
        emits: Sequence[str] = (),
        accepts_from: Sequence[str] = (),
        substitutions: Mapping[str, str] | None = None,
        send_to_queues: Sequence[sqs.IQueue] = (),
        description: str = "",
    ) -> None:
        super().__init__(scope, construct_id)
        origin = f"statemachines/{definition_file.name}"
        machine = wrap(parse(definition_file.read_text(), origin), emits=emits, sources=accepts_from, origin=origin)
        definition = json.dumps(machine, indent=2) + "\n"
        values = {
            "EventBusName": bus.event_bus_name,
            "ResultSource": result_source,
            **{f"{stem}FunctionArn": function.function_arn for stem, function in functions.items()},
            **(substitutions or {}),
        }
        missing, unused = placeholders(definition) - set(values), set(values) - placeholders(definition)
        if missing or unused:
            raise ValueError(f"{construct_id} ({origin}): placeholders without a value {sorted(missing)}, "
                             f"values without a placeholder {sorted(unused)}")

        self.log_group = logs.LogGroup(self, "Logs", retention=log_retention)
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_string(definition),
            definition_substitutions=values,
            state_machine_type=sfn.StateMachineType.EXPRESS if express else sfn.StateMachineType.STANDARD,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel(log_level),
                                include_execution_data=log_execution_data),
            comment=description,
        )
        if functions:
            # Exactly these ARNs, unqualified as the ASL calls them: CDK's grant_invoke would add `:*`.
            self.state_machine.add_to_role_policy(iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[function.function_arn for function in functions.values()]))
        bus.grant_put_events_to(self.state_machine)
        for queue in send_to_queues:
            queue.grant_send_messages(self.state_machine)
        acknowledge_state_machine_role(self.state_machine.role)

        self.rule, self.target_dead_letter_queue = add_rule_with_dead_letter_queue(
            self,
            bus=bus,
            event_pattern=event_pattern,
            target=functools.partial(targets.SfnStateMachine, self.state_machine),
            retry_attempts=target_retry_attempts,
            max_event_age_s=target_max_event_age_s,
            dlq_retention_days=dlq_retention_days,
            description=description,
        )

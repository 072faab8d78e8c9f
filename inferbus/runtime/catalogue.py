"""What the embedded runtime runs locally, what it runs with limits, and what only the cloud runs.

Every resource type of a template is in exactly one of these (or is reported as "not emulated"),
and every summary lists them: nothing is skipped silently. A tool may add notes of its own
(:attr:`~.specs.Deployment.partly_local`).
"""

from __future__ import annotations

from .lambda_host import DEFAULT_MAX_ENVIRONMENTS

# What the runtime does not run, and why (listed in every summary, never silently skipped).
CLOUD_ONLY = {
    "AWS::IAM::Role": "IAM is not enforced locally: handlers and state machines run with the runtime's credentials "
    "(roles get a synthetic ARN; their tags are what a bus resource policy reads of the function or state machine "
    "acting as them)",
    "AWS::IAM::Policy": "IAM is not enforced locally",
    "AWS::Logs::LogGroup": "not created (synthetic ARN): handler logs are captured from stdout, "
    "state machine execution logs exist only in the cloud",
    "AWS::CloudWatch::Alarm": "alarms need CloudWatch",
    "AWS::CloudWatch::Dashboard": "dashboards need CloudWatch",
    "AWS::KMS::Key": "KMS encryption is not emulated",
    "AWS::SNS::Topic": "the alarm topic is only notified by CloudWatch alarms",
    "AWS::SNS::TopicPolicy": "the alarm topic is only notified by CloudWatch alarms",
    "AWS::FIS::ExperimentTemplate": "fault injection experiments run only in AWS",
    "AWS::S3::Bucket": "S3 is not provisioned locally (buckets get a synthetic name and ARN)",
    "AWS::S3::BucketPolicy": "S3 is not provisioned locally",
    "AWS::IAM::ManagedPolicy": "IAM is not enforced locally",
    "AWS::Lambda::Url": "the function URL and its IAM (SigV4) auth exist only in AWS; locally the function behind it is "
    "invoked directly with the request a function URL would send",
    "AWS::EventSchemas::Registry": "the schema registry exists only in AWS (the same schemas are in docs/schemas/)",
    "AWS::EventSchemas::Schema": "the schema registry exists only in AWS (the same schemas are in docs/schemas/)",
    "AWS::KinesisFirehose::DeliveryStream": "Firehose delivery to S3 (the cold tier) runs only in AWS; locally rules "
    "with a Firehose target deliver to their other targets only",
    "AWS::Logs::LogStream": "not created: log streams exist only in the cloud",
    "AWS::Lambda::EventInvokeConfig": "an asynchronous invocation's retries and on-failure destination apply only in AWS",
    "AWS::Lambda::Permission": "resource policies are not enforced locally: any caller may invoke any function",
    # The claims cache's network (claims_store=redis): functions run in-process and reach the local Redis directly.
    **dict.fromkeys(("AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::EC2::RouteTable", "AWS::EC2::SubnetRouteTableAssociation",
                     "AWS::EC2::SecurityGroup", "AWS::EC2::SecurityGroupIngress", "AWS::EC2::SecurityGroupEgress",
                     "AWS::EC2::VPCEndpoint", "AWS::EC2::FlowLog"),
                    "the VPC is not emulated: functions run in-process and reach the local Redis and moto directly"),
    **dict.fromkeys(("AWS::ElastiCache::User", "AWS::ElastiCache::UserGroup"),
                    "ElastiCache IAM authentication exists only in AWS: the local Redis takes any client"),
    # A rabbitmq consumer's broker when the stack makes it (no broker_arn): locally the consumer reads the local broker.
    "AWS::AmazonMQ::Broker": "the Amazon MQ broker exists only in AWS: locally a rabbitmq consumer reads its queue on "
    "the RabbitMQ at INFERBUS_RABBITMQ_URL (default amqp://guest:guest@localhost:5672: rabbitmq-server -detached)",
    "AWS::SecretsManager::Secret": "the broker's credentials exist only in AWS: locally the local RabbitMQ's are used",
}
PARTLY_LOCAL = {
    "AWS::Events::EventBus": "its resource policy's Deny statements on PutEvents are enforced (each function acts as "
    "its template role, each state machine's tasks as its role, a client as an untagged user or its STS session's "
    "role); PutEvents refuses what AWS refuses (10 entries, 256 KB, Detail a JSON object within 1,000 levels); "
    "identity-based IAM and PutEvents throttling are not applied (inferbus/runtime/aws_limits.py lists each limit)",
    "AWS::SQS::QueuePolicy": "policy stored on the queue, not enforced (TLS-only, SourceArn)",
    "AWS::Events::Rule": "patterns matched with AWS's documented semantics; target DeadLetterConfig and RetryPolicy "
    "are not applied by moto",
    "AWS::Lambda::Function": "runs in-process from the source tree, invocations concurrently, each in an execution "
    f"environment of its own (at most {DEFAULT_MAX_ENVIRONMENTS} per function locally; reserved concurrency applied); "
    "memory, architecture and "
    "tracing are cloud-only; functions share one process, so a library's process-wide state (a logger by name) is "
    "shared; a container image is not built: its ImageConfig.Command handler runs from the source tree",
    "AWS::Lambda::EventSourceMapping": "local poller: batch size, window, partial batch response and "
    "MaximumConcurrency applied; a failed record is visible again at once (not after the visibility timeout)",
    "AWS::DynamoDB::Table": "describe-table and describe-continuous-backups report the template's SSE and PITR; "
    "the data is not encrypted and no backups are kept locally",
    "AWS::ElastiCache::ServerlessCache": "served by the local Redis at INFERBUS_REDIS_URL (default redis://127.0.0.1:6379: "
    "redis-server --daemonize yes --port 6379), without TLS, authentication or a VPC",
    "AWS::Pipes::Pipe": "an SQS -> SQS pipe moves messages in-process, in order, its MessageGroupId and "
    "MessageDeduplicationId read by path and its InputTemplate applied (a single placeholder); the pipe's own "
    "retries, logging and role are cloud-only",
    "AWS::Events::Archive": "moto archives every event; a replay sends every archived event to every rule (moto "
    "applies neither the replay's time window nor its FilterArns)",
    "AWS::Logs::SubscriptionFilter": "only a state machine's execution log has records locally, and only those of an "
    "Express execution's end (ExecutionFailed, ExecutionTimedOut, ExecutionAborted): each goes to the subscribed "
    "function at once (the filter pattern is not evaluated; an invocation that fails is not retried)",
    "AWS::StepFunctions::StateMachine": "the ASL runs on moto's interpreter, Lambda tasks in-process; logging to "
    "CloudWatch Logs and X-Ray tracing are cloud-only; Retry intervals and Wait states take real time; moto applies "
    "execution-name idempotency to EXPRESS machines too (AWS only to STANDARD); SendTaskFailure drops the cause",
}
PROVISIONED_TYPES = {"AWS::Events::EventBus", "AWS::Events::Archive", "AWS::SQS::Queue"}

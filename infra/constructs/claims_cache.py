"""The Redis claims store in AWS: ElastiCache Serverless (Valkey) in a VPC that only the functions using it reach.

Secure defaults
---------------
- **Encryption**: ElastiCache Serverless speaks only TLS and encrypts data at rest, always (an AWS owned key;
  ``kms_key`` makes it yours).
- **Network**: a VPC of its own with private *isolated* subnets in two Availability Zones (no internet
  gateway, no NAT: nothing in it reaches or is reached from the internet) and flow logs of rejected traffic.
  The cache's security group admits port 6379 only from :attr:`client_security_group`, which only the
  functions given :meth:`connect` carry; that group may send only to the cache and to the VPC endpoints.
- **Endpoints**: functions in an isolated subnet reach AWS APIs only through interface endpoints: EventBridge
  (results), SQS (DLQ, invalid events, returning records) and X-Ray (active tracing), each with private DNS,
  admitting HTTPS only from the client group.
- **Authentication**: IAM, no password anywhere. One ElastiCache user (authentication mode ``iam``) in the
  cache's only user group; a function's role may ``elasticache:Connect`` as that user to this cache and
  signs a 15-minute token for each new connection (``inferbus_lambda.claims.redis.IamAuthToken``). Its access
  string allows the ``inferbus:*`` keys and the read, write and scripting commands the store sends, nothing
  dangerous (no ``FLUSHALL``, ``CONFIG``, ``KEYS``...).

Cost (us-east-1 list prices; check the pricing pages): Valkey serverless $0.0023 per million ECPUs and
$0.084 per GB-hour stored (at least 100 MB: about $6 a month idle); each interface endpoint $0.01 per hour
per AZ (three endpoints in two AZs: about $44 a month) plus $0.01 per GB. The DynamoDB store has no fixed cost.
"""

from __future__ import annotations

from aws_cdk import ArnFormat, Fn, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_elasticache as elasticache
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from ..nag import acknowledge_vpc_access_policy

REDIS_PORT = 6379
ENGINE = "valkey"
# What RedisClaimStore and RedisTokenBucket send: scripts (EVALSHA, SCRIPT LOAD) whose GET/SET/HMGET/HSET/EXPIRE touch
# inferbus:* keys and read the server's TIME, pipelined SET, DEL, and the client's connection commands (AUTH, HELLO, PING).
ACCESS_STRING = "on ~inferbus:* resetchannels -@all +@read +@write +@scripting +@connection -@dangerous +time"
# AWS APIs a claiming function calls from inside the VPC.
ENDPOINT_SERVICES = {"Events": ec2.InterfaceVpcEndpointAwsService.EVENTBRIDGE,
                     "Sqs": ec2.InterfaceVpcEndpointAwsService.SQS,
                     "XRay": ec2.InterfaceVpcEndpointAwsService.XRAY}


class ClaimsCache(Construct):
    """A serverless Valkey cache for claims and the private network its functions join.

    Parameters
    ----------
    cache_name
        The cache's name, 1-40 lowercase letters, digits and hyphens; the IAM user is named after it.
    log_retention
        How long the VPC's flow logs are kept.
    kms_key
        Encrypt the cache at rest with this key instead of an AWS owned one.

    Attributes
    ----------
    endpoint
        ``host:port`` of the cache (a deploy-time value): the functions' ``REDIS_ENDPOINT``.
    user_id
        The IAM-authenticated user the functions connect as: their ``REDIS_USER``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, cache_name: str, log_retention: logs.RetentionDays,
                 kms_key: kms.IKey | None = None) -> None:
        super().__init__(scope, construct_id)
        self.cache_name = cache_name
        self.vpc = ec2.Vpc(self, "Vpc", max_azs=2, nat_gateways=0, restrict_default_security_group=False,
                           subnet_configuration=[ec2.SubnetConfiguration(
                               name="Isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=24)])
        flow_logs = logs.LogGroup(self, "FlowLogs", retention=log_retention)
        self.vpc.add_flow_log("FlowLog", destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                              traffic_type=ec2.FlowLogTrafficType.REJECT)
        self.subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)

        self.client_security_group = ec2.SecurityGroup(
            self, "Clients", vpc=self.vpc, allow_all_outbound=False,
            description="Functions that keep claims in the claims cache: to the cache and the AWS API endpoints only")
        cache_group = ec2.SecurityGroup(self, "CacheAccess", vpc=self.vpc, allow_all_outbound=False,
                                        description="The claims cache: port 6379 from its client functions only")
        endpoint_group = ec2.SecurityGroup(self, "Endpoints", vpc=self.vpc, allow_all_outbound=False,
                                           description="AWS API endpoints: HTTPS from the claims cache clients only")
        cache_group.add_ingress_rule(self.client_security_group, ec2.Port.tcp(REDIS_PORT), "claims store clients")
        endpoint_group.add_ingress_rule(self.client_security_group, ec2.Port.tcp(443), "claims store clients")
        self.client_security_group.add_egress_rule(cache_group, ec2.Port.tcp(REDIS_PORT), "the claims cache")
        self.client_security_group.add_egress_rule(endpoint_group, ec2.Port.tcp(443), "AWS API endpoints")
        for name, service in ENDPOINT_SERVICES.items():
            self.vpc.add_interface_endpoint(f"{name}Endpoint", service=service, subnets=self.subnets,
                                            security_groups=[endpoint_group], private_dns_enabled=True, open=False)

        self.user_id = f"{cache_name}-claims"[:40]
        user = elasticache.CfnUser(self, "User", engine=ENGINE, user_id=self.user_id, user_name=self.user_id,
                                   authentication_mode={"Type": "iam"}, access_string=ACCESS_STRING)
        user_group = elasticache.CfnUserGroup(self, "UserGroup", engine=ENGINE, user_group_id=f"{cache_name}-users"[:40],
                                              user_ids=[self.user_id])
        user_group.node.add_dependency(user)
        self.cache = elasticache.CfnServerlessCache(
            self, "Cache", engine=ENGINE, serverless_cache_name=cache_name, user_group_id=user_group.ref,
            description="inferbus claims (RedisClaimStore): TLS, encrypted at rest, IAM auth",
            subnet_ids=self.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED).subnet_ids,
            security_group_ids=[cache_group.security_group_id], kms_key_id=kms_key.key_arn if kms_key else None)
        self.cache.node.add_dependency(user_group)
        self.endpoint = Fn.join(":", [self.cache.attr_endpoint_address, self.cache.attr_endpoint_port])
        stack = Stack.of(self)
        self._connect_resources = [
            stack.format_arn(service="elasticache", resource="serverlesscache", resource_name=cache_name,
                             arn_format=ArnFormat.COLON_RESOURCE_NAME),
            stack.format_arn(service="elasticache", resource="user", resource_name=self.user_id,
                             arn_format=ArnFormat.COLON_RESOURCE_NAME),
        ]

    def network_of(self) -> dict[str, object]:
        """What a function's props need to run in the cache's network (``vpc``, ``vpc_subnets``, ``security_groups``)."""
        return {"vpc": self.vpc, "vpc_subnets": self.subnets, "security_groups": [self.client_security_group]}

    def connect(self, function: lambda_.Function) -> None:
        """Let ``function`` (already in :meth:`network_of`) connect to the cache as its user, with IAM auth."""
        function.add_to_role_policy(iam.PolicyStatement(actions=["elasticache:Connect"], resources=self._connect_resources))
        assert function.role is not None
        acknowledge_vpc_access_policy(function.role)


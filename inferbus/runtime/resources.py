"""Names, ARNs and intrinsic functions of a template's resources, as CloudFormation gives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

REGION = "us-east-1"
ACCOUNT = "123456789012"
PARTITION = "aws"


class UnsupportedIntrinsicError(ValueError):
    """The template uses an intrinsic the runtime does not resolve."""


@dataclass
class Resolver:
    """Physical ids (``Ref``) and attributes (``Fn::GetAtt``) of provisioned resources."""

    stack_name: str
    refs: dict[str, str] = field(default_factory=dict)
    attributes: dict[tuple[str, str], str] = field(default_factory=dict)

    def physical_name(self, logical_id: str, max_length: int = 64) -> str:
        """CloudFormation-like generated name: stack name and logical id."""
        return f"{self.stack_name}-{logical_id}"[:max_length]

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) != 1:
            return {key: self.resolve(item) for key, item in value.items()}
        (function, argument), = value.items()
        if function == "Ref":
            return self._ref(argument)
        if function == "Fn::GetAtt":
            logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
            try:
                return self.attributes[(logical_id, attribute)]
            except KeyError:
                raise UnsupportedIntrinsicError(f"Fn::GetAtt {logical_id}.{attribute} is not provisioned locally") from None
        if function == "Fn::Join":
            separator, parts = argument
            return separator.join(str(self.resolve(part)) for part in parts)
        if function == "Fn::Sub" and isinstance(argument, str):
            text = argument
            for name in ("AWS::Region", "AWS::AccountId", "AWS::Partition", "AWS::URLSuffix", "AWS::StackName"):
                text = text.replace("${" + name + "}", self._ref(name))
            return text
        if function.startswith("Fn::"):
            raise UnsupportedIntrinsicError(f"{function} is not supported by the embedded runtime")
        return {function: self.resolve(argument)}

    def _ref(self, name: str) -> str:
        pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": PARTITION,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": self.stack_name,
        }
        if name in pseudo:
            return pseudo[name]
        try:
            return self.refs[name]
        except KeyError:
            raise UnsupportedIntrinsicError(f"Ref {name} is not provisioned locally") from None

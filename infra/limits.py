"""CloudFormation's limits per template, checked on what the synth wrote, before anything deploys.

A template past a limit fails the synth with :class:`CloudFormationLimitError`: which stack, which
limit, how far past it, and what to do. These are CloudFormation's limits (documented under
"CloudFormation quotas"), not inferbus's; the root stack holds the shared core and one nested
stack per component, so a limit is reached by one component's or by the core's own template.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_RESOURCES = 500
MAX_OUTPUTS = 200
MAX_PARAMETERS = 200
MAX_TEMPLATE_BYTES = 1_000_000  # a template uploaded through S3, as CDK deploys it (1 MB)

WHAT_TO_DO = {
    "resources": ("split what this stack holds: a component's own stack is its construct's resources, so lower what "
                  "it makes (fewer workflow tasks), or declare two components instead of one"),
    "outputs": "fewer CfnOutputs in this stack (each component's outputs are in its own nested stack)",
    "parameters": "fewer values passed from the core to this nested stack",
    "bytes": ("shorten what is inlined: in a component's stack its ASL definition; in the core, every component's "
              "dashboard widgets (about 6.5 KB a component), so deploy fewer components per app"),
}


class CloudFormationLimitError(ValueError):
    """A template past one of CloudFormation's limits: not a bug, a deployment that would fail.

    >>> print(CloudFormationLimitError("InferbusIrisStack.nested.template", "outputs", 201, 200))
    stack InferbusIrisStack.nested.template: 201 outputs, CloudFormation allows at most 200 per template; fewer CfnOutputs in this stack (each component's outputs are in its own nested stack)
    """

    def __init__(self, stack: str, limit: str, value: int, maximum: int) -> None:
        self.stack, self.limit, self.value, self.maximum = stack, limit, value, maximum
        super().__init__(f"stack {stack}: {value:,} {limit}, CloudFormation allows at most {maximum:,} per template; "
                         f"{WHAT_TO_DO[limit]}")


@dataclass(frozen=True)
class TemplateSize:
    """What one template counts against CloudFormation's limits."""

    stack: str
    resources: int
    outputs: int
    parameters: int
    bytes: int

    @classmethod
    def of(cls, stack: str, template: Mapping[str, Any]) -> TemplateSize:
        return cls(stack, len(template.get("Resources", {})), len(template.get("Outputs", {})),
                   len(template.get("Parameters", {})), len(json.dumps(template, separators=(",", ":")).encode()))

    def check(self) -> None:
        """Raises :class:`CloudFormationLimitError` for the first limit this template is past."""
        for limit, value, maximum in (("resources", self.resources, MAX_RESOURCES),
                                      ("outputs", self.outputs, MAX_OUTPUTS),
                                      ("parameters", self.parameters, MAX_PARAMETERS),
                                      ("bytes", self.bytes, MAX_TEMPLATE_BYTES)):
            if value > maximum:
                raise CloudFormationLimitError(self.stack, limit, value, maximum)


# CDK checks a stack's resources itself while it synthesizes (``TooManyResourcesInStack``).
CDK_TOO_MANY_RESOURCES = re.compile(r"Number of resources in stack '([^']+)': (\d+) is greater than allowed maximum of (\d+)")


def limit_error_of(error: BaseException) -> CloudFormationLimitError | None:
    """CDK's own too-many-resources error as a :class:`CloudFormationLimitError`; None for any other."""
    found = CDK_TOO_MANY_RESOURCES.search(str(error))
    if found is None:
        return None
    return CloudFormationLimitError(found.group(1), "resources", int(found.group(2)), int(found.group(3)))


def assembly_templates(directory: str | Path) -> dict[str, dict[str, Any]]:
    """Every template a synth wrote (root stacks and nested stacks), by file name."""
    return {path.name.removesuffix(".json"): json.loads(path.read_text())
            for path in sorted(Path(directory).glob("*.template.json"))}


def check_templates(templates: Mapping[str, Mapping[str, Any]]) -> list[TemplateSize]:
    """The size of each template, after checking every one against the limits."""
    sizes = [TemplateSize.of(name, template) for name, template in templates.items()]
    for size in sizes:
        size.check()
    return sizes


def check_assembly(directory: str | Path) -> list[TemplateSize]:
    """:func:`check_templates` on every template of a cloud assembly."""
    return check_templates(assembly_templates(directory))


def largest(sizes: Iterable[TemplateSize]) -> dict[str, TemplateSize]:
    """For each counted quantity, the template with the most of it."""
    sizes = list(sizes)
    return {limit: max(sizes, key=lambda size: getattr(size, limit)) for limit in WHAT_TO_DO}

"""A root stack and its nested stacks, as one template: what the runtime and the tools read.

CloudFormation deploys a nested stack (``AWS::CloudFormation::Stack``) as a stack of its own: the
parent passes it values as ``Parameters``, and reads its ``Outputs`` with
``Fn::GetAtt [<nested stack>, Outputs.<key>]``. :func:`flatten` undoes that split: every resource
of the parent and of each nested stack in one ``Resources`` map (logical ids are unique across
them, as CDK makes them), each nested stack's ``Ref`` to a parameter replaced by what the parent
passes, each parent's read of a nested output replaced by that output's value, and the outputs
of all stacks in one ``Outputs`` map (less those only the parent reads: they are plumbing).
Provisioning, the diagram, the docs and every tool then work on a split stack as on one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .specs import UnsupportedTemplateError

NESTED_STACK = "AWS::CloudFormation::Stack"
OUTPUTS_PREFIX = "Outputs."


def nested_stack_ids(template: Mapping[str, Any]) -> list[str]:
    """The logical ids of a template's nested stacks."""
    return [key for key, resource in template.get("Resources", {}).items() if resource["Type"] == NESTED_STACK]


def flatten(root: Mapping[str, Any], nested: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """One template holding ``root`` and its nested stacks.

    Parameters
    ----------
    root
        The parent template.
    nested
        Each nested stack's template, by its logical id in ``root``; a nested stack's own
        nested stacks are flattened into it first (the same call, one level down).

    Raises
    ------
    UnsupportedTemplateError
        A nested stack with no template given, a logical id or output key in two stacks, a
        parameter the parent does not pass, or a nested output the parent reads that does not exist.
    """
    missing = sorted(set(nested_stack_ids(root)) - set(nested))
    if missing:
        raise UnsupportedTemplateError(f"nested stacks without a template: {missing}")
    resources = {key: value for key, value in root["Resources"].items() if key not in nested}
    outputs: dict[str, Any] = dict(root.get("Outputs", {}))
    conditions: dict[str, Any] = dict(root.get("Conditions", {}))
    nested_outputs: dict[str, dict[str, Any]] = {}
    for stack_id, template in nested.items():
        passed = root["Resources"][stack_id].get("Properties", {}).get("Parameters", {})
        declared = template.get("Parameters", {})
        unpassed = sorted(name for name, parameter in declared.items() if name not in passed and "Default" not in parameter)
        if unpassed:
            raise UnsupportedTemplateError(f"nested stack {stack_id}: parameters the parent does not pass: {unpassed}")
        values = {name: passed.get(name, declared[name].get("Default")) for name in declared}
        inlined = _replace_parameters(template, values, stack_id)
        for section, merged in (("Resources", resources), ("Conditions", conditions)):
            for key, value in inlined.get(section, {}).items():
                if key in merged or key in nested:
                    raise UnsupportedTemplateError(f"{section[:-1].lower()} {key} is in two stacks ({stack_id})")
                merged[key] = value
        nested_outputs[stack_id] = inlined.get("Outputs", {})

    read_by_parent: set[tuple[str, str]] = set()

    def read_output(stack_id: str, key: str) -> Any:
        try:
            value = nested_outputs[stack_id][key]["Value"]
        except KeyError:
            raise UnsupportedTemplateError(f"the parent reads output {key} of nested stack {stack_id}, which has none")
        read_by_parent.add((stack_id, key))
        return value

    resources = {key: _replace_output_reads(value, nested, read_output) for key, value in resources.items()}
    for key, resource in resources.items():  # a dependency on a nested stack is one on everything in it
        depends = resource.get("DependsOn")
        if depends:
            depends = [depends] if isinstance(depends, str) else depends
            resource["DependsOn"] = [d for d in depends if d not in nested]
            if not resource["DependsOn"]:
                del resource["DependsOn"]
    outputs = {key: _replace_output_reads(value, nested, read_output) for key, value in outputs.items()}
    for stack_id, stack_outputs in nested_outputs.items():
        for key, output in stack_outputs.items():
            if (stack_id, key) in read_by_parent:
                continue
            if key in outputs:
                raise UnsupportedTemplateError(f"output {key} is in two stacks ({stack_id})")
            outputs[key] = output

    flat: dict[str, Any] = {key: value for key, value in root.items() if key not in ("Resources", "Outputs", "Conditions")}
    flat["Resources"] = resources
    if outputs:
        flat["Outputs"] = outputs
    if conditions:
        flat["Conditions"] = conditions
    return flat


def read_flattened(path: Path) -> dict[str, Any]:
    """A template file, flattened with its nested stacks when it has any.

    A root template in a cloud assembly (``cdk.out/Inferbus.template.json``) names each nested
    stack's template by the asset key in its ``TemplateURL``; the assembly's ``*.assets.json``
    says which file holds it.

    Raises
    ------
    UnsupportedTemplateError
        A nested stack whose template is not in the folder of ``path``.
    """
    root = json.loads(path.read_text())
    ids = nested_stack_ids(root)
    if not ids:
        return root
    files: dict[str, str] = {}  # asset object key -> the file in the assembly
    for manifest in path.parent.glob("*.assets.json"):
        for asset in json.loads(manifest.read_text()).get("files", {}).values():
            for destination in asset.get("destinations", {}).values():
                files[destination["objectKey"]] = asset["source"]["path"]
    nested = {}
    for stack_id in ids:
        url = json.dumps(root["Resources"][stack_id].get("Properties", {}).get("TemplateURL", ""))
        found = [name for key, name in files.items() if key in url]
        if len(found) != 1 or not (path.parent / found[0]).is_file():
            raise UnsupportedTemplateError(
                f"nested stack {stack_id}: its template is not in {path.parent} (give the root template of a cloud "
                "assembly, beside its *.assets.json and *.nested.template.json files)")
        nested[stack_id] = read_flattened(path.parent / found[0])
    return flatten(root, nested)


def _replace_parameters(template: Mapping[str, Any], values: Mapping[str, Any], stack_id: str) -> dict[str, Any]:
    def replace(node: Any) -> Any:
        if isinstance(node, list):
            return [replace(item) for item in node]
        if not isinstance(node, dict):
            return node
        if set(node) == {"Ref"} and node["Ref"] in values:
            return values[node["Ref"]]
        if set(node) == {"Fn::Sub"}:
            text = node["Fn::Sub"] if isinstance(node["Fn::Sub"], str) else node["Fn::Sub"][0]
            named = sorted(name for name in values if "${" + name + "}" in text)
            if named:
                raise UnsupportedTemplateError(f"nested stack {stack_id}: Fn::Sub names its parameters {named}; "
                                               "only Ref to a parameter is inlined")
        return {key: replace(item) for key, item in node.items()}

    return {key: replace(value) for key, value in template.items() if key != "Parameters"}


def _replace_output_reads(node: Any, nested: Mapping[str, Any], read_output: Any) -> Any:
    if isinstance(node, list):
        return [_replace_output_reads(item, nested, read_output) for item in node]
    if not isinstance(node, dict):
        return node
    if set(node) == {"Fn::GetAtt"}:
        target = node["Fn::GetAtt"]
        stack_id, attribute = target if isinstance(target, list) else target.split(".", 1)
        if stack_id in nested:
            if not attribute.startswith(OUTPUTS_PREFIX):
                raise UnsupportedTemplateError(f"Fn::GetAtt {stack_id}.{attribute}: only a nested stack's Outputs are read")
            return json.loads(json.dumps(read_output(stack_id, attribute.removeprefix(OUTPUTS_PREFIX))))
    if set(node) == {"Ref"} and node["Ref"] in nested:
        raise UnsupportedTemplateError(f"Ref {node['Ref']}: a nested stack's id is not provisioned locally")
    return {key: _replace_output_reads(value, nested, read_output) for key, value in node.items()}

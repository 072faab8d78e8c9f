"""The topology, drawn from the synthesized template: Mermaid for Markdown, and an image.

``inferbus diagram`` synthesizes the CDK app (no AWS needed; ``-c stage=prod`` and any other
context apply) and reads what will deploy: producers and the ingest endpoint → the bus → each
rule with its pattern → queues and their DLQs → functions → state machines → the result events
they put back on the bus. Nothing is drawn by hand: :func:`topology` builds a networkx graph
from the template, :func:`mermaid` writes it as a Mermaid flowchart (GitHub renders it), and
:func:`draw` lays it out in columns with networkx and renders it with matplotlib (SVG or PNG).

Example
-------
>>> graph = topology(template=template)  # doctest: +SKIP
>>> mermaid(graph).splitlines()[0]  # doctest: +SKIP
'flowchart LR'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx

__all__ = ["draw", "mermaid", "topology", "write_diagram"]

# The columns, left to right.
PRODUCERS, BUS, RULES, QUEUES, FUNCTIONS, MACHINES, RESULTS = range(7)
COLUMN_TITLES = ("producers", "bus", "rules and their patterns", "queues and DLQs", "functions",
                 "state machines", "result events (back on the bus)")
COLOURS = {"producer": "#f2f2f2", "bus": "#ffd8a8", "rule": "#fff3bf", "queue": "#d0ebff", "dlq": "#ffc9c9",
           "function": "#d3f9d8", "machine": "#e5dbff", "event": "#f8f9fa", "store": "#e9ecef"}
HASH = re.compile(r"[0-9A-F]{8}$")
LABEL_WIDTH = 38  # characters per label line


def _of_type(template: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {k: r.get("Properties", {}) for k, r in template["Resources"].items() if r["Type"] == resource_type}


def _target_id(arn: Any) -> str | None:
    """The logical id an ARN expression names (``Fn::GetAtt [id, Arn]`` or ``Ref id``)."""
    if isinstance(arn, dict):
        if "Ref" in arn:
            return arn["Ref"]
        if "Fn::GetAtt" in arn:
            return arn["Fn::GetAtt"][0]
    return None


def _condition(path: str, conditions: Any) -> str:
    if not isinstance(conditions, list):
        return f"{path} {json.dumps(conditions)}"
    parts = []
    for condition in conditions:
        if isinstance(condition, dict) and "numeric" in condition:
            parts.append(f"{path} {' '.join(str(c) for c in condition['numeric'])}")
        elif isinstance(condition, dict) and "exists" in condition:
            parts.append(f"{path} {'set' if condition['exists'] else 'unset'}")
        else:
            parts.append(f"{path} = {condition}")
    return " or ".join(parts)


def _filters(pattern: Any, path: str = "") -> list[str]:
    """An EventBridge pattern on ``data`` as short conditions: ``risk_score < 0.5``, ``analysis unset or = classify``."""
    if not isinstance(pattern, dict):
        return []
    found = []
    for key, value in pattern.items():
        if key == "$or":
            found.append(" or ".join(" and ".join(_filters(option, path)) for option in value))
        elif isinstance(value, dict):
            found += _filters(value, f"{path}{key}.")
        else:
            found.append(_condition(f"{path}{key}", value))
    return found


def _rule_label(pattern: Mapping[str, Any]) -> str:
    lines = [" | ".join(pattern.get("detail-type", ["any type"]))]
    lines += _filters(pattern.get("detail", {}).get("data", {}))
    sources = pattern.get("source")
    if sources:
        lines.append("from " + ", ".join(s.removeprefix("inferbus.") for s in sources))
    return "\n".join(lines)


def _names(template: Mapping[str, Any]) -> dict[str, str]:
    """Readable names by logical id, from the stack outputs that name them (``ImageClassifierQueueUrl``)."""
    names = {}
    for key, output in template.get("Outputs", {}).items():
        logical_id = _target_id(output.get("Value"))
        if logical_id:
            names[logical_id] = re.sub(r"(Url|Name|Arn)$", "", key)
    return names


def _spaced(name: str) -> str:
    """``ImageClassifierQueue`` -> ``ImageClassifier queue``; ``...DeadLetterQueue`` -> ``... DLQ``."""
    for suffix, word in (("DeadLetterQueue", "DLQ"), ("Queue", "queue"), ("StateMachine", ""), ("Function", "")):
        if name.endswith(suffix) and name != suffix:
            return f"{name.removesuffix(suffix)} {word}".strip()
    return name


def _emitted(definition: str, substitutions: Mapping[str, Any]) -> list[str]:
    """The DetailTypes a state machine puts on the bus (its events:putEvents tasks), placeholders filled."""
    from inferbus.runtime.resources import substitute

    values = {key: value if isinstance(value, str) else f"${{{key}}}" for key, value in substitutions.items()}
    machine = json.loads(substitute(definition, values))
    found: list[str] = []

    def walk(states: Mapping[str, Any]) -> None:
        for state in states.values():
            if state.get("Resource", "").startswith("arn:aws:states:::events:putEvents"):
                for entry in state.get("Parameters", {}).get("Entries", []):
                    if isinstance(entry.get("DetailType"), str) and entry["DetailType"] not in found:
                        found.append(entry["DetailType"])
            for branch in state.get("Branches", []):
                walk(branch["States"])

    walk(machine["States"])
    return found


def topology(*, template: Mapping[str, Any] | None = None, context: Mapping[str, Any] | None = None) -> nx.DiGraph:
    """The pipeline's topology as a graph; nodes carry ``column``, ``kind`` and ``label``, edges a ``style``.

    Parameters
    ----------
    template
        A synthesized template; default, synthesize the app with ``context``.
    context
        CDK context (``{"stage": "prod"}``), as ``-c`` gives it.
    """
    if template is None:
        from .template import synthesize

        template = synthesize(context=context)
    from .demo.accounting import state_order

    graph = nx.DiGraph()
    names = _names(template)

    def node(node_id: str, column: int, kind: str, label: str) -> str:
        if node_id not in graph:
            wrapped = "\n".join(part for line in label.split("\n") for part in _wrap(line, LABEL_WIDTH))
            graph.add_node(node_id, column=column, kind=kind, label=wrapped)
        return node_id

    def edge(source: str, target: str, label: str = "", style: str = "solid") -> None:
        graph.add_edge(source, target, label=label, style=style)

    buses = _of_type(template, "AWS::Events::EventBus")
    archives = _of_type(template, "AWS::Events::Archive")
    (bus_id, bus), = buses.items()
    retention = next((f", archive {a.get('RetentionDays', 0)} d" for a in archives.values()), "")
    node(bus_id, BUS, "bus", f"EventBridge bus\n{bus['Name']}{retention}")
    edge(node("producers", PRODUCERS, "producer", "your producers\nPutEvents, inferbus send"), bus_id)

    queues = _of_type(template, "AWS::SQS::Queue")
    functions = _of_type(template, "AWS::Lambda::Function")
    machines = _of_type(template, "AWS::StepFunctions::StateMachine")
    mappings = {_target_id(m["EventSourceArn"]): _target_id(m["FunctionName"])
                for m in _of_type(template, "AWS::Lambda::EventSourceMapping").values()}
    queue_urls = {json.dumps({"Ref": k}): k for k in queues}

    def queue(queue_id: str) -> str:
        name = names.get(queue_id, HASH.sub("", queue_id))
        added = node(queue_id, QUEUES, "queue", _spaced(name))
        redrive = queues[queue_id].get("RedrivePolicy")
        if redrive:
            dlq = _target_id(redrive["deadLetterTargetArn"])
            node(dlq, QUEUES, "dlq", _spaced(names.get(dlq, HASH.sub("", dlq))))
            edge(queue_id, dlq, f"after {redrive['maxReceiveCount']} receives", "dashed")
        return added

    def function(function_id: str) -> str:
        props = functions[function_id]
        variables = props.get("Environment", {}).get("Variables", {})
        handler = props.get("Handler") or props.get("ImageConfig", {}).get("Command", ["?"])[0]
        added = node(function_id, FUNCTIONS, "function", f"Lambda {variables.get('POWERTOOLS_SERVICE_NAME', '')}\n{handler}")
        if isinstance(variables.get("PRODUCES"), str):
            edge(function_id, node(f"event:{variables['PRODUCES']}", RESULTS, "event", variables["PRODUCES"]))
        if "INVALID_EVENTS_QUEUE_URL" in variables:
            invalid = queue_urls.get(json.dumps(variables["INVALID_EVENTS_QUEUE_URL"]))
            if invalid:
                edge(function_id, queue(invalid), "rejects", "dashed")
        return added

    for machine_id, machine in machines.items():
        substitutions = machine.get("DefinitionSubstitutions", {})
        definition = machine["DefinitionString"]
        placeholder_free = re.sub(r"\$\{[^}]+\}", "x", definition)
        parsed = json.loads(placeholder_free)
        steps = " → ".join(name for name in state_order(parsed) if name not in _service_tasks(parsed))
        kind = "Express" if machine.get("StateMachineType") == "EXPRESS" else "Standard"
        node(machine_id, MACHINES, "machine", f"Step Functions {substitutions.get('WorkflowName', '')} ({kind})\n"
             + steps)
        for event_type in _emitted(definition, substitutions):
            edge(machine_id, node(f"event:{event_type}", RESULTS, "event", event_type))
        for key, value in substitutions.items():
            if key.endswith("QueueUrl") and _target_id(value) in queues:
                review = node(_target_id(value), RESULTS, "queue", f"{_spaced(key.removesuffix('Url'))}\n(people decide)")
                edge(machine_id, review, "case + task token", "dashed")

    for rule_id, rule in _of_type(template, "AWS::Events::Rule").items():
        rule_node = node(rule_id, RULES, "rule", _rule_label(rule["EventPattern"]))
        edge(bus_id, rule_node)
        for target in rule["Targets"]:
            target_id = _target_id(target["Arn"])
            label = "retries + DLQ" if "DeadLetterConfig" in target else ""
            if target_id in queues:
                edge(rule_node, queue(target_id), label)
                consumer = mappings.get(target_id)
                if consumer:
                    edge(target_id, function(consumer), "batches")
                elif target_id not in {_target_id(v) for v in mappings}:
                    owner = names.get(target_id, "")
                    if owner.endswith("Queue") and owner != "InvalidEventsQueue":
                        edge(target_id, node(f"service:{target_id}", FUNCTIONS, "store", "your service"))
            elif target_id in machines:
                edge(rule_node, target_id, label)
            else:
                kind = target["Arn"]["Fn::GetAtt"][0] if "Fn::GetAtt" in target["Arn"] else target_id
                edge(rule_node, node(target_id, QUEUES, "store", f"Firehose\n{HASH.sub('', kind)}"), label)

    ingest = [k for k, p in functions.items() if "RESERVED_SOURCES" in p.get("Environment", {}).get("Variables", {})]
    for ingest_id in ingest:
        node(ingest_id, PRODUCERS, "function", "HTTPS ingest\nfunction URL, IAM auth")
        edge(ingest_id, bus_id, "PutEvents")
    for stream_id, stream in _of_type(template, "AWS::KinesisFirehose::DeliveryStream").items():
        bucket = _target_id(stream.get("ExtendedS3DestinationConfiguration", {}).get("BucketARN"))
        if bucket and stream_id in graph:
            graph.nodes[stream_id]["label"] = "Firehose: results archive"
            edge(stream_id, node(bucket, FUNCTIONS, "store", "S3: results\nStandard → IA → Glacier"), "gzip JSON Lines")
    return graph


def _service_tasks(machine: Mapping[str, Any]) -> set[str]:
    """Task states that call a service directly (putEvents, sendMessage), not a function: not drawn as steps."""
    found = set()
    for name, state in machine["States"].items():
        if state["Type"] == "Task" and not state.get("Resource", "").startswith("arn:aws:states:::lambda:"):
            found.add(name)
        for branch in state.get("Branches", []):
            found |= _service_tasks(branch)
    return found


def _wrap(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + ([line] if line else [])


def _mermaid_id(node_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", node_id)


def mermaid(graph: nx.DiGraph) -> str:
    """The graph as a Mermaid flowchart, left to right, one subgraph per column."""
    shapes = {"bus": ("[(", ")]"), "rule": ("{{", "}}"), "queue": ("[/", "/]"), "dlq": ("[/", "/]"),
              "function": ("[", "]"), "machine": ("[[", "]]"), "event": ("([", "])"), "store": ("[(", ")]"),
              "producer": ("(", ")")}
    lines = ["flowchart LR"]
    for column, title in enumerate(COLUMN_TITLES):
        members = [n for n, data in graph.nodes(data=True) if data["column"] == column]
        if not members:
            continue
        lines.append(f'  subgraph c{column}["{title}"]')
        for member in members:
            data = graph.nodes[member]
            opening, closing = shapes[data["kind"]]
            text = data["label"].replace('"', "'").replace("\n", "<br/>")
            lines.append(f'    {_mermaid_id(member)}{opening}"{text}"{closing}')
        lines.append("  end")
    for source, target, data in graph.edges(data=True):
        arrow = "-.->" if data.get("style") == "dashed" else "-->"
        label = f'|"{data["label"]}"|' if data.get("label") else ""
        lines.append(f"  {_mermaid_id(source)} {arrow}{label} {_mermaid_id(target)}")
    bus = next(n for n, data in graph.nodes(data=True) if data["kind"] == "bus")
    for event in [n for n, data in graph.nodes(data=True) if data["kind"] == "event"]:
        lines.append(f"  {_mermaid_id(event)} -.-> {_mermaid_id(bus)}")
    return "\n".join(lines) + "\n"


def _columns(graph: nx.DiGraph, sweeps: int = 8) -> dict[int, list[str]]:
    """Each column's nodes, top first, in an order that crosses fewer edges: the barycentre heuristic (a
    node goes to the mean rank of its neighbours in the other columns); a DLQ goes right below its queue."""
    columns: dict[int, list[str]] = {}
    for node_id, data in graph.nodes(data=True):
        columns.setdefault(data["column"], []).append(node_id)
    order = sorted(columns)
    undirected = graph.to_undirected(as_view=True)
    attached = {n: next(iter(graph.predecessors(n))) for n, d in graph.nodes(data=True)
                if d["kind"] == "dlq" and graph.in_degree(n) == 1}
    for sweep in range(sweeps):
        for column in order if sweep % 2 == 0 else reversed(order):
            rank = {n: i / max(1, len(columns[c]) - 1) for c in order if c != column for i, n in enumerate(columns[c])}
            current = {n: i / max(1, len(columns[column]) - 1) for i, n in enumerate(columns[column])}

            def centre(node_id: str, rank: dict[str, float] = rank, current: dict[str, float] = current) -> float:
                near = [rank[n] for n in undirected[node_id] if n in rank]
                return sum(near) / len(near) if near else current[node_id]

            free = sorted((n for n in columns[column] if n not in attached), key=centre)
            columns[column] = [m for n in free for m in (n, *(d for d, q in attached.items() if q == n))]
    return columns


def draw(graph: nx.DiGraph, path: Path) -> Path:
    """Lay the graph out in its columns (networkx) and render it (matplotlib) to ``path`` (.svg or .png)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = _columns(graph)
    # networkx stacks each column bottom-up: give it the top node last.
    layout = nx.multipartite_layout(graph, subset_key={c: list(reversed(nodes)) for c, nodes in columns.items()},
                                    align="vertical", scale=1.0)
    tallest = max(sum(1 for _, d in graph.nodes(data=True) if d["column"] == c) for c in range(len(COLUMN_TITLES)))
    figure, axis = plt.subplots(figsize=(26, max(9.0, 1.05 * tallest)))
    solid = [(u, v) for u, v, d in graph.edges(data=True) if d.get("style") != "dashed"]
    dashed = [(u, v) for u, v, d in graph.edges(data=True) if d.get("style") == "dashed"]
    for edges, style in ((solid, "solid"), (dashed, "dashed")):
        nx.draw_networkx_edges(graph, layout, edgelist=edges, ax=axis, style=style, arrows=True, arrowstyle="-|>",
                               arrowsize=12, edge_color="#868e96", node_size=2600, width=1.0,
                               connectionstyle="arc3,rad=0.04")
    for kind, colour in COLOURS.items():
        members = {n: graph.nodes[n]["label"] for n, d in graph.nodes(data=True) if d["kind"] == kind}
        nx.draw_networkx_labels(graph, layout, labels=members, ax=axis, font_size=7.5,
                                bbox={"boxstyle": "round,pad=0.4", "facecolor": colour, "edgecolor": "#495057"})
    xs = sorted({round(x, 6) for x, _ in layout.values()})
    top = max(y for _, y in layout.values())
    columns = sorted({d["column"] for _, d in graph.nodes(data=True)})
    for x, column in zip(xs, columns, strict=False):
        axis.text(x, top + 0.12, COLUMN_TITLES[column], ha="center", fontsize=10, fontweight="bold", color="#343a40")
    axis.set_axis_off()
    axis.margins(x=0.06, y=0.08)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, metadata={"Date": None} if path.suffix == ".svg" else None)
    plt.close(figure)
    return path


def write_diagram(graph: nx.DiGraph, stem: Path, *, image_format: str = "svg") -> list[Path]:
    """Write ``<stem>.mmd`` (Mermaid) and ``<stem>.<image_format>``; return both paths."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    source = stem.with_suffix(".mmd")
    source.write_text(mermaid(graph))
    return [source, draw(graph, stem.with_suffix(f".{image_format}"))]

"""inferbus's CDK app: settings, constructs, the stack and the app entry point.

Importing it first keeps a synth quiet (:func:`quiet_node_banners`), whoever runs it.
"""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess

# The end of life of Node's LTS lines (https://nodejs.org/en/about/previous-releases).
NODE_END_OF_LIFE = {18: datetime.date(2025, 4, 30), 20: datetime.date(2026, 4, 30), 22: datetime.date(2027, 4, 30),
                    24: datetime.date(2028, 4, 30)}
JSII_NODE_BANNERS = ("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION",
                     "JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION")


def quiet_node_banners(today: datetime.date | None = None) -> str | None:
    """Silence jsii's Node support banners (ten lines, printed as ``b'…'`` bytes) and return one line instead.

    Call before ``aws_cdk`` is imported: jsii reads these variables when it starts Node. A variable the user
    set is left as it is. Returns the one line a synth shows (:data:`NODE_NOTICE`), or ``None`` when Node is
    supported, the user set ``JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION``, or Node's version cannot be read.
    """
    acknowledged = JSII_NODE_BANNERS[0] in os.environ  # who set it knows (the Makefile does)
    if all(name in os.environ for name in JSII_NODE_BANNERS) or shutil.which("node") is None:
        return None
    try:
        version = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=10, check=True).stdout
        major = int(version.strip().lstrip("v").split(".")[0])
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    for name in JSII_NODE_BANNERS:
        os.environ.setdefault(name, str(major))
    end = NODE_END_OF_LIFE.get(major)
    if acknowledged or end is None or (today or datetime.date.today()) <= end:
        return None
    return f"inferbus: Node {major} reached its end of life on {end}; the synth runs, but upgrade Node when you can"


NODE_NOTICE = quiet_node_banners()  # printed by `cdk synth` (infra.app), once

"""inferbus: the CLI and the embedded runtime that runs the synthesized stack on moto."""

__version__ = "0.1.0"

"""The first step of every workflow: validate the input event and claim it exactly once."""

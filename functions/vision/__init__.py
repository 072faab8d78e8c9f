"""The vision workflow's steps, one Lambda each: detect objects ‖ classify the scene, then merge."""

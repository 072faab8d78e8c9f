"""The vision workflow's steps: score one image with one model (one Lambda per model), merge."""

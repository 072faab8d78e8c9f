"""The text pipeline's steps, one Lambda each: tokenize -> embed -> classify -> extract entities."""

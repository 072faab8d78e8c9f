"""The text pipeline's steps, one Lambda each: tokenize -> part of speech -> entities -> embed -> sentiment."""

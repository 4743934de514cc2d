"""Compiling a program: DSPy optimizers over the paper's programs, and the demonstrations they start from."""

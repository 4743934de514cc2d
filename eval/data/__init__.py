"""The benchmarks' questions (loaders, one schema whatever the file layout) and the offline corpus."""

"""Benchmarks in the product path: `main.py bench` (naive RAG beside the fast, standard and high paths) and
`main.py bench soak` (many agents, steady traffic, minutes). Figures are printed and written as reports, never
asserted by timed tests."""

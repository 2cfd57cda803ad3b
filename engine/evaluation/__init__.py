"""Retrieval evaluation on public poisoning data (HotpotQA + PoisonedRAG), headless and Qt-free.

- `data`: converts the shared HotpotQA sample and PoisonedRAG targets into poisoning cases.
- `attacks`: passages as chunks, the retriever fleet's kinds, Byzantine behaviours (agent, corpus,
  tamper, omit).
- `baselines`: naive, union, majority and TrustRAG-style filtering of the same retriever outputs.
- `metrics`: judging one final context (attack success, answer, recall, anomaly flags) and averages.
- `runner`: one evaluation run (retrievers → defence and baselines → judged rows).
- `report`, `plot`: tables, JSON, Markdown and an SVG bar chart.
- `cli`: `python main.py eval convert|retrieval`.

Nothing here imports torch at import time; models load only when a text is not in the cache.
"""

"""Retrieval evaluation on public poisoning data (HotpotQA, PoisonedRAG, RobustRAG biogen), headless and Qt-free.

- `data`: converts the shared HotpotQA sample and PoisonedRAG targets into poisoning cases.
- `datasets`: the four data sets (hotpotqa, biogen, nq, msmarco) as cases of one shape.
- `splits`: the fixed dev/test split by question id.
- `attacks`: passages as chunks, the retriever fleet's kinds (five distinct models), who lies on a
  question (drawn per case), Byzantine behaviours (agent, corpus, tamper, omit).
- `variants`: what an attacker varies: paraphrased, no-mirror, random-rank, tamper ids, name swaps, adaptive.
- `baselines`: naive (expectation over one random retriever), union, majority and TrustRAG-style
  filtering (per list and pooled) of the same retriever outputs.
- `metrics`: judging one final context (attack success, answer, recall, anomaly flags) and averages.
- `runner`: one evaluation run (retrievers → defence and baselines → judged rows).
- `report`, `plot`: tables, JSON, Markdown and an SVG bar chart.
- `cli`: `python main.py eval convert|retrieval`.

Nothing here imports torch at import time; models load only when a text is not in the cache.
"""

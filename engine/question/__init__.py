"""One question's road, stage by stage: the retrieve and synthesize stages with their collaborators, the
agent calls they share, the payloads their frozen stage results carry, and the Answer built from the run.
The pipeline (engine/pipeline.py) puts them in order and runs them."""

"""CHARM: cascade-hallucination detection (SFV, CSCT, CPM → CRT) and mitigation at every stage boundary."""

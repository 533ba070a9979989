"""The failure taxonomy: every cause a diagnosis may suggest can become a reviewer's label, and back."""

from __future__ import annotations

from core.diagnose.taxonomy import CAUSE_LABEL, CAUSE_NAME, NO_SPECIFIC, PRECEDENCE, UNDECIDED, cause_of_label
from core.queries import annotations as qa


def test_every_cause_has_a_vocabulary_label_that_maps_back(store):
    labels = {v["label"] for v in qa.vocabulary(store)}
    assert set(PRECEDENCE) == set(CAUSE_LABEL)
    for cause in PRECEDENCE:
        assert CAUSE_LABEL[cause] in labels
        assert cause_of_label(CAUSE_LABEL[cause]) == cause
    assert cause_of_label("incoherent decomposition") is None
    # The fallback's name is what pages call an unaccepted last-resort suggestion; it is no label.
    assert set(CAUSE_NAME) == set(PRECEDENCE) | {NO_SPECIFIC, UNDECIDED}
    assert NO_SPECIFIC not in CAUSE_LABEL

"""How sure each rule is: its measured precision on our labels (tests/fixtures/failure_labels, every split),
shown beside each suggestion so a reviewer weighs it as it deserves. The figures are measured, not chosen:
`tests/test_diagnose_runs.py::test_each_rules_stated_precision_is_what_the_labels_measure` recomputes them
on the whole runs and fails when a rule or a label changes them without this table following.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.measure.stats import wilson_ci


@dataclass(frozen=True)
class RulePrecision:
    agreed: int  # labelled tasks where the rule's suggestion was the label
    suggested: int  # labelled tasks where the rule made the primary suggestion

    @property
    def share(self) -> float | None:
        return self.agreed / self.suggested if self.suggested else None

    def _share_text(self) -> str:
        """'88 %, 95 % CI 53–98 %' (the house's '88 %', a space before %)."""
        low, high = wilson_ci(self.agreed, self.suggested)
        return f"{self.agreed / self.suggested * 100:.0f} %, 95 % CI {low * 100:.0f}–{high * 100:.0f} %"

    def sentence(self) -> str:
        """'right on 7 of 8 labelled tasks (88 %, 95 % CI 53–98 %)'."""
        if not self.suggested:
            return "not yet measured on labelled tasks"
        return f"right on {self.agreed} of {self.suggested} labelled tasks ({self._share_text()})"

    def fallback_sentence(self) -> str:
        """What the fallback's figure means: of the labelled tasks left to it, how many reviewers called a
        wrong answer and nothing more specific (its 'right on' would read as a finding, which it is not)."""
        if not self.suggested:
            return "Not yet measured on labelled tasks."
        return (
            f"Of {self.suggested} labelled tasks where the rules found nothing specific, reviewers called "
            f"{self.agreed} just a wrong answer ({self._share_text()}); the others had a cause the rules missed,"
            " so read the steps."
        )


# Measured on the 252 labels of opagent.csv, babelcloud.csv, added.csv, fresh.csv, fresh2.csv and fresh3.csv
# (every split), `rules-4`.
RULE_PRECISION: dict[str, RulePrecision] = {
    "answered_wrong": RulePrecision(37, 145),
    "check_misquotes_task": RulePrecision(3, 3),
    "check_unlike_template": RulePrecision(2, 2),
    "differs_only_in_format": RulePrecision(11, 11),
    "entered_in_another_format": RulePrecision(3, 4),
    "expected_request_not_navigation": RulePrecision(1, 1),
    "gave_up": RulePrecision(16, 18),
    "looped": RulePrecision(21, 24),
    "near_miss_entity": RulePrecision(2, 2),
    "offline_evaluators_pass": RulePrecision(1, 1),
    "other_runs_agree": RulePrecision(4, 6),
    "start_page_failed": RulePrecision(2, 2),
    "trace_server_errors": RulePrecision(1, 1),
    "url_differs_in_format": RulePrecision(3, 3),
    "verified_corrected_entry": RulePrecision(2, 2),
    "verified_corrected_value": RulePrecision(1, 1),
    "verified_moved_target": RulePrecision(1, 1),
    "verified_reference_matches": RulePrecision(17, 17),
    "verified_url_reached": RulePrecision(2, 2),
}

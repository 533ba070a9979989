"""Reviewers' judgements: failure labels with their vocabulary and the right/wrong marks on the judge's
verdicts (`annotations`). Append-only, each row with its author and time."""

-- The LLM's whole answer, as JSON, beside the verdict: a question kind with its own answer schema (such as
-- the failure diagnosis) is cached in `judgments` like the judge's pairs. Rows cached before this
-- migration hold a judge verdict: their answer is rebuilt from its verdict and rationale.
ALTER TABLE judgments ADD COLUMN answer JSON;
UPDATE judgments
SET answer = json_object('equivalent', verdict, 'rationale', coalesce(rationale, ''))
WHERE verdict IS NOT NULL AND source = 'llm';

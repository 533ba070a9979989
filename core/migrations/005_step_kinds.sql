-- trajreview schema, version 5: steps of agents that drive the browser through tools (one step per
-- tool call): whether a step acts on the page or only observes it, and what the tool returned.
-- Documented in docs/schema.md. Steps imported before are all actions on the page.
ALTER TABLE steps ADD COLUMN kind VARCHAR DEFAULT 'action';      -- action | observe
UPDATE steps SET kind = 'action' WHERE kind IS NULL;
ALTER TABLE steps ADD COLUMN outcome VARCHAR;        -- what the tool returned, screenshots dropped
ALTER TABLE steps ADD COLUMN outcome_image BOOLEAN;  -- the tool's result carried a screenshot (not stored)

"""Scoring: the official webarena-verified engine over stored traces (`engine`), the plain sentence of every
failure (`explanations`), the agent-response check (`agent_response`) and WebArena's original evaluators
for runs without traces (`offline`)."""

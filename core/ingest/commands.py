"""The `trajreview import` commands, in the group's order, with what each reads: the one list the CLI
registers its import group from (core.cli.ui.import_command) and the empty Runs page shows."""

from __future__ import annotations

IMPORT_COMMANDS: dict[str, str] = {
    "tasks": "The 812 WebArena-Verified tasks (and the original WebArena ones)",
    "wav-run": "A WebArena-Verified run directory (agent responses + network traces), scored officially",
    "agentlab": "BrowserGym / AgentLab experiment directories",
    "browsergym": "The same as `import agentlab`",
    "opagent": "OpAgent's per-task trajectory files, as one run",
    "webarena-render": "WebArena render_<id>.html files and the run's logs, as one run",
    "gold": "Human gold trajectories (the paper's xlsx, or CSV/JSONL with its columns)",
    "jsonl": "A trajreview JSONL run",
    "requirements": "Partial-success requirements of tasks",
}

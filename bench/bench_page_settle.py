"""How long a reviewer waits for each page of the demo to settle, in Chromium: from navigation to the page
drawn and still (Streamlit idle, no stale element, the main area's text unchanged for SETTLE_QUIET_MS),
p50/p95 over repeated views of each page in a fresh tab, plus the first view after the server started
(every cache cold).

Ours beside the baseline measured in the same run: the same pages served by the code this branch started
from (`git archive` of the merge-base with main, or `--base REV`), over its own copy of the same demo
database, the two servers measured alternately so both see the same machine load. Target: warm p95
<= 1 s per page (issue 23: pages settled in 2–5 s on the demo under load).

    .venv/bin/python -m bench page_settle [--base REV] [--views N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from core.paths import REPO_ROOT

VIEWS = 7
TARGET_MS = 1_000
SETTLE_QUIET_MS = 300
POLL_MS = 40
PAGES = {
    "runs (landing)": "/runs",
    "triage": "/triage?run=opagent",
    "task: steps": "/task?run=opagent&task=786",
    "task: network": "/task?run=wav-navigation&task=677&tab=Network",
    "task: evaluation": "/task?run=opagent&task=786&tab=Evaluation",
    "breakdowns": "/breakdowns",
    "compare": "/compare",
    "metrics": "/metrics",
}
# The page's state, polled: main text length, whether Streamlit runs a script, stale elements.
_STATE = """() => {
  const main = document.querySelector("[data-testid='stMain']");
  const drawn = main && main.querySelector("[data-testid='stMarkdownContainer'], [data-testid='stHeading']");
  return [drawn ? main.innerText.length : -1, !!document.querySelector("[data-testid='stStatusWidget']"),
          document.querySelectorAll("[data-stale='true']").length];
}"""


def settle_ms(browser, url: str, timeout_s: float = 120) -> float:
    """Milliseconds from navigation to the last change before SETTLE_QUIET_MS of stillness, in a new tab."""
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    try:
        start = time.perf_counter()
        page.goto(url, wait_until="commit")
        last_state, changed_at = None, time.perf_counter()
        while time.perf_counter() - start < timeout_s:
            length, running, stale = page.evaluate(_STATE)
            now = time.perf_counter()
            state = (length, running, stale)
            if state != last_state:
                last_state, changed_at = state, now
            elif length > 0 and not running and not stale and (now - changed_at) * 1000 >= SETTLE_QUIET_MS:
                return (changed_at - start) * 1000
            page.wait_for_timeout(POLL_MS)
        raise TimeoutError(f"{url} did not settle in {timeout_s:.0f} s")
    finally:
        page.close()


def _base_rev(requested: str | None) -> str:
    if requested:
        return requested
    done = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "merge-base", "HEAD", "main"], capture_output=True, text=True
    )
    return done.stdout.strip() or "HEAD"


def _checkout(rev: str, into: Path) -> Path:
    """The code at `rev` as a plain tree (its dashboard and core), for the baseline server."""
    archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", rev], capture_output=True, check=True)
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


@contextmanager
def _serve(code: Path, db: Path):
    """Streamlit over `db` running the app of the tree `code` (its own core and dashboard come first on
    sys.path: dashboard/app.py puts its repository root there)."""
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from browser_support import free_port

    port = free_port()
    env = {**os.environ, "TRAJREVIEW_DB": str(db), "PYTHONPATH": str(code)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(code / "dashboard" / "app.py"), "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        env=env, cwd=code, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        import urllib.request

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.3)
        yield url
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=30)


def _p50_p95(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(prog="bench page_settle")
    parser.add_argument("--base", help="baseline revision (default: the merge-base of HEAD and main)")
    parser.add_argument("--views", type=int, default=VIEWS)
    args = parser.parse_args(sys.argv[1:])
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from browser_support import CHROMIUM, CHROMIUM_ARGS, chromium_available
    from playwright.sync_api import sync_playwright

    from core.ingest.demo import DEMO_DB, build_demo

    if not chromium_available():
        print("chromium not installed: page settle times skipped")
        return
    rev = _base_rev(args.base)
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        tmp_path = Path(tmp)
        demo = DEMO_DB if DEMO_DB.exists() else tmp_path / "demo.duckdb"
        if not demo.exists():
            build_demo(demo)
        ours_db, base_db = tmp_path / "ours.duckdb", tmp_path / "base.duckdb"
        shutil.copy(demo, ours_db)
        shutil.copy(demo, base_db)
        base_code = _checkout(rev, tmp_path / "base")
        servers = {"ours": stack.enter_context(_serve(REPO_ROOT, ours_db)),
                   "base": stack.enter_context(_serve(base_code, base_db))}  # fmt: skip
        load = os.getloadavg()[0]
        print(f"demo database {demo.name}; baseline = {rev[:12]}; {args.views} views per page after the first; "
              f"load average {load:.1f} on {os.cpu_count()} cores")  # fmt: skip
        print(
            "ms from navigation to the page settled; first view (cold caches), then p50/p95 of the next views"
        )
        print(f"{'page':<18} {'ours first':>10} {'ours p50/p95':>13} {'base first':>10} {'base p50/p95':>13} "
              f"{'p50 base/ours':>13} {'target p95':>10}")  # fmt: skip
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            misses = 0
            for name, path in PAGES.items():
                first = {who: settle_ms(browser, url + path) for who, url in servers.items()}
                samples: dict[str, list[float]] = {"ours": [], "base": []}
                for _ in range(args.views):
                    for who, url in servers.items():
                        samples[who].append(settle_ms(browser, url + path))
                ours, base = _p50_p95(samples["ours"]), _p50_p95(samples["base"])
                verdict = "ok" if ours[1] <= TARGET_MS else "MISS"
                misses += verdict == "MISS"
                print(f"{name:<18} {first['ours']:>10.0f} {ours[0]:>6.0f}/{ours[1]:<6.0f} {first['base']:>10.0f} "
                      f"{base[0]:>6.0f}/{base[1]:<6.0f} {base[0] / ours[0]:>12.2f}x {TARGET_MS:>6} {verdict}")  # fmt: skip
            browser.close()
        print(
            f"target (warm p95 <= {TARGET_MS} ms): {len(PAGES) - misses} of {len(PAGES)} pages; "
            f"load average now {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()

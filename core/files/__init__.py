"""Reading untrusted files safely: size limits and path rules, the restricted unpickler, JSON lines, HAR and
Playwright traces, secret redaction, WebArena-Verified run directories and submission tarballs, and the
worker pool that parses many files at once. Nothing here writes the database."""

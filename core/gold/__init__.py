"""Human gold: the one writer of gold versions (`editing.save_gold`), reading versions (`versions`) and
export in the formats `import gold` reads back (`export`). Importing a gold file is in `core.ingest.gold`."""

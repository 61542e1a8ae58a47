"""Small recorded bodies the catalogue replays (written for dshkit, not copied from the corpus)."""

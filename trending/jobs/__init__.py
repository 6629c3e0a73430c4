"""One module per streaming job: wiring only."""

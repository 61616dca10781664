"""Per-row audits: each data row's twins decided, one model kind per module, one shared driver."""

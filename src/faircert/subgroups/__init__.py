"""Where and for whom (`faircert.explain`): rules that locate the unfair decisions among audited
rows, and the audit tables of selection rates by protected group and by their intersection."""

from .audit import audit_tables
from .changes import decision_changes
from .frame import explain_frame, explain_rows

__all__ = ["audit_tables", "decision_changes", "explain_frame", "explain_rows"]

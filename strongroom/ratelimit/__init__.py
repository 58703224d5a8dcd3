"""Per-credential token buckets (D17-D20)."""

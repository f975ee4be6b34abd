"""Bring-up helpers of the whole R1 stack (the topic list and its check)."""

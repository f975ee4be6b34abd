"""The scripted demo of the whole stack (not runtime code)."""

"""Markdown for plans and reports (checked with markdown-it-py), and plots."""

"""Renderers: text for people (unstable), versioned JSON for scripts, Markdown for bug reports."""

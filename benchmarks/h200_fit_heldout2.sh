#!/usr/bin/env bash
# Issue 28's second held-out set (docs/fit.md): the command the device call ran; see h200_fit_set.sh.
exec bash "$(dirname "$0")/h200_fit_set.sh" held-out-2

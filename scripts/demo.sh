#!/usr/bin/env bash
# make demo: placeholder until the backtrace demo lands.
echo "demo: not implemented yet"; exit 1

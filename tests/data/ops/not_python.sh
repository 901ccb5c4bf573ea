#!/bin/sh
# A shell script, not Python.
for f in $PWD/*; do echo "$f"; done

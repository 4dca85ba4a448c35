"""Isolate: one child process per job, talking in typed messages (child), and the confinement
a process puts on itself before it runs native code built from a submission (isolation).

The bottom of the package: it imports no other layer.
"""

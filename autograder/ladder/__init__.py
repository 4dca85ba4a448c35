"""What the course is about: the ladder of steps (registry) and the GPUs they run on (hardware).

Plain data and arithmetic, read by every layer above; it imports nothing of the package.
"""

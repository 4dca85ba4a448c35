"""What the GPUs the book's data was measured on said of themselves, for tests that hold
a rule to those measurements."""

# Clusters of 2 to 8 blocks (each taking an SM) an H200 runs at once, as its driver said
# (gpu.clusters_at_once, 2026-11-30): its GPCs' SMs do not all split into whole clusters.
H200_CLUSTERS_AT_ONCE = {2: 66, 3: 39, 4: 30, 5: 22, 6: 17, 7: 15, 8: 15}
